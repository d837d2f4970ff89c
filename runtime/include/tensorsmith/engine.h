// The engines: one per family. They do broadcasting, type promotion, output
// allocation, stride handling and dimension coalescing, then call the op's
// kernel for the device and kernel dtype. Generated bindings call these.
#pragma once

#include <optional>
#include <vector>

#include "tensorsmith/dispatch.h"
#include "tensorsmith/tensor.h"

namespace ts {

// Elementwise op over broadcast inputs (TensorIterator-like). Inputs must be on
// one device; non-contiguous and stride-0 inputs are read in place.
Tensor pointwise(const OpDef& op, const std::vector<Tensor>& inputs);

// The same op written into `out` (numpy's out=), which is returned. `out` has the
// broadcast shape of the inputs and itself, is on their device, has no broadcast
// (stride-0) axis, and its dtype is the result dtype or one numpy's 'same_kind'
// rule casts it to. The kernel writes a contiguous `out` of the result dtype
// directly; any other `out` is filled from a temporary. Inputs that share memory
// with `out` are copied first, so the result is as if out were a fresh tensor.
Tensor pointwise(const OpDef& op, const std::vector<Tensor>& inputs, const Tensor& out);

// Reduction over `axes` (all axes when nullopt; duplicates raise ValueError).
Tensor reduce(const OpDef& op, const Tensor& x, const std::optional<std::vector<int64_t>>& axes, bool keepdims);

// argmax/argmin: over the flattened tensor when axis is nullopt.
Tensor index_reduce(const OpDef& op, const Tensor& x, std::optional<int64_t> axis, bool keepdims);

// softmax family along one axis.
Tensor normalize(const OpDef& op, const Tensor& x, int64_t axis);

// Layer norm's rows along the last axis: inputs (x), or (g, x) of one shape for the map's gradient.
Tensor standardize(const OpDef& op, const std::vector<Tensor>& inputs, double eps);

// An optimizer's step: operands[0..arity-1) (the parameter, then its state) updated in place from the gradient
// operands[arity-1], with the op's float arguments in order (OpDef::scalars). Every tensor has the parameter's shape
// and dtype; the state tensors are writeable and share no memory with any other operand (a strided one is updated
// through a contiguous copy).
void update(const OpDef& op, const std::vector<Tensor>& operands, const std::vector<double>& scalars);

// cumulative_sum / cumulative_prod along `axis` (optional for 0-d and 1-D tensors, as numpy's); with
// `include_initial` the result starts with the op's identity, one longer along the axis.
Tensor scan(const OpDef& op, const Tensor& x, std::optional<int64_t> axis, bool include_initial);

// sort (the values) or argsort (the int64 positions, by the op's promotion) along `axis`; always stable.
Tensor sort(const OpDef& op, const Tensor& x, int64_t axis, bool descending);

// matmul with numpy semantics: 1-D operands promoted and squeezed, batch dims broadcast.
Tensor contract(const OpDef& op, const Tensor& a, const Tensor& b);

// The iteration core of pointwise(), also used by Tensor::copy_from: calls
// `kernel` on 1-D runs that together cover every element of `operands`, which
// must all have one shape (operands[0] is the output; inputs may have stride 0).
// Axes are ordered by the output's strides and merged where every operand
// allows, so contiguous operands take a single call. No call when empty.
void for_each_run(const std::vector<Tensor>& operands, PointwiseKernel kernel);

// numpy's casting='same_kind', the rule for ufunc outputs: any cast within a kind or up the order
// bool < unsigned < signed < floating (int64 -> int8 and float64 -> float16 are allowed; float -> int and
// int -> unsigned are not).
bool same_kind_castable(DType from, DType to);

// The one device all of an op's inputs are on (inputs is not empty); ValueError naming two that differ.
Device common_device(const OpDef& op, const std::vector<Tensor>& inputs);

// The dtype the op's kernel runs in and the dtype of its result, for given input dtypes.
using DTypes = SmallVector<DType, kMaxOperands>;
DType kernel_dtype(const OpDef& op, const DTypes& inputs);
DType result_dtype(const OpDef& op, const DTypes& inputs);

}  // namespace ts

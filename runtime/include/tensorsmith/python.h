// Argument conversion shared by the hand-written and the generated pybind11
// bindings (generated/bindings.cpp). Only this header and the module entry
// point know about Python; the core is Python-free.
#pragma once

#include <initializer_list>
#include <optional>
#include <vector>

#include <pybind11/pybind11.h>

#include "tensorsmith/dispatch.h"
#include "tensorsmith/tensor.h"
#include "tensorsmith/tensor_caster.h"

namespace ts::python {

// The tensor arguments of an op, converted to tensors:
// - ts Tensors as they are; numpy arrays, nested lists and other buffers as ts.asarray would;
// - Python bool/int/float are weak scalars (NEP 50): they take the dtype of the
//   tensor operands when that dtype is of the same or a higher kind
//   (bool < integer < floating), else the default dtype of their own kind
//   (bool, int64, float64); an int that does not fit the tensor's integer dtype
//   raises OverflowError, as numpy 2 does.
// - comparisons, true division and logical ops take an int that does not fit by value, like
//   numpy, since their result dtype does not depend on it (uint64 < 2**64 is True).
// - where's condition takes no part in promotion (numpy casts it to bool); a Python
//   scalar condition becomes its truth value.
// Anything else raises TypeError naming the argument and its type.
std::vector<Tensor> tensor_operands(const OpDef& op, std::initializer_list<pybind11::handle> args,
                                    std::initializer_list<const char*> names);

// numpy calls a reduction method with dtype= and out= (np.sum(t) -> t.sum(axis=None, dtype=None,
// out=None)); out= is not supported, nor dtype= where the op takes none, so anything but None raises TypeError.
void require_default_numpy_keywords(pybind11::handle dtype, pybind11::handle out);

// A pointwise op's result: a new tensor when `out` is None; else written into `out` (a Tensor, or
// numpy's tuple of one) by ts::pointwise, and `out` itself is returned, as numpy returns it. Like the
// engines below, it runs without the GIL for large inputs.
pybind11::object pointwise_into(const OpDef& op, const std::vector<Tensor>& inputs, pybind11::handle out);

// The engines of engine.h as the generated bindings call them: without the GIL for large inputs, so that
// other Python threads run meanwhile (the arguments are converted before, with it). `dtype` (sum's, prod's
// and the scans' dtype=; None for the ops that take none) is the standard's: the input cast to it first,
// the result in it.
Tensor reduce(const OpDef& op, const Tensor& x, const std::optional<std::vector<int64_t>>& axes, bool keepdims,
              pybind11::handle dtype);
Tensor index_reduce(const OpDef& op, const Tensor& x, std::optional<int64_t> axis, bool keepdims);
Tensor normalize(const OpDef& op, const Tensor& x, int64_t axis);
Tensor standardize(const OpDef& op, const std::vector<Tensor>& inputs, double eps);
Tensor contract(const OpDef& op, const Tensor& a, const Tensor& b);
Tensor scan(const OpDef& op, const Tensor& x, std::optional<int64_t> axis, bool include_initial, pybind11::handle dtype);
// An optimizer's step (ts::update): every argument a Tensor (an array-like would be updated as a copy, so it is
// refused), the state ones (all but the last, the gradient) neither requiring grad while grad mode is on nor read
// only; their versions move on as any in-place write's. Returns the parameter, args' first.
pybind11::object update(const OpDef& op, std::initializer_list<pybind11::handle> args,
                        std::initializer_list<const char*> names, const std::vector<double>& scalars);
// `stable` is accepted as the standard has it: every sort kernel sorts stably, which serves either request.
Tensor sort(const OpDef& op, const Tensor& x, int64_t axis, bool descending, bool stable);

// C-level entries in front of a pointwise op's pybind11 function (m.<name>) and Tensor method or operator
// (cls.<name>, self first; `reflected`: op(other, self)), installed after pybind11's are defined. A call of
// positional tensors and Python scalars, without keywords, while nothing records gradients, runs
// pointwise_into itself; any other call, and one that raises, goes to pybind11's (the same result or error).
void fast_function(pybind11::module_& m, const char* name, const OpDef& op);
void fast_method(pybind11::handle cls, const char* name, const OpDef& op, bool reflected);

// An in-place operator of an op that takes no out= (x @= y): `result` stored into `self` (a Tensor), which
// must have its shape (ValueError) and a dtype numpy's 'same_kind' rule casts it to (TypeError); self returned.
pybind11::object store_into(pybind11::object self, const Tensor& result);

// axis arguments: None, an int, or a sequence of ints (TypeError otherwise).
std::optional<std::vector<int64_t>> axes_arg(pybind11::handle axis);
std::optional<int64_t> axis_arg(pybind11::handle axis);

// Composite ops: the core's hand-written functions that specs name in `implementation:` (bound by the
// generated bindings). A tensor argument is a `const Tensor&`, an optional one (`Tensor?`, which may also
// take a Python scalar) and every other argument a handle the function converts itself, so its errors name
// the argument; a variadic one (`Tensor *arrays`) is pybind11::args. `Tensor[]` returns a pybind11::list,
// `(Tensor, ...)` a pybind11::tuple.
Tensor broadcast_to(const Tensor& x, pybind11::handle shape);
Tensor reshape(const Tensor& x, pybind11::handle shape, pybind11::handle copy);
Tensor permute_dims(const Tensor& x, pybind11::handle axes);
Tensor matrix_transpose(const Tensor& x);
Tensor expand_dims(const Tensor& x, pybind11::handle axis);
Tensor squeeze(const Tensor& x, pybind11::handle axis);
Tensor concat(pybind11::handle arrays, pybind11::handle axis);
Tensor stack(pybind11::handle arrays, pybind11::handle axis);
Tensor flip(const Tensor& x, pybind11::handle axis);
Tensor moveaxis(const Tensor& x, pybind11::handle source, pybind11::handle destination);
Tensor roll(const Tensor& x, pybind11::handle shift, pybind11::handle axis);
Tensor empty(pybind11::handle shape, pybind11::handle dtype, pybind11::handle device);
Tensor zeros(pybind11::handle shape, pybind11::handle dtype, pybind11::handle device);
Tensor ones(pybind11::handle shape, pybind11::handle dtype, pybind11::handle device);
Tensor full(pybind11::handle shape, pybind11::handle fill_value, pybind11::handle dtype, pybind11::handle device);
Tensor empty_like(const Tensor& x, pybind11::handle dtype, pybind11::handle device);
Tensor zeros_like(const Tensor& x, pybind11::handle dtype, pybind11::handle device);
Tensor ones_like(const Tensor& x, pybind11::handle dtype, pybind11::handle device);
Tensor full_like(const Tensor& x, pybind11::handle fill_value, pybind11::handle dtype, pybind11::handle device);
Tensor arange(pybind11::handle start, pybind11::handle stop, pybind11::handle step, pybind11::handle dtype,
              pybind11::handle device);
Tensor linspace(pybind11::handle start, pybind11::handle stop, pybind11::handle num, pybind11::handle dtype,
                pybind11::handle device, pybind11::handle endpoint);
Tensor eye(pybind11::handle n_rows, pybind11::handle n_cols, pybind11::handle k, pybind11::handle dtype,
           pybind11::handle device);
Tensor tril(const Tensor& x, pybind11::handle k);
Tensor triu(const Tensor& x, pybind11::handle k);
pybind11::list meshgrid(pybind11::args arrays, pybind11::handle indexing);
Tensor tile(const Tensor& x, pybind11::handle repetitions);
// Gathers and data-dependent results (selection.cpp): byte copies in host memory; CUDA tensors go through it.
// x with its `axis` replaced by the slices at `positions` (in range), on x's device.
Tensor gather(const Tensor& x, int64_t axis, const std::vector<int64_t>& positions);
// The row-major positions of x's nonzero elements (NaN counts, -0.0 does not).
std::vector<int64_t> true_positions(const Tensor& x);
Tensor take(const Tensor& x, const Tensor& indices, pybind11::handle axis);
Tensor take_along_axis(const Tensor& x, const Tensor& indices, pybind11::handle axis);
pybind11::tuple nonzero(const Tensor& x);
Tensor searchsorted(const Tensor& x1, const Tensor& x2, pybind11::handle side, pybind11::handle sorter);
Tensor unique_values(const Tensor& x);
pybind11::object unique_counts(const Tensor& x);
pybind11::object unique_inverse(const Tensor& x);
pybind11::object unique_all(const Tensor& x);
Tensor repeat(const Tensor& x, pybind11::handle repeats, pybind11::handle axis);
pybind11::tuple unstack(const Tensor& x, pybind11::handle axis);
pybind11::list broadcast_arrays(pybind11::args arrays);
Tensor clip(const Tensor& x, pybind11::handle min, pybind11::handle max);
Tensor diff(const Tensor& x, pybind11::handle axis, pybind11::handle n, pybind11::handle prepend, pybind11::handle append);
Tensor variance(const Tensor& x, pybind11::handle axis, pybind11::handle correction, pybind11::handle keepdims);
Tensor standard_deviation(const Tensor& x, pybind11::handle axis, pybind11::handle correction, pybind11::handle keepdims);
Tensor count_nonzero(const Tensor& x, pybind11::handle axis, pybind11::handle keepdims);
Tensor gelu(const Tensor& x, pybind11::handle approximate);
Tensor layer_norm(const Tensor& x, pybind11::handle normalized_shape, pybind11::handle weight, pybind11::handle bias,
                  pybind11::handle eps);
Tensor cross_entropy(const Tensor& logits, const Tensor& target, pybind11::handle ignore_index, pybind11::handle reduction,
                     pybind11::handle label_smoothing);
Tensor vecdot(const Tensor& x1, const Tensor& x2, pybind11::handle axis);
Tensor tensordot(const Tensor& x1, const Tensor& x2, pybind11::handle axes);

}  // namespace ts::python

// Entry points of the generated code (generated/registration.cpp, generated/bindings.cpp),
// called in this order by the module initialiser.
namespace ts::generated {
void define_ops(ts::Registry& registry);              // OpDefs of the catalog
void register_cpu_kernels(ts::Registry& registry);    // every generated CPU kernel
void register_cuda_kernels(ts::Registry& registry);   // every generated CUDA kernel (CUDA builds only)
void bind_ops(pybind11::module_& m, pybind11::class_<ts::Tensor>& tensor_class);  // functions, methods, operators
}  // namespace ts::generated

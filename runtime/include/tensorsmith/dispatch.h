// Op table: every op is an OpDef (family, promotion rule) plus kernels keyed by
// device x dtype. Generated registration code (generated/) fills it; the engines
// (engine.h) look kernels up and raise NotImplementedError naming op, device
// and dtype when an entry is missing.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tensorsmith/device.h"
#include "tensorsmith/dtype.h"

namespace ts {

class Tensor;

// ---- Kernel signatures, one per family. Strides are in BYTES. -------------

// CPU kernels are called from the engines' thread pool on parts of the work;
// CUDA kernels (host functions that launch) are called once per op call, with
// device pointers, and launch on the device's current stream.

// Pointwise: one 1-D run of n elements. data[0] is the output, data[1..arity]
// the inputs, already promoted to the kernel's dtype (see Promotion).
using PointwiseKernel = void (*)(char* const* data, const int64_t* strides, int64_t n);

// Pointwise on CUDA: the whole iteration space in one call, so one launch covers
// it. The engine broadcasts, orders and coalesces axes as for the CPU; sizes
// are outermost first, strides in BYTES per operand (0 = broadcast).
constexpr int kMaxOperands = 4;    // output + up to 3 inputs
constexpr int kMaxIterDims = 16;   // after coalescing; the engine copies beyond this
struct PointwiseNdArgs {
  char* data[kMaxOperands];
  int64_t sizes[kMaxIterDims];
  int64_t strides[kMaxOperands][kMaxIterDims];
  int ndim;        // 0: a single element
  int64_t numel;
  int device;      // CUDA device index
};
using PointwiseNdKernel = void (*)(const PointwiseNdArgs& args);

// Reduction over a 2-D view: for i < n_outer,
//   out[i * out_stride] = finalize(fold over j < n_reduce of in[i * in_outer_stride + j * in_reduce_stride]).
// n_reduce may be 0 (the op's identity, or the engine raised before the call).
struct ReduceArgs {
  char* out;
  const char* in;
  int64_t n_outer;
  int64_t n_reduce;
  int64_t out_stride;
  int64_t in_outer_stride;
  int64_t in_reduce_stride;
  int device = 0;  // CUDA device index (CUDA kernels launch on its current stream)
};
using ReduceKernel = void (*)(const ReduceArgs& args);

// Normalization (softmax family): `rows` independent rows of `cols` elements,
// input and output both contiguous row-major.
struct RowArgs {
  char* out;
  const char* in;
  int64_t rows;
  int64_t cols;
  int device = 0;  // CUDA device index
};
using RowKernel = void (*)(const RowArgs& args);

// Standardization (layer norm's core): `rows` independent rows of `cols` elements, each centred on its mean and
// scaled by 1 / sqrt(its biased variance + eps); with `g` set, that map's vector-Jacobian product for the
// gradient rows g instead. out, x and g are contiguous row-major, of the kernel's dtype.
struct StandardizeArgs {
  char* out;
  const char* x;
  const char* g;  // null for the map itself
  int64_t rows;
  int64_t cols;
  double eps;
  int device = 0;  // CUDA device index
};
using StandardizeKernel = void (*)(const StandardizeArgs& args);

// Contraction: batched GEMM, C[b] = A[b] (m x k) @ B[b] (k x n); C is contiguous row-major (row stride n).
// Strides are in ELEMENTS; batch strides may be 0 (broadcast). A[b][i, p] is
// a[b * a_batch_stride + i * a_row_stride + p * a_col_stride], B likewise. Each of A and B is laid out as a
// BLAS can take it (so a transposed view reaches the GEMM without a copy): either row-major, col_stride == 1
// and row_stride >= max(1, cols), or column-major, row_stride == 1 and col_stride >= max(1, rows).
struct GemmArgs {
  char* c;
  const char* a;
  const char* b;
  int64_t batch, m, n, k;
  int64_t a_batch_stride, b_batch_stride, c_batch_stride;
  int64_t a_row_stride, a_col_stride, b_row_stride, b_col_stride;
  int device = 0;  // CUDA device index
};
using GemmKernel = void (*)(const GemmArgs& args);

// Scan (cumulative sum and product) along one axis of a 3-D view (batch, scan, inner): for every batch
// position b and inner position i,
//   out[b, initial + j, i] = combine over k <= j of in[b, k, i]   (j < n_scan, in order)
// and where `initial` is set, out[b, 0, i] = the op's identity (out's scan extent is n_scan + 1).
// n_scan may be 0. Strides in BYTES.
struct ScanArgs {
  char* out;
  const char* in;
  int64_t n_batch, n_scan, n_inner;
  int64_t out_batch_stride, out_scan_stride, out_inner_stride;
  int64_t in_batch_stride, in_scan_stride, in_inner_stride;
  bool initial;
  int device = 0;  // CUDA device index
};
using ScanKernel = void (*)(const ScanArgs& args);

// Sort: `rows` contiguous rows of n elements (row-major), each sorted stably by the kernel's order (ascending,
// or descending: ties keep their order either way). The sorted values go to `values` or the int64 positions
// they came from to `indices` (row-major; the other is null, SortOutput). `scratch`: kSortScratchPerElement
// bytes per element (16-byte aligned) for the kernel's own use, of one row on the CPU (whose kernel sorts its
// rows one after another) and of every row on CUDA (whose threads sort theirs at once): kernels may not allocate.
constexpr int64_t kSortScratchPerElement = 48;  // two (value, int64 position) items of the widest type, complex128
struct SortArgs {
  char* values;
  int64_t* indices;
  const char* in;
  int64_t rows, n;
  bool descending;
  char* scratch;
  int device = 0;  // CUDA device index
};
using SortKernel = void (*)(const SortArgs& args);
// What a sort op's kernels write, fixed per op (sort: values, argsort: positions): a kernel holds the sort for
// its output alone (both would double its translation unit, every dtype, direction and instruction-set level).
enum class SortOutput : uint8_t { Values, Positions };

// Update (an optimizer's step): n elements of contiguous tensors of the kernel's dtype. data[0..states) are the
// state the op updates in place (the parameter first, then its moments), data[states] the gradient, read only;
// scalars[] the op's own float arguments in its signature's order (by value, so a CUDA kernel can take them).
constexpr int kMaxUpdateScalars = 8;
struct UpdateArgs {
  char* data[kMaxOperands];
  int states;
  int64_t n;
  double scalars[kMaxUpdateScalars];
  int device = 0;  // CUDA device index
};
using UpdateKernel = void (*)(const UpdateArgs& args);

// ---- Op definitions ---------------------------------------------------------

enum class Family : uint8_t {
  Pointwise,       // unary / binary / ternary elementwise (arity 1..3)
  Reduction,       // identity/combine/finalize over axes
  IndexReduction,  // argmax / argmin
  Normalization,   // softmax / log_softmax over one axis
  Contraction,     // matmul
  Scan,            // cumulative_sum / cumulative_prod along one axis
  Sort,            // sort / argsort along one axis
  Standardization, // layer norm's rows (x - mean) / sqrt(var + eps), and their gradient
  Update,          // an optimizer's step: state tensors updated in place, elementwise, from a gradient
};

// The promotion kind a spec names. Which kernel and result dtype inputs get is data, each op's type table
// (TypeRule below, generated from the spec); the kind still says how Python scalars and bool inputs are read.
// Kernel dtype = the dtype kernels are registered under.
enum class Promotion : uint8_t {
  Same,         // unary: kernel = result = input dtype
  RealValued,   // unary: kernel = input dtype, result = its real dtype (abs of complex64 is float32)
  Float,        // kernel = result = float_result_type(promote_types(inputs))
  Binary,       // kernel = result = promote_types(inputs)
  BinaryFloat,  // kernel = result = promoted, then float64 if not floating (true divide)
  Comparison,   // kernel = promote_types(inputs), result bool (a predicate such as isnan: one input)
  Logical,      // kernel = bool (inputs cast to bool), result bool
  Where,        // input 0 cast to bool; kernel = result = promote_types(inputs 1, 2)
  // reductions and scans: kernel dtype = input dtype
  ReduceSame,   // result = input dtype (max, min, sort)
  ReduceSum,    // result = sum_result_type(input) (sum, prod, cumulative_sum, cumulative_prod)
  ReduceMean,   // result = input if floating else float64 (mean)
  ReduceIndex,  // result int64 (argmax, argmin, argsort)
  ReduceBool,   // result bool: the elements' truth values folded (all, any)
};

// Values an input may not hold when the op runs in some kernel dtypes, where numpy raises (integer pow
// with a negative exponent): the engine checks the inputs before the kernel runs, so no kernel is ever
// called outside its domain (the spec's `domain`).
struct DomainRule {
  int input;            // which tensor input
  uint32_t dtypes;      // the kernel dtypes it holds for: bit i for DType i
  double low, high;     // the allowed closed range (-inf / inf: unbounded)
  std::string message;  // the ValueError's text, numpy's where numpy raises
};

// One row of an op's type table (numpy's ufunc.types): inputs whose promoted dtype is `common` run the
// kernel registered under `kernel` and give a `result`.
struct TypeRule {
  DType common, kernel, result;
};

struct OpDef {
  std::string name;
  Family family;
  int arity;           // number of tensor inputs
  Promotion promotion;
  bool has_identity;   // reductions: false means an empty reduction raises ValueError
  uint32_t promoted_inputs;  // bit i: tensor input i takes part in promotion (where's condition does not)
  // kernels[device][dtype]: a PointwiseKernel / ReduceKernel / RowKernel / GemmKernel / ScanKernel / SortKernel /
  // StandardizeKernel / UpdateKernel
  // according to `family`, stored type-erased; null = not implemented.
  std::array<std::array<void*, kNumDTypes>, kNumDeviceTypes> kernels{};
  std::vector<DomainRule> domain;
  std::array<std::optional<TypeRule>, kNumDTypes> types{};  // by common dtype
  std::vector<std::string> scalars;  // the update family's own float arguments, in the kernel's order

  void* kernel(DeviceType device, DType dtype) const;  // throws NotImplementedError
  bool has_kernel(DeviceType device, DType dtype) const;
  // Adds a domain rule (an identical one already there is kept once: definitions may run twice).
  OpDef& require(const DomainRule& rule);
  // ValueError (the rule's message) when an input holds a value outside a rule that holds for `kernel`.
  void check_domain(const std::vector<Tensor>& inputs, DType kernel) const;
  // Sets the type table (a definition that runs twice must give the same rows).
  OpDef& with_types(std::initializer_list<TypeRule> rules);
  // Names the op's own float arguments (the update family's); a definition that runs twice must give the same.
  OpDef& with_scalars(std::initializer_list<std::string> names);
  bool promotes(size_t input) const { return ((promoted_inputs >> input) & 1u) != 0; }
  // The table's row for inputs promoted to `common`; NotImplementedError where the op has none.
  const TypeRule& type_rule(DType common) const;
};

class Registry {
 public:
  static Registry& global();
  // Defines an op (idempotent for an identical definition; a conflicting one throws).
  OpDef& define(const std::string& name, Family family, int arity, Promotion promotion, bool has_identity,
                uint32_t promoted_inputs);
  void set_kernel(const std::string& name, DeviceType device, DType dtype, void* kernel);
  OpDef& get(const std::string& name);  // throws NotImplementedError for an unknown op
  std::vector<const OpDef*> ops() const;  // sorted by name

 private:
  std::vector<std::unique_ptr<OpDef>> ops_;  // pointers stay valid: generated bindings keep them
};

}  // namespace ts

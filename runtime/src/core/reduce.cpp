// Reduction engines: the input is viewed as a 2-D (kept, reduced) tensor and
// the kernel folds each row.
#include <algorithm>
#include <cstring>
#include <utility>

#include "tensorsmith/engine.h"
#include "tensorsmith/engine_limits.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/parallel.h"

namespace ts {

namespace {

using limits::kReduceGrain;
using limits::kSplitChunk;
using limits::kSplitMaxRows;

// A view of one matrix of a reduction: rows (outputs) x reduced elements.
struct Matrix {
  char* out;
  const char* in;
  int64_t rows, cols;
  int64_t out_stride, in_row_stride, in_col_stride;  // bytes
};

// Calls the kernel on blocks of rows in parallel: each output is still folded
// by one call, so results are exactly those of a single call.
void reduce_rows(ReduceKernel kernel, const Matrix& m, Device device) {
  if (device.type == DeviceType::CUDA) {  // one launch; the kernel spreads the rows over the device itself
    kernel(ReduceArgs{m.out, m.in, m.rows, m.cols, m.out_stride, m.in_row_stride, m.in_col_stride, device.index});
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kReduceGrain / std::max<int64_t>(m.cols, 1));
  parallel_for(m.rows, grain, [&](int64_t begin, int64_t end) {
    kernel(ReduceArgs{m.out + begin * m.out_stride, m.in + begin * m.in_row_stride, end - begin, m.cols,
                      m.out_stride, m.in_row_stride, m.in_col_stride});
  });
}

// Few long rows: fold fixed-size chunks of every row into partials (in the
// result dtype), in parallel over chunks, then fold the partials. Only for ops
// whose finalize is the identity and whose fold may be regrouped (the
// ReduceSum, ReduceSame and ReduceBool promotions: sum, prod, max, min, all,
// any), where the result dtype has a kernel (all and any fold their bool
// partials with their bool kernel). For floats the regrouping rounds each
// partial to the result dtype once; integers are exact.
bool can_split(const OpDef& op, DeviceType device, DType result) {
  return (op.promotion == Promotion::ReduceSum || op.promotion == Promotion::ReduceSame ||
          op.promotion == Promotion::ReduceBool) &&
         op.has_kernel(device, result);
}

int64_t split_chunks(const Matrix& m) { return (m.cols + kSplitChunk - 1) / kSplitChunk; }

// Calls the kernel on each kSplitChunk-wide chunk of every row, in parallel over chunks: the result of
// chunk c of row r goes to element [r, c] of `results` (rows x split_chunks(m)).
void fold_chunks(ReduceKernel kernel, const Matrix& m, const Tensor& results) {
  const int64_t chunks = split_chunks(m);
  const auto item = static_cast<int64_t>(results.itemsize());
  parallel_for(chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t first = c * kSplitChunk;
      kernel(ReduceArgs{results.data_ptr() + c * item, m.in + first * m.in_col_stride, m.rows,
                        std::min(kSplitChunk, m.cols - first), chunks * item, m.in_row_stride, m.in_col_stride});
    }
  });
}

void reduce_split(ReduceKernel kernel, ReduceKernel partial_kernel, const Matrix& m, DType result, Device device) {
  const int64_t chunks = split_chunks(m);
  const Tensor partials = Tensor::empty({m.rows, chunks}, result, device);
  const auto item = static_cast<int64_t>(partials.itemsize());
  fold_chunks(kernel, m, partials);
  partial_kernel(ReduceArgs{m.out, partials.data_ptr(), m.rows, chunks, m.out_stride, chunks * item, item});
}

// A mean (the ReduceMean promotion) of few long rows: each chunk's result is that chunk's mean, so the
// chunks' means are weighted by their lengths (the last chunk may be shorter), added in double and divided
// by the row's length. Like reduce_split, each chunk's result is rounded to the result dtype once.
// A mean scaled by a real factor, part by part for complex ones (a complex product would make inf * 0 a NaN).
double scaled(double v, double k) { return v * k; }
complex128 scaled(complex128 v, double k) { return {v.re * k, v.im * k}; }
double divided(double v, double k) { return v / k; }
complex128 divided(complex128 v, double k) { return {v.re / k, v.im / k}; }

// The row means of `m` from its chunks' means (rows x chunks), each weighted by its length, in Acc (double, or
// complex128 for complex means).
template <typename Acc>
Tensor weighted_row_means(const Tensor& chunk_means, const Matrix& m, int64_t chunks, DType acc, Device device) {
  const auto* mean = reinterpret_cast<const Acc*>(chunk_means.data_ptr());
  const Tensor row_means = Tensor::empty({m.rows}, acc, device);
  auto* row_mean = reinterpret_cast<Acc*>(row_means.data_ptr());
  for (int64_t r = 0; r < m.rows; ++r) {
    Acc total(0);
    for (int64_t c = 0; c < chunks; ++c) {
      total += scaled(mean[r * chunks + c], static_cast<double>(std::min(kSplitChunk, m.cols - c * kSplitChunk)));
    }
    row_mean[r] = divided(total, static_cast<double>(m.cols));
  }
  return row_means;
}

void mean_split(ReduceKernel kernel, const Matrix& m, const Tensor& out, DType result, Device device) {
  const int64_t chunks = split_chunks(m);
  const Tensor partials = Tensor::empty({m.rows, chunks}, result, device);
  fold_chunks(kernel, m, partials);
  const DType acc = is_complex(result) ? DType::Complex128 : DType::Float64;
  const Tensor chunk_means = partials.astype(acc);
  const Tensor row_means = acc == DType::Complex128 ? weighted_row_means<complex128>(chunk_means, m, chunks, acc, device)
                                                    : weighted_row_means<double>(chunk_means, m, chunks, acc, device);
  out.reshape({m.rows}).copy_from(row_means);
}

// Few long rows of an index reduction (argmax, argmin): the kernel finds the winner of each fixed-size
// chunk in parallel, then runs once more over the winners' values. The kernel keeps the first of equals,
// so a tie between chunks goes to the earlier one and the answer is a single call's, for any thread count.
void index_reduce_split(ReduceKernel kernel, const Matrix& m, DType dtype, Device device) {
  const int64_t chunks = split_chunks(m);
  const Tensor local = Tensor::empty({m.rows, chunks}, DType::Int64, device);  // winner within its chunk
  fold_chunks(kernel, m, local);
  const auto* local_index = reinterpret_cast<const int64_t*>(local.data_ptr());
  const Tensor winners = Tensor::empty({m.rows, chunks}, dtype, device);
  const auto item = static_cast<int64_t>(winners.itemsize());
  for (int64_t r = 0; r < m.rows; ++r) {
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t column = c * kSplitChunk + local_index[r * chunks + c];
      std::memcpy(winners.data_ptr() + (r * chunks + c) * item, m.in + r * m.in_row_stride + column * m.in_col_stride, item);
    }
  }
  const Tensor best = Tensor::empty({m.rows}, DType::Int64, device);  // the winning chunk
  kernel(ReduceArgs{best.data_ptr(), winners.data_ptr(), m.rows, chunks, sizeof(int64_t), chunks * item, item});
  const auto* best_chunk = reinterpret_cast<const int64_t*>(best.data_ptr());
  for (int64_t r = 0; r < m.rows; ++r) {
    const int64_t c = best_chunk[r];
    *reinterpret_cast<int64_t*>(m.out + r * m.out_stride) = c * kSplitChunk + local_index[r * chunks + c];
  }
}

std::vector<bool> reduced_axes(const std::optional<std::vector<int64_t>>& axes, int64_t ndim) {
  if (!axes) return std::vector<bool>(ndim, true);
  std::vector<bool> reduced(ndim, false);
  for (int64_t a : *axes) {
    a = normalize_axis(a, ndim);
    TS_CHECK(!reduced[a], ValueError, "duplicate value in 'axis'");
    reduced[a] = true;
  }
  return reduced;
}

// The (n_outer, n_reduce) matrix of x with the reduced axes moved last: a view
// when the kept and the reduced axes each merge into one axis, else a
// contiguous copy (kept alive by the returned tensor). Writes go to `out`.
std::pair<Tensor, Matrix> reduce_matrix(const Tensor& x, const std::vector<bool>& reduced, const Tensor& out) {
  std::vector<int64_t> perm;
  int64_t n_outer = 1, n_reduce = 1;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (!reduced[i]) {
      perm.push_back(i);
      n_outer *= x.shape()[i];
    }
  }
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (reduced[i]) {
      perm.push_back(i);
      n_reduce *= x.shape()[i];
    }
  }
  if (n_outer == 0) return {Tensor(), Matrix{out.data_ptr(), nullptr, 0, n_reduce, 0, 0, 0}};
  Tensor m = x.permute(perm).reshape({n_outer, n_reduce});
  const auto item = static_cast<int64_t>(m.itemsize());
  const Matrix matrix{out.data_ptr(), m.data_ptr(), n_outer, n_reduce, static_cast<int64_t>(out.itemsize()),
                      m.strides()[0] * item, m.strides()[1] * item};
  return {std::move(m), matrix};
}

}  // namespace

Tensor reduce(const OpDef& op, const Tensor& x, const std::optional<std::vector<int64_t>>& axes, bool keepdims) {
  const std::vector<bool> reduced = reduced_axes(axes, x.ndim());
  const auto kernel = reinterpret_cast<ReduceKernel>(op.kernel(x.device().type, kernel_dtype(op, {x.dtype()})));
  Shape out_shape;
  bool empty_reduction = false;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    empty_reduction = empty_reduction || (reduced[i] && x.shape()[i] == 0);
    if (!reduced[i] || keepdims) out_shape.push_back(reduced[i] ? 1 : x.shape()[i]);
  }
  // NumPy raises even when the result is empty too.
  TS_CHECK(!empty_reduction || op.has_identity, ValueError,
           "zero-size array to reduction operation " << op.name << " which has no identity");
  const DType result = result_dtype(op, {x.dtype()});
  Tensor out = Tensor::empty(out_shape, result, x.device());
  const auto [keep, m] = reduce_matrix(x, reduced, out);
  if (m.rows == 0) return out;
  // CUDA kernels split long rows across blocks themselves.
  const bool few_long_rows = x.device().type == DeviceType::CPU && m.cols >= 2 * kSplitChunk && m.rows <= kSplitMaxRows;
  if (few_long_rows && can_split(op, x.device().type, result)) {
    reduce_split(kernel, reinterpret_cast<ReduceKernel>(op.kernel(x.device().type, result)), m, result, x.device());
  } else if (few_long_rows && op.promotion == Promotion::ReduceMean) {
    mean_split(kernel, m, out, result, x.device());
  } else {
    reduce_rows(kernel, m, x.device());
  }
  return out;
}

Tensor index_reduce(const OpDef& op, const Tensor& x, std::optional<int64_t> axis, bool keepdims) {
  if (!axis) {
    // NumPy reduces the flattened tensor; keepdims then keeps every axis as 1.
    const Tensor flat = index_reduce(op, x.reshape({-1}), 0, false);
    return keepdims ? flat.reshape(Shape(x.ndim(), 1)) : flat;
  }
  if (x.ndim() == 0) {
    // NumPy treats a 0-d tensor as one element along axis 0 (or -1); the result stays 0-d.
    normalize_axis(*axis, 1);
    return index_reduce(op, x.reshape({1}), 0, false);
  }
  const auto kernel = reinterpret_cast<ReduceKernel>(op.kernel(x.device().type, kernel_dtype(op, {x.dtype()})));
  const int64_t ax = normalize_axis(*axis, x.ndim());
  TS_CHECK(x.shape()[ax] > 0, ValueError, "attempt to get " << op.name << " of an empty sequence");
  std::vector<bool> reduced(x.ndim(), false);
  reduced[ax] = true;
  Shape out_shape = x.shape();
  if (keepdims) {
    out_shape[ax] = 1;
  } else {
    out_shape.erase(out_shape.begin() + ax);
  }
  Tensor out = Tensor::empty(out_shape, result_dtype(op, {x.dtype()}), x.device());
  const auto [keep, m] = reduce_matrix(x, reduced, out);
  if (m.rows == 0) return out;
  if (x.device().type == DeviceType::CPU && m.cols >= 2 * kSplitChunk && m.rows <= kSplitMaxRows) {
    index_reduce_split(kernel, m, x.dtype(), x.device());  // winners are copied elements of x
  } else {
    reduce_rows(kernel, m, x.device());
  }
  return out;
}

}  // namespace ts

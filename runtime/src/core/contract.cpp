// The contraction engine: numpy.matmul on top of a batched GEMM kernel.
#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "tensorsmith/engine.h"
#include "tensorsmith/engine_limits.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/parallel.h"

namespace ts {

namespace {

constexpr const char* kSignature = "(n?,k),(k,m?)->(n?,m?)";

int64_t product(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<int64_t>()); }

Shape batch_shape(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }

Shape concat(Shape a, const Shape& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct GemmOperand {
  Tensor storage;  // keeps the matrices alive: `t` itself, or a copy in the kernel dtype
  const char* data;
  int64_t batch_stride, row_stride, col_stride;  // in elements (GemmArgs' layout rule)
  // Where no single stride walks the batch (a head split out of a wider axis, a partial broadcast): each
  // entry's offset in elements from `data`, in the batch's row-major order; the batch stride is then unused.
  std::vector<int64_t> entry_offsets;
};

// The single stride that walks the batch axes of `v` (whose leading dimensions are `batch`) in row-major
// order, 0 when every entry is the same matrix; nullopt when no single stride does (a partial broadcast).
std::optional<int64_t> batch_stride(const Tensor& v, size_t batch_ndim) {
  std::optional<int64_t> stride;
  int64_t extent = 1;  // of the batch axes already walked, innermost first
  for (size_t i = batch_ndim; i-- > 0;) {
    if (v.shape()[i] == 1) continue;
    if (!stride) stride = v.strides()[i];
    if (v.strides()[i] != *stride * extent) return std::nullopt;
    extent *= v.shape()[i];
  }
  return stride.value_or(0);
}

// The offset of every batch entry of `v`, in row-major order of the batch index.
std::vector<int64_t> entry_offsets(const Tensor& v, size_t batch_ndim) {
  std::vector<int64_t> offsets{0};
  for (size_t axis = 0; axis < batch_ndim; ++axis) {
    std::vector<int64_t> next;
    next.reserve(offsets.size() * static_cast<size_t>(v.shape()[axis]));
    for (const int64_t base : offsets) {
      for (int64_t i = 0; i < v.shape()[axis]; ++i) next.push_back(base + i * v.strides()[axis]);
    }
    offsets = std::move(next);
  }
  return offsets;
}

// `v`'s matrices as GemmArgs reads them, row- or column-major: (row stride, column stride) with one of them 1;
// nullopt where neither fits. A single row or column has no stride along its one-element axis: any leading
// dimension fits it.
std::optional<std::pair<int64_t, int64_t>> matrix_layout(const Tensor& v) {
  const int64_t rows = v.shape()[v.ndim() - 2], cols = v.shape()[v.ndim() - 1];
  const int64_t rs = v.strides()[v.ndim() - 2], cs = v.strides()[v.ndim() - 1];
  if ((cols == 1 || cs == 1) && (rows == 1 || rs >= std::max<int64_t>(1, cols))) {
    return std::pair{rows == 1 ? std::max<int64_t>(1, cols) : rs, int64_t{1}};
  }
  if ((rows == 1 || rs == 1) && (cols == 1 || cs >= std::max<int64_t>(1, rows))) {
    return std::pair{int64_t{1}, cols == 1 ? std::max<int64_t>(1, rows) : cs};
  }
  return std::nullopt;
}

// `t` (batch..., rows, cols) as the GEMM reads it over `batch`: as it is where its matrices are row- or
// column-major with one batch stride (a transposed or sliced view needs no copy), or with an offset per
// entry where `per_entry` allows (the products are then run one call each), else a contiguous copy.
GemmOperand gemm_operand(const Tensor& t, const Shape& batch, DType dtype, bool per_entry) {
  const int64_t rows = t.shape()[t.ndim() - 2], cols = t.shape()[t.ndim() - 1];
  const Tensor v = t.expand(concat(batch, {rows, cols}));
  if (v.dtype() == dtype) {
    if (const auto layout = matrix_layout(v)) {
      const std::optional<int64_t> bs = batch_stride(v, batch.size());
      if (bs && *bs >= 0) return {v, v.data_ptr(), *bs, layout->first, layout->second, {}};
      if (per_entry) return {v, v.data_ptr(), 0, layout->first, layout->second, entry_offsets(v, batch.size())};
    }
  }
  const bool shared = product(batch_shape(t)) == 1;  // dropping size-1 batch axes is always a view
  const Tensor m = (shared ? t.reshape({rows, cols}) : v).astype(dtype);
  return {m, m.data_ptr(), shared ? 0 : rows * cols, std::max<int64_t>(1, cols), 1, {}};
}

Shape broadcast_batch(const Tensor& a, const Tensor& b) {
  try {
    return broadcast_shapes(batch_shape(a), batch_shape(b));
  } catch (const ValueError&) {
    throw ValueError("matmul: the batch dimensions of shapes " + shape_str(a.shape()) + " and " + shape_str(b.shape()) +
                     " cannot be broadcast together");
  }
}

}  // namespace

Tensor contract(const OpDef& op, const Tensor& a, const Tensor& b) {
  common_device(op, {a, b});
  for (int i = 0; i < 2; ++i) {
    TS_CHECK((i == 0 ? a : b).ndim() > 0, ValueError,
             op.name << ": Input operand " << i << " does not have enough dimensions (has 0, gufunc core with signature "
                     << kSignature << " requires 1)");
  }
  const DType dtype = kernel_dtype(op, {a.dtype(), b.dtype()});
  const auto kernel = reinterpret_cast<GemmKernel>(op.kernel(a.device().type, dtype));

  // 1-D operands become a row (a) or a column (b), squeezed from the result.
  const Tensor a2 = a.ndim() == 1 ? a.unsqueeze(0) : a;
  const Tensor b2 = b.ndim() == 1 ? b.unsqueeze(1) : b;
  const int64_t m = a2.shape()[a2.ndim() - 2], k = a2.shape()[a2.ndim() - 1];
  const int64_t kb = b2.shape()[b2.ndim() - 2], n = b2.shape()[b2.ndim() - 1];
  TS_CHECK(k == kb, ValueError,
           op.name << ": Input operand 1 has a mismatch in its core dimension 0, with gufunc signature " << kSignature
                   << " (size " << kb << " is different from " << k << ")");
  const Shape batch = broadcast_batch(a2, b2);

  Tensor c = Tensor::empty(concat(batch, {m, n}), dtype, a.device());
  if (c.numel() > 0) {
    // Small products on the CPU (limits::kSerialGemmProduct: a product the BLAS runs on the calling thread) are
    // one call each, split over the pool: the BLAS's own batched call threads such a batch at a cost larger than
    // the work (64 float32 products of 32x16 @ 16x32: 87 us on 2 cores, 20 on one thread), and an operand whose
    // batch no single stride walks is then read where it is rather than copied (attention's heads, split out of
    // one projection: 100-150 us with the copies, 20-25 without).
    const int64_t entries = product(batch);
    const bool per_entry = a.device().type == DeviceType::CPU && entries > 1 && m * n * k < limits::kSerialGemmProduct;
    const GemmOperand ga = gemm_operand(a2, batch, dtype, per_entry), gb = gemm_operand(b2, batch, dtype, per_entry);
    // One B for every batch entry and A's rows evenly spaced across its matrices (as C's are): a single GEMM
    // over all of A's rows.
    const bool fold = ga.entry_offsets.empty() && gb.batch_stride == 0 && gb.entry_offsets.empty() &&
                      ga.batch_stride != 0 && ga.col_stride == 1 && ga.batch_stride == m * ga.row_stride;
    if (per_entry && !fold) {
      const size_t item = itemsize(dtype);
      const auto entry = [&](const GemmOperand& g, int64_t i) {
        return g.data + (g.entry_offsets.empty() ? i * g.batch_stride : g.entry_offsets[static_cast<size_t>(i)]) *
                            static_cast<int64_t>(item);
      };
      const int64_t grain = std::max<int64_t>(1, limits::kGemmGrain / std::max<int64_t>(1, m * n * k));
      parallel_for(entries, grain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          kernel(GemmArgs{c.data_ptr() + i * m * n * static_cast<int64_t>(item), entry(ga, i), entry(gb, i), 1, m, n, k,
                          0, 0, 0, ga.row_stride, ga.col_stride, gb.row_stride, gb.col_stride, a.device().index});
        }
      });
    } else {
      const int64_t batches = fold ? 1 : entries, rows = fold ? entries * m : m;
      kernel(GemmArgs{c.data_ptr(), ga.data, gb.data, batches, rows, n, k, fold ? 0 : ga.batch_stride,
                      gb.batch_stride, fold ? 0 : m * n, ga.row_stride, ga.col_stride, gb.row_stride, gb.col_stride,
                      a.device().index});
    }
  }
  Shape out_shape = batch;
  if (a.ndim() > 1) out_shape.push_back(m);
  if (b.ndim() > 1) out_shape.push_back(n);
  return c.reshape(out_shape);
}

}  // namespace ts

// The sort engine (sort, argsort): the sorted axis is moved last and the input made contiguous, so a kernel
// sorts whole contiguous rows; the result is moved back. Kernels are given their scratch (they may not
// allocate): kSortScratchPerElement bytes per element of one row on the CPU, where a kernel sorts its rows
// one after another, and of every row on CUDA (SortArgs).
#include <algorithm>

#include "tensorsmith/engine.h"
#include "tensorsmith/engine_limits.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/parallel.h"

namespace ts {

using limits::kSortGrain;

Tensor sort(const OpDef& op, const Tensor& x, int64_t axis, bool descending) {
  const int64_t ax = normalize_axis(axis, x.ndim());  // numpy refuses a 0-d tensor: it has no axis -1
  const DType dtype = kernel_dtype(op, {x.dtype()});
  const auto kernel = reinterpret_cast<SortKernel>(op.kernel(x.device().type, dtype));
  const DType result = result_dtype(op, {x.dtype()});
  // argsort's result is the positions (int64); sort's the values, in the input's dtype.
  const bool positions = op.promotion == Promotion::ReduceIndex;

  std::vector<int64_t> perm;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (i != ax) perm.push_back(i);
  }
  perm.push_back(ax);
  const Tensor moved = x.permute(perm);
  const Tensor in = moved.dtype() == dtype ? moved.contiguous() : moved.astype(dtype);
  const Tensor out = Tensor::empty(in.shape(), result, x.device());
  const int64_t n = x.shape()[ax];
  const int64_t rows = n == 0 ? 0 : out.numel() / n;
  const auto item = static_cast<int64_t>(in.itemsize());
  const auto out_item = static_cast<int64_t>(out.itemsize());
  const auto args_for = [&](int64_t begin, int64_t end, char* scratch) {
    char* target = out.data_ptr() + begin * n * out_item;
    return SortArgs{positions ? nullptr : target,
                    positions ? reinterpret_cast<int64_t*>(target) : nullptr,
                    in.data_ptr() + begin * n * item,
                    end - begin,
                    n,
                    descending,
                    scratch,
                    x.device().index};
  };
  if (rows > 0 && x.device().type == DeviceType::CUDA) {
    const Tensor scratch = Tensor::empty({rows * n * kSortScratchPerElement}, DType::UInt8, x.device());
    kernel(args_for(0, rows, scratch.data_ptr()));  // one launch; the kernel spreads the rows itself
  } else if (rows > 0) {
    // Rows are independent: blocks of rows in parallel give exactly the serial result.
    parallel_for(rows, std::max<int64_t>(1, kSortGrain / n), [&](int64_t begin, int64_t end) {
      const Tensor scratch = Tensor::empty({n * kSortScratchPerElement}, DType::UInt8, x.device());
      kernel(args_for(begin, end, scratch.data_ptr()));
    });
  }

  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  return out.permute(inverse);
}

}  // namespace ts

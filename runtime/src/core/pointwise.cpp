// The pointwise engine: promotion, broadcasting and a TensorIterator-style
// loop that hands 1-D runs to the kernels.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "tensorsmith/engine.h"
#include "tensorsmith/engine_limits.h"
#include "tensorsmith/env.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/parallel.h"

namespace ts {

namespace {

using limits::kPointwiseGrain;

// Outputs too large to stay in the last-level cache are written with
// non-temporal stores: an ordinary store first reads the line it fills (a
// third more memory traffic for a binary op), and the lines would only evict
// the inputs. The kernel writes each piece of a run to a small scratch
// buffer, streamed to the output from there. Small, so that the piece's input
// lines and the scratch stay in L1 between the kernel and the copy: a 16M-element
// float32 add(out=) on 2 threads (Zen 5) took 3.0 ms with 512-byte pieces, 3.5 with
// 1 KiB, 4.7 with 16 KiB, and 4.0 with plain stores.
constexpr int64_t kScratchBytes = limits::kStreamScratchBytes;

#if defined(__SSE2__)
// A number read from one of cpu0's sysfs cache files ("3", "32768K"); 0 where absent or malformed.
int64_t sysfs_cache_value(int index, const char* file, bool kib) {
  char path[96];
  std::snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/%s", index, file);
  std::FILE* f = std::fopen(path, "r");
  if (f == nullptr) return 0;
  long long value = 0;
  char unit = 0;
  const int got = std::fscanf(f, "%lld%c", &value, &unit);
  std::fclose(f);
  if (got < 1 || value <= 0) return 0;
  if (!kib) return static_cast<int64_t>(value);
  return got == 2 && unit == 'K' ? static_cast<int64_t>(value) << 10 : 0;
}

// The size of the last-level cache cpu0 shares with its neighbours, 0 where unknown. Linux's sysfs gives the
// slice one core complex shares (32 MiB on Zen 5); glibc's sysconf may give the whole socket's or a VM host's
// (384 MiB on our CI machines), which would keep every realistic output from streaming.
int64_t last_level_cache_bytes() {
  int64_t level = 0, bytes = 0;
  for (int index = 0; index < 8; ++index) {
    const int64_t l = sysfs_cache_value(index, "level", false);
    if (l > level) {
      level = l;
      bytes = sysfs_cache_value(index, "size", true);
    }
  }
  if (bytes > 0) return bytes;
#if defined(_SC_LEVEL3_CACHE_SIZE)
  return std::max<int64_t>(sysconf(_SC_LEVEL3_CACHE_SIZE), 0);  // 0 or -1 where unknown
#else
  return 0;
#endif
}

// TS_STREAM_MIN_BYTES overrides the threshold (tests stream every output with 1).
int64_t stream_threshold_bytes() {
  static const int64_t threshold = []() -> int64_t {
    if (const std::optional<int64_t> n =
            env_int("TS_STREAM_MIN_BYTES", 1, INT64_MAX, "a positive integer")) {
      return *n;
    }
    // Half the last-level cache that this CPU shares, with a floor so that mid-sized results, which the next
    // op is likely to read back, stay cached.
    return std::max<int64_t>(limits::kStreamFloorBytes, last_level_cache_bytes() / 2);
  }();
  return threshold;
}

// memcpy with non-temporal stores for the 16-byte-aligned middle of dst.
void stream_copy(char* dst, const char* src, size_t bytes) {
  const size_t head = std::min(bytes, (16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16);
  std::memcpy(dst, src, head);
  size_t i = head;
  for (; i + 16 <= bytes; i += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
  }
  std::memcpy(dst + i, src + i, bytes - i);
}

// Runs the kernel on [0, len) of a run of `operands` pointers through the scratch buffer; the output run
// is contiguous.
void run_streamed(PointwiseKernel kernel, char* const* ptrs, const int64_t* strides, size_t operands, int64_t len) {
  // On the stack: the address of a thread_local buffer (TLS of a shared library) was fetched through
  // __tls_get_addr for every 16 bytes the copy stored (a streamed 16M-element add: 5.3 -> 2.6 ms).
  alignas(64) char scratch[kScratchBytes];
  const int64_t item = strides[0];
  const int64_t piece = kScratchBytes / item;
  char* const out = ptrs[0];
  std::array<char*, kMaxOperands> local{scratch};
  for (int64_t done = 0; done < len; done += piece) {
    const int64_t n = std::min(piece, len - done);
    for (size_t k = 1; k < operands; ++k) local[k] = ptrs[k] + done * strides[k];
    kernel(local.data(), strides, n);
    stream_copy(out + done * item, scratch, static_cast<size_t>(n * item));
  }
}
#endif

// One axis of the iteration space with every operand's byte stride along it
// (0 past the last operand, which no comparison below is changed by).
struct Axis {
  int64_t size;
  std::array<int64_t, kMaxOperands> strides;
};
using Axes = SmallVector<Axis, kInlineDims>;

// Axes of size > 1, outermost first (size-1 axes never move a pointer).
Axes iteration_axes(const std::vector<Tensor>& operands) {
  TS_CHECK(operands.size() <= static_cast<size_t>(kMaxOperands), ValueError,
           "the pointwise engine takes at most " << kMaxOperands << " operands, got " << operands.size());
  Axes axes;
  const Shape& shape = operands[0].shape();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    Axis axis{shape[d], {}};
    for (size_t k = 0; k < operands.size(); ++k) {
      axis.strides[k] = operands[k].strides()[d] * static_cast<int64_t>(operands[k].itemsize());
    }
    axes.push_back(axis);
  }
  return axes;
}

// Whether `a` should be iterated outside `b`: decided by the first operand
// (output first) whose strides along both are nonzero and differ.
bool outer_than(const Axis& a, const Axis& b) {
  for (size_t k = 0; k < a.strides.size(); ++k) {
    const int64_t sa = std::llabs(a.strides[k]), sb = std::llabs(b.strides[k]);
    if (sa != 0 && sb != 0 && sa != sb) return sa > sb;
  }
  return false;
}

// Largest strides outermost. Insertion sort: `outer_than` is not a strict weak
// order when stride-0 operands leave pairs undecided, and ndim is small.
void order_axes(Axes& axes) {
  for (size_t i = 1; i < axes.size(); ++i) {
    for (size_t j = i; j > 0 && outer_than(axes[j], axes[j - 1]); --j) {
      std::swap(axes[j - 1], axes[j]);
    }
  }
}

// Merges an axis into the one inside it when, for every operand, stepping the
// outer axis once equals stepping the inner one through its whole extent.
Axes coalesce(const Axes& axes) {
  Axes merged;  // innermost first while building
  for (size_t i = axes.size(); i-- > 0;) {
    const Axis& outer = axes[i];
    bool fits = !merged.empty();
    for (size_t k = 0; fits && k < outer.strides.size(); ++k) {
      fits = outer.strides[k] == merged.back().strides[k] * merged.back().size;
    }
    if (fits) {
      merged.back().size *= outer.size;
    } else {
      merged.push_back(outer);
    }
  }
  return Axes(merged.rbegin(), merged.rend());
}

// The dtype the kernel reads input `i` in.
DType operand_dtype(const OpDef& op, size_t i, DType kernel) {
  const bool as_bool = op.promotion == Promotion::Logical || (op.promotion == Promotion::Where && i == 0);
  return as_bool ? DType::Bool : kernel;
}

// The dtype the promoted inputs share (numpy's result_type of them).
DType common_dtype(const OpDef& op, const DTypes& dtypes) {
  std::optional<DType> common;
  for (size_t i = 0; i < dtypes.size(); ++i) {
    if (op.promotes(i)) common = common ? promote_types(*common, dtypes[i]) : dtypes[i];
  }
  TS_CHECK(common.has_value(), TypeError, op.name << ": expected at least one input that takes part in promotion");
  return *common;
}

// The CUDA kernel's view of `operands`: the coalesced axes in one struct, so
// that a single launch covers every element (see PointwiseNdArgs).
PointwiseNdArgs nd_args(const std::vector<Tensor>& operands, const Axes& axes, Device device) {
  PointwiseNdArgs args{};
  for (size_t k = 0; k < operands.size(); ++k) args.data[k] = operands[k].data_ptr();
  args.ndim = static_cast<int>(axes.size());
  args.numel = operands[0].numel();
  args.device = device.index;
  for (size_t d = 0; d < axes.size(); ++d) {
    args.sizes[d] = axes[d].size;
    for (size_t k = 0; k < operands.size(); ++k) args.strides[k][d] = axes[d].strides[k];
  }
  return args;
}

void launch_nd(std::vector<Tensor> operands, PointwiseNdKernel kernel, Device device) {
  if (operands[0].numel() == 0) return;
  Axes axes = iteration_axes(operands);
  order_axes(axes);
  axes = coalesce(axes);
  if (axes.size() > static_cast<size_t>(kMaxIterDims)) {
    // Views this tangled are rare: contiguous inputs (and the fresh contiguous output) coalesce to one axis.
    for (size_t k = 1; k < operands.size(); ++k) operands[k] = operands[k].contiguous();
    axes = iteration_axes(operands);
    order_axes(axes);
    axes = coalesce(axes);
  }
  kernel(nd_args(operands, axes, device));
}

}  // namespace

Device common_device(const OpDef& op, const std::vector<Tensor>& inputs) {
  const Device device = inputs[0].device();
  for (const Tensor& t : inputs) {
    TS_CHECK(t.device() == device, ValueError,
             op.name << ": expected all inputs on one device, got " << device_str(device) << " and "
                     << device_str(t.device()));
  }
  return device;
}

void for_each_run(const std::vector<Tensor>& operands, PointwiseKernel kernel) {
  if (operands[0].numel() == 0) return;
  const Axes axes = [&] {
    Axes a = iteration_axes(operands);
    order_axes(a);
    return coalesce(a);
  }();

  std::array<char*, kMaxOperands> base{};
  for (size_t k = 0; k < operands.size(); ++k) base[k] = operands[k].data_ptr();
  if (axes.empty()) {  // 0-d, or only size-1 axes: a single element
    const std::array<int64_t, kMaxOperands> zero{};
    kernel(base.data(), zero.data(), 1);
    return;
  }

  // Elements [begin, end) in iteration order: an odometer over the outer axes,
  // the innermost axis being the kernel's run (cut at the range's ends).
  const Axis& inner = axes.back();
  const size_t n_outer_axes = axes.size() - 1;
  int64_t total = 1;
  bool distinct_outputs = true;  // no stride-0 output axis (a broadcast destination)
  for (const Axis& axis : axes) {
    total *= axis.size;
    distinct_outputs = distinct_outputs && axis.strides[0] != 0;
  }
#if defined(__SSE2__)
  const int64_t out_item = static_cast<int64_t>(operands[0].itemsize());
  const bool stream = distinct_outputs && inner.strides[0] == out_item && out_item <= kScratchBytes &&
                      total * out_item >= stream_threshold_bytes();
#else
  constexpr bool stream = false;
#endif
  if (axes.size() == 1 && !stream && total < 2 * kPointwiseGrain) {
    // One run, too short to split: a single call, without the odometer's and the pool's bookkeeping.
    // num_threads() still reads TS_NUM_THREADS, so a bad value is an error at the first op of any size.
    num_threads();
    kernel(base.data(), inner.strides.data(), total);
    return;
  }
  // Every loop over the operands runs all kMaxOperands of them (an axis's strides are 0 past the last
  // operand): a fixed count the compiler unrolls into the same vector stores and loads each time, where a loop to
  // the operand count mixed 8- and 16-byte accesses to the pointers, whose failed store forwarding cost each
  // run ~10 ns (a (4096, 8) - (4096, 1) subtract: 50 us, PyTorch 20).
  const auto run_range = [&](int64_t begin, int64_t end) {
    std::array<char*, kMaxOperands> row = base;  // the current row's first element
    SmallVector<int64_t, kInlineDims> index(n_outer_axes, 0);  // the odometer
    int64_t rest = begin / inner.size;
    int64_t col = begin % inner.size;
    for (size_t d = n_outer_axes; d-- > 0;) {
      index[d] = rest % axes[d].size;
      rest /= axes[d].size;
      for (int k = 0; k < kMaxOperands; ++k) row[k] += index[d] * axes[d].strides[k];
    }
    for (int64_t pos = begin; pos < end;) {
      const int64_t len = std::min(inner.size - col, end - pos);
      std::array<char*, kMaxOperands> run;
      for (int k = 0; k < kMaxOperands; ++k) run[k] = row[k] + col * inner.strides[k];
#if defined(__SSE2__)
      if (stream) {
        run_streamed(kernel, run.data(), inner.strides.data(), operands.size(), len);
      } else {
        kernel(run.data(), inner.strides.data(), len);
      }
#else
      kernel(run.data(), inner.strides.data(), len);
#endif
      pos += len;
      if (pos == end) break;
      col = 0;
      for (size_t d = n_outer_axes; d-- > 0;) {  // next row; some row remains, so no axis overflows
        const Axis& axis = axes[d];
        if (++index[d] < axis.size) {
          for (int k = 0; k < kMaxOperands; ++k) row[k] += axis.strides[k];
          break;
        }
        index[d] = 0;
        for (int k = 0; k < kMaxOperands; ++k) row[k] -= axis.strides[k] * (axis.size - 1);
      }
    }
  };
  if (!distinct_outputs) {
    run_range(0, total);
    return;
  }
  // Each output element is written by exactly one range, so any split gives the same result.
  parallel_for(total, kPointwiseGrain, [&](int64_t begin, int64_t end) {
    run_range(begin, end);
#if defined(__SSE2__)
    if (stream) _mm_sfence();  // the streamed stores are visible before the pool reports this range done
#endif
  });
}

DType kernel_dtype(const OpDef& op, const DTypes& inputs) { return op.type_rule(common_dtype(op, inputs)).kernel; }

DType result_dtype(const OpDef& op, const DTypes& inputs) { return op.type_rule(common_dtype(op, inputs)).result; }

bool same_kind_castable(DType from, DType to) {
  const auto rank = [](DType d) {
    return is_bool(d) ? 0 : is_unsigned_integer(d) ? 1 : is_signed_integer(d) ? 2 : is_complex(d) ? 4 : 3;
  };
  return rank(from) <= rank(to);
}

namespace {

// Whether a size > 1 axis of `t` has stride 0, so that elements share memory (a broadcast_to view).
// An empty tensor has no elements to share (and numpy gives its axes any strides).
bool has_broadcast_axis(const Tensor& t) {
  if (t.numel() == 0) return false;
  for (size_t d = 0; d < t.shape().size(); ++d) {
    if (t.shape()[d] > 1 && t.strides()[d] == 0) return true;
  }
  return false;
}

// What both forms of pointwise() resolve first: the device, the dtypes, the broadcast shape and the kernel.
struct Resolved {
  Device device;
  DType kernel_type;
  DType result;
  Shape shape;
  void* kernel;
};

Resolved resolve(const OpDef& op, const std::vector<Tensor>& inputs) {
  TS_CHECK(inputs.size() == static_cast<size_t>(op.arity), TypeError,
           op.name << " takes " << op.arity << " tensor inputs, got " << inputs.size());
  const Device device = common_device(op, inputs);
  DTypes dtypes;
  ShapeRefs shapes;
  for (const Tensor& t : inputs) {
    dtypes.push_back(t.dtype());
    shapes.push_back(&t.shape());
  }
  const DType kernel_type = kernel_dtype(op, dtypes);
  op.check_domain(inputs, kernel_type);  // before any kernel runs: none is ever called outside its domain
  return {device, kernel_type, result_dtype(op, dtypes), broadcast_shapes(shapes), op.kernel(device.type, kernel_type)};
}

// A CPU result of one short run (the one kernel call for_each_run would make) whose inputs need no cast
// and are each laid out as the result (contiguous, of its shape) or a single element: the kernel is called
// with the pointers and strides for_each_run would compute, without building the operands' views (most of
// a small op's time). False, having done nothing, for any other case.
bool run_short_directly(const OpDef& op, const Resolved& r, const std::vector<Tensor>& inputs, const Tensor& result) {
  const int64_t n = result.numel();
  if (r.device.type != DeviceType::CPU || n == 0 || n >= 2 * kPointwiseGrain || !result.is_contiguous()) return false;
  const int64_t out_item = static_cast<int64_t>(result.itemsize());
#if defined(__SSE2__)
  if (n > 1 && n * out_item >= stream_threshold_bytes()) return false;
#endif
  std::array<char*, kMaxOperands> ptrs{result.data_ptr()};
  std::array<int64_t, kMaxOperands> strides{n > 1 ? out_item : 0};  // one element: no axis, every stride 0
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (x.dtype() != operand_dtype(op, i, r.kernel_type)) return false;
    if (x.numel() == 1) {
      strides[i + 1] = 0;
    } else if (x.shape() == result.shape() && x.is_contiguous()) {
      strides[i + 1] = static_cast<int64_t>(x.itemsize());
    } else {
      return false;
    }
    ptrs[i + 1] = x.data_ptr();
  }
  num_threads();  // as for_each_run: a bad TS_NUM_THREADS is an error at the first op of any size
  reinterpret_cast<PointwiseKernel>(r.kernel)(ptrs.data(), strides.data(), n);
  return true;
}

// Runs the kernel into `result` (of the broadcast shape and result dtype, written whole).
void run_into(const OpDef& op, const Resolved& r, const std::vector<Tensor>& inputs, const Tensor& result) {
  if (run_short_directly(op, r, inputs, result)) return;
  std::vector<Tensor> operands;
  operands.reserve(inputs.size() + 1);
  operands.push_back(result);
  for (size_t i = 0; i < inputs.size(); ++i) {
    // Cast at the input's own shape; broadcasting stays a stride-0 view.
    const DType want = operand_dtype(op, i, r.kernel_type);
    const Tensor& x = inputs[i];
    operands.push_back(x.dtype() == want ? x.expand(result.shape()) : x.astype(want).expand(result.shape()));
  }
  if (r.device.type == DeviceType::CUDA) {
    launch_nd(operands, reinterpret_cast<PointwiseNdKernel>(r.kernel), r.device);
  } else {
    for_each_run(operands, reinterpret_cast<PointwiseKernel>(r.kernel));
  }
}

}  // namespace

Tensor pointwise(const OpDef& op, const std::vector<Tensor>& inputs) {
  const Resolved r = resolve(op, inputs);
  const Tensor result = Tensor::empty(r.shape, r.result, r.device);
  run_into(op, r, inputs, result);
  return result;
}

Tensor pointwise(const OpDef& op, const std::vector<Tensor>& inputs, const Tensor& out) {
  const Resolved r = resolve(op, inputs);
  TS_CHECK(out.device() == r.device, ValueError,
           op.name << ": out is on " << device_str(out.device()) << ", the inputs on " << device_str(r.device));
  TS_CHECK(r.shape == out.shape() || broadcast_shapes(r.shape, out.shape()) == out.shape(), ValueError,
           op.name << ": out has shape " << shape_str(out.shape()) << ", which is not the broadcast shape "
                   << shape_str(broadcast_shapes(r.shape, out.shape())));
  TS_CHECK(!has_broadcast_axis(out), ValueError,
           op.name << ": out is a broadcast view (a stride-0 axis): its elements share memory");
  TS_CHECK(same_kind_castable(r.result, out.dtype()), TypeError,
           op.name << ": cannot cast the " << dtype_name(r.result) << " result to out's dtype "
                   << dtype_name(out.dtype()) << " with casting rule 'same_kind'");
  // An input in out's memory could be overwritten before it is read: read it from a copy. The gate
  // judges kernels on fresh outputs only, so even the exact alias (out=x) is not left to the kernel.
  // (Most calls have no overlap: those run on the inputs as given, with no vector of copies to build.)
  std::vector<Tensor> copies;  // the inputs with those in out's memory cloned; empty where none is
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!may_overlap(inputs[i], out)) continue;
    if (copies.empty()) copies = inputs;
    copies[i] = inputs[i].clone();
  }
  const std::vector<Tensor>& sources = copies.empty() ? inputs : copies;
  if (out.dtype() == r.result && out.is_contiguous()) {
    run_into(op, r, sources, out);  // the layout and dtype a fresh result would have
  } else {
    const Tensor result = Tensor::empty(out.shape(), r.result, r.device);
    run_into(op, r, sources, result);
    Tensor(out).copy_from(result);
  }
  return out;
}

}  // namespace ts

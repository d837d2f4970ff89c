// The sort machinery of both devices: a stable sort of one row by the kernel's comparator. Generated sort
// kernels hold only the comparator (`less`, the op's order); this is the loop around it, shared by every sort
// op (the CPU kernel sorts its rows one after another, the CUDA kernel a row per thread).
//
// Sorting is bound by the comparisons' outcomes, which are random on unsorted data: every merge step here
// turns the outcome into data (which element to write, which input advances) rather than a branch, so a
// comparator without short-circuit operators (the family's contract asks for `|` and `&`) sorts without
// mispredictions, and runs of equal length are merged from both ends at once, two independent chains.
//
// On the CPU a row of real numbers is sorted by key (tensorsmith/radix_sort.h: short rows by a sorting network
// at the AVX2 and AVX-512 levels, rows from 128 elements by radix) and checked with the comparator; other rows,
// and those where the check fails, take the comparator sort below.
// There the row is split into ordered buckets (a stable sample sort: each element compared with 7 splitters
// drawn from the row) until they are 64 elements or fewer, each then sorted by counting, for every element,
// the others that go before it. Both count comparisons, in loops the compiler vectorizes, rather than merging
// element by element: a row of 4096 float32 sorts in 94 us on one core rather than 149, an argsort in 98
// rather than 179. The CUDA thread per row merge sorts its whole row.
#pragma once

#include <cstdint>

#include "tensorsmith/complex.h"
#include "tensorsmith/dispatch.h"
#include "tensorsmith/isa.h"
#include "tensorsmith/macros.h"

namespace ts::sorting {

// Row r's scratch (SortArgs): on the CPU the rows of a call are sorted one after another in the same one row's
// worth, whose lines stay in cache (a 4096x4096 float32 sort touched 800 MB of fresh scratch, a row's own each,
// and took 40% longer); on CUDA, whose threads sort their rows at once, each row has its own.
TS_HOST_DEVICE inline char* scratch_of(const SortArgs& args, int64_t r) {
#if defined(__CUDACC__)
  return args.scratch + r * args.n * kSortScratchPerElement;
#else
  (void)r;
  return args.scratch;
#endif
}

}  // namespace ts::sorting

#if !defined(__CUDACC__)
#include "tensorsmith/radix_sort.h"
#endif

namespace ts::sorting {

// One element being sorted with where it came from, for argsort. Values alone are sorted as they are
// stored (so NaN payloads and signed zeros come out as they went in): a stable merge needs no positions.
template <typename T>
struct Item {
  T value;
  int64_t at;
};

template <typename T>
TS_HOST_DEVICE inline const T& value_of(const T& v) {
  return v;
}
template <typename T>
TS_HOST_DEVICE inline const T& value_of(const Item<T>& item) {
  return item.value;
}

// Whether a goes before b: ascending by K::less(a, b) on values converted to compute_t, descending by
// K::less(b, a). A stable sort by either keeps ties in their order.
template <typename K, typename compute_t, bool kDescending, typename E>
TS_HOST_DEVICE inline bool before(const E& a, const E& b) {
  const compute_t x = static_cast<compute_t>(value_of(a)), y = static_cast<compute_t>(value_of(b));
  return kDescending ? K::less(y, x) : K::less(x, y);
}

// `second ? b : a` without a branch.
template <typename E>
TS_HOST_DEVICE inline E choose(bool second, const E& a, const E& b) {
#ifdef __CUDA_ARCH__
  return second ? b : a;  // a select instruction; an indexed local array would go to local memory
#else
  // GCC compiles `second ? b : a` of floats back into a branch, which mispredicts half the time here.
  const E pair[2] = {a, b};
  return pair[second];
#endif
}

// from[low, mid) and from[mid, high), each sorted, merged stably into to[low, high): ties take the left
// run's element first.
template <typename K, typename compute_t, bool kDescending, typename E>
TS_HOST_DEVICE inline void merge(const E* from, E* to, int64_t low, int64_t mid, int64_t high) {
  const E* left = from + low;
  const E* right = from + mid;
  E* out = to + low;
  if (high - mid == mid - low) {
    // Equal runs (every merge of a row whose length is a power of two): the first half of the result from
    // the fronts and the second half from the backs. Each half takes exactly one run length of elements, so
    // neither end's pointers leave their runs before the loop ends (the parity merge).
    const E* left_last = from + mid - 1;
    const E* right_last = from + high - 1;
    E* out_last = to + high - 1;
    for (int64_t step = low; step < mid; ++step) {
      const bool take_right = before<K, compute_t, kDescending>(*right, *left);
      *out++ = choose(take_right, *left, *right);
      right += take_right;
      left += !take_right;
      const bool left_goes_last = before<K, compute_t, kDescending>(*right_last, *left_last);  // ties: right last
      *out_last-- = choose(left_goes_last, *right_last, *left_last);
      left_last -= left_goes_last;
      right_last -= !left_goes_last;
    }
    return;
  }
  const E* left_end = right;
  const E* right_end = from + high;
  while (left < left_end && right < right_end) {
    const bool take_right = before<K, compute_t, kDescending>(*right, *left);
    *out++ = choose(take_right, *left, *right);
    right += take_right;
    left += !take_right;
  }
  while (left < left_end) *out++ = *left++;
  while (right < right_end) *out++ = *right++;
}

// from[0, n) sorted stably, bottom-up between from and to; returns the one that holds the result.
template <typename K, typename compute_t, bool kDescending, typename E>
TS_HOST_DEVICE inline E* merge_sort(E* from, E* to, int64_t n) {
  for (int64_t width = 1; width < n; width *= 2) {
    for (int64_t low = 0; low < n; low += 2 * width) {
      const int64_t mid = low + width < n ? low + width : n;
      const int64_t high = low + 2 * width < n ? low + 2 * width : n;
      merge<K, compute_t, kDescending>(from, to, low, mid, high);
    }
    E* swap = from;
    from = to;
    to = swap;
  }
  return from;
}

#if !defined(__CUDACC__)
// merge_sort out of line on the CPU, one copy per comparator, direction and element type, compiled for the baseline
// level, for the merges where being inlined gains nothing: ranges the bucket split does not divide (rare) and
// complex rows (as fast either way). Inlined at each call site and instruction-set level, these copies were a third
// of a sort kernel's compile time. Short rows of real numbers keep an inlined merge compiled for the kernel's level:
// this copy sorted rows of 8 and 20 float64 10-30% slower called from the AVX-512 variant.
template <typename K, typename compute_t, bool kDescending, typename E>
__attribute__((noinline)) E* merge_sort_out_of_line(E* from, E* to, int64_t n) {
  return merge_sort<K, compute_t, kDescending>(from, to, n);
}

// ---- The CPU's bucket split (a stable sample sort) ------------------------------------------------------

namespace buckets {

constexpr int64_t kBuckets = 8;      // a split sorts into kBuckets buckets by kBuckets - 1 splitters
constexpr int64_t kOversample = 4;   // sample elements per bucket on long ranges (fewer on short ones)
constexpr int64_t kChunk = 256;      // elements whose values and buckets are held at once on the stack
constexpr int64_t kRankBelow = 64;   // ranges up to this long are rank sorted
constexpr int64_t kMergeBelow = 24;  // rows shorter than this are merge sorted (cheaper than rank sort's setup)
constexpr int64_t kMaxDepth = 10;    // splits before a range is merge sorted whatever its length: even splits
                                     // never get there (64 * 8^10 elements); uneven ones cost at most this
                                     // many linear passes more
constexpr int64_t kMaxPending = kMaxDepth * (kBuckets - 1) + 1;  // ranges waiting, taken depth first

struct Range {
  int64_t begin, n, depth;
};

// bucket[i]: how many splitters go strictly before values[i]. Monotone in the order, so bucket j's elements
// all go before (or tie with) bucket j + 1's; a loop over values the compiler vectorizes.
template <typename K, typename compute_t, bool kDescending>
TS_FORCE_INLINE void classify(const compute_t* values, int64_t m, const compute_t* splitters, int32_t* bucket) {
  for (int64_t i = 0; i < m; ++i) {
    int32_t c = 0;
#pragma GCC unroll 8
    for (int64_t j = 0; j + 1 < kBuckets; ++j) c += before<K, compute_t, kDescending>(splitters[j], values[i]);
    bucket[i] = c;
  }
}

// a[0, n) (n <= kRankBelow) sorted stably in place by each element's rank: how many elements go before it,
// with those that tie counted when they are ahead of it in the row. Every pair is compared, with no branch:
// the compiler vectorizes the count, far cheaper than merging a short row. b[0, n) is scratch.
template <typename K, typename compute_t, bool kDescending, typename E>
TS_FORCE_INLINE void rank_sort(E* a, E* b, int64_t n) {
  compute_t values[kRankBelow];
  int32_t rank[kRankBelow];
  for (int64_t i = 0; i < n; ++i) {
    values[i] = static_cast<compute_t>(value_of(a[i]));
    rank[i] = 0;
  }
  // Element j's share of every other element's rank: it counts for those it goes before and, where it ties
  // with one, only when it is ahead in the row. j == i never counts, so a rank is below n whatever `less` says.
  for (int64_t j = 0; j < n; ++j) {
    const compute_t y = values[j];
    for (int64_t i = 0; i < j; ++i) rank[i] += before<K, compute_t, kDescending>(y, values[i]);
    for (int64_t i = j + 1; i < n; ++i) rank[i] += !before<K, compute_t, kDescending>(values[i], y);
  }
  for (int64_t i = 0; i < n; ++i) b[rank[i]] = a[i];
  for (int64_t i = 0; i < n; ++i) a[i] = b[i];
}

// Whether a[0, n) all tie with a[0] (a row of one value, or a bucket between two tied splitters): such a
// range is already in stable order.
template <typename K, typename compute_t, bool kDescending, typename E>
TS_FORCE_INLINE bool all_tied(const E* a, int64_t n) {
  const compute_t first = static_cast<compute_t>(value_of(a[0]));
  int64_t apart = 0;
  for (int64_t i = 1; i < n; ++i) {
    const compute_t x = static_cast<compute_t>(value_of(a[i]));
    apart += before<K, compute_t, kDescending>(first, x) | before<K, compute_t, kDescending>(x, first);
  }
  return apart == 0;
}

// a[0, n) merge sorted stably in place, b[0, n) its scratch.
template <typename K, typename compute_t, bool kDescending, typename E>
TS_FORCE_INLINE void merge_sort_in_place(E* a, E* b, int64_t n) {
  const E* sorted = merge_sort_out_of_line<K, compute_t, kDescending>(a, b, n);
  if (sorted != a) {
    for (int64_t i = 0; i < n; ++i) a[i] = sorted[i];
  }
}

// a[0, n) split stably into buckets by splitters drawn from it: each bucket is a range of a, in order, and its
// elements keep their order; the ranges are pushed to `pending`. Returns false, having moved nothing, where
// every element fell into one bucket (the row's elements alike, or the sample unlucky).
template <typename K, typename compute_t, bool kDescending, typename E>
TS_FORCE_INLINE bool split(E* a, E* b, uint8_t* ids, const Range& range, Range* pending, int64_t& n_pending) {
  const int64_t n = range.n;
  const int64_t oversample = n >= 2048 ? kOversample : n >= 512 ? 2 : 1;
  const int64_t sample_size = kBuckets * oversample;
  static_assert(kBuckets * kOversample <= kRankBelow, "the sample is rank sorted");
  E sample[kBuckets * kOversample], sample_scratch[kBuckets * kOversample];
  for (int64_t i = 0; i < sample_size; ++i) sample[i] = a[(2 * i + 1) * n / (2 * sample_size)];
  rank_sort<K, compute_t, kDescending>(sample, sample_scratch, sample_size);
  compute_t splitters[kBuckets - 1];
  for (int64_t j = 0; j + 1 < kBuckets; ++j) {
    splitters[j] = static_cast<compute_t>(value_of(sample[(j + 1) * oversample]));
  }

  // Each element's bucket, once (the comparator may be inconsistent: the scatter must see the counted ids).
  int64_t count[kBuckets] = {};
  compute_t values[kChunk];
  int32_t bucket[kChunk];
  for (int64_t at = 0; at < n; at += kChunk) {
    const int64_t m = n - at < kChunk ? n - at : kChunk;
    for (int64_t i = 0; i < m; ++i) values[i] = static_cast<compute_t>(value_of(a[at + i]));
    classify<K, compute_t, kDescending>(values, m, splitters, bucket);
    for (int64_t i = 0; i < m; ++i) {
      ids[at + i] = static_cast<uint8_t>(bucket[i]);
      ++count[bucket[i]];
    }
  }
  int64_t next[kBuckets];
  for (int64_t j = 0, start = 0; j < kBuckets; start += count[j++]) {
    if (count[j] == n) return false;
    next[j] = start;
  }
  for (int64_t i = 0; i < n; ++i) b[next[ids[i]]++] = a[i];
  for (int64_t i = 0; i < n; ++i) a[i] = b[i];
  for (int64_t j = kBuckets - 1, end = n; j >= 0; end -= count[j--]) {
    if (count[j] > 1) pending[n_pending++] = Range{range.begin + end - count[j], count[j], range.depth + 1};
  }
  return true;
}

// a[0, n) sorted stably in place: split into buckets until they are short enough to rank sort (merge sorted
// where splitting makes no progress). b[0, n) and ids[0, n) are scratch.
template <typename K, typename compute_t, bool kDescending, typename E>
TS_FORCE_INLINE void sort(E* a, E* b, uint8_t* ids, int64_t n) {
  Range pending[kMaxPending];
  int64_t n_pending = 0;
  pending[n_pending++] = Range{0, n, 0};
  while (n_pending > 0) {
    const Range range = pending[--n_pending];
    E* const at = a + range.begin;
    E* const scratch = b + range.begin;
    if (range.n <= kRankBelow) {
      rank_sort<K, compute_t, kDescending>(at, scratch, range.n);
    } else if (range.depth == kMaxDepth ||
               !split<K, compute_t, kDescending>(at, scratch, ids + range.begin, range, pending, n_pending)) {
      if (!all_tied<K, compute_t, kDescending>(at, range.n)) {
        merge_sort_in_place<K, compute_t, kDescending>(at, scratch, range.n);
      }
    }
  }
}

}  // namespace buckets
#endif

// from[0, n) sorted stably, with to[0, n) as scratch; returns the one that holds the result. The CPU splits
// into buckets (not complex values, compared as pairs, which its vectorized comparisons are not made for, nor
// short rows); the CUDA thread merge sorts.
template <typename K, typename compute_t, bool kDescending, typename E>
TS_HOST_DEVICE TS_FORCE_INLINE E* sort_buffer(E* from, E* to, int64_t n) {
#if !defined(__CUDACC__)
  if constexpr (is_complex_v<compute_t>) {
    return merge_sort_out_of_line<K, compute_t, kDescending>(from, to, n);
  } else {
    static_assert(sizeof(E) * 2 + 1 <= kSortScratchPerElement, "two buffers and a bucket id per element");
    if (n >= buckets::kMergeBelow) {
      buckets::sort<K, compute_t, kDescending>(from, to, reinterpret_cast<uint8_t*>(to + n), n);
      return from;
    }
  }
#endif
  return merge_sort<K, compute_t, kDescending>(from, to, n);
}

template <typename K, typename T, typename compute_t, SortOutput kOutput, bool kDescending, isa::Level kLevel>
TS_HOST_DEVICE TS_FORCE_INLINE void sort_row_in_order(const SortArgs& args, int64_t r) {
  static_assert(sizeof(Item<T>) * 2 <= kSortScratchPerElement, "the engine's scratch holds two items per element");
  const int64_t n = args.n;
#if !defined(__CUDACC__)
  if constexpr (!std::is_void_v<radix::KeyType<compute_t>>) {  // real numbers: by key where the comparator agrees
    if (radix::applies<compute_t>(kLevel, n) &&
        radix::sort_row<K, T, compute_t, kOutput, kDescending>(args, r, kLevel)) {
      return;
    }
  }
#endif
  const T* row = reinterpret_cast<const T*>(args.in) + r * n;
  char* scratch = scratch_of(args, r);
  if constexpr (kOutput == SortOutput::Values) {
    T* from = reinterpret_cast<T*>(scratch);
    for (int64_t i = 0; i < n; ++i) from[i] = row[i];
    const T* sorted = sort_buffer<K, compute_t, kDescending>(from, from + n, n);
    T* out = reinterpret_cast<T*>(args.values) + r * n;
    for (int64_t i = 0; i < n; ++i) out[i] = sorted[i];
  } else {
    Item<T>* from = reinterpret_cast<Item<T>*>(scratch);
    for (int64_t i = 0; i < n; ++i) from[i] = Item<T>{row[i], i};
    const Item<T>* sorted = sort_buffer<K, compute_t, kDescending>(from, from + n, n);
    int64_t* positions = args.indices + r * n;
    for (int64_t i = 0; i < n; ++i) positions[i] = sorted[i].at;
  }
}

// Row r of args sorted stably: its values into args.values (kOutput Values) or its source positions into
// args.indices (Positions). kLevel: the instruction-set variant of the CPU kernel calling (its short rows' keys
// may take vector code).
template <typename K, typename T, typename compute_t, SortOutput kOutput, isa::Level kLevel = isa::Level::Baseline>
TS_HOST_DEVICE TS_FORCE_INLINE void sort_row(const SortArgs& args, int64_t r) {
  if (args.descending) {
    sort_row_in_order<K, T, compute_t, kOutput, true, kLevel>(args, r);
  } else {
    sort_row_in_order<K, T, compute_t, kOutput, false, kLevel>(args, r);
  }
}

}  // namespace ts::sorting

// The sort machinery of both devices: a stable merge sort of one row by the kernel's comparator. Generated
// sort kernels hold only the comparator (`less`, the op's order); this is the loop around it, shared by
// every sort op (the CPU kernel sorts its rows one after another, the CUDA kernel a row per thread).
//
// Sorting is bound by the comparisons' outcomes, which are random on unsorted data: every merge step here
// turns the outcome into data (which element to write, which input advances) rather than a branch, so a
// comparator without short-circuit operators (the family's contract asks for `|` and `&`) sorts without
// mispredictions, and runs of equal length are merged from both ends at once, two independent chains.
#pragma once

#include <cstdint>

#include "tensorsmith/dispatch.h"
#include "tensorsmith/macros.h"

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

template <typename K, typename T, typename compute_t, bool kDescending>
TS_HOST_DEVICE inline void sort_row_in_order(const SortArgs& args, int64_t r) {
  static_assert(sizeof(Item<T>) * 2 <= kSortScratchPerElement, "the engine's scratch holds two items per element");
  const int64_t n = args.n;
  const T* row = reinterpret_cast<const T*>(args.in) + r * n;
  char* scratch = args.scratch + r * n * kSortScratchPerElement;
  if (args.indices == nullptr) {  // values only
    T* from = reinterpret_cast<T*>(scratch);
    for (int64_t i = 0; i < n; ++i) from[i] = row[i];
    const T* sorted = merge_sort<K, compute_t, kDescending>(from, from + n, n);
    T* out = reinterpret_cast<T*>(args.values) + r * n;
    for (int64_t i = 0; i < n; ++i) out[i] = sorted[i];
    return;
  }
  Item<T>* from = reinterpret_cast<Item<T>*>(scratch);
  for (int64_t i = 0; i < n; ++i) from[i] = Item<T>{row[i], i};
  const Item<T>* sorted = merge_sort<K, compute_t, kDescending>(from, from + n, n);
  int64_t* positions = args.indices + r * n;
  for (int64_t i = 0; i < n; ++i) positions[i] = sorted[i].at;
  if (args.values != nullptr) {
    T* out = reinterpret_cast<T*>(args.values) + r * n;
    for (int64_t i = 0; i < n; ++i) out[i] = sorted[i].value;
  }
}

// Row r of args sorted stably: its values into args.values and/or its source positions into args.indices.
template <typename K, typename T, typename compute_t>
TS_HOST_DEVICE inline void sort_row(const SortArgs& args, int64_t r) {
  if (args.descending) {
    sort_row_in_order<K, T, compute_t, true>(args, r);
  } else {
    sort_row_in_order<K, T, compute_t, false>(args, r);
  }
}

}  // namespace ts::sorting

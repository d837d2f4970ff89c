// The sort machinery of both devices: a stable merge sort of one row by the kernel's comparator. Generated
// sort kernels hold only the comparator (`less`, the op's order); this is the loop around it, shared by
// every sort op (the CPU kernel sorts its rows one after another, the CUDA kernel a row per thread).
#pragma once

#include <cstdint>

#include "tensorsmith/dispatch.h"
#include "tensorsmith/macros.h"

namespace ts::sorting {

// One element being sorted: its value as stored (so NaN payloads and signed zeros come out as they went
// in) and where it came from.
template <typename T>
struct Item {
  T value;
  int64_t at;
};

constexpr int64_t kInsertionRun = 16;  // runs this short are sorted by insertion before merging

// Whether a goes before b: ascending by K::less(a, b) on values converted to compute_t, descending by
// K::less(b, a). A stable sort by either keeps ties in their order.
template <typename K, typename T, typename compute_t>
TS_HOST_DEVICE inline bool before(const Item<T>& a, const Item<T>& b, bool descending) {
  const compute_t x = static_cast<compute_t>(a.value), y = static_cast<compute_t>(b.value);
  return descending ? K::less(y, x) : K::less(x, y);
}

// Row r of args, sorted stably: runs of kInsertionRun by insertion, then merged bottom-up between the
// row's two halves of scratch (ties take the left run's element first).
template <typename K, typename T, typename compute_t>
TS_HOST_DEVICE inline void sort_row(const SortArgs& args, int64_t r) {
  static_assert(sizeof(Item<T>) * 2 <= kSortScratchPerElement, "the engine's scratch holds two items per element");
  const int64_t n = args.n;
  const T* row = reinterpret_cast<const T*>(args.in) + r * n;
  Item<T>* from = reinterpret_cast<Item<T>*>(args.scratch + r * n * kSortScratchPerElement);
  Item<T>* to = from + n;
  for (int64_t i = 0; i < n; ++i) from[i] = Item<T>{row[i], i};
  for (int64_t start = 0; start < n; start += kInsertionRun) {
    const int64_t end = start + kInsertionRun < n ? start + kInsertionRun : n;
    for (int64_t i = start + 1; i < end; ++i) {
      const Item<T> item = from[i];
      int64_t j = i;
      for (; j > start && before<K, T, compute_t>(item, from[j - 1], args.descending); --j) from[j] = from[j - 1];
      from[j] = item;
    }
  }
  for (int64_t width = kInsertionRun; width < n; width *= 2) {
    for (int64_t low = 0; low < n; low += 2 * width) {
      const int64_t mid = low + width < n ? low + width : n;
      const int64_t high = low + 2 * width < n ? low + 2 * width : n;
      int64_t i = low, j = mid, k = low;
      while (i < mid && j < high) to[k++] = before<K, T, compute_t>(from[j], from[i], args.descending) ? from[j++] : from[i++];
      while (i < mid) to[k++] = from[i++];
      while (j < high) to[k++] = from[j++];
    }
    Item<T>* swap = from;
    from = to;
    to = swap;
  }
  if (args.values != nullptr) {
    T* out = reinterpret_cast<T*>(args.values) + r * n;
    for (int64_t i = 0; i < n; ++i) out[i] = from[i].value;
  }
  if (args.indices != nullptr) {
    int64_t* out = args.indices + r * n;
    for (int64_t i = 0; i < n; ++i) out[i] = from[i].at;
  }
}

}  // namespace ts::sorting

// The CPU's fast path for sorting a row of real numbers: keys that order as numpy does, sorted without
// comparisons (a stable least-significant-digit radix sort, or on short rows a sorting network) and checked
// against the kernel's comparator.
//
// A comparison sort of a row of 4096 float32 takes about 12 rounds of data-dependent work per element; a radix
// sort four passes of 8-bit digits that never compare (31-33 us a row on one core against the bucket sort's
// 88-97, -O3; numpy's AVX2 quicksort 23). On short rows the passes' digit counts cost more than the elements:
// there keys of 32 and 64 bits go through tensorsmith/sort_network.h's vector network (AVX2 and AVX-512).
// The keys are numpy's order for real types (NaN after every number, -0.0 tied with +0.0, NaNs tied among
// themselves), as unsigned integers. Values alone move as their keys where every key gives its value back
// (integers; floats without NaN or -0.0); otherwise the sort moves (key, position) entries and values come out
// of the row itself, with their bits (NaN payloads, zeros' signs).
//
// The kernel's comparator still decides the order: every adjacent pair of the result is checked with it (the
// keys' order and ties must be the comparator's), and a row where they disagree is sorted again by the
// comparator. Where the comparator is a strict weak order that agrees on adjacent pairs, the result is exactly
// its stable sort (ties are key ties, which a stable radix leaves in row order; the network's ties are equal
// keys alone, which stand for equal values, or entries, which hold their positions and so never tie).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tensorsmith/dispatch.h"
#include "tensorsmith/isa.h"
#include "tensorsmith/macros.h"
#include "tensorsmith/sort_network.h"

namespace ts::sorting::radix {

// Rows the network does not take are radix sorted from these lengths (shorter: the bucket sort is as fast).
constexpr int64_t kFrom = 128;          // keys up to 32 bits
constexpr int64_t kWideKeysFrom = 512;  // 64-bit keys (8 passes of 8-bit digits)
template <typename U>
constexpr int64_t radix_from() {  // the shortest row of keys U radix sorted
  return sizeof(U) <= 4 ? kFrom : kWideKeysFrom;
}
// The longest row sorted by key: a position fits in the low half of a packed entry.
constexpr int64_t kLongestRow = int64_t{0xffffffff};

// The unsigned key type of compute_t, void where numpy's order is not one of a key (complex numbers).
template <typename compute_t, typename = void>
struct KeyOf {
  using type = void;
};
template <typename compute_t>
struct KeyOf<compute_t, std::enable_if_t<std::is_integral_v<compute_t> || std::is_floating_point_v<compute_t>>> {
  using type = std::conditional_t<sizeof(compute_t) == 1, uint8_t,
                                  std::conditional_t<sizeof(compute_t) == 2, uint16_t,
                                                     std::conditional_t<sizeof(compute_t) == 4, uint32_t, uint64_t>>>;
};
template <typename compute_t>
using KeyType = typename KeyOf<compute_t>::type;

// A key type's sign bit, and the bits of +inf in an IEEE float of its width (4 or 8 bytes).
template <typename U>
inline constexpr U kSignBit = static_cast<U>(U(1) << (8 * sizeof(U) - 1));
template <typename U>
inline constexpr U kInfinityBits = sizeof(U) == 4 ? U(0x7f800000u) : U(0x7ff0000000000000ull);

// v's key: a < b in numpy's ascending order exactly where key(a) < key(b), and the two tie exactly where their
// keys are equal.
template <typename compute_t>
TS_FORCE_INLINE KeyType<compute_t> key(compute_t v) {
  using U = KeyType<compute_t>;
  constexpr U kSign = kSignBit<U>;
  if constexpr (std::is_same_v<compute_t, bool>) {
    return static_cast<U>(v);
  } else if constexpr (std::is_integral_v<compute_t>) {
    return std::is_signed_v<compute_t> ? static_cast<U>(static_cast<U>(v) ^ kSign) : static_cast<U>(v);
  } else {
    static_assert(sizeof(compute_t) == sizeof(U), "an IEEE float of the key's width");
    constexpr U kInfinity = kInfinityBits<U>;
    U bits;
    std::memcpy(&bits, &v, sizeof bits);
    bits = (bits & static_cast<U>(~kSign)) > kInfinity ? static_cast<U>(kInfinity + 1) : bits;  // one NaN, last
    bits = bits == kSign ? U(0) : bits;                                                         // -0.0 is +0.0
    // Negative numbers: all bits flipped (larger magnitudes first); the others: the sign bit set.
    const U flip = static_cast<U>(static_cast<U>(U(0) - static_cast<U>(bits >> (8 * sizeof(U) - 1))) | kSign);
    return static_cast<U>(bits ^ flip);
  }
}

// v from its key, where the key was made without loss: integers, and floats other than NaN and -0.0.
template <typename compute_t>
TS_FORCE_INLINE compute_t value_of_key(KeyType<compute_t> k) {
  using U = KeyType<compute_t>;
  constexpr U kSign = kSignBit<U>;
  if constexpr (std::is_same_v<compute_t, bool>) {
    return k != 0;
  } else if constexpr (std::is_integral_v<compute_t>) {
    return static_cast<compute_t>(std::is_signed_v<compute_t> ? static_cast<U>(k ^ kSign) : k);
  } else {
    const U bits = (k & kSign) != 0 ? static_cast<U>(k ^ kSign) : static_cast<U>(~k);
    compute_t v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
}

// Whether every element of row[0, n) comes back from its key: no NaN (their payloads are one key) nor -0.0 (the
// key of +0.0) among floats.
template <typename compute_t, typename T>
TS_FORCE_INLINE bool keys_lossless(const T* row, int64_t n) {
  if constexpr (std::is_integral_v<compute_t>) {
    return true;
  } else {
    using U = KeyType<compute_t>;
    constexpr U kSign = kSignBit<U>;
    constexpr U kInfinity = kInfinityBits<U>;
    U lossy = 0;  // an integer: GCC vectorizes an OR of integers, not of bools
    for (int64_t i = 0; i < n; ++i) {
      const compute_t v = static_cast<compute_t>(row[i]);
      U bits;
      std::memcpy(&bits, &v, sizeof bits);
      lossy |= static_cast<U>(bits == kSign) | static_cast<U>((bits & static_cast<U>(~kSign)) > kInfinity);
    }
    return lossy == 0;
  }
}

// What the radix sort moves: a key alone (values only, where the keys give them back), or a key with the row
// position it came from. Keys up to 32 bits share one word with the position (the key above it, so that
// comparing words compares keys first); wider ones have a word each. A key alone is a plain integer, so that
// loops over them vectorize.
struct PackedEntry {
  uint64_t bits;
};
struct WideEntry {
  uint64_t key;
  uint64_t at;
};
template <typename U>
using Entry = std::conditional_t<(sizeof(U) <= 4), PackedEntry, WideEntry>;

template <typename E, typename U>
TS_FORCE_INLINE E make_entry(U k, int64_t at) {
  if constexpr (std::is_same_v<E, U>) {
    return k;
  } else if constexpr (std::is_same_v<E, PackedEntry>) {
    return PackedEntry{static_cast<uint64_t>(k) << 32 | static_cast<uint64_t>(at)};
  } else {
    return WideEntry{k, static_cast<uint64_t>(at)};
  }
}
template <typename U, typename = std::enable_if_t<std::is_unsigned_v<U>>>
TS_FORCE_INLINE uint64_t key_of(U k) {
  return k;
}
TS_FORCE_INLINE uint64_t key_of(PackedEntry e) { return e.bits >> 32; }
TS_FORCE_INLINE uint64_t key_of(const WideEntry& e) { return e.key; }
TS_FORCE_INLINE int64_t position_of(PackedEntry e) { return static_cast<int64_t>(e.bits & 0xffffffffu); }
TS_FORCE_INLINE int64_t position_of(const WideEntry& e) { return static_cast<int64_t>(e.at); }

// to[i] = row[i]'s entry (its key ^ flip, and i), for i in [0, n). The network's rows make theirs in a loop
// compiled for the network's level (one copy per key, entry and element type, not per kernel): with AVX-512 a
// row of 256 float32 sorts 10% faster than with the baseline's vectors here.
template <typename compute_t, typename E, typename T>
TS_FORCE_INLINE void make_entries(const T* row, E* to, int64_t n, KeyType<compute_t> flip) {
  for (int64_t i = 0; i < n; ++i) {
    to[i] = make_entry<E>(static_cast<KeyType<compute_t>>(key<compute_t>(static_cast<compute_t>(row[i])) ^ flip), i);
  }
}
#if TS_ISA_VARIANTS
template <typename compute_t, typename E, typename T>
TS_TARGET_AVX2
    __attribute__((noinline)) void make_entries_avx2(const T* row, E* to, int64_t n, KeyType<compute_t> flip) {
  make_entries<compute_t>(row, to, n, flip);
}
template <typename compute_t, typename E, typename T>
TS_TARGET_AVX512 __attribute__((noinline)) void make_entries_avx512(const T* row, E* to, int64_t n,
                                                                    KeyType<compute_t> flip) {
  make_entries<compute_t>(row, to, n, flip);
}
#endif
template <typename compute_t, typename E, typename T>
TS_FORCE_INLINE void make_entries_at(isa::Level level, const T* row, E* to, int64_t n, KeyType<compute_t> flip) {
#if TS_ISA_VARIANTS
  if (level == isa::Level::AVX512) return make_entries_avx512<compute_t>(row, to, n, flip);
  if (level == isa::Level::AVX2) return make_entries_avx2<compute_t>(row, to, n, flip);
#endif
  (void)level;
  make_entries<compute_t>(row, to, n, flip);
}

// row[0, n)'s keys (descending: their complements, so that ties keep their order too) as entries E, sorted
// between from[0, n) and to[0, n) (contiguous: from + n == to); returns the one that holds the result, or null
// where neither way below suits the row (the caller sorts it by the comparator). Rows the network takes at
// this level (entries of 32 or 64 bits, short rows) are sorted by it in from, padded into to. Others from kFrom
// elements long (kWideKeysFrom for 64-bit keys) by LSD radix, a pass per byte of the key; a pass whose byte is
// the same for every entry moves nothing. Not inlined, and not a template of the kernel's comparator or of the
// sort's direction: one copy per key and entry type serves every instruction-set variant of a kernel (the
// radix loops, bound by the scatter, gain nothing from wider vectors; the network is compiled once per level
// in sort_network.h), which keeps a sort kernel's compile time what it was (11-bit digits, one pass fewer for
// 32-bit keys, sped long rows by 7% and would have doubled the copies).
template <typename compute_t, typename E, typename T>
__attribute__((noinline)) const E* sort_keys(const T* row, E* from, E* to, int64_t n, bool descending,
                                             isa::Level level) {
  using U = KeyType<compute_t>;
  constexpr int kPasses = static_cast<int>(sizeof(U));
  const U flip = descending ? static_cast<U>(~U(0)) : U(0);
  if constexpr (!std::is_same_v<E, WideEntry>) {
    using Word = std::conditional_t<std::is_same_v<E, PackedEntry>, uint64_t, E>;  // what the network orders
    static_assert(sizeof(Word) == sizeof(E), "an entry is its word");
    if (network::applies<Word>(level, n)) {
      make_entries_at<compute_t>(level, row, from, n, flip);
      network::sort(level, reinterpret_cast<Word*>(from), n);
      return from;
    }
  }
  if (n < radix_from<U>()) return nullptr;
  uint32_t count[kPasses][256] = {};
  for (int64_t i = 0; i < n; ++i) {  // the entries and every pass's digit counts, in one read of the row
    const U k = static_cast<U>(key<compute_t>(static_cast<compute_t>(row[i])) ^ flip);
    from[i] = make_entry<E>(k, i);
#pragma GCC unroll 8
    for (int pass = 0; pass < kPasses; ++pass) ++count[pass][(uint64_t{k} >> (8 * pass)) & 0xff];
  }
  for (int pass = 0; pass < kPasses; ++pass) {
    uint32_t* next = count[pass];  // counts turned into each digit's next slot
    bool one_digit = false;
    uint32_t start = 0;
    for (int d = 0; d < 256; ++d) {
      const uint32_t c = next[d];
      one_digit |= static_cast<int64_t>(c) == n;
      next[d] = start;
      start += c;
    }
    if (one_digit) continue;
    const int shift = 8 * pass;
    for (int64_t i = 0; i < n; ++i) {
      const E e = from[i];
      to[next[(key_of(e) >> shift) & 0xff]++] = e;
    }
    E* swap = from;
    from = to;
    to = swap;
  }
  return from;
}

// Whether a row of compute_t (n long) may take the keyed path at this level (sort_keys may still decline it).
template <typename compute_t>
constexpr bool applies(isa::Level level, int64_t n) {
  if constexpr (std::is_void_v<KeyType<compute_t>>) {
    return false;
  } else {
    using U = KeyType<compute_t>;
    const bool radix = n >= radix_from<U>();
    return n >= 2 && n <= kLongestRow &&
           (radix || network::applies<Entry<U>>(level, n) || network::applies<U>(level, n));
  }
}

// Whether the adjacent entries a, b are in the keys' order (a's key below b's).
template <typename U, typename = std::enable_if_t<std::is_unsigned_v<U>>>
TS_FORCE_INLINE bool keys_ordered(U a, U b) {
  return a < b;
}
TS_FORCE_INLINE bool keys_ordered(PackedEntry a, PackedEntry b) { return (a.bits >> 32) < (b.bits >> 32); }
TS_FORCE_INLINE bool keys_ordered(const WideEntry& a, const WideEntry& b) { return a.key < b.key; }

// Whether the kernel's order disagrees with the keys on the adjacent values a, b (their entries ea, eb): it must
// put a before b where the keys are ordered and tie them where the keys tie (descending: b before a in its
// ascending order). Without branches, so that loops of it vectorize.
template <typename K, typename compute_t, bool kDescending, typename E>
TS_FORCE_INLINE int32_t disagree(compute_t a, compute_t b, const E& ea, const E& eb) {
  const auto before = [](compute_t x, compute_t y) { return kDescending ? K::less(y, x) : K::less(x, y); };
  const int32_t ordered = keys_ordered(ea, eb);
  return (static_cast<int32_t>(before(a, b)) ^ ordered) | (static_cast<int32_t>(before(b, a)) & ~ordered);
}

// values[i] = value(sorted[i]) for i in [0, n); returns whether the kernel's order agrees with the keys on every
// adjacent pair of the values written. Each in a loop of its own, which the compiler vectorizes, compiled for the
// kernel's level (one copy per kernel, element type and level): with the check in AVX-512 rather than the
// baseline's vectors, where it was a third of the row's time, a row of 256 float32 sorts 13% faster.
template <typename K, typename compute_t, bool kDescending, typename T, typename E, typename Value>
TS_FORCE_INLINE bool write_values_checked(T* values, const E* sorted, int64_t n, Value value) {
  for (int64_t i = 0; i < n; ++i) values[i] = value(sorted[i]);
  int32_t disagrees = 0;
  for (int64_t i = 1; i < n; ++i) {
    disagrees |= disagree<K, compute_t, kDescending>(static_cast<compute_t>(values[i - 1]),
                                                     static_cast<compute_t>(values[i]), sorted[i - 1], sorted[i]);
  }
  return disagrees == 0;
}
#if TS_ISA_VARIANTS
template <typename K, typename compute_t, bool kDescending, typename T, typename E, typename Value>
TS_TARGET_AVX2
    __attribute__((noinline)) bool write_values_checked_avx2(T* values, const E* sorted, int64_t n, Value value) {
  return write_values_checked<K, compute_t, kDescending>(values, sorted, n, value);
}
template <typename K, typename compute_t, bool kDescending, typename T, typename E, typename Value>
TS_TARGET_AVX512 __attribute__((noinline)) bool write_values_checked_avx512(T* values, const E* sorted, int64_t n,
                                                                            Value value) {
  return write_values_checked<K, compute_t, kDescending>(values, sorted, n, value);
}
#endif

// sorted[0, n)'s values (value(entry)) or positions (kOutput) written to args; returns whether the comparator
// agrees with the keys on every adjacent pair: ordered where the keys are, tied where they tie.
template <typename K, typename T, typename compute_t, SortOutput kOutput, bool kDescending, typename E, typename Value>
TS_FORCE_INLINE bool write_checked(const SortArgs& args, int64_t r, const E* sorted, Value value, isa::Level level) {
  const int64_t n = args.n;
  if constexpr (kOutput == SortOutput::Values) {
    T* const values = reinterpret_cast<T*>(args.values) + r * n;
#if TS_ISA_VARIANTS
    if (level == isa::Level::AVX512) {
      return write_values_checked_avx512<K, compute_t, kDescending>(values, sorted, n, value);
    }
    if (level == isa::Level::AVX2)
      return write_values_checked_avx2<K, compute_t, kDescending>(values, sorted, n, value);
#endif
    (void)level;
    return write_values_checked<K, compute_t, kDescending>(values, sorted, n, value);
  } else {
    (void)level;
    int64_t* const positions = args.indices + r * n;
    for (int64_t i = 0; i < n; ++i) positions[i] = position_of(sorted[i]);
    int32_t disagrees = 0;  // the values come out of the row where they are compared
    for (int64_t i = 1; i < n; ++i) {
      disagrees |=
          disagree<K, compute_t, kDescending>(static_cast<compute_t>(value(sorted[i - 1])),
                                              static_cast<compute_t>(value(sorted[i])), sorted[i - 1], sorted[i]);
    }
    return disagrees == 0;
  }
}

// Row r of args sorted stably by key, its values or positions (kOutput) written. Returns false where the
// comparator disagrees with the keys on some adjacent pair of the result, or where sort_keys declined the row:
// the caller then sorts the row by the comparator, over what this wrote. Not inlined either, for the same
// compile time (its values are written and checked at the kernel's level, in write_values_checked's copies).
template <typename K, typename T, typename compute_t, SortOutput kOutput, bool kDescending>
__attribute__((noinline)) bool sort_row(const SortArgs& args, int64_t r, isa::Level level) {
  using U = KeyType<compute_t>;
  using E = Entry<U>;
  static_assert(2 * sizeof(E) <= kSortScratchPerElement, "the engine's scratch holds two entries per element");
  const int64_t n = args.n;
  const T* row = reinterpret_cast<const T*>(args.in) + r * n;
  char* const scratch = scratch_of(args, r);
  if constexpr (kOutput == SortOutput::Values) {
    // Keys alone move half the bytes and need no gather, where sort_keys takes them: the network orders words
    // of 32 or 64 bits, so short rows of 8- and 16-bit keys go as entries (key and position packed in a word).
    const bool keys_taken = network::applies<U>(level, n) || n >= radix_from<U>();
    if (keys_taken && keys_lossless<compute_t>(row, n)) {
      U* const keys = reinterpret_cast<U*>(scratch);
      const U* sorted = sort_keys<compute_t>(row, keys, keys + n, n, kDescending, level);
      if (sorted == nullptr) return false;
      const auto value = [](U k) {
        return static_cast<T>(value_of_key<compute_t>(kDescending ? static_cast<U>(~k) : k));
      };
      return write_checked<K, T, compute_t, kOutput, kDescending>(args, r, sorted, value, level);
    }
  }
  E* const entries = reinterpret_cast<E*>(scratch);
  const E* sorted = sort_keys<compute_t>(row, entries, entries + n, n, kDescending, level);
  if (sorted == nullptr) return false;
  const auto value = [row](const E& e) { return row[position_of(e)]; };
  return write_checked<K, T, compute_t, kOutput, kDescending>(args, r, sorted, value, level);
}

}  // namespace ts::sorting::radix

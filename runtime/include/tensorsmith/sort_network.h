// The CPU's sort of short rows of keys: a bitonic sorting network in vector registers (AVX2 or AVX-512).
//
// tensorsmith/radix_sort.h turns a row into unsigned keys (or key and position entries) in numpy's order;
// its radix passes cost about 8 ns an element on rows of 256 (four digit histograms of 256 counters each,
// cleared and summed per row), where numpy's AVX-512 quicksort (x86-simd-sort) sorts such a row in 1.1 ns
// an element. Keys are plain unsigned integers, so a network of vector min/max sorts them with no branch:
// lanes within a vector exchange through a constant shuffle and a masked select, vectors with vectors
// through min and max. A row of up to kChunk vectors is sorted in registers; a longer one in chunks, whose
// merges go through memory for the vector distances above a chunk. One Zen 4 core, uint32 keys, -O3:
// 1.3 ns an element on rows of 256, 1.9 on 1024, 2.8 on 4096 (AVX2: 1.5 and 2.4 on the first two); uint64
// keys (and key-position entries): about twice that.
//
// Every key and entry is distinct or interchangeable (a key without a position stands for its value; an
// entry holds its position), so this unstable network gives exactly what the stable radix sort gives.
// The vector code is compiled once per key type and level (noinline functions with the level's target),
// like radix_sort.h's passes, not once per kernel; kernels call them from their own level's variant only.
#pragma once

#include <cstdint>
#include <cstring>

#include "tensorsmith/isa.h"
#include "tensorsmith/macros.h"

namespace ts::sorting::network {

#if TS_ISA_VARIANTS
// Vectors pass by value only between always-inlined functions: GCC's note that their ABI changed with AVX is
// moot. Not popped: GCC instantiates the templates, and gives the note, at the end of the translation unit.
#pragma GCC diagnostic ignored "-Wpsabi"

// Vectors of kBytes holding unsigned integers U, and the network's steps on them.
template <typename U, int kBytes>
struct Lanes {
  typedef U V __attribute__((vector_size(kBytes)));
  static constexpr int W = kBytes / static_cast<int>(sizeof(U));  // lanes per vector
  static constexpr int kChunk = kBytes == 64 ? 16 : 8;            // vectors held in registers at once
  static constexpr U kPad = static_cast<U>(~U(0));                // pads a row to whole vectors: sorts last

  static TS_FORCE_INLINE V index() {
    V v;
    for (int i = 0; i < W; ++i) v[i] = static_cast<U>(i);
    return v;
  }
  static TS_FORCE_INLINE V min(const V& a, const V& b) { return a < b ? a : b; }
  static TS_FORCE_INLINE V max(const V& a, const V& b) { return a < b ? b : a; }
  static TS_FORCE_INLINE V reverse(const V& v) { return __builtin_shuffle(v, static_cast<U>(W - 1) - index()); }

  // Lane i compared with lane i ^ P: the lanes with bit H set keep the larger of the two.
  template <int P, int H>
  static TS_FORCE_INLINE V exchange(const V& v) {
    const V w = __builtin_shuffle(v, index() ^ static_cast<U>(P));
    return (index() & static_cast<U>(H)) ? max(v, w) : min(v, w);
  }
  // A bitonic vector sorted: half-cleaners at lane distances J, J / 2, ..., 1.
  template <int J>
  static TS_FORCE_INLINE V merge(const V& v) {
    if constexpr (J >= 1) {
      return merge<J / 2>(exchange<J, J>(v));
    } else {
      return v;
    }
  }
  // Any vector sorted: for blocks of K = 2, 4, ..., W lanes, a flip (lane i with the block's mirror lane) and
  // half-cleaners.
  template <int K = 2>
  static TS_FORCE_INLINE V sort(const V& v) {
    if constexpr (K <= W) {
      return sort<K * 2>(merge<K / 4>(exchange<K - 1, K / 2>(v)));
    } else {
      return v;
    }
  }
  // The flip between two sorted vectors: a becomes the smaller W of their lanes and b the larger, each bitonic.
  static TS_FORCE_INLINE void flip(V& a, V& b) {
    const V mirrored = reverse(b);
    const V low = min(a, mirrored), high = max(a, mirrored);
    a = low;
    b = reverse(high);
  }

  // Keys are read and written with memcpy: the radix sort's key-and-position entries come as their words.
  static TS_FORCE_INLINE V load(const U* at, int64_t valid) {
    V v;
    if (valid >= W) {
      std::memcpy(&v, at, sizeof v);
    } else {
      for (int i = 0; i < W; ++i) {
        U key = kPad;
        if (i < valid) std::memcpy(&key, at + i, sizeof key);
        v[i] = key;
      }
    }
    return v;
  }
  static TS_FORCE_INLINE void store(U* at, const V& v, int64_t valid) {
    if (valid >= W) {
      std::memcpy(at, &v, sizeof v);
    } else {
      for (int i = 0; i < valid; ++i) {
        const U key = v[i];
        std::memcpy(at + i, &key, sizeof key);
      }
    }
  }

  // v[0, M) half-cleaned at vector distances M / 2, ..., 1, then within each vector: a bitonic run of M
  // vectors sorted.
  template <int M>
  static TS_FORCE_INLINE void clean(V* v) {
#pragma GCC unroll 16
    for (int j = M / 2; j >= 1; j /= 2) {
#pragma GCC unroll 16
      for (int p = 0; p < M; ++p) {
        if ((p & j) == 0) {
          const V a = v[p], b = v[p + j];
          v[p] = min(a, b);
          v[p + j] = max(a, b);
        }
      }
    }
#pragma GCC unroll 16
    for (int p = 0; p < M; ++p) v[p] = merge<W / 2>(v[p]);
  }
  // v[0, M) sorted as one run of M * W lanes: each vector, then blocks of K = 2, 4, ..., M vectors.
  template <int M>
  static TS_FORCE_INLINE void sort_vectors(V* v) {
#pragma GCC unroll 16
    for (int p = 0; p < M; ++p) v[p] = sort(v[p]);
    if constexpr (M >= 2) {
      sort_blocks<2, M>(v);
    }
  }
  template <int K, int M>
  static TS_FORCE_INLINE void sort_blocks(V* v) {
#pragma GCC unroll 16
    for (int p = 0; p < M; ++p) {
      const int q = p ^ (K - 1);  // the mirror vector in p's block of K
      if (q > p) flip(v[p], v[q]);
    }
#pragma GCC unroll 16
    for (int half = 0; half < M; half += K / 2) clean<K / 2>(v + half);
    if constexpr (K < M) sort_blocks<K * 2, M>(v);
  }

  // keys[0, n) sorted, M vectors of W lanes covering it, in registers.
  template <int M>
  static TS_FORCE_INLINE void sort_in_registers(U* keys, int64_t n) {
    V v[M];
#pragma GCC unroll 16
    for (int p = 0; p < M; ++p) v[p] = load(keys + p * W, n - p * W);
    sort_vectors<M>(v);
#pragma GCC unroll 16
    for (int p = 0; p < M; ++p) store(keys + p * W, v[p], n - p * W);
  }

  // keys[0, n) sorted in m vectors (a power of two above kChunk): chunks of kChunk vectors sorted in
  // registers, then for blocks of K = 2 kChunk, ..., m vectors a flip and the half-cleaners above a chunk's
  // distances through memory, and each chunk cleaned in registers. keys holds m * W lanes (fewer than 2 n,
  // m being the least power of two that covers n): those past n are padded here.
  static TS_FORCE_INLINE void sort_in_memory(U* keys, int64_t n, int64_t m) {
    for (int64_t i = n; i < m * W; ++i) std::memcpy(keys + i, &kPad, sizeof kPad);
    V v[kChunk];
    for (int64_t chunk = 0; chunk < m; chunk += kChunk) {
      U* const at = keys + chunk * W;
      for (int p = 0; p < kChunk; ++p) v[p] = load(at + p * W, W);
      sort_vectors<kChunk>(v);
      for (int p = 0; p < kChunk; ++p) store(at + p * W, v[p], W);
    }
    for (int64_t k = 2 * kChunk; k <= m; k *= 2) {
      for (int64_t p = 0; p < m; ++p) {
        const int64_t q = p ^ (k - 1);
        if (q > p) {
          V a = load(keys + p * W, W), b = load(keys + q * W, W);
          flip(a, b);
          store(keys + p * W, a, W);
          store(keys + q * W, b, W);
        }
      }
      for (int64_t j = k / 4; j >= kChunk; j /= 2) {
        for (int64_t p = 0; p < m; ++p) {
          if ((p & j) == 0) {
            const V a = load(keys + p * W, W), b = load(keys + (p + j) * W, W);
            store(keys + p * W, min(a, b), W);
            store(keys + (p + j) * W, max(a, b), W);
          }
        }
      }
      for (int64_t chunk = 0; chunk < m; chunk += kChunk) {
        U* const at = keys + chunk * W;
        for (int p = 0; p < kChunk; ++p) v[p] = load(at + p * W, W);
        clean<kChunk>(v);
        for (int p = 0; p < kChunk; ++p) store(at + p * W, v[p], W);
      }
    }
  }

  static TS_FORCE_INLINE void sort_keys(U* keys, int64_t n) {
    int64_t m = 1;
    while (m * W < n) m *= 2;
    static_assert(kChunk == 8 || kChunk == 16, "the cases below");
    switch (m) {
      case 1:
        return sort_in_registers<1>(keys, n);
      case 2:
        return sort_in_registers<2>(keys, n);
      case 4:
        return sort_in_registers<4>(keys, n);
      case 8:
        return sort_in_registers<8>(keys, n);
      case 16:
        if constexpr (kChunk == 16) return sort_in_registers<16>(keys, n);
        [[fallthrough]];
      default:
        return sort_in_memory(keys, n, m);
    }
  }
};

#endif

// The longest row the network sorts at each level, for keys or entries of sizeof(U) bytes: past it the
// radix passes are as fast (one Zen 4 core; AVX2 has no unsigned 64-bit min, so its 64-bit steps take two
// instructions more).
template <typename U>
constexpr int64_t longest_row(isa::Level level) {
  if (level == isa::Level::AVX512) return sizeof(U) == 4 ? 4096 : 2048;
  return sizeof(U) == 4 ? 1024 : 256;
}

// Whether the network sorts a row of n keys of type U at this level (AVX2 and AVX-512, 32- and 64-bit keys).
template <typename U>
constexpr bool applies(isa::Level level, int64_t n) {
  return TS_ISA_VARIANTS && level != isa::Level::Baseline && (sizeof(U) == 4 || sizeof(U) == 8) &&
         n <= longest_row<U>(level);
}

#if TS_ISA_VARIANTS
template <typename U>
TS_TARGET_AVX2 __attribute__((noinline)) void sort_avx2(U* keys, int64_t n) {
  Lanes<U, 32>::sort_keys(keys, n);
}
// Short rows sort faster in AVX-512's 32-byte vectors than in its 64-byte ones (one Zen 4 core: 8 uint32 keys
// 0.45 ns an element against 2.4, 64 keys 0.85 against 1.1, 256 keys 1.34 against 1.40; for 64-bit keys up to 64
// alike or better), having fewer lanes to pad and shorter shuffles.
template <typename U>
TS_TARGET_AVX512 __attribute__((noinline)) void sort_avx512(U* keys, int64_t n) {
  if (n <= (sizeof(U) == 4 ? 256 : 64)) {
    Lanes<U, 32>::sort_keys(keys, n);
  } else {
    Lanes<U, 64>::sort_keys(keys, n);
  }
}
#endif

// keys[0, n) sorted ascending, where applies<U>(level, n); keys has room for 2 n of them (the padding).
template <typename U>
inline void sort(isa::Level level, U* keys, int64_t n) {
#if TS_ISA_VARIANTS
  if (level == isa::Level::AVX512) {
    sort_avx512(keys, n);
  } else {
    sort_avx2(keys, n);
  }
#else
  (void)level, (void)keys, (void)n;
#endif
}

}  // namespace ts::sorting::network

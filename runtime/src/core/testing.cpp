// The gate's hooks (tensorsmith/testing.h): fill streams, block placement and stack scrubbing.
#include "tensorsmith/testing.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>


namespace ts::testing {

namespace {

// ---- fill streams ----------------------------------------------------------------------------------

std::atomic<bool> g_filling{false};
std::atomic<uint64_t> g_fill_seed{0};
std::atomic<uint64_t> g_fill_blocks{0};  // each block starts its own stretch of the stream

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void fill_from(void* p, size_t nbytes, uint64_t state) {
  auto* bytes = static_cast<unsigned char*>(p);
  size_t i = 0;
  for (; i + 8 <= nbytes; i += 8) {
    const uint64_t word = splitmix64(state);
    std::memcpy(bytes + i, &word, 8);
  }
  const uint64_t last = splitmix64(state);
  std::memcpy(bytes + i, &last, nbytes - i);
}

// ---- placement -------------------------------------------------------------------------------------

std::atomic<int> g_placement{static_cast<int>(Placement::Pooled)};

size_t page_size() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

// A mapping of whole pages with one no-access page at its end (or start); the block sits against it.
struct Mapping {
  void* base;
  size_t length;
};

Mapping map_guarded(size_t nbytes, bool guard_before, void** block) {
  const size_t page = page_size();
  const size_t usable = (nbytes + page - 1) / page * page;
  const size_t length = usable + page;
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) throw std::bad_alloc();
  char* first = static_cast<char*>(base);
  // A block without its guard would be a weaker gate run that looked like a full one: fail instead.
  if (mprotect(guard_before ? first : first + usable, page, PROT_NONE) != 0) {
    munmap(base, length);
    throw std::bad_alloc();
  }
  *block = guard_before ? first + page : first + usable - nbytes;
  return Mapping{base, length};
}

// Blocks handed out by placed_allocate, by address, so that release finds them whatever the placement is by then.
struct Placed {
  std::mutex mutex;
  std::unordered_map<void*, Mapping> guarded;  // Mapping{nullptr, 0}: an Exact block (from malloc)
};
Placed& placed() {
  static Placed* p = new Placed();  // never destroyed: storages may be freed during exit
  return *p;
}
std::atomic<int64_t> g_placed_live{0};

// ---- stack scrubbing ---------------------------------------------------------------------------------

// Bytes just below the caller's frame overwritten from the seed: where the frames of the last kernel call
// (and whatever it left below them) lie.
constexpr size_t kScrubFillBytes = size_t{256} << 10;
constexpr size_t kScrubStep = size_t{1} << 20;  // residency is looked up this much at a time

__attribute__((noinline)) void fill_dead_stack(uint64_t seed) {
  unsigned char below[kScrubFillBytes];
  // One page of the stream, repeated with the page's index mixed in: memset's speed, and no two pages alike.
  uint64_t page[512];
  fill_from(page, sizeof page, seed);
  for (size_t end = kScrubFillBytes; end > 0; end -= sizeof page) {  // top down: the stack's pages in order
    page[0] ^= end;
    std::memcpy(below + end - sizeof page, page, sizeof page);
  }
  __asm__ __volatile__("" : : "r"(below) : "memory");  // the stores are the point: keep them
}

// The resident pages of this thread's stack below the filled part, given back to the kernel (they read as
// zeros when touched again). Looked up first: giving pages back costs every other running thread of the
// process a TLB flush, and usually nothing lies that deep.
__attribute__((noinline)) void discard_dead_stack() {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* low = nullptr;
  size_t size = 0;
  pthread_attr_getstack(&attr, &low, &size);
  pthread_attr_destroy(&attr);
  const size_t page = page_size();
  const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const uintptr_t bottom = (reinterpret_cast<uintptr_t>(low) + page - 1) & ~(page - 1);
  unsigned char resident[kScrubStep / 4096 + 1];
  for (uintptr_t top = (here - kScrubFillBytes - 2 * page) & ~(page - 1); top > bottom;) {
    const uintptr_t from = top - std::min<uintptr_t>(top - bottom, kScrubStep / page * page);
    // The main thread's stack is mapped only as deep as it has grown: below that, nothing to give back.
    if (mincore(reinterpret_cast<void*>(from), top - from, resident) != 0) break;
    bool touched = false;
    for (size_t i = 0; i < (top - from) / page; ++i) touched |= (resident[i] & 1) != 0;
    if (touched) (void)madvise(reinterpret_cast<void*>(from), top - from, MADV_DONTNEED);
    top = from;
  }
}

void scrub_this_stack(uint64_t seed) {
  fill_dead_stack(seed);
  discard_dead_stack();
}

std::atomic<uint64_t> g_scrub_epoch{0};
std::atomic<uint64_t> g_scrub_seed{0};

}  // namespace

void set_allocation_fill(std::optional<uint64_t> seed) {
  g_fill_seed.store(seed.value_or(0), std::memory_order_relaxed);
  g_filling.store(seed.has_value(), std::memory_order_relaxed);
}

void set_allocation_placement(Placement placement) { g_placement.store(static_cast<int>(placement)); }

void* guarded_allocate(size_t nbytes, bool guard_before) {
  return detail::placed_allocate(nbytes, guard_before ? Placement::GuardBefore : Placement::GuardAfter);
}

void guarded_release(void* p) { detail::placed_release(p); }

void scrub_stacks(uint64_t seed) {
  scrub_this_stack(seed);
  g_scrub_seed.store(seed, std::memory_order_relaxed);
  g_scrub_epoch.fetch_add(1);  // workers compare it when they next take part in an op (parallel.cpp)
}

namespace detail {

Placement placement() { return static_cast<Placement>(g_placement.load(std::memory_order_relaxed)); }

void* placed_allocate(size_t nbytes, Placement placement) {
  Mapping mapping{nullptr, 0};
  void* block = nullptr;
  if (placement == Placement::Exact) {
    // 64-byte aligned like the pooled blocks; exactly nbytes, so the sanitizer's redzone follows the last byte.
    if (posix_memalign(&block, 64, nbytes == 0 ? 1 : nbytes) != 0) throw std::bad_alloc();
  } else {
    mapping = map_guarded(nbytes, placement == Placement::GuardBefore, &block);
  }
  std::lock_guard<std::mutex> lock(placed().mutex);
  placed().guarded.emplace(block, mapping);
  g_placed_live.fetch_add(1);
  return block;
}

bool placed_release(void* p) {
  if (g_placed_live.load(std::memory_order_relaxed) == 0) return false;  // production: one load
  Mapping mapping{nullptr, 0};
  {
    std::lock_guard<std::mutex> lock(placed().mutex);
    const auto it = placed().guarded.find(p);
    if (it == placed().guarded.end()) return false;
    mapping = it->second;
    placed().guarded.erase(it);
    g_placed_live.fetch_sub(1);
  }
  if (mapping.base == nullptr) {
    std::free(p);
  } else {
    munmap(mapping.base, mapping.length);
  }
  return true;
}

bool filling() { return g_filling.load(std::memory_order_relaxed); }

void fill(void* p, size_t nbytes) {
  if (!filling()) return;
  const uint64_t block = g_fill_blocks.fetch_add(1, std::memory_order_relaxed);
  fill_from(p, nbytes, g_fill_seed.load(std::memory_order_relaxed) ^ (block * 0xD1B54A32D192ED03ull));
}

int cuda_fill_byte() { return filling() ? static_cast<int>(g_fill_seed.load() & 0xFF) : -1; }

uint64_t scrub_epoch() { return g_scrub_epoch.load(std::memory_order_relaxed); }

void scrub_if_asked(uint64_t& seen) {
  const uint64_t epoch = scrub_epoch();
  if (epoch == seen) return;
  seen = epoch;
  scrub_this_stack(g_scrub_seed.load(std::memory_order_relaxed) ^ (reinterpret_cast<uintptr_t>(&seen) * 0x9E3779B97F4A7C15ull));
}

}  // namespace detail

}  // namespace ts::testing

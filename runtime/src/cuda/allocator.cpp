// The caching device allocator (tensorsmith/cuda/allocator.h).
//
// Stream-ordered safety: every kernel and copy on a device runs on that
// device's one current stream (runtime.h). A block released while work that
// uses it is still queued is handed out again only to work queued after it on
// the same stream, which runs after the earlier work finished; so blocks are
// reused without synchronising. Only cudaFree (empty_cache) waits for the stream.
#include "tensorsmith/cuda/allocator.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "tensorsmith/cuda/device.h"
#include "tensorsmith/cuda/runtime.h"

namespace ts::cuda {

namespace {

struct Pool {
  std::multimap<size_t, void*> free_blocks;  // cached blocks by rounded size
  MemoryStats stats;
};

struct Pools {
  std::mutex mutex;
  std::vector<Pool> pools;  // by device index

  Pool& at(int device) {  // callers hold the mutex
    if (pools.empty()) pools.resize(static_cast<size_t>(device_count()));
    return pools.at(static_cast<size_t>(device));
  }
};

Pools& pools() {
  static Pools* p = new Pools();  // never destroyed: storages may be freed during exit
  return *p;
}

size_t rounded_size(size_t nbytes) {
  // Every block is real and unique, even for an empty tensor.
  const size_t unit = nbytes >= kLargeBlock ? kLargeUnit : kSmallUnit;
  return (std::max<size_t>(nbytes, 1) + unit - 1) / unit * unit;
}

// Frees the pool's cached blocks (the caller holds the mutex and made `device` current).
void free_cached(Pool& pool, int device) {
  if (pool.free_blocks.empty()) return;
  // A cached block may still be read or written by queued work.
  TS_CUDA_CHECK(cudaStreamSynchronize(current_stream(device)), "cudaStreamSynchronize (empty_cache)");
  for (const auto& [size, p] : pool.free_blocks) {
    TS_CUDA_CHECK(cudaFree(p), "cudaFree (empty_cache)");
    pool.stats.reserved_bytes -= size;
  }
  pool.free_blocks.clear();
}

void* fresh_block(Pool& pool, size_t size, int device) {
  void* p = nullptr;
  cudaError_t status = cudaMalloc(&p, size);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    free_cached(pool, device);  // cached blocks of other sizes may be what stands in the way
    status = cudaMalloc(&p, size);
  }
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    TS_CHECK(false, cuda::OutOfMemoryError,
             "CUDA out of memory: cannot allocate " << size << " bytes on cuda:" << device << " ("
                                                    << pool.stats.allocated_bytes << " bytes allocated by tensorsmith)");
  }
  TS_CUDA_CHECK(status, "cudaMalloc");
  pool.stats.reserved_bytes += size;
  return p;
}

}  // namespace

void* allocate(size_t nbytes, int device, int fill) {
  const size_t size = rounded_size(nbytes);
  DeviceGuard guard(device);
  Pools& all = pools();
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(all.mutex);
    Pool& pool = all.at(device);
    const auto it = pool.free_blocks.find(size);
    if (it != pool.free_blocks.end()) {
      p = it->second;
      pool.free_blocks.erase(it);
      ++pool.stats.cache_hits;
    } else {
      p = fresh_block(pool, size, device);
    }
    ++pool.stats.num_allocs;
    pool.stats.allocated_bytes += size;
    pool.stats.peak_allocated_bytes = std::max(pool.stats.peak_allocated_bytes, pool.stats.allocated_bytes);
  }
  if (fill >= 0) {
    TS_CUDA_CHECK(cudaMemsetAsync(p, fill, size, current_stream(device)), "cudaMemsetAsync (allocation fill)");
  }
  return p;
}

void release(void* p, size_t nbytes, int device) {
  const size_t size = rounded_size(nbytes);
  Pools& all = pools();
  std::lock_guard<std::mutex> lock(all.mutex);
  Pool& pool = all.at(device);
  pool.free_blocks.emplace(size, p);
  ++pool.stats.num_frees;
  pool.stats.allocated_bytes -= size;
}

MemoryStats memory_stats(int device) {
  Pools& all = pools();
  std::lock_guard<std::mutex> lock(all.mutex);
  if (device < 0 || device >= device_count()) return MemoryStats{};
  return all.at(device).stats;
}

void reset_peak_memory_stats(int device) {
  Pools& all = pools();
  std::lock_guard<std::mutex> lock(all.mutex);
  if (device < 0 || device >= device_count()) return;
  Pool& pool = all.at(device);
  pool.stats.peak_allocated_bytes = pool.stats.allocated_bytes;
}

void empty_cache() {
  Pools& all = pools();
  std::lock_guard<std::mutex> lock(all.mutex);
  for (size_t device = 0; device < all.pools.size(); ++device) {
    Pool& pool = all.pools[device];
    if (pool.free_blocks.empty()) continue;
    DeviceGuard guard(static_cast<int>(device));
    free_cached(pool, static_cast<int>(device));
  }
}

}  // namespace ts::cuda

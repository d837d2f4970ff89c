// The engines' thread pool. Kernels never see threads: an engine splits its
// iteration space into chunks and calls the kernel once per chunk.
#pragma once

#include <cstdint>
#include <functional>

namespace ts {

// Threads the engines use (>= 1). Default: env TS_NUM_THREADS when set (a
// positive integer, else ValueError on first use), else the count of CPUs this process may run on.
int num_threads();
// Changes it for every later call; n >= 1 (ValueError otherwise).
void set_num_threads(int n);

// Whether idle threads poll for a while before they sleep (env TS_SPIN_MS, default 20 ms: not 0); true where
// the value is malformed (the next parallel_for raises that).
bool idle_threads_poll() noexcept;

// Calls fn(begin, end) on disjoint ranges covering [0, n), in parallel when n
// holds at least two grains and more than one thread is configured; serially
// (one call) otherwise and inside a worker (no nested parallelism). Callers on
// other threads at the same time (within 20 ms) run their ranges serially, one
// after another, each on its own thread, where the threads are fewer than
// twice the callers: sharing them would only take turns. The ranges
// depend only on n, grain and the thread count, so a caller whose per-range
// results are exact gets the same answer for any thread count. Rethrows the
// first exception a range threw, after every range has finished.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Calls fn(j) for every j in [0, jobs), each on a thread of its own and all at once: a job may wait for
// another (OpenBLAS's threaded GEMM hands packed panels between its jobs, which runs them through this). On
// the pool, this thread taking one job, once any other thread's op has left it, where it has a thread for every
// job; otherwise (more jobs than threads, or inside a worker) on threads made for the call. Jobs start once all
// have checked in, each on a CPU of its own where one is free (a job on another's CPU moves for its run, since
// jobs that wait for each other keep their CPUs). Rethrows the first
// exception a job threw, after every job has finished.
void parallel_gang(int jobs, const std::function<void(int)>& fn);

}  // namespace ts

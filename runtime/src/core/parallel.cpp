// A small fixed pool: the calling thread takes chunks itself and waits for the
// rest. An idle worker polls for the next run for a while (yielding its CPU)
// before it sleeps on a condition variable: a sleeping worker can take
// milliseconds to start again (on a VM the scheduler may queue it behind the
// busy calling thread), which made a large op after a short pause run serially.
#include "tensorsmith/parallel.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "tensorsmith/env.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/testing.h"

namespace ts {

namespace {

thread_local bool t_in_worker = false;

// More threads than any machine we run on has cores; the bound keeps the value an int.
constexpr int64_t kMaxThreads = 4096;

int default_threads() {
  if (const std::optional<int64_t> n = env_int("TS_NUM_THREADS", 1, kMaxThreads, "a positive integer")) {
    return static_cast<int>(*n);
  }
  // The CPUs this process may run on (taskset, a container's cpuset), as numpy's OpenBLAS counts them: more
  // threads than those only take turns.
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && CPU_COUNT(&allowed) > 0) return CPU_COUNT(&allowed);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// How long an idle worker polls before it sleeps: env TS_SPIN_MS, default 20 ms
// (PyTorch's OpenMP workers polled for about 10 ms on our machines; Intel's
// OpenMP polls for 200 ms by default).
constexpr int64_t kDefaultSpinMs = 20;
std::chrono::milliseconds spin_window() {
  const std::optional<int64_t> ms =
      env_int("TS_SPIN_MS", 0, 60'000, "a whole number of milliseconds from 0 to 60000");
  return std::chrono::milliseconds(ms.value_or(kDefaultSpinMs));
}

// Callers that overlap (Python threads running ops at once: a data loader beside a training step). Sharing the
// pool, one caller's chunks would run beside the other's serial ones and the idle workers poll beside both: where
// the pool cannot give each caller two threads, each runs its ops serially instead, on a CPU of its own, and the
// workers sleep. An overlap marks the pool contended for a window of 20 ms, so that callers taking turns between
// their ops (each running Python code meanwhile) stay serial; the window ends 20 ms after the last overlap, and a
// lone caller then has every thread again.
constexpr int64_t kContendedWindowNs = 20'000'000;
std::atomic<int> g_callers{0};               // threads inside parallel_for now, not the pool's workers
std::atomic<int> g_contenders{0};            // callers at the last overlap
std::atomic<int64_t> g_contended_until{0};   // steady_clock nanoseconds; 0: no overlap yet

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void mark_contended(int callers) {
  g_contenders.store(callers, std::memory_order_relaxed);
  g_contended_until.store(now_ns() + kContendedWindowNs, std::memory_order_relaxed);
}

// Whether a pool of `threads` threads is contended now: callers overlapped within the window, more than half as
// many as its threads. One relaxed load where no callers ever overlapped.
bool contended(int threads) {
  const int64_t until = g_contended_until.load(std::memory_order_relaxed);
  return until != 0 && threads < 2 * g_contenders.load(std::memory_order_relaxed) && now_ns() < until;
}

// Counts a caller in while it runs; marks the overlap where another is in too.
class CallerCount {
 public:
  CallerCount() {
    const int callers = g_callers.fetch_add(1, std::memory_order_relaxed) + 1;
    if (callers > 1) mark_contended(callers);
  }
  ~CallerCount() { g_callers.fetch_sub(1, std::memory_order_relaxed); }
  CallerCount(const CallerCount&) = delete;
  CallerCount& operator=(const CallerCount&) = delete;
};

class Pool {
 public:
  Pool(int workers, std::chrono::milliseconds spin) : requested_(workers), spin_(spin) {
    for (int i = 0; i < workers; ++i) {
      try {
        threads_.emplace_back([this] { work(); });
      } catch (const std::system_error&) {
        // Out of threads (e.g. RLIMIT_NPROC in a sandbox): run with those we
        // have; results never depend on the number of threads.
        break;
      }
    }
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_.store(true);
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  int requested() const { return requested_; }
  // Threads a run has at once: the workers this pool could make, and the caller.
  int64_t capacity() const { return static_cast<int64_t>(threads_.size()) + 1; }

  // Runs task(c) for c in [0, chunks) on the workers and this thread; with `one_each`, each thread takes at
  // most one chunk, so chunks <= capacity() run side by side, each on its own thread.
  void run(int64_t chunks, const std::function<void(int64_t)>& task, bool one_each = false) {
    std::unique_lock<std::mutex> lock(mutex_);
    // A worker that woke late for the previous run may still be draining it.
    await_done(lock, [this] { return active_.load() == 0; });
    task_ = &task;
    chunks_ = chunks;
    one_each_ = one_each;
    next_.store(0);
    pending_.store(chunks);
    error_ = nullptr;
    generation_.fetch_add(1);  // under the mutex, so a worker about to sleep sees it or is counted
    const bool sleepers = sleeping_ > 0;
    lock.unlock();
    if (sleepers) wake_.notify_all();
    drain();
    lock.lock();
    await_done(lock, [this] { return pending_.load() == 0; });
    task_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // Takes chunks until none are left (one at most in a run of one_each_); the last one to finish wakes run().
  void drain() {
    int64_t c;
    for (int64_t taken = 0; (taken == 0 || !one_each_) && (c = next_.fetch_add(1)) < chunks_; ++taken) {
      try {
        (*task_)(c);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
      if (pending_.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lock(mutex_);  // a run() about to sleep checked pending_ under it
        done_.notify_all();
      }
    }
  }

  // Waits, holding `lock`, until done() (the end of a run, or of its workers): polls first, like an idle
  // worker, since the caller's CPU goes idle while it sleeps and waking it cost about 20 us on our VMs
  // (a 2^17-element sum took 25 us on 2 threads, 7 us on one); then sleeps on done_.
  template <typename Done>
  void await_done(std::unique_lock<std::mutex>& lock, Done done) {
    if (!done()) {
      lock.unlock();
      spin_until(done);
      lock.lock();
    }
    done_.wait(lock, done);
  }

  void work() {
    t_in_worker = true;
    uint64_t seen = 0;
    uint64_t scrubbed = testing::detail::scrub_epoch();
    while (true) {
      const bool called = poll(seen);
      std::unique_lock<std::mutex> lock(mutex_);
      if (!called) {
        ++sleeping_;
        wake_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
        --sleeping_;
      }
      if (stop_.load()) return;
      seen = generation_.load();
      ++active_;  // the run's fields stay fixed while any worker is active
      lock.unlock();
      testing::detail::scrub_if_asked(scrubbed);  // the gate's hook: one relaxed load unless it asked
      drain();
      lock.lock();
      if (--active_ == 0) done_.notify_all();
    }
  }

  // True when a run after `seen` (or the stop) arrived within the spin window; false at once while callers
  // contend for the pool (they run serially: a polling worker would only take CPU from them).
  bool poll(uint64_t seen) const {
    const auto arrived = [&] { return generation_.load() != seen || stop_.load(); };
    return spin_until([&] { return arrived() || contended(requested_ + 1); }) && arrived();
  }

  // True when ready() held within the spin window. The thread yields between looks, so a thread with work
  // on this CPU loses next to nothing to it.
  template <typename Ready>
  bool spin_until(Ready ready) const {
    if (spin_.count() == 0) return ready();
    const auto deadline = std::chrono::steady_clock::now() + spin_;
    while (!ready()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::yield();
    }
    return true;
  }

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t)>* task_ = nullptr;
  std::atomic<int64_t> next_{0};
  int64_t chunks_ = 0;
  bool one_each_ = false;  // the run is a gang: one chunk per thread
  std::atomic<int64_t> pending_{0};  // chunks not yet finished
  std::atomic<int> active_{0};       // workers inside drain(); changed under mutex_
  int sleeping_ = 0;  // workers waiting on wake_
  int requested_;
  std::chrono::milliseconds spin_;
  std::atomic<uint64_t> generation_{0};  // written under mutex_; read without it while polling
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;
};

// The pool is created on first parallel use and replaced when the thread
// count changes. One parallel_for uses it at a time: a caller that finds it
// busy (another Python thread's op, run without the GIL) runs its own chunks
// itself rather than wait, the same chunks in order, so its result is the
// same. Never destroyed at exit (workers may still sleep in it); a forked
// child forgets the parent's pool (its threads do not exist there) and builds
// its own.
std::mutex g_run_mutex;
Pool* g_pool = nullptr;
std::atomic<int> g_threads{0};  // 0 = not yet read from the environment

void forget_pool_in_child() {
  g_pool = nullptr;  // leaked: its mutexes may have been held at fork time
  new (&g_run_mutex) std::mutex();
  g_callers.store(0);  // the callers were the parent's other threads
  g_contended_until.store(0);
}

int configured_threads() {
  int n = g_threads.load();
  if (n == 0) {
    n = default_threads();
    int expected = 0;
    if (!g_threads.compare_exchange_strong(expected, n)) n = expected;
  }
  return n;
}

// The pool for `threads` threads (made, or remade for a new count); the caller holds g_run_mutex.
Pool& pool_of(int threads) {
  static const bool atfork_registered = [] { return pthread_atfork(nullptr, nullptr, forget_pool_in_child) == 0; }();
  (void)atfork_registered;
  if (g_pool == nullptr || g_pool->requested() != threads - 1) {
    const std::chrono::milliseconds spin = spin_window();  // before the old pool goes: a bad value throws
    delete g_pool;
    g_pool = nullptr;  // not left dangling if the new pool cannot be made
    g_pool = new Pool(threads - 1, spin);
  }
  return *g_pool;
}

// Runs task(c) for c in [0, chunks) on the pool; the caller holds g_run_mutex.
void run_on_pool(int threads, int64_t chunks, const std::function<void(int64_t)>& task, bool one_each) {
  Pool& pool = pool_of(threads);
  t_in_worker = true;  // a chunk runs here: nested parallel_for stays serial
  try {
    pool.run(chunks, task, one_each);
  } catch (...) {
    t_in_worker = false;
    throw;
  }
  t_in_worker = false;
}

// A gang's jobs wait for each other, and a job waiting inside OpenBLAS keeps its CPU (it polls without yielding).
// A worker woken from sleep can be queued on the CPU of the thread that woke it, another CPU idle (Linux 6.18 in a
// VM: a woken task preempts only at the next tick), and then starts 4 ms late: a 256x256 float32 product took
// 4.1 ms, not 0.22. So each job checks in first and yields until every job has (a job queued behind another gets its
// CPU meanwhile), then a job on the same CPU as a job of lower index moves to a CPU no job is on, for its run only.
class GangStart {
 public:
  explicit GangStart(int64_t jobs) : jobs_(jobs), cpus_(static_cast<size_t>(jobs), -1) {}

  void run(int64_t j, const std::function<void(int64_t)>& job) {
    cpus_[static_cast<size_t>(j)] = sched_getcpu();
    arrived_.fetch_add(1);  // publishes the CPU to the jobs that see every arrival
    while (arrived_.load() < jobs_) std::this_thread::yield();
    const AffinityRestore restore{move_off_a_shared_cpu(j)};
    job(j);
  }

 private:
  // Gives the thread back the affinity it had before it moved (if it moved) when the job ends, also by an exception.
  struct AffinityRestore {
    std::optional<cpu_set_t> mask;
    ~AffinityRestore() {
      if (mask) pthread_setaffinity_np(pthread_self(), sizeof(*mask), &*mask);
    }
  };

  bool shares_a_cpu(int64_t j) const {
    const int cpu = cpus_[static_cast<size_t>(j)];
    return cpu >= 0 && std::find(cpus_.begin(), cpus_.begin() + j, cpu) != cpus_.begin() + j;
  }

  // Job j's affinity before it moved (to be restored), or nothing where it stays: its CPU is its own, no CPU it may
  // use is free, or the system refused. Movers take distinct free CPUs, in the order of their jobs.
  std::optional<cpu_set_t> move_off_a_shared_cpu(int64_t j) const {
    if (!shares_a_cpu(j)) return std::nullopt;
    int64_t movers_before = 0;
    for (int64_t k = 0; k < j; ++k) movers_before += shares_a_cpu(k);
    cpu_set_t mask;
    if (pthread_getaffinity_np(pthread_self(), sizeof(mask), &mask) != 0) return std::nullopt;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (!CPU_ISSET(cpu, &mask) || std::find(cpus_.begin(), cpus_.end(), cpu) != cpus_.end()) continue;
      if (movers_before-- > 0) continue;
      cpu_set_t target;
      CPU_ZERO(&target);
      CPU_SET(cpu, &target);
      if (pthread_setaffinity_np(pthread_self(), sizeof(target), &target) != 0) return std::nullopt;
      return mask;
    }
    return std::nullopt;
  }

  const int64_t jobs_;
  std::vector<int> cpus_;  // each job's CPU when it checked in; -1 where unknown
  std::atomic<int64_t> arrived_{0};
};

// task(0) here and every other on a thread of its own, made for the call. No job starts before every thread
// exists (a gang's jobs may wait for each other, so a gang short of a thread would never finish): where the
// system refuses one, the process cannot go on, and says why.
void run_on_new_threads(int64_t jobs, const std::function<void(int64_t)>& task) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(jobs));
  std::atomic<int> start{0};  // 0: wait, 1: run, -1: give up
  const auto job = [&](int64_t j) {
    while (start.load() == 0) std::this_thread::yield();
    if (start.load() < 0) return;
    const bool was_in_worker = t_in_worker;
    t_in_worker = true;  // nested parallel_for stays serial in a job
    try {
      task(j);
    } catch (...) {
      errors[static_cast<size_t>(j)] = std::current_exception();
    }
    t_in_worker = was_in_worker;
  };
  std::vector<std::thread> helpers;
  helpers.reserve(static_cast<size_t>(jobs - 1));
  try {
    for (int64_t j = 1; j < jobs; ++j) helpers.emplace_back(job, j);
  } catch (const std::system_error& e) {
    start.store(-1);
    for (std::thread& helper : helpers) helper.join();
    std::fprintf(stderr, "tensorsmith: a gang of %lld jobs (OpenBLAS's threaded GEMM) needs a thread for each, and the "
                 "system refused one (%s); set OPENBLAS_NUM_THREADS lower\n", static_cast<long long>(jobs), e.what());
    std::abort();
  }
  start.store(1);
  job(0);
  for (std::thread& helper : helpers) helper.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

}  // namespace

bool idle_threads_poll() noexcept {
  try {
    return spin_window().count() > 0;
  } catch (const std::exception&) {
    return true;  // the default; the next parallel_for reports the malformed value
  }
}

int num_threads() { return configured_threads(); }

void set_num_threads(int n) {
  TS_CHECK(n >= 1, ValueError, "the number of threads must be at least 1, got " << n);
  g_threads.store(n);
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int threads = configured_threads();
  const int64_t chunks = std::min<int64_t>(threads, n / grain);
  if (chunks < 2 || t_in_worker) {
    fn(0, n);
    return;
  }
  // Equal chunks, one per thread; boundaries are a pure function of (n, chunks).
  const auto task = [&](int64_t c) { fn(n * c / chunks, n * (c + 1) / chunks); };
  const CallerCount caller;
  std::unique_lock<std::mutex> lock(g_run_mutex, std::defer_lock);
  if (!contended(threads) && !lock.try_lock()) mark_contended(2);  // busy: a gang, or a caller not yet counted
  if (!lock.owns_lock()) {
    std::exception_ptr error;
    t_in_worker = true;  // nested parallel_for stays serial here too
    for (int64_t c = 0; c < chunks; ++c) {
      try {
        task(c);
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    }
    t_in_worker = false;
    if (error) std::rethrow_exception(error);
    return;
  }
  run_on_pool(threads, chunks, task, false);
}

void parallel_gang(int jobs, const std::function<void(int)>& fn) {
  if (jobs <= 0) return;
  if (jobs == 1) {
    fn(0);
    return;
  }
  GangStart start(jobs);
  const std::function<void(int64_t)> job = [&](int64_t j) { fn(static_cast<int>(j)); };
  const auto task = [&](int64_t j) { start.run(j, job); };
  if (!t_in_worker) {
    // Waits for another thread's op to leave the pool rather than start threads: it will, and no job of a
    // gang ever waits for the pool itself.
    std::unique_lock<std::mutex> lock(g_run_mutex);
    Pool* pool = nullptr;
    int threads = 0;
    try {
      threads = configured_threads();
      if (jobs <= threads) pool = &pool_of(threads);
    } catch (const std::exception&) {
      // TS_NUM_THREADS or TS_SPIN_MS is malformed: the next parallel_for raises that; the gang still runs
    }
    if (pool != nullptr && pool->capacity() >= jobs) {
      run_on_pool(threads, jobs, task, true);
      return;
    }
  }
  run_on_new_threads(jobs, task);
}

}  // namespace ts

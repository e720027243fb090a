#include "runtime/core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>

#include "runtime/core/memory_budget.h"
#include "runtime/core/run_limits.h"

namespace onnxserve {

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

namespace {

// How long an idle worker polls for work before it sleeps. Within a run the next ParallelFor comes within
// microseconds (a GEMM, a Relu, the next GEMM), while a wake-up through the condition variable costs tens
// of microseconds on a VM: more than a small layer's whole share. ONNX Runtime's pool spins likewise.
constexpr auto kSpinBeforeSleep = std::chrono::microseconds(100);

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

}  // namespace

void ThreadPool::WorkerLoop() {
  for (;;) {
    const auto spin_end = std::chrono::steady_clock::now() + kSpinBeforeSleep;
    while (queued_.load(std::memory_order_relaxed) == 0 && std::chrono::steady_clock::now() < spin_end) {
      CpuRelax();
    }
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.back());
      queue_.pop_back();
      queued_.store(static_cast<int64_t>(queue_.size()), std::memory_order_relaxed);
    }
    task();
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t min_chunk,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int64_t max_chunks = std::max<int64_t>(1, n / std::max<int64_t>(1, min_chunk));
  const int64_t chunks = std::min<int64_t>(num_threads_, max_chunks);
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
  // Chunks are claimed through a shared counter, so the caller runs any chunk no worker has started yet
  // and never waits on a busy pool.
  // An exception thrown by fn (a failed allocation) must not escape a worker, where it would terminate the
  // process: the first one is kept and rethrown on the caller's thread once every chunk has finished, so fn
  // is never called after ParallelFor returns.
  struct State {
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> done{0};
    std::mutex mu;
    std::condition_variable cv;
    std::exception_ptr error;  // guarded by mu
  };
  auto state = std::make_shared<State>();
  // Chunks allocate on behalf of the caller's run, whichever thread runs them, so they charge its budget
  // and stop with it.
  auto run_chunks = [state, n, chunks, &fn, account = CurrentMemoryAccount(), limits = CurrentRunLimits()] {
    ScopedMemoryAccount charge_to_caller(account);
    ScopedRunLimits stop_with_caller(limits);
    for (int64_t c; (c = state->next.fetch_add(1)) < chunks;) {
      try {
        fn(c * n / chunks, (c + 1) * n / chunks);
      } catch (...) {
        std::lock_guard<std::mutex> lock(state->mu);
        if (!state->error) state->error = std::current_exception();
      }
      if (state->done.fetch_add(1) + 1 == chunks) {
        std::lock_guard<std::mutex> lock(state->mu);
        state->cv.notify_all();
      }
    }
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int64_t i = 1; i < chunks; ++i) queue_.push_back(run_chunks);
    queued_.store(static_cast<int64_t>(queue_.size()), std::memory_order_relaxed);
  }
  cv_.notify_all();
  run_chunks();
  // The workers' chunks usually end within microseconds of the caller's: poll for them as idle workers
  // poll for work, since sleeping on the condition variable costs a wake-up of tens of microseconds.
  const auto spin_end = std::chrono::steady_clock::now() + kSpinBeforeSleep;
  while (state->done.load(std::memory_order_acquire) != chunks && std::chrono::steady_clock::now() < spin_end) {
    CpuRelax();
  }
  std::unique_lock<std::mutex> lock(state->mu);
  state->cv.wait(lock, [&] { return state->done.load() == chunks; });
  if (state->error) std::rethrow_exception(state->error);
}

}  // namespace onnxserve

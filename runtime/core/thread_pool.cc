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

// Shared by the caller and each worker that pops it, so a worker that finishes the last chunk can still
// wake the caller through `mu` and `cv` after the caller has seen `done` reach `chunks` and returned.
struct ThreadPool::Job {
  Job(int64_t n, int64_t chunks, absl::FunctionRef<void(int64_t, int64_t)> fn)
      : n(n), chunks(chunks), fn(fn), account(CurrentMemoryAccount()), limits(CurrentRunLimits()) {}
  const int64_t n, chunks;
  const absl::FunctionRef<void(int64_t, int64_t)> fn;
  // Chunks allocate on behalf of the caller's run, whichever thread runs them, so they charge its budget
  // and stop with it.
  const std::shared_ptr<MemoryAccount> account;
  const RunLimits* const limits;
  std::atomic<int64_t> next{1};  // the next chunk to claim; the caller runs chunk 0
  std::atomic<int64_t> done{0};  // chunks finished; reaching `chunks` publishes `error`
  // Set before the caller sleeps on `cv`, so that the last chunk locks `mu` to wake it only then: while
  // the caller polls, finishing a chunk touches no lock.
  std::atomic<bool> caller_sleeps{false};
  std::mutex mu;
  std::condition_variable cv;
  std::exception_ptr error;  // the first exception a chunk threw; written under mu
};

// An exception thrown by fn (a failed allocation) must not escape a worker, where it would terminate the
// process: the first one is kept for the caller to rethrow once every chunk has finished.
void ThreadPool::RunChunk(Job& job, int64_t c) {
  try {
    job.fn(c * job.n / job.chunks, (c + 1) * job.n / job.chunks);
  } catch (...) {
    std::lock_guard<std::mutex> lock(job.mu);
    if (!job.error) job.error = std::current_exception();
  }
  // Sequentially consistent with the caller's caller_sleeps store and done load: either it sees this
  // chunk done before it sleeps, or this sees it sleeping and wakes it.
  if (job.done.fetch_add(1) + 1 == job.chunks && job.caller_sleeps.load()) {
    std::lock_guard<std::mutex> lock(job.mu);
    job.cv.notify_all();
  }
}

void ThreadPool::RunChunks(Job& job) {
  ScopedMemoryAccount charge_to_caller(job.account);
  ScopedRunLimits stop_with_caller(job.limits);
  for (int64_t c; (c = job.next.fetch_add(1)) < job.chunks;) RunChunk(job, c);
}

void ThreadPool::WorkerLoop() {
  for (;;) {
    const auto spin_end = std::chrono::steady_clock::now() + kSpinBeforeSleep;
    while (queued_.load(std::memory_order_relaxed) == 0 && std::chrono::steady_clock::now() < spin_end) {
      CpuRelax();
    }
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      job = std::move(queue_.back());
      queue_.pop_back();
      queued_.store(static_cast<int64_t>(queue_.size()), std::memory_order_relaxed);
    }
    RunChunks(*job);
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t min_chunk, absl::FunctionRef<void(int64_t, int64_t)> fn) {
  if (n <= 0) return;
  const int64_t max_chunks = std::max<int64_t>(1, n / std::max<int64_t>(1, min_chunk));
  const int64_t chunks = std::min<int64_t>(num_threads_, max_chunks);
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
  // Chunks are claimed through a shared counter, so the caller runs any chunk no worker has started yet
  // and never waits on a busy pool; fn is never called after ParallelFor returns.
  auto job = std::make_shared<Job>(n, chunks, fn);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int64_t i = 1; i < chunks; ++i) queue_.push_back(job);
    queued_.store(static_cast<int64_t>(queue_.size()), std::memory_order_relaxed);
  }
  cv_.notify_all();
  // The first chunk is always the caller's: consecutive layers split alike then find their rows in the
  // cache of the thread that wrote them (claimed by whoever came first, the first half of a map was
  // written by one core and read by the other about as often as not).
  RunChunk(*job, 0);
  RunChunks(*job);
  // The workers' chunks usually end within microseconds of the caller's: poll for them as idle workers
  // poll for work, since sleeping on the condition variable costs a wake-up of tens of microseconds.
  const auto spin_end = std::chrono::steady_clock::now() + kSpinBeforeSleep;
  while (job->done.load(std::memory_order_acquire) != chunks && std::chrono::steady_clock::now() < spin_end) {
    CpuRelax();
  }
  if (job->done.load() != chunks) {
    job->caller_sleeps.store(true);
    std::unique_lock<std::mutex> lock(job->mu);
    job->cv.wait(lock, [&] { return job->done.load() == chunks; });
  }
  if (job->error) std::rethrow_exception(job->error);
}

}  // namespace onnxserve

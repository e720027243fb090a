// A fixed pool of worker threads for intra-op parallelism. ParallelFor blocks the caller, which takes a
// share of the work itself, so a pool of N threads has N-1 workers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"

namespace onnxserve {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Runs fn(begin, end) over [0, n) split into at most num_threads() contiguous chunks of at least
  // `min_chunk` items. Safe to call from several threads at once (calls then share the workers); fn must
  // not call ParallelFor on the same pool. When fn throws, the first exception is rethrown here after all
  // chunks have run. fn is taken by reference, not copied: a std::function would allocate for most
  // kernels' lambdas (more than two captures), on every call, even on one thread.
  void ParallelFor(int64_t n, int64_t min_chunk, absl::FunctionRef<void(int64_t, int64_t)> fn);

 private:
  struct Job;  // one ParallelFor call: its chunks, how many have run, and how its caller waits
  static void RunChunk(Job& job, int64_t c);
  static void RunChunks(Job& job);
  void WorkerLoop();

  const int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<Job>> queue_;  // a worker that pops a job shares its ownership
  std::atomic<int64_t> queued_{0};  // queue_.size(), for workers to poll without the lock while they spin
  bool stopping_ = false;
};

}  // namespace onnxserve

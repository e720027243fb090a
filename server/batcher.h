// Dynamic batching for one model version: a queue of validated requests and `instances` worker threads,
// each running one batch at a time. A waiting request holds no thread: it is a queue entry whose `done`
// callback finishes the gRPC call.
//
// A batch is made of requests whose inputs agree on every dimension but the first; their inputs are
// concatenated on dim 0 (up to max_batch_size rows), the model runs once and each output is split back
// by rows. A free instance takes the queued requests at once (a lone request never waits for company);
// it holds them back for more only while more are expected during one execution than are already queued
// (ArrivalForecast), and then at most until the batch reaches max_batch_size or a preferred size, or until
// max_queue_delay has passed since the oldest of them could first have run. Requests past their deadline
// or cancelled are completed with DEADLINE_EXCEEDED / CANCELLED before compute; a running batch stops
// between steps once every request in it has passed its deadline or been cancelled, or the model's
// execution timeout has passed. With max_batch_size 0 each request runs alone.
//
// Priority levels (Triton's, 1 the highest): the queue is kept in level order, arrivals in order within a
// level, so the head is the oldest request of the highest level waiting and batches fill from the top
// level down. Each level has its own queue bound.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpc_service.pb.h"
#include "runtime/core/run_limits.h"
#include "runtime/core/tensor.h"
#include "server/metrics.h"

namespace onnxserve::server {

// Cumulative statistics of one model version, as ModelStatistics reports them. Thread-safe.
class VersionStats {
 public:
  VersionStats(std::string model, std::string version);
  // A finished request: `ok` or failed, with its time from arrival to response and its batch rows.
  void RecordRequest(bool ok, absl::Duration total, int64_t rows);
  // One request's share of an execution: its wait in the queue and the batch's compute phases.
  void RecordRequestCompute(absl::Duration queue, absl::Duration input, absl::Duration infer,
                            absl::Duration output);
  // One model execution over `batch_rows` rows.
  void RecordExecution(int64_t batch_rows, absl::Duration input, absl::Duration infer, absl::Duration output);
  // One response cache lookup (response_cache.h) that hit or missed, and the time it cost.
  void RecordCacheLookup(bool hit, absl::Duration took);
  inference::ModelStatistics Snapshot() const;

 private:
  mutable std::mutex mu_;
  inference::ModelStatistics stats_;
};

struct QueuedRequest {
  std::vector<Tensor> inputs;  // validated, in the order of the scheduler's input names
  int64_t rows = 1;            // dim 0 of every input when batching; 1 otherwise
  uint32_t priority_level = 1;  // 1 (the highest) to the scheduler's number of levels
  absl::Time enqueued = absl::Now();
  absl::Time deadline = absl::InfiniteFuture();
  std::function<bool()> cancelled;  // polled before compute; may be empty
  // Set by the scheduler just before `done` when the request reached a model execution: when that batch
  // started, how long its run took (start to outputs split, or to the error) and its rows. Left as is when
  // the request was answered without running (rejected, past its deadline, cancelled).
  struct BatchTiming {
    absl::Time start = absl::InfinitePast();
    absl::Duration compute = absl::ZeroDuration();
    int64_t rows = 0;
  } batch;
  // Called exactly once with all outputs (in the scheduler's output order) or the error: on a worker
  // thread, or on the caller's thread when Enqueue rejects it.
  std::function<void(absl::StatusOr<std::vector<Tensor>>)> done;
};

struct SchedulerOptions {
  std::string model;
  std::string version;
  std::vector<std::string> input_names;
  std::vector<std::string> output_names;
  int64_t max_batch_size = 0;  // 0: no batching
  std::vector<int64_t> preferred_batch_sizes;
  absl::Duration max_queue_delay = absl::ZeroDuration();
  // The queue bound of each priority level, level 1 first; one entry when the model has no priority levels.
  // 0: unbounded.
  std::vector<int64_t> max_queue_sizes = {0};
  int instances = 1;
  // How long one execution may run (config parameter execution_timeout_ms).
  absl::Duration execution_timeout = absl::InfiniteDuration();
};

// Runs the model once on a (batched) set of inputs, in input_names order; returns outputs in output_names
// order, or stops early once `limits` says so. Called from several workers at once.
using RunFn =
    std::function<absl::StatusOr<std::vector<Tensor>>(const std::vector<Tensor>& inputs, const RunLimits& limits)>;

class Scheduler {
 public:
  // `stats` must outlive the requests; `metrics` may be null and must outlive the scheduler.
  Scheduler(SchedulerOptions options, RunFn run, VersionStats* stats, ServerMetrics* metrics);
  // Stops the workers once the queue is empty. Owners destroy the scheduler when no request can be queued
  // or running any more (requests keep their model version alive), which may happen inside a `done`
  // callback on a worker thread: that worker is detached and exits on its own.
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues the request behind those of its priority level and above, or completes it at once with
  // RESOURCE_EXHAUSTED when its level's queue is full. Its priority_level must be in [1, levels].
  void Enqueue(std::unique_ptr<QueuedRequest> request);

 private:
  struct State;
  void StopWorkers();

  std::shared_ptr<State> state_;
  std::vector<std::thread> workers_;
};

}  // namespace onnxserve::server

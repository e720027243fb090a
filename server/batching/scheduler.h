// Dynamic batching for one model version: a queue of validated requests and `instances` worker threads,
// each running one batch at a time on the servable it decorates. A waiting request holds no thread: it is a
// queue entry whose `done` callback answers the call.
//
// A batch is made of requests whose inputs agree on every dimension but the first; their inputs are
// concatenated on dim 0 (up to max_batch_size rows), the model runs once and each output is split back
// by rows. A batch whose run fails (DEADLINE_EXCEEDED and CANCELLED aside), or whose outputs do not split
// by rows, runs again one request at a time, so that each gets its own rows or its own error: a model's error
// may quote the values of the request that caused it. A free instance takes the queued requests at once (a
// lone request never waits for company); it holds them back for more only while more are expected during
// one execution than are already queued (ArrivalForecast), and then at most until the batch reaches
// max_batch_size or a preferred size, or until max_queue_delay has passed since the oldest of them could
// first have run. A running batch stops between steps once every request in it has passed its deadline or
// been cancelled. With max_batch_size 0 each request runs alone.
//
// Without batching, a request that arrives to an empty queue while an instance is free runs at once on the
// thread that enqueues it, on that instance: the hand-off to a worker costs a wake-up and a context switch
// per request. Requests arriving while it runs queue as above; instances are counted alike whichever thread
// runs them. A batching model hands every request to a worker (scheduler.cc, RunsInline, says why).
//
// A request is answered by its own limits, wherever it is when they end: past its deadline it gets
// DEADLINE_EXCEEDED, cancelled CANCELLED, in the queue, just before compute, or when its batch's run returns
// (whatever the run returned for the others). The deadline is looked at first: gRPC reports a call past its
// deadline as cancelled too.
//
// Priority levels (Triton's, 1 the highest): the queue is kept in level order, arrivals in order within a
// level, so the head is the oldest request of the highest level waiting and batches fill from the top
// level down. Each level has its own queue bound.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "server/observability/metrics.h"
#include "server/observability/version_stats.h"
#include "server/servable/servable.h"

namespace onnxserve::server {

struct SchedulerOptions {
  std::string model;
  std::string version;
  int64_t max_batch_size = 0;  // 0: no batching
  std::vector<int64_t> preferred_batch_sizes;
  absl::Duration max_queue_delay = absl::ZeroDuration();
  // The queue bound of each priority level, level 1 first; one entry when the model has no priority levels.
  // 0: unbounded.
  std::vector<int64_t> max_queue_sizes = {0};
  int instances = 1;
};

class Scheduler {
 public:
  // Runs each batch on `model` (one request's worth of inputs concatenated on dim 0, its control the batch's:
  // the latest deadline, cancelled once all are). `stats` must outlive the requests; `metrics` may be null and
  // must outlive the scheduler.
  Scheduler(SchedulerOptions options, std::shared_ptr<Servable> model, VersionStats* stats, ServerMetrics* metrics);
  // Stops the workers once the queue is empty. Owners destroy the scheduler when no request can be queued
  // or running any more (requests keep their model version alive), which may happen inside a `done`
  // callback on a worker thread: that worker is detached and exits on its own.
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Runs the request at once on the caller's thread (see above), or queues it behind those of its priority
  // level and above, or answers it at once with RESOURCE_EXHAUSTED when its level's queue is full. Its
  // priority_level must be in [1, levels]. `done` is called exactly once: on a worker thread, or on the
  // caller's before Enqueue returns when the request runs inline or is refused.
  void Enqueue(ServableRequest request, ServableDone done);

 private:
  struct State;
  void StopWorkers();

  std::shared_ptr<State> state_;
  std::vector<std::thread> workers_;
};

}  // namespace onnxserve::server

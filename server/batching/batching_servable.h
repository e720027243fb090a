// The servable that decorates a model with dynamic batching, its instances and its queue policy (scheduler.h):
// Run queues the request and returns, and a worker answers it once its batch has run on the decorated servable;
// or, for a model that does not batch, when the queue is empty and an instance free, runs it on the calling
// thread and answers before returning.
#pragma once

#include <memory>
#include <utility>

#include "server/batching/scheduler.h"
#include "server/servable/servable.h"

namespace onnxserve::server {

class BatchingServable final : public Servable {
 public:
  // As Scheduler's constructor.
  BatchingServable(SchedulerOptions options, std::shared_ptr<Servable> model, VersionStats* stats,
                   ServerMetrics* metrics)
      : scheduler_(std::move(options), std::move(model), stats, metrics) {}

  void Run(ServableRequest request, ServableDone done) override {
    scheduler_.Enqueue(std::move(request), std::move(done));
  }

 private:
  Scheduler scheduler_;
};

}  // namespace onnxserve::server

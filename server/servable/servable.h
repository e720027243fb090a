// What serves a model version's inferences: one interface, decorated in layers. A ModelServable runs the
// Session; a BatchingServable queues requests and runs them in batches through the servable it decorates; the
// repository assembles each version's chain from its config (AssembleServable), and the protocols (gRPC,
// REST) decode a wire request into a ServableRequest and encode the ServableResponse back.
//
// A ServableRequest has been validated once, at decode: its inputs have the version's names, types and
// shapes, in the version's input order. A servable does not check them again.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/core/tensor.h"
#include "server/observability/trace_context.h"

namespace onnxserve::server {

// What an inference call is bounded by besides its queue policy: the client's deadline and whether the client
// still wants the answer. gRPC calls take both from their CallbackServerContext; REST calls have no deadline
// and are cancelled when the client disconnects or the HTTP server stops.
struct CallControl {
  absl::Time deadline = absl::InfiniteFuture();
  std::function<bool()> cancelled;  // may be empty (never cancelled); called from batch workers
  std::optional<TraceContext> trace;  // the caller's valid traceparent, for the request's log line
};

struct ServableRequest {
  std::vector<Tensor> inputs;   // validated, in the version's input order
  int64_t rows = 1;             // dim 0 of every input when the version batches; 1 otherwise
  uint32_t priority_level = 1;  // 1 (the highest) to the version's number of priority levels
  absl::Time arrival = absl::Now();
  // control.deadline is the earliest of the client's deadline and the priority level's queue timeout.
  CallControl control;
};

// The model execution that answered a request: when it started, how long it ran (start to outputs split, or
// to the error) and its rows (the batch's, when batched). start is InfinitePast when none ran (rejected, past
// its deadline or cancelled before compute).
struct ExecutionTiming {
  absl::Time start = absl::InfinitePast();
  absl::Duration compute = absl::ZeroDuration();
  int64_t rows = 0;
};

struct ServableResponse {
  absl::StatusOr<std::vector<Tensor>> outputs;  // every output, in the version's output order
  ExecutionTiming timing;
};

// Called exactly once per Run, on whatever thread answers (a batch worker, or the caller's).
using ServableDone = std::function<void(ServableResponse)>;

// Thread-safe: Run is called from many threads at once.
class Servable {
 public:
  virtual ~Servable() = default;
  // Answers `request` through `done`, now or later.
  virtual void Run(ServableRequest request, ServableDone done) = 0;
};

// Runs `request` on `servable` and waits for the answer: for callers that own a thread anyway (warmup, a batch
// worker running its batch on the servable it decorates).
ServableResponse RunAndWait(Servable& servable, ServableRequest request);

}  // namespace onnxserve::server

// GRPCInferenceService on gRPC's async API, every method served by the one polling thread of a GrpcPoller
// (grpc_poller.h). The cheap methods are answered on it; inference requests are decoded (and so validated) on it
// into a ServableRequest for their model version's servable, which never runs them on it (a worker does), and
// whose answer is encoded into the response on whatever thread gives it; model loads and unloads go to a thread
// of their own. So a queued request holds no thread, and a long run holds up no other call. Errors are
// absl::Status values mapped to gRPC codes in one place (status.h).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpc_service.grpc.pb.h"
#include "server/observability/metrics.h"
#include "server/observability/trace_context.h"
#include "server/protocol/grpc_access.h"
#include "server/protocol/grpc_poller.h"
#include "server/protocol/infer_codec.h"
#include "server/protocol/unary_call.h"
#include "server/serving/repository.h"
#include "server/servable/servable.h"

namespace onnxserve::server {

inline constexpr const char* kServerName = "onnxserve";
inline constexpr const char* kServerVersion = "0.1.0";

namespace internal {
using Grpc = inference::GRPCInferenceService;
// Every method on the async API, ModelStreamInfer raw (ByteBuffer in and out): typed, gRPC reports a message
// that does not decode as the client's half-close, and the stream would end with OK.
using AsyncServiceWithRawStream = Grpc::WithAsyncMethod_ServerLive<Grpc::WithAsyncMethod_ServerReady<
    Grpc::WithAsyncMethod_ModelReady<Grpc::WithAsyncMethod_ServerMetadata<
        Grpc::WithAsyncMethod_ModelMetadata<Grpc::WithAsyncMethod_ModelInfer<
            Grpc::WithRawMethod_ModelStreamInfer<Grpc::WithAsyncMethod_ModelConfig<
                Grpc::WithAsyncMethod_ModelStatistics<Grpc::WithAsyncMethod_RepositoryIndex<
                    Grpc::WithAsyncMethod_RepositoryModelLoad<
                        Grpc::WithAsyncMethod_RepositoryModelUnload<Grpc::Service>>>>>>>>>>>>;
}  // namespace internal

// Runs model loads and unloads (RepositoryModelLoad/Unload, POST /v2/repository/models/<m>/load) one at a time
// on a thread of its own, so that gRPC's polling thread and the HTTP workers stay free while a model loads
// (seconds) or an unload waits for one. Its destructor answers the jobs still queued with UNAVAILABLE and joins
// the thread, so no job outlives the repository it acts on.
class LoadQueue {
 public:
  LoadQueue();
  ~LoadQueue();
  LoadQueue(const LoadQueue&) = delete;
  LoadQueue& operator=(const LoadQueue&) = delete;

  using Job = std::function<absl::Status()>;
  using Finish = std::function<void(const absl::Status&)>;
  // Runs `job` and then calls `finish` with its result, once, on the loading thread.
  void Submit(Job job, Finish finish);

 private:
  void Work();

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::pair<Job, Finish>> queue_;
  bool stopping_ = false;
  std::thread worker_;  // last: starts once the rest exists
};

// Where one request's time went, for its log line: queue (arrival to its batch's start, or to its answer when
// it never ran), compute (its batch's run), encode (building the response message) and the batch's rows.
struct RequestTimes {
  absl::Duration queue = absl::ZeroDuration();
  absl::Duration compute = absl::ZeroDuration();
  absl::Duration encode = absl::ZeroDuration();
  int64_t batch_rows = 0;
};

// The control of a gRPC call: its deadline (none when it is further than a year away), IsCancelled (true once
// the polling thread has seen the call end) and the `traceparent` metadata when it is valid; the caller, the
// polling thread, may not run the model. `context` must outlive the call.
CallControl ControlOf(const grpc::ServerContextBase* context);

class InferenceService final : public internal::AsyncServiceWithRawStream {
 public:
  // `repository`, `metrics` and `access` (both may be null: no metrics, no access control) must outlive the
  // service.
  InferenceService(ModelRepository& repository, ServerMetrics* metrics, const GrpcAccess* access = nullptr);

  // ServerReady's answer: false until the repository has started, and again once shutdown begins.
  void SetReady(bool ready) { ready_.store(ready); }
  bool ready() const { return ready_.load(); }
  // Whether every inference request gets an info line `event=request` (serve's --log-requests). Off by
  // default: at thousands of requests a second the lines would drown every other event.
  void SetLogRequests(bool on) { log_requests_.store(on); }

  // Decodes `request`, runs it on its model version's servable and eventually fills `response` and calls
  // `finish` exactly once (on this thread for requests rejected up front or run at once, else on a batch
  // worker). `response` and whatever `control.cancelled` captures must stay valid until then; input tensors
  // read `request`'s raw contents in place and hold it (DecodeInputs). The one entry of inference, gRPC and
  // REST alike.
  void Infer(std::shared_ptr<const inference::ModelInferRequest> request, CallControl control,
             inference::ModelInferResponse* response, std::function<void(const absl::Status&)> finish);

  // The answers of the unary RPCs, shared with the REST endpoints (rest_api.cc), which translate the messages
  // to JSON: the RPCs below add only the access check and the gRPC status.
  void AnswerServerMetadata(inference::ServerMetadataResponse& response) const;
  absl::Status AnswerModelMetadata(const inference::ModelMetadataRequest& request,
                                   inference::ModelMetadataResponse& response) const;
  absl::Status AnswerModelConfig(const inference::ModelConfigRequest& request,
                                 inference::ModelConfigResponse& response) const;
  absl::Status AnswerModelStatistics(const inference::ModelStatisticsRequest& request,
                                     inference::ModelStatisticsResponse& response) const;
  void AnswerRepositoryIndex(const inference::RepositoryIndexRequest& request,
                             inference::RepositoryIndexResponse& response) const;
  // Queues the load on the load thread; `finish` gets its result (at once when the request is refused).
  void LoadModel(const inference::RepositoryModelLoadRequest& request, LoadQueue::Finish finish);
  // Blocks while a load runs (ModelRepository::Unload): gRPC's handler queues it on the load thread.
  absl::Status UnloadModel(const inference::RepositoryModelUnloadRequest& request);

  // Serves every method on `poller` from now on; `poller` must have been made with the builder this service is
  // registered with, and stop before this service is destroyed.
  void ServeOn(GrpcPoller& poller);

  // The access check of `method` (a GRPCInferenceService method name): handlers act only on an OK answer.
  // The interceptor has already ended a refused call; this keeps its handler from having effects anyway.
  absl::Status Allowed(const grpc::ServerContextBase* context, absl::string_view method) const;

 private:
  // Infer's work, which may throw.
  void Run(const std::shared_ptr<const inference::ModelInferRequest>& request, CallControl control,
           inference::ModelInferResponse* response, std::function<void(const absl::Status&)> finish);
  // Accounts one answered inference request: metrics, and its log line. `times` is empty for requests
  // answered before they reached the servable.
  void Reply(const std::string& model, const std::string& version, absl::Time arrival, const absl::Status& status,
             const std::optional<TraceContext>& trace, const RequestTimes& times = {});
  void LogRequest(const std::string& model, const std::string& version, const absl::Status& status,
                  absl::Duration total, const std::optional<TraceContext>& trace, const RequestTimes& times) const;
  // Serves the unary `method` with `handle`, which runs on the polling thread once the access check passed.
  template <class Messages, class Handle>
  void Serve(GrpcPoller& poller, absl::string_view method,
             typename UnaryMethod<InferenceService, Messages>::RequestFn request_call, Handle handle);

  ModelRepository& repository_;
  ServerMetrics* metrics_;
  const GrpcAccess* access_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> log_requests_{false};
  LoadQueue loads_;
  std::vector<std::shared_ptr<const void>> methods_;  // the unary methods served, for as long as calls may come
};

}  // namespace onnxserve::server

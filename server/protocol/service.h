// GRPCInferenceService on gRPC's callback API. Inference requests are decoded (and so validated) on the gRPC
// thread into a ServableRequest for their model version's servable, whose answer is encoded into the
// response on whatever thread gives it (a batch worker, or this one when the request ran at once), so a queued
// request holds no thread. Errors are absl::Status values mapped to gRPC codes in one place (status.h).
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

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpc_service.grpc.pb.h"
#include "server/observability/metrics.h"
#include "server/observability/trace_context.h"
#include "server/protocol/grpc_access.h"
#include "server/protocol/held_requests.h"
#include "server/protocol/infer_codec.h"
#include "server/serving/repository.h"
#include "server/servable/servable.h"

namespace onnxserve::server {

inline constexpr const char* kServerName = "onnxserve";
inline constexpr const char* kServerVersion = "0.1.0";

namespace internal {
using Grpc = inference::GRPCInferenceService;
// Every method on the callback API, ModelStreamInfer raw (ByteBuffer in and out): typed, gRPC reports a
// message that does not decode as the client's half-close, and the stream would end with OK.
using CallbackServiceWithRawStream = Grpc::WithCallbackMethod_ServerLive<Grpc::WithCallbackMethod_ServerReady<
    Grpc::WithCallbackMethod_ModelReady<Grpc::WithCallbackMethod_ServerMetadata<
        Grpc::WithCallbackMethod_ModelMetadata<Grpc::WithCallbackMethod_ModelInfer<
            Grpc::WithRawCallbackMethod_ModelStreamInfer<Grpc::WithCallbackMethod_ModelConfig<
                Grpc::WithCallbackMethod_ModelStatistics<Grpc::WithCallbackMethod_RepositoryIndex<
                    Grpc::WithCallbackMethod_RepositoryModelLoad<
                        Grpc::WithCallbackMethod_RepositoryModelUnload<Grpc::Service>>>>>>>>>>>>;
}  // namespace internal

// Runs model loads (RepositoryModelLoad, POST /v2/repository/models/<m>/load) one at a time on a thread of its
// own, so that gRPC's callback threads and the HTTP workers stay free while a model loads (seconds). Its
// destructor answers the loads still queued with UNAVAILABLE and joins the thread, so no load outlives the
// repository it loads into.
class LoadQueue {
 public:
  explicit LoadQueue(std::function<absl::Status(const std::string&)> load);
  ~LoadQueue();
  LoadQueue(const LoadQueue&) = delete;
  LoadQueue& operator=(const LoadQueue&) = delete;

  using Finish = std::function<void(const absl::Status&)>;
  // Loads `model` and then calls `finish` with the result, once, on the loading thread.
  void Submit(std::string model, Finish finish);

 private:
  void Work();

  std::function<absl::Status(const std::string&)> load_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::pair<std::string, Finish>> queue_;
  bool stopping_ = false;
  std::thread worker_;  // last: starts once the rest exists
};

// The inference requests a service has accepted and not yet let go of: answered or not, a request still holds
// its model version, its held bytes and the metrics it reports to until its answer's callback is gone, which
// may be on a batch worker after the protocol's own end of the call (a REST request answered 503 as the grace
// period ends is still computing). Thread-safe.
class AcceptedRequests {
 public:
  // Counts one request until the returned token is destroyed. The token must not outlive this object.
  std::shared_ptr<const void> Accept();
  // Blocks until every token is gone.
  void WaitUntilAllReleased();

 private:
  std::mutex mu_;
  std::condition_variable released_;
  int64_t count_ = 0;
};

// Where one request's time went, for its log line: queue (arrival to its batch's start, or to its answer when
// it never ran), compute (its batch's run), encode (building the response message) and the batch's rows.
struct RequestTimes {
  absl::Duration queue = absl::ZeroDuration();
  absl::Duration compute = absl::ZeroDuration();
  absl::Duration encode = absl::ZeroDuration();
  int64_t batch_rows = 0;
};

// The control of a gRPC call: its deadline (none when it is further than a year away), IsCancelled and the
// `traceparent` metadata when it is valid.
// `context` must outlive the call.
CallControl ControlOf(grpc::CallbackServerContext* context);

class InferenceService final : public internal::CallbackServiceWithRawStream {
 public:
  // `repository`, `metrics` and `access` (both may be null: no metrics, no access control) must outlive the
  // service.
  // At most `max_held_request_bytes` of inference requests held at once (HeldRequests; 0: no bound).
  InferenceService(ModelRepository& repository, ServerMetrics* metrics, const GrpcAccess* access = nullptr,
                   int64_t max_held_request_bytes = 0);

  // ServerReady's answer: false until the repository has started, and again once shutdown begins.
  void SetReady(bool ready) { ready_.store(ready); }
  bool ready() const { return ready_.load(); }
  // Blocks until every inference request accepted so far has been let go (AcceptedRequests): what the server
  // waits for, once the protocols have stopped taking calls, before it tears down what those requests use.
  void WaitForAcceptedRequests() { accepted_requests_.WaitUntilAllReleased(); }
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
  absl::Status UnloadModel(const inference::RepositoryModelUnloadRequest& request);

  grpc::ServerUnaryReactor* ServerLive(grpc::CallbackServerContext* context,
                                       const inference::ServerLiveRequest* request,
                                       inference::ServerLiveResponse* response) override;
  grpc::ServerUnaryReactor* ServerReady(grpc::CallbackServerContext* context,
                                        const inference::ServerReadyRequest* request,
                                        inference::ServerReadyResponse* response) override;
  grpc::ServerUnaryReactor* ModelReady(grpc::CallbackServerContext* context,
                                       const inference::ModelReadyRequest* request,
                                       inference::ModelReadyResponse* response) override;
  grpc::ServerUnaryReactor* ServerMetadata(grpc::CallbackServerContext* context,
                                           const inference::ServerMetadataRequest* request,
                                           inference::ServerMetadataResponse* response) override;
  grpc::ServerUnaryReactor* ModelMetadata(grpc::CallbackServerContext* context,
                                          const inference::ModelMetadataRequest* request,
                                          inference::ModelMetadataResponse* response) override;
  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* context,
                                       const inference::ModelInferRequest* request,
                                       inference::ModelInferResponse* response) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ModelStreamInfer(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* ModelConfig(grpc::CallbackServerContext* context,
                                        const inference::ModelConfigRequest* request,
                                        inference::ModelConfigResponse* response) override;
  grpc::ServerUnaryReactor* ModelStatistics(grpc::CallbackServerContext* context,
                                            const inference::ModelStatisticsRequest* request,
                                            inference::ModelStatisticsResponse* response) override;
  grpc::ServerUnaryReactor* RepositoryIndex(grpc::CallbackServerContext* context,
                                            const inference::RepositoryIndexRequest* request,
                                            inference::RepositoryIndexResponse* response) override;
  grpc::ServerUnaryReactor* RepositoryModelLoad(grpc::CallbackServerContext* context,
                                                const inference::RepositoryModelLoadRequest* request,
                                                inference::RepositoryModelLoadResponse* response) override;
  grpc::ServerUnaryReactor* RepositoryModelUnload(grpc::CallbackServerContext* context,
                                                  const inference::RepositoryModelUnloadRequest* request,
                                                  inference::RepositoryModelUnloadResponse* response) override;

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
  // The access check of `method` (a GRPCInferenceService method name): handlers act only on an OK answer.
  // The interceptor has already ended a refused call; this keeps its handler from having effects anyway.
  absl::Status Allowed(const grpc::CallbackServerContext* context, absl::string_view method) const;

  // ModelInfer's request and response of each call on a protobuf arena of their own (service.cc).
  class ArenaInferMessages : public grpc::MessageAllocator<inference::ModelInferRequest, inference::ModelInferResponse> {
   public:
    grpc::MessageHolder<inference::ModelInferRequest, inference::ModelInferResponse>* AllocateMessages() override;
  };

  ModelRepository& repository_;
  ServerMetrics* metrics_;
  const GrpcAccess* access_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> log_requests_{false};
  HeldRequests held_requests_;
  AcceptedRequests accepted_requests_;
  LoadQueue loads_;
  ArenaInferMessages infer_messages_;
};

}  // namespace onnxserve::server

#include "server/protocol/service.h"

#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "google/protobuf/arena.h"
#include "runtime/core/status_macros.h"
#include "server/observability/log.h"
#include "server/protocol/status.h"
#include "server/protocol/stream_infer_call.h"
#include "server/serving/datatype.h"

namespace onnxserve::server {
namespace {

using inference::ModelInferRequest;
using inference::ModelInferResponse;
using inference::ModelStreamInferResponse;

void FillTensorMetadata(const std::vector<TensorSpec>& specs,
                        google::protobuf::RepeatedPtrField<inference::ModelMetadataResponse::TensorMetadata>& out) {
  for (const auto& spec : specs) {
    auto* meta = out.Add();
    meta->set_name(spec.name);
    meta->set_datatype(KServeDataType(spec.dtype));
    for (int64_t d : spec.dims) meta->add_shape(d);
  }
}

// Calls `finish` the first time it is called, and never again.
class FinishOnce {
 public:
  explicit FinishOnce(std::function<void(const absl::Status&)> finish) : finish_(std::move(finish)) {}
  void operator()(const absl::Status& status) {
    if (!called_.exchange(true)) finish_(status);
  }

 private:
  std::function<void(const absl::Status&)> finish_;
  std::atomic<bool> called_{false};
};

// The queue and compute stages of a request its servable answers now.
RequestTimes TimesOf(const ExecutionTiming& execution, absl::Time arrival) {
  RequestTimes times;
  if (execution.start == absl::InfinitePast()) {  // never ran: it waited until now
    times.queue = absl::Now() - arrival;
    return times;
  }
  times.queue = execution.start - arrival;
  times.compute = execution.compute;
  times.batch_rows = execution.rows;
  return times;
}

// One request counted in its version's in-flight gauge from construction until End(), or until destruction
// when End() never ran (a request dropped by an exception between queueing and its answer): the gauge is
// decremented exactly once either way, so it returns to 0 whatever happened to the request.
class InFlight {
 public:
  InFlight(ServerMetrics* metrics, std::string model, std::string version)
      : metrics_(metrics), model_(std::move(model)), version_(std::move(version)) {
    if (metrics_) metrics_->AddInFlight(model_, version_, +1);
  }
  ~InFlight() { End(); }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

  void End() {
    if (metrics_ && !ended_.exchange(true)) metrics_->AddInFlight(model_, version_, -1);
  }

 private:
  ServerMetrics* metrics_;
  std::string model_, version_;
  std::atomic<bool> ended_{false};
};

// One ModelInfer call's request and response, on an arena whose first block comes with them: a call whose
// messages fit it costs one allocation for all its fields, where a heap message costs one per string and
// repeated field (a dozen for a one-input request and its response), and frees them all at once.
//
// Shared: the call holds them until it ends, and SharedRequest hands out more references, so that input tensors
// reading the request's bytes in place keep them (and the arena) alive for as long as they exist, after the
// call ended included. The last one to let go frees the lot, on whatever thread that is.
class InferMessagesOnArena final : public std::enable_shared_from_this<InferMessagesOnArena> {
  struct Token {};  // keeps the constructor for Create, which make_shared needs public

 public:
  explicit InferMessagesOnArena(Token) : arena_(ArenaOptionsOn(first_block_)) {}
  static std::shared_ptr<InferMessagesOnArena> Create() { return std::make_shared<InferMessagesOnArena>(Token{}); }
  ModelInferRequest& request() { return *request_; }
  ModelInferResponse& response() { return *response_; }
  // The request, owned by the pointer.
  std::shared_ptr<const ModelInferRequest> SharedRequest() { return {shared_from_this(), request_}; }

 private:
  // Holds a 784-float input (the MNIST-sized requests the load tests send) with its message, and its answer;
  // larger messages take further blocks from the heap.
  static constexpr size_t kFirstBlockBytes = 8192;

  static google::protobuf::ArenaOptions ArenaOptionsOn(char* block) {
    google::protobuf::ArenaOptions options;
    options.initial_block = block;
    options.initial_block_size = kFirstBlockBytes;
    return options;
  }

  alignas(std::max_align_t) char first_block_[kFirstBlockBytes];
  google::protobuf::Arena arena_;  // after first_block_: destroyed before it
  ModelInferRequest* request_ = google::protobuf::Arena::CreateMessage<ModelInferRequest>(&arena_);
  ModelInferResponse* response_ = google::protobuf::Arena::CreateMessage<ModelInferResponse>(&arena_);
};

}  // namespace

LoadQueue::LoadQueue() : worker_([this] { Work(); }) {}

LoadQueue::~LoadQueue() {
  std::deque<std::pair<Job, Finish>> abandoned;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    abandoned.swap(queue_);
  }
  wake_.notify_all();
  for (auto& [job, finish] : abandoned) finish(absl::UnavailableError("server shutting down: not done"));
  worker_.join();
}

void LoadQueue::Submit(Job job, Finish finish) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.emplace_back(std::move(job), std::move(finish));
  }
  wake_.notify_one();
}

void LoadQueue::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    auto [job, finish] = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    finish(job());
    lock.lock();
  }
}

InferenceService::InferenceService(ModelRepository& repository, ServerMetrics* metrics, const GrpcAccess* access)
    : repository_(repository), metrics_(metrics), access_(access) {}

absl::Status InferenceService::Allowed(const grpc::ServerContextBase* ctx, absl::string_view method) const {
  if (access_ == nullptr || !access_->restricts_anything()) return absl::OkStatus();
  return access_->Check(absl::StrCat("/", inference::GRPCInferenceService::service_full_name(), "/", method), *ctx);
}

void InferenceService::Reply(const std::string& model, const std::string& version, absl::Time arrival,
                             const absl::Status& status, const std::optional<TraceContext>& trace,
                             const RequestTimes& times) {
  const absl::Duration total = absl::Now() - arrival;
  if (metrics_) metrics_->OnRequest(model, version, ToGrpcCode(status.code()), absl::ToDoubleSeconds(total));
  if (log_requests_.load(std::memory_order_relaxed)) LogRequest(model, version, status, total, trace, times);
  if (!status.ok()) {
    Log(LogLevel::kDebug, "request_failed", {{"model", model}, {"version", version}, {"error", status.ToString()}});
  }
}

// Whole microseconds, truncated: each stage is a difference of the same clock's readings and they follow one
// another, so queue_us + compute_us + encode_us <= total_us holds on every line.
void InferenceService::LogRequest(const std::string& model, const std::string& version, const absl::Status& status,
                                  absl::Duration total, const std::optional<TraceContext>& trace,
                                  const RequestTimes& times) const {
  auto us = [](absl::Duration d) { return absl::StrCat(absl::ToInt64Microseconds(d)); };
  // `model` is a repository's model or kUnknownModel, never a client's name: bounded, like the metric labels.
  std::vector<LogField> fields = {
      {"model", model},           {"version", version},
      {"code", std::string(absl::StatusCodeToString(status.code()))},
      {"queue_us", us(times.queue)}, {"compute_us", us(times.compute)}, {"encode_us", us(times.encode)},
      {"total_us", us(total)},    {"batch", absl::StrCat(times.batch_rows)}};
  if (trace) {
    fields.emplace_back("trace_id", trace->trace_id);  // validated hex (trace_context.h): safe to log
    fields.emplace_back("span_id", trace->span_id);
  }
  Log(LogLevel::kInfo, "request", fields);
}

CallControl ControlOf(const grpc::ServerContextBase* ctx) {
  CallControl control;
  control.caller_may_run = false;
  const auto grpc_deadline = ctx->deadline();
  if (grpc_deadline < std::chrono::system_clock::now() + std::chrono::hours(24 * 365)) {
    control.deadline = absl::FromChrono(grpc_deadline);
  }
  control.cancelled = [ctx] { return ctx->IsCancelled(); };
  const auto& metadata = ctx->client_metadata();
  if (auto it = metadata.find(kTraceparentHeader); it != metadata.end()) {
    control.trace = ParseTraceparent(std::string_view(it->second.data(), it->second.size()));
  }
  return control;
}

void InferenceService::Infer(std::shared_ptr<const ModelInferRequest> wire, CallControl control,
                             ModelInferResponse* response, std::function<void(const absl::Status&)> finish) {
  // Whatever throws (an allocation, a bug), the call is answered exactly once and the server goes on.
  auto once = std::make_shared<FinishOnce>(std::move(finish));
  try {
    Run(wire, std::move(control), response, [once](const absl::Status& status) { (*once)(status); });
  } catch (const std::bad_alloc&) {
    (*once)(absl::ResourceExhaustedError("out of memory while handling the request"));
  } catch (const std::exception& e) {
    (*once)(absl::InternalError(absl::StrCat("request failed: ", e.what())));
  }
}

void InferenceService::Run(const std::shared_ptr<const ModelInferRequest>& shared_wire, CallControl control,
                           ModelInferResponse* response, std::function<void(const absl::Status&)> finish) {
  const ModelInferRequest& wire = *shared_wire;
  const absl::Time arrival = absl::Now();
  auto found = repository_.Find(wire.model_name(), wire.model_version());
  if (!found.ok()) {
    // Only the repository's models get series of their own (UNAVAILABLE names one of them); any other
    // name would let clients mint series without end.
    const bool known = absl::IsUnavailable(found.status());
    Reply(known ? wire.model_name() : kUnknownModel, "", arrival, found.status(), control.trace);
    return finish(found.status());
  }
  std::shared_ptr<const ModelVersion> mv = *std::move(found);
  std::optional<TraceContext> trace = control.trace;
  absl::StatusOr<DecodedInfer> decoded = DecodeInfer(*mv, shared_wire, std::move(control), arrival);
  if (!decoded.ok()) {
    mv->stats->RecordRequest(false, absl::Now() - arrival, 0);
    Reply(mv->name, mv->version_str, arrival, decoded.status(), trace);
    return finish(decoded.status());
  }
  auto inflight = std::make_shared<InFlight>(metrics_, mv->name, mv->version_str);
  // The done callback holds `mv`: the version stays alive until its servable has answered.
  ServableDone done = [this, mv, id = wire.id(), picked = std::move(decoded->outputs), rows = decoded->request.rows,
                       response, arrival, inflight, trace = std::move(trace),
                       finish = std::move(finish)](ServableResponse answer) {
    RequestTimes times = TimesOf(answer.timing, arrival);
    const absl::Time encode_start = absl::Now();
    if (answer.outputs.ok()) EncodeInferResponse(*mv, id, picked, *answer.outputs, *response);
    times.encode = absl::Now() - encode_start;
    mv->stats->RecordRequest(answer.outputs.ok(), absl::Now() - arrival, rows);
    Reply(mv->name, mv->version_str, arrival, answer.outputs.status(), trace, times);
    inflight->End();  // before finish: a client that sees its answer must not then scrape itself in flight
    finish(answer.outputs.status());
  };
  mv->servable->Run(std::move(decoded->request), std::move(done));
}

void InferenceService::AnswerServerMetadata(inference::ServerMetadataResponse& response) const {
  response.set_name(kServerName);
  response.set_version(kServerVersion);
  for (const char* extension : {"model_repository", "model_configuration", "statistics", "binary_tensor_data"}) {
    response.add_extensions(extension);
  }
}

absl::Status InferenceService::AnswerModelMetadata(const inference::ModelMetadataRequest& request,
                                                   inference::ModelMetadataResponse& response) const {
  ASSIGN_OR_RETURN(std::shared_ptr<const ModelVersion> found, repository_.Find(request.name(), request.version()));
  const ModelVersion& mv = *found;
  response.set_name(mv.name);
  response.set_platform(mv.config.platform());
  for (const auto& ready : repository_.ReadyVersions(mv.name)) response.add_versions(ready->version_str);
  FillTensorMetadata(mv.inputs, *response.mutable_inputs());
  FillTensorMetadata(mv.outputs, *response.mutable_outputs());
  return absl::OkStatus();
}

absl::Status InferenceService::AnswerModelConfig(const inference::ModelConfigRequest& request,
                                                 inference::ModelConfigResponse& response) const {
  ASSIGN_OR_RETURN(std::shared_ptr<const ModelVersion> found, repository_.Find(request.name(), request.version()));
  *response.mutable_config() = found->config;
  return absl::OkStatus();
}

absl::Status InferenceService::AnswerModelStatistics(const inference::ModelStatisticsRequest& request,
                                                     inference::ModelStatisticsResponse& response) const {
  std::vector<std::shared_ptr<const ModelVersion>> versions;
  if (!request.version().empty()) {
    ASSIGN_OR_RETURN(std::shared_ptr<const ModelVersion> found, repository_.Find(request.name(), request.version()));
    versions.push_back(std::move(found));
  } else {
    versions = repository_.ReadyVersions(request.name());
    if (versions.empty() && !request.name().empty()) {
      return absl::NotFoundError(absl::StrCat("unknown model ", QuotedName(request.name())));
    }
  }
  for (const auto& mv : versions) *response.add_model_stats() = mv->stats->Snapshot();
  return absl::OkStatus();
}

void InferenceService::AnswerRepositoryIndex(const inference::RepositoryIndexRequest& request,
                                             inference::RepositoryIndexResponse& response) const {
  for (const auto& entry : repository_.Index(request.ready())) {
    auto* model = response.add_models();
    model->set_name(entry.name);
    model->set_version(entry.version);
    model->set_state(entry.state);
    model->set_reason(entry.reason);
  }
}

void InferenceService::LoadModel(const inference::RepositoryModelLoadRequest& request, LoadQueue::Finish finish) {
  if (!request.parameters().empty()) {
    return finish(absl::InvalidArgumentError(
        "RepositoryModelLoad parameters (config override, files) are not supported"));
  }
  loads_.Submit([this, model = request.model_name()] { return repository_.Load(model); }, std::move(finish));
}

absl::Status InferenceService::UnloadModel(const inference::RepositoryModelUnloadRequest& request) {
  return repository_.Unload(request.model_name());
}

template <class Messages, class Handle>
void InferenceService::Serve(GrpcPoller& poller, absl::string_view method,
                             typename UnaryMethod<InferenceService, Messages>::RequestFn request_call, Handle handle) {
  methods_.push_back(ServeUnary<InferenceService, Messages>(
      this, poller, request_call,
      [this, method, handle = std::move(handle)](grpc::ServerContext& ctx, const std::shared_ptr<Messages>& messages,
                                                 AnswerCall answer) {
        if (absl::Status allowed = Allowed(&ctx, method); !allowed.ok()) return answer(allowed);
        handle(ctx, messages, std::move(answer));
      }));
}

// Each handler runs on the polling thread: the cheap methods answer there, the rest hand their work on.
void InferenceService::ServeOn(GrpcPoller& poller) {
  using namespace inference;  // NOLINT: the messages of every method below
  Serve<UnaryMessages<ServerLiveRequest, ServerLiveResponse>>(
      poller, "ServerLive", &InferenceService::RequestServerLive,
      [](grpc::ServerContext&, const auto& m, AnswerCall answer) {
        m->response().set_live(true);
        answer(absl::OkStatus());
      });
  Serve<UnaryMessages<ServerReadyRequest, ServerReadyResponse>>(
      poller, "ServerReady", &InferenceService::RequestServerReady,
      [this](grpc::ServerContext&, const auto& m, AnswerCall answer) {
        m->response().set_ready(ready());
        answer(absl::OkStatus());
      });
  Serve<UnaryMessages<ModelReadyRequest, ModelReadyResponse>>(
      poller, "ModelReady", &InferenceService::RequestModelReady,
      [this](grpc::ServerContext&, const auto& m, AnswerCall answer) {
        auto found = repository_.Find(m->request().name(), m->request().version());
        if (absl::IsNotFound(found.status())) return answer(found.status());
        m->response().set_ready(found.ok() && ready());
        answer(absl::OkStatus());
      });
  Serve<UnaryMessages<ServerMetadataRequest, ServerMetadataResponse>>(
      poller, "ServerMetadata", &InferenceService::RequestServerMetadata,
      [this](grpc::ServerContext&, const auto& m, AnswerCall answer) {
        AnswerServerMetadata(m->response());
        answer(absl::OkStatus());
      });
  Serve<UnaryMessages<ModelMetadataRequest, ModelMetadataResponse>>(
      poller, "ModelMetadata", &InferenceService::RequestModelMetadata,
      [this](grpc::ServerContext&, const auto& m, AnswerCall answer) {
        answer(AnswerModelMetadata(m->request(), m->response()));
      });
  // The tensors read the request in place and hold it (SharedRequest); the servable runs it on a worker.
  Serve<InferMessagesOnArena>(poller, "ModelInfer", &InferenceService::RequestModelInfer,
                              [this](grpc::ServerContext& ctx, const auto& m, AnswerCall answer) {
                                Infer(m->SharedRequest(), ControlOf(&ctx), &m->response(), std::move(answer));
                              });
  Serve<UnaryMessages<ModelConfigRequest, ModelConfigResponse>>(
      poller, "ModelConfig", &InferenceService::RequestModelConfig,
      [this](grpc::ServerContext&, const auto& m, AnswerCall answer) {
        answer(AnswerModelConfig(m->request(), m->response()));
      });
  Serve<UnaryMessages<ModelStatisticsRequest, ModelStatisticsResponse>>(
      poller, "ModelStatistics", &InferenceService::RequestModelStatistics,
      [this](grpc::ServerContext&, const auto& m, AnswerCall answer) {
        answer(AnswerModelStatistics(m->request(), m->response()));
      });
  Serve<UnaryMessages<RepositoryIndexRequest, RepositoryIndexResponse>>(
      poller, "RepositoryIndex", &InferenceService::RequestRepositoryIndex,
      [this](grpc::ServerContext&, const auto& m, AnswerCall answer) {
        AnswerRepositoryIndex(m->request(), m->response());
        answer(absl::OkStatus());
      });
  Serve<UnaryMessages<RepositoryModelLoadRequest, RepositoryModelLoadResponse>>(
      poller, "RepositoryModelLoad", &InferenceService::RequestRepositoryModelLoad,
      [this](grpc::ServerContext&, const auto& m, AnswerCall answer) { LoadModel(m->request(), std::move(answer)); });
  // An unload waits for a load in progress: on the load thread.
  Serve<UnaryMessages<RepositoryModelUnloadRequest, RepositoryModelUnloadResponse>>(
      poller, "RepositoryModelUnload", &InferenceService::RequestRepositoryModelUnload,
      [this](grpc::ServerContext&, const auto& m, AnswerCall answer) {
        loads_.Submit([this, m] { return UnloadModel(m->request()); }, std::move(answer));
      });
  AwaitStreamInfer(*this, poller);
}

}  // namespace onnxserve::server

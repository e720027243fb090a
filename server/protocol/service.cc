#include "server/protocol/service.h"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "google/protobuf/arena.h"
#include "runtime/core/status_macros.h"
#include "server/observability/log.h"
#include "server/protocol/status.h"
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

// Protobuf refuses to serialize a message of 2 GiB or more, and gRPC's unary path aborts the process when it
// cannot serialize its response; the stream's envelope around a ModelInferResponse takes a few bytes more.
constexpr size_t kMaxGrpcResponseBytes = std::numeric_limits<int32_t>::max() - 64;

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

// What an accepted request holds until its answer's callback is destroyed. Members go in reverse order, so the
// count of accepted requests drops only once the version (whose last reference may be this one: its servables
// reach the cache and the metrics as they go), the held bytes and the in-flight gauge are let go.
struct AcceptedRequest {
  std::shared_ptr<const void> accepted;
  std::shared_ptr<const ModelVersion> version;
  std::shared_ptr<const void> held_bytes;
  std::shared_ptr<InFlight> inflight;
};

grpc::ServerUnaryReactor* Finished(grpc::CallbackServerContext* ctx, const absl::Status& status) {
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

// ModelStreamInfer: reads requests one after another and runs them concurrently, at most
// kMaxInFlightPerStream unanswered at a time (past that it stops reading: gRPC's flow control then holds
// the client back); writes one response per request in completion order (errors in error_message); and
// finishes once the client has half-closed and every response is written, with INVALID_ARGUMENT instead
// of OK when a message did not decode. Deletes itself in OnDone.
//
// Every decision is made under mu_ by Advance(); the gRPC calls it decides on are made after the lock is
// released, Finish last of all, because OnDone may delete the reactor on another thread the moment
// Finish is called.
class StreamInferReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  StreamInferReactor(InferenceService& service, grpc::CallbackServerContext* ctx) : service_(service), ctx_(ctx) {
    Advance(std::unique_lock<std::mutex>(mu_));
  }

  void OnReadDone(bool ok) override {
    auto call = std::make_shared<Call>();
    const bool decoded = ok && Decode(incoming_, call->request);
    incoming_.Clear();
    std::unique_lock<std::mutex> lock(mu_);
    reading_ = false;
    ++messages_;
    if (!decoded) {
      reads_done_ = true;
      if (ok) {
        final_status_ = grpc::Status(grpc::INVALID_ARGUMENT,
                                     absl::StrCat("message ", messages_, " of the stream is not a ModelInferRequest"));
      }
      return Advance(std::move(lock));
    }
    ++in_flight_;
    lock.unlock();
    // Reads are not done, so the stream cannot finish, and `this` outlives Infer even if the call completes.
    service_.Infer(std::shared_ptr<const ModelInferRequest>(call, &call->request), ControlOf(ctx_),
                   call->response.mutable_infer_response(),
                   [this, call](const absl::Status& status) { Complete(*call, status); });
    Advance(std::unique_lock<std::mutex>(mu_));
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock<std::mutex> lock(mu_);
    writing_ = false;
    writes_.pop_front();
    if (!ok) {
      broken_ = true;
      writes_.clear();
    }
    Advance(std::move(lock));
  }

  void OnDone() override { delete this; }

 private:
  struct Call {
    ModelInferRequest request;
    ModelStreamInferResponse response;
  };

  static bool Decode(grpc::ByteBuffer& buffer, ModelInferRequest& request) {
    return grpc::SerializationTraits<ModelInferRequest>::Deserialize(&buffer, &request).ok();
  }

  void Complete(Call& call, const absl::Status& status) {
    if (!status.ok()) {
      call.response.Clear();
      call.response.set_error_message(std::string(status.message()));
      // A name longer than any model's is not echoed: it may be megabytes.
      if (call.request.model_name().size() <= kMaxModelNameBytes) {
        call.response.mutable_infer_response()->set_model_name(call.request.model_name());
      }
      call.response.mutable_infer_response()->set_id(call.request.id());
    }
    grpc::ByteBuffer encoded;
    bool own_buffer = false;
    const bool serialized =
        grpc::SerializationTraits<ModelStreamInferResponse>::Serialize(call.response, &encoded, &own_buffer).ok();
    std::unique_lock<std::mutex> lock(mu_);
    --in_flight_;
    if (!serialized) {
      final_status_ = grpc::Status(grpc::INTERNAL, "a response could not be serialized");
    } else if (!broken_) {
      writes_.push_back(std::move(encoded));
    }
    Advance(std::move(lock));
  }

  // Starts the next read or write, or finishes, as the state allows. Called with mu_ held by the change of
  // state it follows, in the same critical section: a thread that changed the state and then looked again
  // could find the reactor already finished and deleted by another. After unlocking, a thread acts only on a
  // read or write it started, and either keeps the stream from finishing until it completes.
  void Advance(std::unique_lock<std::mutex> lock) {
    bool read = false, finish = false;
    grpc::ByteBuffer* write = nullptr;
    grpc::Status status;
    {
      if (!reads_done_ && !reading_ && in_flight_ + static_cast<int>(writes_.size()) < kMaxInFlightPerStream) {
        reading_ = read = true;
      }
      if (!writing_ && !writes_.empty()) {
        writing_ = true;
        write = &writes_.front();  // a deque keeps it in place while later responses are appended
      }
      if (reads_done_ && in_flight_ == 0 && !writing_ && writes_.empty() && !finished_) {
        finished_ = finish = true;
        status = final_status_;
      }
      lock.unlock();
    }
    if (read) StartRead(&incoming_);
    if (write != nullptr) StartWrite(write);
    if (finish) Finish(status);  // last: `this` may be gone once it returns
  }

  // Unanswered requests one stream may hold: bounds its memory (requests and responses waiting to be
  // written) while keeping a batcher fed.
  static constexpr int kMaxInFlightPerStream = 64;

  InferenceService& service_;
  grpc::CallbackServerContext* ctx_;
  grpc::ByteBuffer incoming_;
  std::mutex mu_;
  std::deque<grpc::ByteBuffer> writes_;  // front is being written while writing_
  int in_flight_ = 0;
  int64_t messages_ = 0;
  grpc::Status final_status_;
  bool reading_ = false;
  bool reads_done_ = false;
  bool writing_ = false;
  bool broken_ = false;
  bool finished_ = false;
};

// A ModelStreamInfer call refused before it reads anything: finishes with the refusal, deletes itself in OnDone.
class RefusedStream final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  explicit RefusedStream(const absl::Status& status) { Finish(ToGrpcStatus(status)); }
  void OnDone() override { delete this; }
};

// One ModelInfer call's request and response, on an arena whose first block comes with them: a call whose
// messages fit it costs one allocation for all its fields, where a heap message costs one per string and
// repeated field (a dozen for a one-input request and its response), and frees them all at once.
//
// Shared: gRPC holds one reference from Create to Release, and SharedRequest hands out more, so that input
// tensors reading the request's bytes in place keep them (and the arena) alive for as long as they exist,
// after the call ended included. The last one to let go frees the lot, on whatever thread that is.
class InferMessagesOnArena final : public grpc::MessageHolder<ModelInferRequest, ModelInferResponse> {
  struct Token {};  // keeps the constructor for Create, which make_shared needs public

 public:
  explicit InferMessagesOnArena(Token) : arena_(ArenaOptionsOn(first_block_)) {
    set_request(google::protobuf::Arena::CreateMessage<ModelInferRequest>(&arena_));
    set_response(google::protobuf::Arena::CreateMessage<ModelInferResponse>(&arena_));
  }
  static InferMessagesOnArena* Create() {
    auto holder = std::make_shared<InferMessagesOnArena>(Token{});
    holder->self_ = holder;
    return holder.get();
  }
  // The request, owned by the pointer. Only between Create and Release: the handler's time.
  std::shared_ptr<const ModelInferRequest> SharedRequest() { return {self_, request()}; }
  // gRPC's reference goes; `this` may go with it.
  void Release() override { std::shared_ptr<InferMessagesOnArena> last = std::move(self_); }

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
  std::shared_ptr<InferMessagesOnArena> self_;  // gRPC's reference
};

}  // namespace

grpc::MessageHolder<ModelInferRequest, ModelInferResponse>* InferenceService::ArenaInferMessages::AllocateMessages() {
  return InferMessagesOnArena::Create();
}

std::shared_ptr<const void> AcceptedRequests::Accept() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++count_;
  }
  // Points at this object only to be non-null; what it owns is the deleter's release.
  return std::shared_ptr<const void>(this, [this](const void*) {
    std::lock_guard<std::mutex> lock(mu_);
    if (--count_ == 0) released_.notify_all();
  });
}

void AcceptedRequests::WaitUntilAllReleased() {
  std::unique_lock<std::mutex> lock(mu_);
  released_.wait(lock, [this] { return count_ == 0; });
}

LoadQueue::LoadQueue(std::function<absl::Status(const std::string&)> load)
    : load_(std::move(load)), worker_([this] { Work(); }) {}

LoadQueue::~LoadQueue() {
  std::deque<std::pair<std::string, Finish>> abandoned;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    abandoned.swap(queue_);
  }
  wake_.notify_all();
  for (auto& [model, finish] : abandoned) finish(absl::UnavailableError("server shutting down: model not loaded"));
  worker_.join();
}

void LoadQueue::Submit(std::string model, Finish finish) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.emplace_back(std::move(model), std::move(finish));
  }
  wake_.notify_one();
}

void LoadQueue::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    auto [model, finish] = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    finish(load_(model));
    lock.lock();
  }
}

InferenceService::InferenceService(ModelRepository& repository, ServerMetrics* metrics, const GrpcAccess* access,
                                   int64_t max_held_request_bytes)
    : repository_(repository), metrics_(metrics), access_(access), held_requests_(max_held_request_bytes),
      loads_([&repository](const std::string& model) { return repository.Load(model); }) {
  SetMessageAllocatorFor_ModelInfer(&infer_messages_);
}

absl::Status InferenceService::Allowed(const grpc::CallbackServerContext* ctx, absl::string_view method) const {
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

CallControl ControlOf(grpc::CallbackServerContext* ctx) {
  CallControl control;
  control.max_response_bytes = kMaxGrpcResponseBytes;
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
  const size_t max_response_bytes = control.max_response_bytes;
  const int64_t bytes = static_cast<int64_t>(wire.ByteSizeLong());
  std::shared_ptr<const void> hold = held_requests_.TryHold(bytes);
  if (hold == nullptr) {
    const absl::Status refused = absl::ResourceExhaustedError(
        absl::StrCat("the server holds ", held_requests_.held_bytes(), " bytes of requests and this one's ", bytes,
                     " would pass --max-held-request-bytes ", held_requests_.max_bytes(), "; retry later"));
    mv->stats->RecordRequest(false, absl::Now() - arrival, 0);
    Reply(mv->name, mv->version_str, arrival, refused, trace);
    return finish(refused);
  }
  absl::StatusOr<DecodedInfer> decoded = DecodeInfer(*mv, shared_wire, std::move(control), arrival);
  if (!decoded.ok()) {
    mv->stats->RecordRequest(false, absl::Now() - arrival, 0);
    Reply(mv->name, mv->version_str, arrival, decoded.status(), trace);
    return finish(decoded.status());
  }
  // The done callback holds the version: it stays alive until its servable has answered.
  AcceptedRequest held{accepted_requests_.Accept(), mv, std::move(hold),
                       std::make_shared<InFlight>(metrics_, mv->name, mv->version_str)};
  ServableDone done = [this, held = std::move(held), id = wire.id(), picked = std::move(decoded->outputs),
                       rows = decoded->request.rows, response, arrival, trace = std::move(trace), max_response_bytes,
                       finish = std::move(finish)](ServableResponse answer) {
    const ModelVersion& version = *held.version;
    RequestTimes times = TimesOf(answer.timing, arrival);
    const absl::Time encode_start = absl::Now();
    absl::Status status = answer.outputs.status();
    if (status.ok()) status = EncodeInferResponse(version, id, picked, *answer.outputs, max_response_bytes, *response);
    times.encode = absl::Now() - encode_start;
    version.stats->RecordRequest(status.ok(), absl::Now() - arrival, rows);
    Reply(version.name, version.version_str, arrival, status, trace, times);
    held.inflight->End();  // before finish: a client that sees its answer must not then scrape itself in flight
    finish(status);
  };
  mv->servable->Run(std::move(decoded->request), std::move(done));
}

grpc::ServerUnaryReactor* InferenceService::ServerLive(grpc::CallbackServerContext* ctx,
                                                       const inference::ServerLiveRequest*,
                                                       inference::ServerLiveResponse* response) {
  if (absl::Status allowed = Allowed(ctx, "ServerLive"); !allowed.ok()) return Finished(ctx, allowed);
  response->set_live(true);
  return Finished(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ServerReady(grpc::CallbackServerContext* ctx,
                                                        const inference::ServerReadyRequest*,
                                                        inference::ServerReadyResponse* response) {
  if (absl::Status allowed = Allowed(ctx, "ServerReady"); !allowed.ok()) return Finished(ctx, allowed);
  response->set_ready(ready());
  return Finished(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ModelReady(grpc::CallbackServerContext* ctx,
                                                       const inference::ModelReadyRequest* request,
                                                       inference::ModelReadyResponse* response) {
  if (absl::Status allowed = Allowed(ctx, "ModelReady"); !allowed.ok()) return Finished(ctx, allowed);
  auto found = repository_.Find(request->name(), request->version());
  if (absl::IsNotFound(found.status())) return Finished(ctx, found.status());
  response->set_ready(found.ok() && ready());
  return Finished(ctx, absl::OkStatus());
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

grpc::ServerUnaryReactor* InferenceService::ServerMetadata(grpc::CallbackServerContext* ctx,
                                                           const inference::ServerMetadataRequest*,
                                                           inference::ServerMetadataResponse* response) {
  if (absl::Status allowed = Allowed(ctx, "ServerMetadata"); !allowed.ok()) return Finished(ctx, allowed);
  AnswerServerMetadata(*response);
  return Finished(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ModelMetadata(grpc::CallbackServerContext* ctx,
                                                          const inference::ModelMetadataRequest* request,
                                                          inference::ModelMetadataResponse* response) {
  if (absl::Status allowed = Allowed(ctx, "ModelMetadata"); !allowed.ok()) return Finished(ctx, allowed);
  return Finished(ctx, AnswerModelMetadata(*request, *response));
}

// The request is taken from the messages that hold it, which the service's allocator made
// (SetMessageAllocatorFor_ModelInfer in the constructor): they share it with the tensors that read it.
grpc::ServerUnaryReactor* InferenceService::ModelInfer(grpc::CallbackServerContext* ctx, const ModelInferRequest*,
                                                       ModelInferResponse* response) {
  if (absl::Status allowed = Allowed(ctx, "ModelInfer"); !allowed.ok()) return Finished(ctx, allowed);
  auto* reactor = ctx->DefaultReactor();
  auto* messages = static_cast<InferMessagesOnArena*>(ctx->GetRpcAllocatorState());
  Infer(messages->SharedRequest(), ControlOf(ctx), response,
        [reactor](const absl::Status& status) { reactor->Finish(ToGrpcStatus(status)); });
  return reactor;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* InferenceService::ModelStreamInfer(
    grpc::CallbackServerContext* ctx) {
  if (absl::Status allowed = Allowed(ctx, "ModelStreamInfer"); !allowed.ok()) return new RefusedStream(allowed);
  return new StreamInferReactor(*this, ctx);
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
  // Refused now rather than after the loads queued ahead of it (seconds each, or forever), while the queue
  // held a name of up to a request's size outside --max-held-request-bytes.
  if (absl::Status name = CheckModelName(request.model_name()); !name.ok()) return finish(name);
  loads_.Submit(request.model_name(), std::move(finish));
}

absl::Status InferenceService::UnloadModel(const inference::RepositoryModelUnloadRequest& request) {
  return repository_.Unload(request.model_name());
}

grpc::ServerUnaryReactor* InferenceService::ModelConfig(grpc::CallbackServerContext* ctx,
                                                        const inference::ModelConfigRequest* request,
                                                        inference::ModelConfigResponse* response) {
  if (absl::Status allowed = Allowed(ctx, "ModelConfig"); !allowed.ok()) return Finished(ctx, allowed);
  return Finished(ctx, AnswerModelConfig(*request, *response));
}

grpc::ServerUnaryReactor* InferenceService::ModelStatistics(grpc::CallbackServerContext* ctx,
                                                            const inference::ModelStatisticsRequest* request,
                                                            inference::ModelStatisticsResponse* response) {
  if (absl::Status allowed = Allowed(ctx, "ModelStatistics"); !allowed.ok()) return Finished(ctx, allowed);
  return Finished(ctx, AnswerModelStatistics(*request, *response));
}

grpc::ServerUnaryReactor* InferenceService::RepositoryIndex(grpc::CallbackServerContext* ctx,
                                                            const inference::RepositoryIndexRequest* request,
                                                            inference::RepositoryIndexResponse* response) {
  if (absl::Status allowed = Allowed(ctx, "RepositoryIndex"); !allowed.ok()) return Finished(ctx, allowed);
  AnswerRepositoryIndex(*request, *response);
  return Finished(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::RepositoryModelLoad(grpc::CallbackServerContext* ctx,
                                                                const inference::RepositoryModelLoadRequest* request,
                                                                inference::RepositoryModelLoadResponse*) {
  if (absl::Status allowed = Allowed(ctx, "RepositoryModelLoad"); !allowed.ok()) return Finished(ctx, allowed);
  auto* reactor = ctx->DefaultReactor();
  LoadModel(*request, [reactor](const absl::Status& status) { reactor->Finish(ToGrpcStatus(status)); });
  return reactor;
}

grpc::ServerUnaryReactor* InferenceService::RepositoryModelUnload(
    grpc::CallbackServerContext* ctx, const inference::RepositoryModelUnloadRequest* request,
    inference::RepositoryModelUnloadResponse*) {
  if (absl::Status allowed = Allowed(ctx, "RepositoryModelUnload"); !allowed.ok()) return Finished(ctx, allowed);
  return Finished(ctx, UnloadModel(*request));
}

}  // namespace onnxserve::server

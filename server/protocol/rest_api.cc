#include "server/protocol/rest_api.h"

#include <memory>
#include <new>

#include "absl/strings/str_cat.h"
#include "server/protocol/rest_json.h"
#include "server/protocol/status.h"

namespace onnxserve::server {
namespace {

using nlohmann::json;

constexpr char kJsonContentType[] = "application/json";

HttpReply JsonReply(const json& value) {
  HttpReply reply;
  reply.content_type = kJsonContentType;
  reply.body = DumpJson(value);
  return reply;
}

// The answer of a unary call: its message as JSON, or its error.
HttpReply MessageReply(const absl::Status& status, const google::protobuf::Message& message) {
  return status.ok() ? JsonReply(ProtoToJson(message)) : ErrorReply(status);
}

// A POST body that may be empty (Triton's clients send none, or "{}"): a JSON object either way.
absl::StatusOr<json> OptionalJsonObject(const std::string& body) {
  if (body.empty()) return json::object();
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return absl::InvalidArgumentError("the request is not a JSON object");
  return doc;
}

HttpReply InferReply(const absl::Status& status, const inference::ModelInferResponse& response,
                     const RestInferRequest& request) {
  if (!status.ok()) return ErrorReply(status);
  absl::StatusOr<RestBody> encoded = EncodeRestInferResponse(response, request);
  if (!encoded.ok()) return ErrorReply(encoded.status());
  HttpReply reply;
  reply.body = std::move(encoded->body);
  if (encoded->json_bytes) {
    reply.content_type = "application/octet-stream";
    reply.headers.emplace_back("Inference-Header-Content-Length", absl::StrCat(*encoded->json_bytes));
  } else {
    reply.content_type = kJsonContentType;
  }
  return reply;
}

// One REST inference in flight: what the service reads and writes until it calls back.
struct InferCall {
  RestInferRequest request;
  inference::ModelInferResponse response;
};

}  // namespace

HttpReply ErrorReply(const absl::Status& status) {
  HttpReply reply = JsonReply(json{{"error", std::string(status.message())}});
  reply.code = HttpStatusCode(status.code());
  return reply;
}

HttpReply RestApi::ServerMetadata() const {
  inference::ServerMetadataResponse response;
  service_.AnswerServerMetadata(response);
  return JsonReply(ProtoToJson(response));
}

HttpReply RestApi::ModelMetadata(const std::string& model, const std::string& version) const {
  inference::ModelMetadataRequest request;
  request.set_name(model);
  request.set_version(version);
  inference::ModelMetadataResponse response;
  return MessageReply(service_.AnswerModelMetadata(request, response), response);
}

HttpReply RestApi::ModelConfig(const std::string& model, const std::string& version) const {
  inference::ModelConfigRequest request;
  request.set_name(model);
  request.set_version(version);
  inference::ModelConfigResponse response;
  const absl::Status status = service_.AnswerModelConfig(request, response);
  // Triton answers the config itself, not the ModelConfigResponse around it.
  return MessageReply(status, response.config());
}

HttpReply RestApi::ModelStatistics(const std::string& model, const std::string& version) const {
  inference::ModelStatisticsRequest request;
  request.set_name(model);
  request.set_version(version);
  inference::ModelStatisticsResponse response;
  return MessageReply(service_.AnswerModelStatistics(request, response), response);
}

HttpReply RestApi::RepositoryIndex(const std::string& body) const {
  absl::StatusOr<json> doc = OptionalJsonObject(body);
  if (!doc.ok()) return ErrorReply(doc.status());
  inference::RepositoryIndexRequest request;
  if (auto ready = doc->find("ready"); ready != doc->end()) {
    if (!ready->is_boolean()) return ErrorReply(absl::InvalidArgumentError("ready must be true or false"));
    request.set_ready(ready->get<bool>());
  }
  inference::RepositoryIndexResponse response;
  service_.AnswerRepositoryIndex(request, response);
  // Triton answers the list itself: [{"name", "version", "state", "reason"}, ...].
  json models = json::array();
  for (const auto& model : response.models()) models.push_back(ProtoToJson(model));
  return JsonReply(models);
}

void RestApi::LoadModel(const std::string& model, const std::string& body, Done done) {
  absl::StatusOr<json> doc = OptionalJsonObject(body);
  if (!doc.ok()) return done(ErrorReply(doc.status()));
  inference::RepositoryModelLoadRequest request;
  request.set_model_name(model);
  if (auto parameters = doc->find("parameters"); parameters != doc->end() && parameters->is_object()) {
    // Named only so that the service refuses them as it refuses the gRPC ones (config override, files).
    for (const auto& item : parameters->items()) (*request.mutable_parameters())[item.key()].set_string_param("");
  }
  service_.LoadModel(request, [done = std::move(done)](const absl::Status& status) {
    done(status.ok() ? JsonReply(json::object()) : ErrorReply(status));
  });
}

HttpReply RestApi::UnloadModel(const std::string& model, const std::string& body) {
  absl::StatusOr<json> doc = OptionalJsonObject(body);  // parameters (unload_dependents) have no effect
  if (!doc.ok()) return ErrorReply(doc.status());
  inference::RepositoryModelUnloadRequest request;
  request.set_model_name(model);
  const absl::Status status = service_.UnloadModel(request);
  return status.ok() ? JsonReply(json::object()) : ErrorReply(status);
}

void RestApi::Infer(const std::string& model, const std::string& version, const std::string& body,
                    std::optional<std::string> header_length, std::optional<TraceContext> trace,
                    std::function<bool()> cancelled, Done done) {
  absl::StatusOr<RestInferRequest> decoded = DecodeRestInferRequest(body, header_length);
  if (!decoded.ok()) return done(ErrorReply(decoded.status()));
  auto call = std::make_shared<InferCall>();
  call->request = *std::move(decoded);
  call->request.wire.set_model_name(model);
  call->request.wire.set_model_version(version);
  CallControl control;
  control.cancelled = std::move(cancelled);
  control.trace = std::move(trace);
  // `call` lives until the service calls back: the request and response it holds must outlive the batch.
  service_.Infer(std::shared_ptr<const inference::ModelInferRequest>(call, &call->request.wire), std::move(control),
                 &call->response,
                 [call, done = std::move(done)](const absl::Status& status) {
                   try {
                     done(InferReply(status, call->response, call->request));
                   } catch (const std::bad_alloc&) {
                     done(ErrorReply(absl::ResourceExhaustedError("out of memory while encoding the response")));
                   } catch (const std::exception& e) {
                     done(ErrorReply(absl::InternalError(absl::StrCat("encoding the response failed: ", e.what()))));
                   }
                 });
}

}  // namespace onnxserve::server

// The KServe v2 REST endpoints as Triton serves them, behind the routes of http.cc: server and model metadata,
// model config and statistics, inference (JSON and Triton's binary tensor data extension) and the model
// repository extension. Each answer comes from the same InferenceService function as the gRPC method of the
// same name, with the message translated to JSON (rest_json.h) and errors mapped by HttpStatusCode.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "server/protocol/service.h"

namespace onnxserve::server {

// One HTTP answer.
struct HttpReply {
  unsigned code = 200;
  std::string content_type = "text/plain";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // beyond Content-Type
};

// `status` (not OK) as KServe's REST error: {"error": "<message>"} with HttpStatusCode(status.code()).
HttpReply ErrorReply(const absl::Status& status);

// Thread-safe; `service` must outlive it. The asynchronous calls answer through `done`, exactly once, on
// whatever thread finishes the work (a batch worker, the load thread) or on the caller's when refused early.
class RestApi {
 public:
  using Done = std::function<void(HttpReply)>;

  explicit RestApi(InferenceService& service) : service_(service) {}

  HttpReply ServerMetadata() const;                                                  // GET /v2
  HttpReply ModelMetadata(const std::string& model, const std::string& version) const;  // GET /v2/models/<m>
  HttpReply ModelConfig(const std::string& model, const std::string& version) const;    // GET .../config
  // GET .../stats; GET /v2/models/stats (every model) with `model` "".
  HttpReply ModelStatistics(const std::string& model, const std::string& version) const;
  HttpReply RepositoryIndex(const std::string& body) const;  // POST /v2/repository/index
  void LoadModel(const std::string& model, const std::string& body, Done done);  // POST .../<m>/load
  HttpReply UnloadModel(const std::string& model, const std::string& body);      // POST .../<m>/unload

  // POST /v2/models/<m>[/versions/<v>]/infer. `header_length` is the Inference-Header-Content-Length header;
  // `trace` the valid traceparent header, if any; `cancelled` tells the batcher the answer is no longer wanted
  // (called from batch workers).
  void Infer(const std::string& model, const std::string& version, const std::string& body,
             std::optional<std::string> header_length, std::optional<TraceContext> trace,
             std::function<bool()> cancelled, Done done);

 private:
  InferenceService& service_;
};

}  // namespace onnxserve::server

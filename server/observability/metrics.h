// The boundary between the server (service.cc, scheduler.cc, repository.cc, serve.cc) and its metrics
// (metrics.cc: Prometheus, exposed by protocol/http.h's GET /metrics). The server only calls this interface;
// it never names a Prometheus type.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/support/status.h>


namespace onnxserve::server {

// The model label of requests for models the repository does not have. No model can be named "".
inline constexpr char kUnknownModel[] = "";

// Events reported by the server. Thread-safe: called concurrently from gRPC callback threads and batch
// workers on the request path, so implementations must not block or do I/O.
// `model` is the model name, `version` its version as a decimal string ("1"). Durations are in seconds.
class ServerMetrics {
 public:
  virtual ~ServerMetrics() = default;

  // One finished inference request (ModelInfer, or one message of ModelStreamInfer) with its final code and
  // its latency from arrival to response. Requests naming no model of the repository arrive as model
  // kUnknownModel, version "": the name is the client's and may be anything, of any length.
  virtual void OnRequest(const std::string& model, const std::string& version, grpc::StatusCode code,
                         double seconds) = 0;
  // Time one request waited in the batch queue before its batch started computing.
  virtual void OnQueue(const std::string& model, const std::string& version, double seconds) = 0;
  // One model execution over `batch_size` requests' worth of rows (1 when batching is off).
  virtual void OnBatch(const std::string& model, const std::string& version, int batch_size,
                       double compute_seconds) = 0;
  // Requests currently waiting in the version's batch queue.
  virtual void SetQueueDepth(const std::string& model, const std::string& version, int depth) = 0;
  // A request accepted for the version (+1) or answered, whatever the outcome (-1): the gauge counts requests
  // queued or computing. A delta rather than a level, because requests start and end on different threads.
  virtual void AddInFlight(const std::string& model, const std::string& version, int delta) = 0;
  // Whether the version is loaded and serving; false when it is unloaded, replaced or failed to load.
  virtual void SetModelReady(const std::string& model, const std::string& version, bool ready) = 0;
  // One response cache lookup of a request for the version: a hit (answered from the cache) or a miss.
  virtual void OnCacheLookup(const std::string& model, const std::string& version, bool hit) = 0;
  // What the server's response cache holds now.
  virtual void SetCacheUsage(size_t entries, size_t bytes) = 0;

  // The Prometheus text exposition of everything above, for GET /metrics.
  virtual std::string Expose() const = 0;
};

// metrics.cc: the Prometheus implementation.
std::unique_ptr<ServerMetrics> MakePrometheusMetrics();

}  // namespace onnxserve::server

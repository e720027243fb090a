// The boundary between the gRPC server (service.cc, scheduler.cc, repository.cc, serve.cc) and the
// observability side (metrics.cc: Prometheus; http.cc: the HTTP metrics and health endpoints).
// The server only calls this interface; it never names a Prometheus type.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <grpcpp/support/status.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/protocol/access.h"
#include "server/protocol/tls.h"

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

  // The Prometheus text exposition of everything above, for GET /metrics.
  virtual std::string Expose() const = 0;
};

// metrics.cc: the Prometheus implementation.
std::unique_ptr<ServerMetrics> MakePrometheusMetrics();

// What the HTTP health endpoints report; serve.cc provides these, they are thread-safe and cheap.
struct HealthProbes {
  std::function<bool()> live;   // GET /v2/health/live
  std::function<bool()> ready;  // GET /v2/health/ready
  // GET /v2/models/<model>[/versions/<version>]/ready; `version` is "" when the URL names none.
  std::function<bool(const std::string& model, const std::string& version)> model_ready;
};

// A running HTTP endpoint; destroying it stops it (in-flight HTTP requests finish first).
class HttpServer {
 public:
  virtual ~HttpServer() = default;
  virtual int port() const = 0;  // the bound port, useful when started with port 0
  // Shutdown: refuses new requests that would answer later (inference, loads: 503), gives those in flight
  // until `deadline`, then answers them 503 and tells their work to stop. Health and metrics keep answering.
  virtual void Drain(absl::Time deadline) = 0;
};

// Bounds that keep slow, half-open or hostile HTTP clients from starving the health probes. The defaults are
// the production values (docs/server.md lists them); tests shrink them to stay fast.
struct HttpLimits {
  // Event-driven workers (epoll): a connection holds a thread only while its handler runs, so a few suffice.
  unsigned threads = 4;
  // A connection that sends or reads nothing for this long is closed, a half-sent request included.
  unsigned idle_timeout_secs = 10;
  unsigned max_connections = 256;
  // So that one client cannot take every connection; above the tens a Prometheus server and kubelet need.
  unsigned max_connections_per_ip = 64;
  // Larger request bodies get 413 (announced) or a closed connection (chunked): the bodies of the REST
  // endpoints other than inference (repository index, load, unload: small JSON objects).
  size_t max_body_bytes = 1 << 20;
  // The same for inference bodies (POST .../infer): serve sets it from --max-request-bytes, the bound of a
  // gRPC request too.
  size_t max_infer_body_bytes = 64 << 20;
};

class RestApi;  // rest_api.h

// What one HTTP listener serves and whom. The server's HTTP port serves the REST protocol and the health
// endpoints, and /metrics only when it has no listener of its own (--metrics-port, the default), which then
// serves /metrics only, with the same TLS and rules.
struct HttpOptions {
  bool serve_metrics = true;  // GET /metrics
  bool serve_health = true;   // GET /v2/health/live, /v2/health/ready, /v2/models/.../ready
  // HTTPS when set. With tls->mutual every request must come with a client certificate that chains to
  // tls->root_pem, or it gets 403 before any route runs.
  std::optional<ServerTls> tls;
  // Restricted groups (--http-restricted-api): health covers the health endpoints, statistics /metrics and the
  // REST statistics, and the REST endpoints belong to the groups of their gRPC methods.
  AccessRules access;
  // The KServe v2 REST protocol (GET /v2, /v2/models/..., POST .../infer, /v2/repository/...) when set; it
  // must outlive the server.
  RestApi* rest = nullptr;
};

// http.cc: serves GET /metrics (metrics.Expose()) and the health probes, as `options` selects, on `address`
// (an IPv4 or IPv6 literal, "[::1]" too, or a host name; the first of its addresses that binds is used) and
// `port` (0 picks a free port). `metrics` and the probes' captures must outlive the returned server.
absl::StatusOr<std::unique_ptr<HttpServer>> StartHttpServer(const std::string& address, int port,
                                                            const ServerMetrics& metrics, HealthProbes probes,
                                                            const HttpLimits& limits = {},
                                                            HttpOptions options = {});

}  // namespace onnxserve::server

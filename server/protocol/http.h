// The HTTP side of the server (http.cc): GET /metrics, the KServe v2 health endpoints and, with
// HttpOptions::rest, the KServe v2 REST protocol (rest_api.h).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/observability/metrics.h"
#include "server/protocol/access.h"
#include "server/protocol/tls.h"

namespace onnxserve::server {

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

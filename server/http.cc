// The HTTP side of the server: GET /metrics and the KServe v2 health endpoints on one civetweb server.
// prometheus::Exposer runs a civetweb server too, but it offers no way to add handlers to it, so we run
// civetweb's CivetServer ourselves and serve ServerMetrics::Expose() (prometheus-cpp's text serializer).
#include <CivetServer.h>
#include <civetweb.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/metrics.h"

namespace onnxserve::server {
namespace {

constexpr char kPrometheusContentType[] = "text/plain; version=0.0.4; charset=utf-8";

void Reply(mg_connection* conn, int code, const char* content_type, const std::string& body) {
  mg_printf(conn, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nCache-Control: no-store\r\n\r\n",
            code, mg_get_response_code_text(conn, code), content_type, body.size());
  mg_write(conn, body.data(), body.size());
}

// KServe v2 health replies carry no body: the status code is the answer.
void ReplyProbe(mg_connection* conn, bool ok) { Reply(conn, ok ? 200 : 503, "text/plain", ""); }

class MetricsHandler final : public CivetHandler {
 public:
  explicit MetricsHandler(const ServerMetrics& metrics) : metrics_(metrics) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    Reply(conn, 200, kPrometheusContentType, metrics_.Expose());
    return true;
  }

 private:
  const ServerMetrics& metrics_;
};

// GET /v2/health/live and /v2/health/ready.
class ProbeHandler final : public CivetHandler {
 public:
  explicit ProbeHandler(std::function<bool()> probe) : probe_(std::move(probe)) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    ReplyProbe(conn, probe_ && probe_());
    return true;
  }

 private:
  std::function<bool()> probe_;
};

// GET /v2/models/<model>/ready and /v2/models/<model>/versions/<version>/ready; anything else is 404.
class ModelReadyHandler final : public CivetHandler {
 public:
  explicit ModelReadyHandler(std::function<bool(const std::string&, const std::string&)> probe)
      : probe_(std::move(probe)) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    // local_uri is already URL-decoded and normalized by civetweb.
    const std::vector<std::string> parts = absl::StrSplit(mg_get_request_info(conn)->local_uri, '/');
    // parts: "", "v2", "models", <model>, ("versions", <version>,) "ready"
    const bool unversioned = parts.size() == 5 && parts[4] == "ready";
    const bool versioned = parts.size() == 7 && parts[4] == "versions" && parts[6] == "ready";
    if ((!unversioned && !versioned) || parts[3].empty() || !probe_) {
      Reply(conn, 404, "text/plain", "not found: expected /v2/models/<model>[/versions/<version>]/ready\n");
      return true;
    }
    ReplyProbe(conn, probe_(parts[3], versioned ? parts[5] : ""));
    return true;
  }

 private:
  std::function<bool(const std::string&, const std::string&)> probe_;
};

class CivetHttpServer final : public HttpServer {
 public:
  CivetHttpServer(const ServerMetrics& metrics, HealthProbes probes)
      : metrics_(metrics), live_(std::move(probes.live)), ready_(std::move(probes.ready)),
        model_ready_(std::move(probes.model_ready)) {}

  absl::Status Start(int port) {
    const std::string ports = absl::StrCat(port);
    // Few threads: scrapes and probes are rare and cheap, and the cores belong to inference.
    const char* options[] = {"listening_ports", ports.c_str(), "num_threads", "4", "enable_keep_alive", "yes",
                             "request_timeout_ms", "10000", nullptr};
    try {
      server_ = std::make_unique<CivetServer>(options);
    } catch (const CivetException& e) {
      return absl::UnavailableError(absl::StrCat("HTTP server on port ", port, ": ", e.what()));
    }
    const std::vector<int> bound = server_->getListeningPorts();
    if (bound.empty()) return absl::UnavailableError(absl::StrCat("HTTP server on port ", port, ": not listening"));
    port_ = bound.front();
    server_->addHandler("/metrics", metrics_);
    server_->addHandler("/v2/health/live", live_);
    server_->addHandler("/v2/health/ready", ready_);
    server_->addHandler("/v2/models", model_ready_);
    return absl::OkStatus();
  }

  int port() const override { return port_; }

 private:
  MetricsHandler metrics_;
  ProbeHandler live_;
  ProbeHandler ready_;
  ModelReadyHandler model_ready_;
  int port_ = 0;
  // Last, so it stops (finishing in-flight requests) before the handlers it calls are destroyed.
  std::unique_ptr<CivetServer> server_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> StartHttpServer(int port, const ServerMetrics& metrics,
                                                            HealthProbes probes) {
  auto server = std::make_unique<CivetHttpServer>(metrics, std::move(probes));
  if (absl::Status status = server->Start(port); !status.ok()) return status;
  return server;
}

}  // namespace onnxserve::server

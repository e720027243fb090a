// Fuzz target: raw bytes as one HTTP connection's request stream to the server's HTTP side (server/protocol/http.cc:
// route table, probes, /metrics, body limits, and the KServe REST protocol over a repository holding the
// "mixed" model of every payload type: JSON and binary-extension inference, metadata, config, statistics,
// the repository extension) running in this process on an ephemeral loopback port. libmicrohttpd itself is
// not instrumented; the coverage that steers the fuzzer is our handlers'.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "server/observability/log.h"
#include "server/observability/metrics.h"
#include "server/protocol/http.h"
#include "server/protocol/rest_api.h"
#include "server/protocol/service.h"
#include "server/serving/repository.h"
#include "tests/fuzz/fuzz_models.h"

namespace onnxserve::server {
namespace {

// A repository folder holding the mixed model as version 1 of "mixed", in the system's temp folder.
std::string WriteRepository() {
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("onnxserve-http-fuzz-" + std::to_string(getpid()));
  std::filesystem::create_directories(root / "mixed" / "1");
  std::ofstream(root / "mixed" / "1" / "model.onnx", std::ios::binary) << fuzz::MixedModel().SerializeAsString();
  return root.string();
}

struct Fixture {
  std::unique_ptr<ServerMetrics> metrics = MakePrometheusMetrics();
  std::unique_ptr<ModelRepository> repository;
  std::unique_ptr<InferenceService> service;
  std::unique_ptr<RestApi> rest;
  std::unique_ptr<HttpServer> http;

  Fixture() {
    SetLogLevel(LogLevel::kError);
    // Explicit mode: inputs may load and unload "mixed" (or try other names) through the repository extension.
    RepositoryOptions options;
    options.root = WriteRepository();
    options.mode = ControlMode::kExplicit;
    options.metrics = metrics.get();
    repository = std::make_unique<ModelRepository>(std::move(options));
    if (!repository->Start(/*exit_on_error=*/false).ok() || !repository->Load("mixed").ok()) std::abort();
    service = std::make_unique<InferenceService>(*repository, metrics.get());
    service->SetReady(true);
    rest = std::make_unique<RestApi>(*service);
    metrics->SetModelReady("add", "1", true);
    metrics->OnRequest("add", "1", grpc::StatusCode::OK, 0.001);
    HealthProbes probes;
    probes.live = [] { return true; };
    probes.ready = [] { return true; };
    probes.model_ready = [](const std::string& model, const std::string& version) {
      return model == "add" && (version.empty() || version == "1");
    };
    HttpLimits limits;
    limits.threads = 2;
    limits.idle_timeout_secs = 1;
    limits.max_body_bytes = 4096;
    limits.max_infer_body_bytes = 4096;
    HttpOptions http_options;
    http_options.rest = rest.get();
    auto started = StartHttpServer("127.0.0.1", 0, *metrics, std::move(probes), limits, std::move(http_options));
    if (!started.ok()) std::abort();
    http = *std::move(started);
  }
};

bool HasCompleteHeader(const uint8_t* bytes, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(bytes), size);
  return text.find("\n\n") != std::string_view::npos || text.find("\n\r\n") != std::string_view::npos;
}

// A socket bound to `source`, with a send timeout and reset on close (thousands of connections a second must
// not pile up in TIME_WAIT on this side).
int OpenSocket(const sockaddr_in& source) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) std::abort();
  timeval timeout{0, 200 * 1000};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  linger reset{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  if (bind(fd, reinterpret_cast<const sockaddr*>(&source), sizeof(source)) != 0) std::abort();
  return fd;
}

// Sends `bytes`, half-closes, and reads the answer until the server closes or goes quiet.
void Exchange(int port, const uint8_t* bytes, size_t size) {
  // The server closes first, so each connection leaves a TIME_WAIT entry on its side for a minute; at a
  // thousand connections a second one source address runs out of ports (connect fails with EADDRNOTAVAIL)
  // within seconds. Rotating over 127.1.0.0/16 gives each source address few connections a minute.
  static uint32_t next_source = 0;
  sockaddr_in source{};
  source.sin_family = AF_INET;
  source.sin_addr.s_addr = htonl((127u << 24) | (1u << 16) | (next_source++ & 0xffffu));
  int fd = OpenSocket(source);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // Under load (CI's sanitizer build next to the fuzzer) accept can lag past the 200 ms timeout: a
  // connection the server never took is no input to judge, so try again a while before giving up.
  for (int attempt = 0; connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0; ++attempt) {
    if (attempt == 100) std::abort();
    close(fd);
    fd = OpenSocket(source);
  }
  size_t sent = 0;
  while (sent < size) {
    const ssize_t n = send(fd, bytes + sent, size - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server answered early (404, 413) and closed
    sent += static_cast<size_t>(n);
  }
  shutdown(fd, SHUT_WR);
  // MHD keeps an HTTP/1.1 connection open after answering, half-closed or not: once answer bytes flow, a
  // short lull means the server is done (pipelined answers follow each other closely). Without a complete
  // header block no handler of ours can run and MHD waits for the rest of the line until its idle timeout:
  // waiting long for those (a fifth of the inputs) only slowed the fuzzer to 150 executions a second.
  char buffer[4096];
  int wait_ms = HasCompleteHeader(bytes, size) ? 50 : 2;
  pollfd readable{fd, POLLIN, 0};
  while (poll(&readable, 1, wait_ms) > 0 && recv(fd, buffer, sizeof(buffer), 0) > 0) wait_ms = 5;
  close(fd);
}

}  // namespace
}  // namespace onnxserve::server

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static onnxserve::server::Fixture* fixture = new onnxserve::server::Fixture();  // lives as long as the process
  onnxserve::server::Exchange(fixture->http->port(), data, size);
  return 0;
}

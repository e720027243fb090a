// The Prometheus metrics and the HTTP endpoints, in process: events reported through ServerMetrics show up in
// GET /metrics with the right names, labels and counts; the health endpoints follow their probes; the metric
// table in docs/server.md matches what is exported. (metrics_test.py checks the same against a real server.)
// The HTTP tests talk raw HTTP/1.1 over loopback sockets, so they can also send what a real client would not
// (half-open requests, oversized bodies) and pin the findings of the HTTP side's security review.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "server/observability/metrics.h"
#include "server/observability/process_metrics.h"
#include "server/protocol/http.h"

namespace onnxserve::server {
namespace {

constexpr int kReadTimeoutMs = 5000;  // bounds every read, so a server that never answers fails a test, not hangs it

// A TCP connection to the numeric address `host`:`port`, or -1 with errno set.
int Connect(const std::string& host, int port) {
  sockaddr_storage address{};
  socklen_t length = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    length = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    length = sizeof(sockaddr_in6);
  } else {
    ADD_FAILURE() << "not a numeric address: " << host;
    return -1;
  }
  const int fd = socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const timeval timeout{kReadTimeoutMs / 1000, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), length) != 0) {
    const int error = errno;
    close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t sent = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (sent <= 0) return false;
    data.remove_prefix(static_cast<size_t>(sent));
  }
  return true;
}

struct HttpResponse {
  int code = 0;  // 0: no response (refused, closed or timed out)
  std::string content_type, allow, body;
};

// `raw` is a whole request; the server closes the connection after answering it (Connection: close).
HttpResponse Exchange(const std::string& host, int port, const std::string& raw) {
  HttpResponse response;
  const int fd = Connect(host, port);
  if (fd < 0) return response;
  std::string text;
  if (SendAll(fd, raw)) {
    char buffer[4096];
    for (ssize_t n; (n = recv(fd, buffer, sizeof(buffer), 0)) > 0;) text.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  const size_t head_end = text.find("\r\n\r\n");
  if (!absl::StartsWith(text, "HTTP/1.1 ") || head_end == std::string::npos) return response;
  response.code = std::atoi(text.c_str() + 9);
  for (absl::string_view line : absl::StrSplit(absl::string_view(text).substr(0, head_end), "\r\n")) {
    const std::pair<absl::string_view, absl::string_view> header = absl::StrSplit(line, absl::MaxSplits(": ", 1));
    if (absl::EqualsIgnoreCase(header.first, "Content-Type")) response.content_type = std::string(header.second);
    if (absl::EqualsIgnoreCase(header.first, "Allow")) response.allow = std::string(header.second);
  }
  response.body = text.substr(head_end + 4);
  return response;
}

HttpResponse Request(int port, const std::string& method, const std::string& path,
                     const std::string& host = "127.0.0.1") {
  return Exchange(host, port, absl::StrCat(method, " ", path, " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
}

HttpResponse Get(int port, const std::string& path) { return Request(port, "GET", path); }

// The value of the sample line `series` (name{labels} exactly as exposed), or -1 when absent.
double Sample(const std::string& exposition, const std::string& series) {
  const size_t at = exposition.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(exposition.substr(at + series.size() + 2));
}

TEST(Metrics, EventsAppearWithModelAndVersionLabels) {
  auto metrics = MakePrometheusMetrics();
  metrics->OnRequest("digits", "1", grpc::StatusCode::OK, 0.002);
  metrics->OnRequest("digits", "1", grpc::StatusCode::OK, 0.004);
  metrics->OnRequest("digits", "1", grpc::StatusCode::INVALID_ARGUMENT, 0.001);
  metrics->OnRequest("nope", "", grpc::StatusCode::NOT_FOUND, 0.0001);
  metrics->OnQueue("digits", "1", 0.0003);
  metrics->OnBatch("digits", "1", 3, 0.0005);
  metrics->OnBatch("digits", "1", 5, 0.0007);
  metrics->SetQueueDepth("digits", "1", 7);
  for (int delta : {+1, +1, +1, -1}) metrics->AddInFlight("digits", "1", delta);
  metrics->SetModelReady("digits", "1", true);
  metrics->SetModelReady("digits", "2", false);
  const std::string text = metrics->Expose();

  EXPECT_EQ(Sample(text, R"(onnxserve_requests_total{code="OK",model="digits",version="1"})"), 2);
  EXPECT_EQ(Sample(text, R"(onnxserve_requests_total{code="INVALID_ARGUMENT",model="digits",version="1"})"), 1);
  EXPECT_EQ(Sample(text, R"(onnxserve_requests_total{code="NOT_FOUND",model="nope",version=""})"), 1);
  EXPECT_EQ(Sample(text, R"(onnxserve_inferences_total{model="digits",version="1"})"), 8);
  EXPECT_EQ(Sample(text, R"(onnxserve_batch_executions_total{model="digits",version="1"})"), 2);
  EXPECT_EQ(Sample(text, R"(onnxserve_request_duration_seconds_count{model="digits",version="1"})"), 3);
  EXPECT_DOUBLE_EQ(Sample(text, R"(onnxserve_request_duration_seconds_sum{model="digits",version="1"})"), 0.007);
  // 2 ms and 1 ms are <= 2.5 ms; 4 ms is not.
  EXPECT_EQ(Sample(text, R"(onnxserve_request_duration_seconds_bucket{model="digits",version="1",le="0.0025"})"), 2);
  EXPECT_EQ(Sample(text, R"(onnxserve_queue_duration_seconds_count{model="digits",version="1"})"), 1);
  EXPECT_EQ(Sample(text, R"(onnxserve_compute_duration_seconds_count{model="digits",version="1"})"), 2);
  EXPECT_EQ(Sample(text, R"(onnxserve_batch_size_bucket{model="digits",version="1",le="4"})"), 1);
  EXPECT_EQ(Sample(text, R"(onnxserve_batch_size_sum{model="digits",version="1"})"), 8);
  EXPECT_EQ(Sample(text, R"(onnxserve_queue_depth{model="digits",version="1"})"), 7);
  EXPECT_EQ(Sample(text, R"(onnxserve_inflight_requests{model="digits",version="1"})"), 2);
  EXPECT_EQ(Sample(text, R"(onnxserve_model_ready{model="digits",version="1"})"), 1);
  EXPECT_EQ(Sample(text, R"(onnxserve_model_ready{model="digits",version="2"})"), 0);
  EXPECT_GT(Sample(text, "process_resident_memory_bytes"), 0);
  EXPECT_GE(Sample(text, "process_cpu_seconds_total"), 0);
  EXPECT_GE(Sample(text, "process_open_fds"), 3);  // at least stdin, stdout, stderr
  EXPECT_NE(text.find("# TYPE onnxserve_request_duration_seconds histogram"), std::string::npos);
  EXPECT_NE(text.find("# TYPE onnxserve_requests_total counter"), std::string::npos);
  EXPECT_NE(text.find("# TYPE onnxserve_queue_depth gauge"), std::string::npos);
}

TEST(Metrics, ConcurrentReportersLoseNoEvents) {
  auto metrics = MakePrometheusMetrics();
  constexpr int kThreads = 8, kEach = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        metrics->OnRequest(absl::StrCat("m", t % 2), "1", i % 2 ? grpc::StatusCode::OK : grpc::StatusCode::INTERNAL,
                           0.001);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const std::string text = metrics->Expose();
  for (const char* model : {"m0", "m1"}) {
    for (const char* code : {"OK", "INTERNAL"}) {
      EXPECT_EQ(Sample(text, absl::StrCat("onnxserve_requests_total{code=\"", code, "\",model=\"", model,
                                          "\",version=\"1\"}")),
                kThreads / 2 * kEach / 2)
          << model << " " << code;
    }
  }
}

// Requests start and end on different threads: no increment or decrement of the in-flight gauge may be lost.
TEST(Metrics, ConcurrentInFlightDeltasLoseNone) {
  auto metrics = MakePrometheusMetrics();
  constexpr int kThreads = 8, kEach = 2000;
  const std::string series = R"(onnxserve_inflight_requests{model="m",version="1"})";
  auto add_from_threads = [&](int delta) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < kEach; ++i) metrics->AddInFlight("m", "1", delta);
      });
    }
    for (auto& thread : threads) thread.join();
  };
  add_from_threads(+1);
  EXPECT_EQ(Sample(metrics->Expose(), series), kThreads * kEach);
  add_from_threads(-1);
  EXPECT_EQ(Sample(metrics->Expose(), series), 0);
}

TEST(Metrics, UnboundedModelNamesFoldIntoOneOverflowSeries) {
  auto metrics = MakePrometheusMetrics();
  for (int i = 0; i < 1100; ++i) metrics->OnRequest(absl::StrCat("unknown", i), "", grpc::StatusCode::NOT_FOUND, 0);
  const std::string text = metrics->Expose();
  EXPECT_EQ(Sample(text, R"(onnxserve_requests_total{code="NOT_FOUND",model="__overflow__",version=""})"), 1100 - 1024);
  EXPECT_EQ(Sample(text, R"(onnxserve_requests_total{code="NOT_FOUND",model="unknown1099",version=""})"), -1);
}

TEST(Metrics, LabelValuesAreCutToABoundedLength) {
  auto metrics = MakePrometheusMetrics();
  for (int i = 0; i < 8; ++i) {
    metrics->OnRequest(std::string(4 << 20, static_cast<char>('a' + i)), "", grpc::StatusCode::NOT_FOUND, 0);
  }
  std::string text = metrics->Expose();
  EXPECT_LT(text.size(), 256u << 10);
  EXPECT_EQ(Sample(text, absl::StrCat(R"(onnxserve_requests_total{code="NOT_FOUND",model=")", std::string(128, 'a'),
                                      R"(",version=""})")),
            1);
  // A cut never splits a UTF-8 character: a 2-byte "\xc3\xa9" straddling byte 128 is dropped whole.
  metrics->OnRequest(std::string(127, 'x') + "\xc3\xa9" + std::string(10, 'x'), "", grpc::StatusCode::NOT_FOUND, 0);
  text = metrics->Expose();
  EXPECT_EQ(Sample(text, absl::StrCat(R"(onnxserve_requests_total{code="NOT_FOUND",model=")", std::string(127, 'x'),
                                      R"(",version=""})")),
            1);
}

class HttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    metrics_ = MakePrometheusMetrics();
    HealthProbes probes{
        .live = [this] { return live_.load(); },
        .ready = [this] { return ready_.load(); },
        .model_ready = [](const std::string& model,
                          const std::string& version) { return model == "digits" && (version.empty() || version == "1"); },
    };
    auto server = StartHttpServer("127.0.0.1", 0, *metrics_, std::move(probes));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    ASSERT_GT(server_->port(), 0);
  }

  std::unique_ptr<ServerMetrics> metrics_;
  std::atomic<bool> live_{true}, ready_{false};
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpTest, MetricsEndpointServesTheExposition) {
  metrics_->OnRequest("digits", "1", grpc::StatusCode::OK, 0.001);
  const HttpResponse response = Get(server_->port(), "/metrics");
  EXPECT_EQ(response.code, 200);
  EXPECT_EQ(Sample(response.body, R"(onnxserve_requests_total{code="OK",model="digits",version="1"})"), 1);
}

TEST_F(HttpTest, HealthEndpointsFollowTheirProbes) {
  EXPECT_EQ(Get(server_->port(), "/v2/health/live").code, 200);
  EXPECT_EQ(Get(server_->port(), "/v2/health/ready").code, 503);
  ready_ = true;
  EXPECT_EQ(Get(server_->port(), "/v2/health/ready").code, 200);
  live_ = false;
  EXPECT_EQ(Get(server_->port(), "/v2/health/live").code, 503);
}

TEST_F(HttpTest, ModelReadyEndpointParsesModelAndVersion) {
  EXPECT_EQ(Get(server_->port(), "/v2/models/digits/ready").code, 200);
  EXPECT_EQ(Get(server_->port(), "/v2/models/digits/versions/1/ready").code, 200);
  EXPECT_EQ(Get(server_->port(), "/v2/models/digits/versions/2/ready").code, 503);
  EXPECT_EQ(Get(server_->port(), "/v2/models/other/ready").code, 503);
  EXPECT_EQ(Get(server_->port(), "/v2/models/digits").code, 404);
  EXPECT_EQ(Get(server_->port(), "/v2/models/digits/versions/1").code, 404);
}

// A JSON error body as KServe's REST protocol has it.
void ExpectJsonError(const HttpResponse& response, int code, const std::string& what) {
  EXPECT_EQ(response.code, code) << what;
  EXPECT_EQ(response.content_type, "application/json") << what;
  EXPECT_TRUE(std::regex_match(response.body, std::regex(R"(\{"error":"[^"\\]+"\})"))) << what << ": " << response.body;
}

// Security review: requests without a handler crashed the process inside civetweb's error page.
TEST_F(HttpTest, UnknownPathsGet404WithAJsonBody) {
  for (const char* path : {"/", "/foo", "/v2", "/favicon.ico", "/v2/health", "/v2/health/live/", "/metrics/x",
                           "/v2/models//ready", "/v2/models/digits"}) {
    ExpectJsonError(Get(server_->port(), path), 404, path);
  }
  ExpectJsonError(Request(server_->port(), "POST", "/foo"), 404, "POST /foo");
  EXPECT_EQ(Get(server_->port(), "/v2/health/live").code, 200);
}

TEST_F(HttpTest, WrongMethodsGet405WithAJsonBodyAndTheAllowedMethods) {
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"}) {
    for (const char* path : {"/metrics", "/v2/health/live", "/v2/models/digits/ready"}) {
      const HttpResponse response = Request(server_->port(), method, path);
      ExpectJsonError(response, 405, absl::StrCat(method, " ", path));
      EXPECT_EQ(response.allow, "GET");
    }
  }
  EXPECT_EQ(Get(server_->port(), "/v2/health/live").code, 200);
}

TEST_F(HttpTest, AnnouncedBodyOverTheCapGets413WithoutBeingRead) {
  const HttpResponse response = Exchange(
      "127.0.0.1", server_->port(),
      absl::StrCat("GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: ",
                   HttpLimits{}.max_body_bytes + 1, "\r\n\r\n"));
  ExpectJsonError(response, 413, "Content-Length over the cap");
  EXPECT_EQ(Get(server_->port(), "/v2/health/live").code, 200);
}

absl::StatusOr<std::unique_ptr<HttpServer>> StartOn(const std::string& address, const ServerMetrics& metrics,
                                                    const HttpLimits& limits = {}) {
  HealthProbes probes;
  probes.live = [] { return true; };
  return StartHttpServer(address, 0, metrics, std::move(probes), limits);
}

// Whether nothing listens on `host`:`port`.
bool Refused(const std::string& host, int port) {
  const int fd = Connect(host, port);
  if (fd >= 0) close(fd);
  return fd < 0 && errno == ECONNREFUSED;
}

TEST(HttpServer, ChunkedBodyOverTheCapClosesTheConnection) {
  auto metrics = MakePrometheusMetrics();
  HttpLimits limits;
  limits.max_body_bytes = 16;
  auto server = StartOn("127.0.0.1", *metrics, limits);
  ASSERT_TRUE(server.ok()) << server.status();
  const HttpResponse response = Exchange(
      "127.0.0.1", (*server)->port(),
      "GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
      "20\r\n0123456789abcdef0123456789abcdef\r\n0\r\n\r\n");
  EXPECT_NE(response.code, 200);
  EXPECT_EQ(Get((*server)->port(), "/v2/health/live").code, 200);
}

// Security review: the HTTP port listened on every interface whatever --address said.
TEST(HttpServer, ListensOnlyOnTheGivenAddress) {
  auto metrics = MakePrometheusMetrics();
  auto server = StartOn("127.0.0.1", *metrics);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(Request((*server)->port(), "GET", "/v2/health/live", "127.0.0.1").code, 200);
  // 127.0.0.0/8 is all loopback on Linux: another local address, not bound.
  EXPECT_TRUE(Refused("127.0.0.2", (*server)->port()));
}

TEST(HttpServer, DefaultAddressListensOnEveryInterface) {
  auto metrics = MakePrometheusMetrics();
  auto server = StartOn("0.0.0.0", *metrics);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(Request((*server)->port(), "GET", "/v2/health/live", "127.0.0.2").code, 200);
}

TEST(HttpServer, ListensOnIpv6LiteralsWithOrWithoutBrackets) {
  const int probe = socket(AF_INET6, SOCK_STREAM, 0);
  sockaddr_in6 loopback{};
  loopback.sin6_family = AF_INET6;
  loopback.sin6_addr = in6addr_loopback;
  const bool has_ipv6 = probe >= 0 && bind(probe, reinterpret_cast<const sockaddr*>(&loopback), sizeof(loopback)) == 0;
  if (probe >= 0) close(probe);
  if (!has_ipv6) GTEST_SKIP() << "no IPv6 loopback here";
  auto metrics = MakePrometheusMetrics();
  for (const char* address : {"::1", "[::1]"}) {
    auto server = StartOn(address, *metrics);
    ASSERT_TRUE(server.ok()) << address << ": " << server.status();
    EXPECT_EQ(Request((*server)->port(), "GET", "/v2/health/live", "::1").code, 200) << address;
    EXPECT_TRUE(Refused("127.0.0.1", (*server)->port())) << address;
  }
}

TEST(HttpServer, ResolvesHostNames) {
  auto metrics = MakePrometheusMetrics();
  auto server = StartOn("localhost", *metrics);  // from /etc/hosts: no DNS query
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  EXPECT_TRUE(Request(port, "GET", "/v2/health/live", "127.0.0.1").code == 200 ||
              Request(port, "GET", "/v2/health/live", "::1").code == 200);
  EXPECT_TRUE(Refused("127.0.0.2", port));
}

TEST(HttpServer, BusyPortIsAnError) {
  auto metrics = MakePrometheusMetrics();
  auto first = StartOn("127.0.0.1", *metrics);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = StartHttpServer("127.0.0.1", (*first)->port(), *metrics, {});
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
}

// Whether the server closed `fd` within `timeout_ms`: recv sees the end of the stream or a reset.
bool ClosedByPeerWithin(int fd, int timeout_ms) {
  pollfd wait{fd, POLLIN, 0};
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (Clock::now() < deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (poll(&wait, 1, static_cast<int>(left.count()) + 1) <= 0) continue;
    char buffer[512];
    const ssize_t n = recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return true;
  }
  return false;
}

// Security review: a handful of half-open connections made /v2/health/live time out.
TEST(HttpServer, HalfOpenConnectionsNeitherStarveProbesNorStayOpen) {
  auto metrics = MakePrometheusMetrics();
  constexpr unsigned kIdleTimeoutSecs = 1;
  HttpLimits limits;
  limits.idle_timeout_secs = kIdleTimeoutSecs;
  auto server = StartOn("127.0.0.1", *metrics, limits);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  std::vector<int> half_open;
  for (int i = 0; i < 20; ++i) {
    const int fd = Connect("127.0.0.1", port);
    ASSERT_GE(fd, 0) << "connection " << i << ": " << strerror(errno);
    half_open.push_back(fd);
    ASSERT_TRUE(SendAll(fd, "GET /v2/health/live HTTP/1.1\r\n"));
  }
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Get(port, "/v2/health/live").code, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  for (const int fd : half_open) {
    EXPECT_TRUE(ClosedByPeerWithin(fd, (kIdleTimeoutSecs + 3) * 1000)) << "half-open connection left open";
    close(fd);
  }
}

TEST(ProcessStats, ParsesProcFilesWithAWhitespaceCommandName) {
  const auto dir = std::filesystem::temp_directory_path() / absl::StrCat("onnxserve_proc_", getpid());
  std::filesystem::create_directories(dir / "fd");
  for (const char* fd : {"0", "1", "2", "7"}) std::ofstream(dir / "fd" / fd) << "";
  // proc(5): pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
  std::ofstream(dir / "stat") << "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 9 0\n";
  std::ofstream(dir / "statm") << "5000 1234 300 10 0 900 0\n";
  auto stats = ReadProcessStats(dir.string());
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_DOUBLE_EQ(stats->cpu_seconds, 400.0 / static_cast<double>(sysconf(_SC_CLK_TCK)));
  EXPECT_DOUBLE_EQ(stats->resident_bytes, 1234.0 * static_cast<double>(sysconf(_SC_PAGESIZE)));
  EXPECT_EQ(stats->open_fds, 4);
}

TEST(ProcessStats, MissingProcIsAnError) {
  EXPECT_FALSE(ReadProcessStats("/nonexistent/proc/self").ok());
}

// docs/server.md's metric table lists exactly the metrics the server exports (one table in metrics.cc).
TEST(Metrics, DocumentedTableMatchesTheExportedMetrics) {
  std::ifstream doc(ONNXSERVE_SOURCE_DIR "/docs/server.md");
  ASSERT_TRUE(doc) << "cannot read docs/server.md";
  std::set<std::string> documented;
  const std::regex row(R"(^\| `((onnxserve|process)_[a-z_]+)`)");
  std::smatch match;
  for (std::string line; std::getline(doc, line);) {
    if (std::regex_search(line, match, row)) documented.insert(match[1]);
  }
  // Families without series are not exposed, so give every model metric one.
  auto metrics = MakePrometheusMetrics();
  metrics->OnRequest("m", "1", grpc::StatusCode::OK, 0.001);
  metrics->OnQueue("m", "1", 0.001);
  metrics->OnBatch("m", "1", 1, 0.001);
  metrics->SetQueueDepth("m", "1", 0);
  metrics->SetModelReady("m", "1", true);
  std::set<std::string> exported;
  const std::string text = metrics->Expose();
  const std::regex help(R"(# HELP ([a-z_]+) )");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), help); it != std::sregex_iterator(); ++it) {
    exported.insert((*it)[1]);
  }
  EXPECT_EQ(documented, exported);
}

}  // namespace
}  // namespace onnxserve::server

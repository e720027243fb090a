// The Prometheus metrics and the HTTP endpoints, in process: events reported through ServerMetrics show up in
// GET /metrics with the right names, labels and counts; the health endpoints follow their probes; the metric
// table in docs/server.md matches what is exported. (metrics_test.py checks the same against a real server.)
#include <civetweb.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <thread>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/metrics.h"
#include "server/process_metrics.h"

namespace onnxserve::server {
namespace {

struct HttpResponse {
  int code = 0;
  std::string body;
};

HttpResponse Get(int port, const std::string& path) {
  char error[256] = "";
  mg_connection* conn = mg_download("127.0.0.1", port, 0, error, sizeof(error),
                                    "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path.c_str());
  HttpResponse response;
  if (conn == nullptr) {
    ADD_FAILURE() << "GET " << path << ": " << error;
    return response;
  }
  response.code = mg_get_response_info(conn)->status_code;
  char buffer[4096];
  for (int n; (n = mg_read(conn, buffer, sizeof(buffer))) > 0;) response.body.append(buffer, n);
  mg_close_connection(conn);
  return response;
}

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
    auto server = StartHttpServer(0, *metrics_, std::move(probes));
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

TEST(HttpServer, BusyPortIsAnError) {
  auto metrics = MakePrometheusMetrics();
  auto first = StartHttpServer(0, *metrics, {});
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = StartHttpServer((*first)->port(), *metrics, {});
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
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

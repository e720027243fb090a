// onnxserve load: a closed-loop load generator for KServe v2 inference (ghz is not packaged for Debian).
// `concurrency` calls stay in flight, on gRPC's async API (one CompletionQueue per connection) or, with
// --protocol http, on REST keep-alive connections (loadgen_rest.h), optionally paced to a request rate; the
// run is bounded by a request count or a duration, and always by kMaxSeconds.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "server/protocol/tls.h"

namespace onnxserve::server {

struct LoadOptions {
  static constexpr double kMaxSeconds = 600;  // hard cap on any run, whatever -n or -z say

  std::string target = "127.0.0.1:8001";
  bool http = false;          // REST (KServe v2 over HTTP/1.1) instead of gRPC
  bool binary_data = false;   // REST: tensors in Triton's binary data extension
  std::string model;
  std::string model_version;  // "" = the server's choice (latest)
  int concurrency = 1;        // calls in flight
  int connections = 1;        // gRPC: HTTP/2 connections the calls are spread over; REST: threads
  int64_t total = 200;        // requests to send; 0 = until `duration_seconds`
  double duration_seconds = 0;
  double rps = 0;             // 0 = as fast as responses come back
  std::string input;          // "" = random inputs from ModelMetadata; a JSON request file or input_K.pb dir
  int64_t batch = 1;          // the dynamic first dimension of random inputs
  int64_t timeout_ms = 10000; // deadline of each call
  std::vector<std::pair<std::string, std::string>> metadata;  // sent with every call (--metadata KEY=VALUE)
  ClientTlsFlags tls;                                         // TLS when tls.ca_file is set
};

struct LoadReport {
  int64_t count = 0;  // requests completed
  int64_t ok = 0;
  std::map<std::string, int64_t> codes;  // gRPC code name, or "HTTP_<status>" -> responses
  double seconds = 0;                    // wall time from the first send to the last response
  double rps = 0;                        // count / seconds
  // Latency of the OK responses in milliseconds (0 when none succeeded).
  double mean_ms = 0, p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0;
};

// Runs the load against options.target. Errors are setup failures (bad options, unreadable input, the
// model's metadata unavailable); failed calls during the run are counted in the report, not returned.
absl::StatusOr<LoadReport> RunLoad(const LoadOptions& options);

// The human-readable summary, and the same figures as one JSON object on one line.
std::string FormatReportTable(const LoadOptions& options, const LoadReport& report);
std::string FormatReportJson(const LoadOptions& options, const LoadReport& report);

}  // namespace onnxserve::server

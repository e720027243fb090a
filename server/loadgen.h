// onnxserve load: a closed-loop load generator for KServe v2 inference (ghz is not packaged for Debian).
// `concurrency` calls stay in flight, on gRPC's async API (one CompletionQueue per connection) or, with
// --protocol http, on REST keep-alive connections (loadgen_rest.h), optionally paced to a request rate; the
// run is bounded by a request count or a duration, and always by kMaxSeconds.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "server/load_options.h"

namespace onnxserve::server {

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

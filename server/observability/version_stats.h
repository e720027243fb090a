// The statistics of one model version as ModelStatistics reports them: requests (the protocols), and
// executions and their queue and compute phases (the scheduler).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "absl/time/time.h"
#include "grpc_service.pb.h"

namespace onnxserve::server {

// Cumulative statistics of one model version, as ModelStatistics reports them. Thread-safe.
class VersionStats {
 public:
  VersionStats(std::string model, std::string version);
  // A finished request: `ok` or failed, with its time from arrival to response and its batch rows.
  void RecordRequest(bool ok, absl::Duration total, int64_t rows);
  // One request's share of an execution: its wait in the queue and the batch's compute phases.
  void RecordRequestCompute(absl::Duration queue, absl::Duration input, absl::Duration infer,
                            absl::Duration output);
  // One model execution over `batch_rows` rows.
  void RecordExecution(int64_t batch_rows, absl::Duration input, absl::Duration infer, absl::Duration output);
  // One response cache lookup (serving/response_cache.h) that hit or missed, and the time it cost.
  void RecordCacheLookup(bool hit, absl::Duration took);
  inference::ModelStatistics Snapshot() const;

 private:
  mutable std::mutex mu_;
  inference::ModelStatistics stats_;
};

}  // namespace onnxserve::server

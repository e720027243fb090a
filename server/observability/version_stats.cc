#include "server/observability/version_stats.h"

#include "absl/time/clock.h"

namespace onnxserve::server {
namespace {

uint64_t Nanos(absl::Duration d) { return static_cast<uint64_t>(absl::ToInt64Nanoseconds(d)); }

void Add(inference::StatisticDuration* stat, absl::Duration d) {
  stat->set_count(stat->count() + 1);
  stat->set_ns(stat->ns() + Nanos(d));
}

}  // namespace

VersionStats::VersionStats(std::string model, std::string version) {
  stats_.set_name(std::move(model));
  stats_.set_version(std::move(version));
}

void VersionStats::RecordRequest(bool ok, absl::Duration total, int64_t rows) {
  std::lock_guard<std::mutex> lock(mu_);
  auto* infer = stats_.mutable_inference_stats();
  Add(ok ? infer->mutable_success() : infer->mutable_fail(), total);
  if (ok) stats_.set_inference_count(stats_.inference_count() + static_cast<uint64_t>(rows));
  stats_.set_last_inference(static_cast<uint64_t>(absl::ToUnixMillis(absl::Now())));
}

void VersionStats::RecordRequestCompute(absl::Duration queue, absl::Duration input, absl::Duration infer,
                                        absl::Duration output) {
  std::lock_guard<std::mutex> lock(mu_);
  auto* stats = stats_.mutable_inference_stats();
  Add(stats->mutable_queue(), queue);
  Add(stats->mutable_compute_input(), input);
  Add(stats->mutable_compute_infer(), infer);
  Add(stats->mutable_compute_output(), output);
}

void VersionStats::RecordExecution(int64_t batch_rows, absl::Duration input, absl::Duration infer,
                                   absl::Duration output) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.set_execution_count(stats_.execution_count() + 1);
  inference::InferBatchStatistics* entry = nullptr;
  for (auto& b : *stats_.mutable_batch_stats()) {
    if (b.batch_size() == static_cast<uint64_t>(batch_rows)) entry = &b;
  }
  if (entry == nullptr) {
    entry = stats_.add_batch_stats();
    entry->set_batch_size(static_cast<uint64_t>(batch_rows));
  }
  Add(entry->mutable_compute_input(), input);
  Add(entry->mutable_compute_infer(), infer);
  Add(entry->mutable_compute_output(), output);
}

void VersionStats::RecordCacheLookup(bool hit, absl::Duration took) {
  std::lock_guard<std::mutex> lock(mu_);
  auto* infer = stats_.mutable_inference_stats();
  Add(hit ? infer->mutable_cache_hit() : infer->mutable_cache_miss(), took);
}

inference::ModelStatistics VersionStats::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace onnxserve::server

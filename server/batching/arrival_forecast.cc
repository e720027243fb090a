#include "server/batching/arrival_forecast.h"

#include <algorithm>

namespace onnxserve::server {
namespace {

// A gap counts as at most this many executions: any gap longer than one execution already says "holding
// does not pay", and a quiet hour must not keep the average slow for hundreds of arrivals afterwards.
constexpr int64_t kLongestGapInExecutions = 2;

absl::Duration Blend(absl::Duration average, absl::Duration sample, double newest) {
  return average * (1 - newest) + sample * newest;
}

}  // namespace

void ArrivalForecast::OnArrival(absl::Time now) {
  if (last_arrival_ != absl::InfinitePast()) {
    absl::Duration gap = std::max(now - last_arrival_, absl::ZeroDuration());
    if (execution_ > absl::ZeroDuration()) gap = std::min(gap, execution_ * kLongestGapInExecutions);
    gap_ = gap_ == absl::InfiniteDuration() ? gap : Blend(gap_, gap, kNewest);
  }
  last_arrival_ = std::max(last_arrival_, now);
}

void ArrivalForecast::OnExecution(absl::Duration took) {
  execution_ = execution_ == absl::ZeroDuration() ? took : Blend(execution_, took, kNewest);
  if (gap_ != absl::InfiniteDuration()) gap_ = std::min(gap_, execution_ * kLongestGapInExecutions);
}

double ArrivalForecast::ExpectedDuringExecution(absl::Time now) const {
  if (gap_ == absl::InfiniteDuration() || execution_ <= absl::ZeroDuration()) return 0;
  // Arrivals at the same clock reading would make the rate infinite; a nanosecond apart is as fast.
  const absl::Duration gap = std::max({gap_, now - last_arrival_, absl::Nanoseconds(1)});
  return absl::FDivDuration(execution_, gap);
}

absl::Time ArrivalForecast::HoldingPaysUntil(int64_t queued) const {
  if (gap_ == absl::InfiniteDuration() || execution_ <= absl::ZeroDuration()) return absl::InfinitePast();
  return last_arrival_ + execution_ / std::max<int64_t>(queued, 1);
}

}  // namespace onnxserve::server

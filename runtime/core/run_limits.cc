#include "runtime/core/run_limits.h"

#include <cstdint>

namespace onnxserve {
namespace {

// Work between two checks: absl::Now() and the caller's cancellation poll cost tens of nanoseconds, a
// millionth of this much arithmetic.
constexpr int64_t kWorkBetweenChecks = int64_t{1} << 26;

thread_local const RunLimits* t_current_limits = nullptr;
thread_local int64_t t_work_since_check = 0;

}  // namespace

ScopedRunLimits::ScopedRunLimits(const RunLimits* limits) : previous_(t_current_limits) {
  t_current_limits = limits;
}

ScopedRunLimits::~ScopedRunLimits() { t_current_limits = previous_; }

const RunLimits* CurrentRunLimits() { return t_current_limits; }

void StopIfRunEnded(int64_t work) {
  if (work < kWorkBetweenChecks - t_work_since_check) {  // compared, not summed: `work` may be INT64_MAX
    t_work_since_check += work;
    return;
  }
  t_work_since_check = 0;
  if (t_current_limits == nullptr) return;
  if (absl::Status status = t_current_limits->Check(); !status.ok()) throw RunStopped(std::move(status));
}

void RestartWorkCount() { t_work_since_check = 0; }

int64_t WorkOf(std::initializer_list<int64_t> extents) {
  int64_t work = 1;
  for (int64_t extent : extents) {
    if (__builtin_mul_overflow(work, extent, &work)) return INT64_MAX;
  }
  return work;
}

}  // namespace onnxserve

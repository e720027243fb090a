// When a run must stop before it finishes: its caller's deadline passed, or the caller gave up on it.
// The executor checks between plan steps and control-flow operators check on every iteration, so a
// request whose client left, or a Loop with a trip count of 1e13, gives its worker back within a step.
#pragma once

#include <functional>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace onnxserve {

class RunLimits {
 public:
  // No deadline, never cancelled.
  RunLimits() = default;
  // `cancelled` is polled from the running thread between steps (cheap and thread-safe, or empty).
  explicit RunLimits(absl::Time deadline, std::function<bool()> cancelled = {})
      : deadline_(deadline), cancelled_(std::move(cancelled)) {}

  absl::Time deadline() const { return deadline_; }

  // OK while the run may go on; DEADLINE_EXCEEDED or CANCELLED once it must stop.
  absl::Status Check() const {
    if (cancelled_ && cancelled_()) return absl::CancelledError("run cancelled by its caller");
    if (deadline_ != absl::InfiniteFuture() && absl::Now() >= deadline_) {
      return absl::DeadlineExceededError("run passed its deadline");
    }
    return absl::OkStatus();
  }

 private:
  absl::Time deadline_ = absl::InfiniteFuture();
  std::function<bool()> cancelled_;
};

}  // namespace onnxserve

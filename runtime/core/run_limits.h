// When a run must stop before it finishes: its caller's deadline passed, or the caller gave up on it.
// The executor checks between plan steps, control-flow operators on every iteration, and kernels whose one
// call can take seconds (GEMMs, convolutions) between blocks of their work, so a request whose client left,
// a Loop with a trip count of 1e13 or a MatMul of two 16k x 16k matrices gives its worker back within
// milliseconds.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
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

// How a kernel leaves in the middle of its work once its run must stop (thrown by StopIfRunEnded);
// CatchExceptions (runtime/core/exception_status.h) turns it back into the status.
class RunStopped : public std::exception {
 public:
  explicit RunStopped(absl::Status status) : status_(std::move(status)) {}
  const absl::Status& status() const { return status_; }
  const char* what() const noexcept override { return "run stopped"; }

 private:
  absl::Status status_;
};

// Makes `limits` (may be null: none) those of the run this thread computes for the scope's lifetime, and
// restores the previous ones after. The executor sets them for each run; ThreadPool::ParallelFor carries
// them to the chunks it hands to workers.
class ScopedRunLimits {
 public:
  explicit ScopedRunLimits(const RunLimits* limits);
  ~ScopedRunLimits();
  ScopedRunLimits(const ScopedRunLimits&) = delete;
  ScopedRunLimits& operator=(const ScopedRunLimits&) = delete;

 private:
  const RunLimits* previous_;
};

// The limits of the run this thread computes, or null.
const RunLimits* CurrentRunLimits();

// Called by long kernels between blocks of their work with the block's size in multiply-adds (or as many
// element operations): once some 2^26 of them (well under a millisecond) have passed on this thread since
// its last check, checks the current run's limits and throws RunStopped if the run must stop. Blocks this
// small cost a thread-local sum each, so kernels need not guess how often to check.
void StopIfRunEnded(int64_t work);

// Called after the run's limits were checked outside StopIfRunEnded (the executor's check before each
// step): the count of work since the last check starts again, so when a kernel's first check comes does not
// depend on what ran on this thread before it.
void RestartWorkCount();

// The work of a block whose extents come from a model or a request, for StopIfRunEnded: their product,
// saturated at INT64_MAX, since extents that are each within the limits can still multiply past int64.
int64_t WorkOf(std::initializer_list<int64_t> extents);

}  // namespace onnxserve

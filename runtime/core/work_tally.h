// StopIfRunEnded for inner loops: a tally that passes its work on some thousands of units at a time, so that
// a loop whose every iteration is a few instructions (a tree's step, a pool's window, a sample's tap
// combination) pays an add per iteration, not a call.
#pragma once

#include <cstdint>

#include "runtime/core/run_limits.h"

namespace onnxserve {

class WorkTally {
 public:
  // `work` is small (an iteration's): the tally passes its sum on once it reaches kWorkBetweenCounts.
  void Add(int64_t work) {
    pending_ += work;
    if (pending_ >= kWorkBetweenCounts) Flush();
  }
  // Passes on what is pending, at the end of a loop (not in a destructor: StopIfRunEnded may throw RunStopped).
  void Flush() {
    StopIfRunEnded(pending_);
    pending_ = 0;
  }

 private:
  static constexpr int64_t kWorkBetweenCounts = int64_t{1} << 16;
  int64_t pending_ = 0;
};

}  // namespace onnxserve

// When holding a batch back for company pays: the batcher's latency-aware policy, apart from its threads so
// that tests can drive it with made-up times.
//
// An instance is free and k requests are queued. Holding them a moment dt costs each of them dt; each
// request that arrives meanwhile joins this batch instead of waiting for the next one, which saves it about
// one execution time T. With arrivals at rate r, holding pays while r * T > k: while more requests are
// expected during one execution than are already waiting. Both r and T come from what the batcher saw
// (moving averages over arrival gaps and executions), so at concurrency 1 (nothing arrives while a request
// runs) nothing is ever held, and under load a freed instance holds its first few requests until the
// requests answered by the last batch come back. A silence longer than the usual gap counts as that gap,
// so once arrivals stop the expectation falls below k and the batch leaves after at most T / k of quiet.
// Not thread-safe: the batcher calls it under its lock.
#pragma once

#include <cstdint>

#include "absl/time/time.h"

namespace onnxserve::server {

class ArrivalForecast {
 public:
  void OnArrival(absl::Time now);
  // One model execution (a batch, from its inputs' concatenation to its outputs' split) took `took`.
  void OnExecution(absl::Duration took);

  // Requests expected to arrive during one execution, judged at `now`; below 1 until arrivals closer
  // together than an execution lasts have been seen.
  double ExpectedDuringExecution(absl::Time now) const;
  // True when `queued` requests on a free instance should wait for more (see above).
  bool WorthHolding(int64_t queued, absl::Time now) const { return ExpectedDuringExecution(now) > queued; }
  // When, if nothing arrives, WorthHolding(queued, .) turns false.
  absl::Time HoldingPaysUntil(int64_t queued) const;

 private:
  // Weight of the newest sample in the moving averages: about the last eight count.
  static constexpr double kNewest = 1.0 / 8;

  absl::Time last_arrival_ = absl::InfinitePast();
  absl::Duration gap_ = absl::InfiniteDuration();        // mean time between arrivals
  absl::Duration execution_ = absl::ZeroDuration();      // mean execution time
};

}  // namespace onnxserve::server

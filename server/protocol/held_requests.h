// The bytes of inference requests the server holds: received, and not yet answered. Without a bound, clients
// that send many large requests at once (each within --max-request-bytes) to a busy model make the server
// hold all of them while they queue, until the machine runs out of memory; with one, a request that would
// pass it is answered RESOURCE_EXHAUSTED at once and its bytes freed. gRPC and REST requests share it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace onnxserve::server {

class HeldRequests {
 public:
  // At most `max_bytes` held at once; 0: no bound.
  explicit HeldRequests(int64_t max_bytes) : max_bytes_(max_bytes) {}
  HeldRequests(const HeldRequests&) = delete;
  HeldRequests& operator=(const HeldRequests&) = delete;

  int64_t max_bytes() const { return max_bytes_; }
  int64_t held_bytes() const { return held_.load(std::memory_order_relaxed); }

  // Holds `bytes` until the returned token is destroyed, or returns null when that would pass the bound. A
  // request alone is always held, whatever its size: a bound below the largest request must not starve it.
  // The token must not outlive this object.
  std::shared_ptr<const void> TryHold(int64_t bytes);

 private:
  const int64_t max_bytes_;
  std::atomic<int64_t> held_{0};
};

}  // namespace onnxserve::server

#include "server/protocol/held_requests.h"

namespace onnxserve::server {

std::shared_ptr<const void> HeldRequests::TryHold(int64_t bytes) {
  int64_t held = held_.load(std::memory_order_relaxed);
  do {
    if (max_bytes_ > 0 && held > 0 && bytes > max_bytes_ - held) return nullptr;
  } while (!held_.compare_exchange_weak(held, held + bytes, std::memory_order_relaxed));
  // Points at this object only to be non-null; what it owns is the deleter's release.
  return std::shared_ptr<const void>(this, [this, bytes](const void*) {
    held_.fetch_sub(bytes, std::memory_order_relaxed);
  });
}

}  // namespace onnxserve::server

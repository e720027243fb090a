#include "runtime/core/allocator.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "runtime/core/memory_budget.h"

namespace onnxserve {
namespace {

constexpr size_t kCacheLimitBytes = size_t{1} << 30;

class BufferCache {
 public:
  void* Take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(bytes);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_bytes_ -= bytes;
        return p;
      }
    }
    void* p = std::aligned_alloc(kTensorAlignment, bytes);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }

  void Give(void* p, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (cached_bytes_ + bytes <= kCacheLimitBytes) {
        free_[bytes].push_back(p);
        cached_bytes_ += bytes;
        return;
      }
    }
    std::free(p);
  }

 private:
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_bytes_ = 0;
};

// Leaked on purpose: buffers may be released by static destructors after a function-local cache is gone.
BufferCache& Cache() {
  static BufferCache* cache = new BufferCache;
  return *cache;
}

size_t RoundUp(size_t bytes) {
  const size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  return rounded == 0 ? kTensorAlignment : rounded;
}

}  // namespace

std::shared_ptr<void> AllocateBuffer(size_t bytes) {
  const size_t size = RoundUp(bytes);
  // Charged before the buffer is taken, so a run past its budget fails without holding the memory.
  const MemoryCharge charge = MemoryCharge::ToCurrentRun(size);
  void* p = nullptr;
  try {
    p = Cache().Take(size);
  } catch (...) {
    charge.Release();
    throw;
  }
  // Should making the shared_ptr throw, it calls the deleter, which gives both back.
  return std::shared_ptr<void>(p, [size, charge](void* q) {
    Cache().Give(q, size);
    charge.Release();
  });
}

size_t CachedBytesLimit() { return kCacheLimitBytes; }

}  // namespace onnxserve

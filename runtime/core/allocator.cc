#include "runtime/core/allocator.h"

#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <vector>

#include "runtime/core/memory_budget.h"

namespace onnxserve {
namespace {

constexpr size_t kCacheLimitBytes = size_t{1} << 30;
// How many distinct sizes a request looks at for the most recently released buffer that fits.
constexpr int kSizesScanned = 8;
// Emptied sizes' entries kept for the next new size: inserting and erasing a size allocated a map node and a
// vector's storage for most tensors of a run (a keyword spotter's 37 us run made some 30 such allocations).
constexpr size_t kSpareEntries = 64;

size_t RoundUp(size_t bytes) {
  const size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  return rounded == 0 ? kTensorAlignment : rounded;
}

// Free buffers by size. A request takes the buffer released last among those of its size up to
// MaxReusableSize: its lines are the likeliest still in cache, where a buffer of the exact size may have sat
// through a whole run (a 1.2 MB activation written into a cold buffer costs a read of every line from
// memory first).
class BufferCache {
 public:
  struct Buffer {
    void* data;
    size_t size;
  };

  BufferCache() { spare_.reserve(kSpareEntries); }  // keeping an entry then never allocates

  Buffer Take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto taken = TakeRecentFit(bytes)) return *taken;
    }
    void* p = std::aligned_alloc(kTensorAlignment, bytes);
    if (p == nullptr) throw std::bad_alloc();
    return {p, bytes};
  }

  void Give(Buffer buffer) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (cached_bytes_ + buffer.size <= kCacheLimitBytes) {
        ListOf(buffer.size).push_back({buffer.data, ++releases_});
        cached_bytes_ += buffer.size;
        return;
      }
    }
    std::free(buffer.data);
  }

 private:
  struct Released {
    void* data;
    uint64_t stamp;  // order of release
  };

  using FreeLists = std::map<size_t, std::vector<Released>>;

  // The list of buffers of `size`, made from a spare entry when there is none.
  std::vector<Released>& ListOf(size_t size) {
    auto it = free_.find(size);
    if (it != free_.end()) return it->second;
    if (spare_.empty()) return free_[size];
    FreeLists::node_type entry = std::move(spare_.back());
    spare_.pop_back();
    entry.key() = size;
    return free_.insert(std::move(entry)).position->second;
  }

  // A request may take a buffer up to half again its size: what it wastes is bounded, and a layer's output
  // finds the just-freed buffer of a neighbouring layer whose shape differs a little.
  static size_t MaxReusableSize(size_t bytes) { return bytes + bytes / 2; }

  std::optional<Buffer> TakeRecentFit(size_t bytes) {
    auto best = free_.end();
    int scanned = 0;
    for (auto it = free_.lower_bound(bytes);
         it != free_.end() && it->first <= MaxReusableSize(bytes) && scanned < kSizesScanned; ++it, ++scanned) {
      if (best == free_.end() || it->second.back().stamp > best->second.back().stamp) best = it;
    }
    if (best == free_.end()) return std::nullopt;
    const Buffer buffer{best->second.back().data, best->first};
    best->second.pop_back();
    if (best->second.empty()) {
      if (spare_.size() < kSpareEntries) {
        spare_.push_back(free_.extract(best));
      } else {
        free_.erase(best);
      }
    }
    cached_bytes_ -= buffer.size;
    return buffer;
  }

  std::mutex mu_;
  FreeLists free_;  // no empty vectors
  std::vector<FreeLists::node_type> spare_;  // empty vectors, their storage kept
  size_t cached_bytes_ = 0;
  uint64_t releases_ = 0;
};

// Leaked on purpose: buffers may be released by static destructors after a function-local cache is gone.
BufferCache& Cache() {
  static BufferCache* cache = new BufferCache;
  return *cache;
}

}  // namespace

std::shared_ptr<void> AllocateBuffer(size_t bytes) {
  const size_t size = RoundUp(bytes);
  // Charged before the buffer is taken, so a run past its budget fails without holding the memory. The run
  // is charged what it asked for: a larger cached buffer it may get was allocated, and charged, before.
  const MemoryCharge charge = MemoryCharge::ToCurrentRun(size);
  BufferCache::Buffer buffer;
  try {
    buffer = Cache().Take(size);
  } catch (...) {
    charge.Release();
    throw;
  }
  // Should making the shared_ptr throw, it calls the deleter, which gives both back.
  return std::shared_ptr<void>(buffer.data, [buffer, charge](void*) {
    Cache().Give(buffer);
    charge.Release();
  });
}

size_t CachedBytesLimit() { return kCacheLimitBytes; }

}  // namespace onnxserve

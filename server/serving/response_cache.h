// The response cache (Triton's): the answers of deterministic models kept in memory, so that a request equal
// to one answered before is answered again without running the model. Server-wide, bounded in bytes
// (--response-cache-byte-size), least recently used entries evicted first; a model takes part when its config
// says `response_cache { enable: true }` (config.cc refuses that for models with random ops).
//
// A request's key is every byte that can change its answer: the model version's load (a reload of the same
// version number is another load), its name and version, every input's name, datatype, shape and raw bytes in
// the model's input order. Inputs are keyed decoded, so the same tensor sent as JSON, as typed contents or as
// raw bytes, over REST or gRPC, finds the same entry. The
// hash of the key only picks a bucket: a hit compares the whole key, so a collision costs a miss, never
// another request's answer. Answers are every output of the version as tensors (name, datatype, shape, raw
// bytes), not a protocol's message: each protocol selects and encodes them as it does a computed answer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "runtime/core/tensor.h"
#include "server/observability/metrics.h"
#include "server/servable/servable.h"

namespace onnxserve::server {

struct ModelVersion;  // repository.h

// One output of an answer, as ModelInferResponse carries it.
struct CachedOutput {
  std::string name;
  std::string datatype;  // KServe's: "FP32"
  std::vector<int64_t> shape;
  std::string raw;  // raw form (datatype.h)
};
using CachedAnswer = std::vector<CachedOutput>;

// Answers by key, bounded in bytes. Thread-safe: one mutex, held only to find, link and unlink entries;
// answers are shared immutable, so copying one out happens outside the lock.
class ResponseCache {
 public:
  using HashFn = uint64_t (*)(std::string_view key);
  // `hash` is for tests that need collisions; the default is absl's 64-bit hash, seeded per process.
  explicit ResponseCache(size_t capacity_bytes, HashFn hash = DefaultHash);
  ResponseCache(const ResponseCache&) = delete;
  ResponseCache& operator=(const ResponseCache&) = delete;

  // The answer stored under exactly `key`, now the most recently used; nullptr when there is none.
  std::shared_ptr<const CachedAnswer> Lookup(std::string_view key);
  // Stores `answer` under `key` as the most recently used entry, evicting the least recently used ones until
  // it fits. An answer already stored under `key` (equal requests that missed together) is kept. Returns
  // false, storing nothing, when the entry alone is larger than the cache.
  bool Insert(std::string key, CachedAnswer answer);
  // Drops every entry whose key starts with `prefix` (a version's load, when it is unloaded or replaced: its
  // answers can never be hit again and would only crowd out live ones until evicted).
  void EraseWithPrefix(std::string_view prefix);

  struct Usage {
    size_t entries = 0;
    size_t bytes = 0;
  };
  Usage usage() const;
  size_t capacity() const { return capacity_; }

  // What an entry is charged: its key, its answer's bytes and bookkeeping; nullopt when the sum overflows.
  static std::optional<size_t> EntryBytes(std::string_view key, const CachedAnswer& answer);
  static uint64_t DefaultHash(std::string_view key);

 private:
  struct Entry {
    uint64_t hash;
    std::string key;
    std::shared_ptr<const CachedAnswer> answer;
    size_t bytes;
  };
  using Lru = std::list<Entry>;  // front: the most recently used

  Lru::iterator Find(uint64_t hash, std::string_view key);
  void Evict(Lru::iterator entry);

  const size_t capacity_;
  const HashFn hash_;
  mutable std::mutex mu_;
  Lru lru_;
  // Entries by hash; more than one only when keys collide.
  absl::flat_hash_map<uint64_t, std::vector<Lru::iterator>> index_;
  size_t bytes_ = 0;
};

// The cache as a servable decorator, outermost in a version's chain (AssembleServable) so that a hit skips
// the queue: a request whose inputs were answered before gets that answer, every output of the version, and
// a miss stores what the servable it decorates answers. Requested outputs and their encoding are the
// protocol's business, applied to hits and computed answers alike. Hits and misses go to the version's
// statistics (cache_hit: lookup and copy-out time; cache_miss: lookup and insertion time) and to the metrics.
class CachingServable final : public Servable {
 public:
  // `cache`, `mv` (which owns this servable) and `metrics` (may be null) must outlive it.
  CachingServable(ResponseCache& cache, const ModelVersion& mv, std::shared_ptr<Servable> inner,
                  ServerMetrics* metrics);
  // The version is going: its entries go with it.
  ~CachingServable() override;
  void Run(ServableRequest request, ServableDone done) override;

  // The key of a request to `mv` (see the file comment), which starts with LoadPrefix(mv). Exposed for tests.
  static std::string KeyOf(const ModelVersion& mv, const std::vector<Tensor>& inputs);
  static std::string LoadPrefix(const ModelVersion& mv);

 private:
  void Store(std::string key, const std::vector<Tensor>& outputs);
  void Record(bool hit, absl::Duration took) const;

  ResponseCache& cache_;
  const ModelVersion& mv_;
  const std::shared_ptr<Servable> inner_;
  ServerMetrics* const metrics_;
};

}  // namespace onnxserve::server

#include "server/serving/response_cache.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/time/clock.h"
#include "runtime/core/status_macros.h"
#include "server/serving/datatype.h"
#include "server/serving/repository.h"

namespace onnxserve::server {
namespace {

// total += n; false when that would overflow.
bool AddTo(size_t& total, size_t n) { return !__builtin_add_overflow(total, n, &total); }

// Fixed-width little-endian-on-x86 counts and lengths keep the key unambiguous: no field can be read as the
// end of one and the start of the next.
void AppendNumber(std::string& key, uint64_t n) {
  char bytes[sizeof n];
  std::memcpy(bytes, &n, sizeof n);
  key.append(bytes, sizeof n);
}

void AppendBytes(std::string& key, std::string_view bytes) {
  AppendNumber(key, bytes.size());
  key.append(bytes);
}

void AppendTensor(std::string& key, const std::string& name, const Tensor& tensor) {
  AppendBytes(key, name);
  AppendNumber(key, static_cast<uint64_t>(tensor.dtype()));
  AppendNumber(key, tensor.shape().size());
  for (int64_t d : tensor.shape()) AppendNumber(key, static_cast<uint64_t>(d));
  const size_t length_at = key.size();
  AppendNumber(key, 0);
  // A request's BYTES elements are shorter than the largest request, so none is refused here.
  AppendRaw(tensor, key).IgnoreError();
  const uint64_t raw_bytes = key.size() - length_at - sizeof(uint64_t);
  std::memcpy(key.data() + length_at, &raw_bytes, sizeof raw_bytes);
}

// Every output, named as the version names them, in raw form; an error for outputs raw form cannot hold.
absl::StatusOr<CachedAnswer> AnswerOf(const ModelVersion& mv, const std::vector<Tensor>& outputs) {
  CachedAnswer answer(outputs.size());
  for (size_t k = 0; k < outputs.size(); ++k) {
    answer[k].name = mv.outputs[k].name;
    answer[k].datatype = KServeDataType(outputs[k].dtype());
    answer[k].shape = outputs[k].shape();
    RETURN_IF_ERROR(AppendRaw(outputs[k], answer[k].raw));
  }
  return answer;
}

// The tensors of a stored answer; an error only if the cache held bytes it could not have stored.
absl::StatusOr<std::vector<Tensor>> TensorsOf(const CachedAnswer& answer) {
  std::vector<Tensor> outputs;
  outputs.reserve(answer.size());
  for (const CachedOutput& output : answer) {
    ASSIGN_OR_RETURN(const DataType type, DataTypeFromKServe(output.datatype));
    ASSIGN_OR_RETURN(Tensor tensor, TensorFromRaw(output.name, type, output.shape, output.raw));
    outputs.push_back(std::move(tensor));
  }
  return outputs;
}

}  // namespace

ResponseCache::ResponseCache(size_t capacity_bytes, HashFn hash) : capacity_(capacity_bytes), hash_(hash) {}

uint64_t ResponseCache::DefaultHash(std::string_view key) { return absl::Hash<std::string_view>()(key); }

std::optional<size_t> ResponseCache::EntryBytes(std::string_view key, const CachedAnswer& answer) {
  size_t total = sizeof(Entry) + sizeof(CachedAnswer) + sizeof(Lru::iterator);
  bool ok = AddTo(total, key.size());
  for (const CachedOutput& output : answer) {
    ok = ok && AddTo(total, sizeof(CachedOutput)) && AddTo(total, output.name.size()) &&
         AddTo(total, output.datatype.size()) && AddTo(total, output.raw.size());
    size_t shape_bytes = 0;
    ok = ok && !__builtin_mul_overflow(output.shape.size(), sizeof(int64_t), &shape_bytes) &&
         AddTo(total, shape_bytes);
  }
  if (!ok) return std::nullopt;
  return total;
}

ResponseCache::Lru::iterator ResponseCache::Find(uint64_t hash, std::string_view key) {
  auto bucket = index_.find(hash);
  if (bucket == index_.end()) return lru_.end();
  for (Lru::iterator entry : bucket->second) {
    if (entry->key == key) return entry;
  }
  return lru_.end();
}

void ResponseCache::Evict(Lru::iterator entry) {
  auto bucket = index_.find(entry->hash);
  std::erase(bucket->second, entry);
  if (bucket->second.empty()) index_.erase(bucket);
  bytes_ -= entry->bytes;
  lru_.erase(entry);
}

std::shared_ptr<const CachedAnswer> ResponseCache::Lookup(std::string_view key) {
  const uint64_t hash = hash_(key);
  std::lock_guard<std::mutex> lock(mu_);
  Lru::iterator entry = Find(hash, key);
  if (entry == lru_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, entry);  // iterators stay valid
  return entry->answer;
}

bool ResponseCache::Insert(std::string key, CachedAnswer answer) {
  const std::optional<size_t> bytes = EntryBytes(key, answer);
  if (!bytes || *bytes > capacity_) return false;
  const uint64_t hash = hash_(key);
  auto shared = std::make_shared<const CachedAnswer>(std::move(answer));
  std::lock_guard<std::mutex> lock(mu_);
  if (Lru::iterator found = Find(hash, key); found != lru_.end()) {
    lru_.splice(lru_.begin(), lru_, found);
    return true;
  }
  while (capacity_ - bytes_ < *bytes) Evict(std::prev(lru_.end()));
  // Allocations first, then the link: an exception leaves the cache as it was.
  std::vector<Lru::iterator>& bucket = index_[hash];
  bucket.reserve(bucket.size() + 1);
  lru_.push_front(Entry{hash, std::move(key), std::move(shared), *bytes});
  bucket.push_back(lru_.begin());
  bytes_ += *bytes;
  return true;
}

void ResponseCache::EraseWithPrefix(std::string_view prefix) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto entry = lru_.begin(); entry != lru_.end();) {
    auto next = std::next(entry);
    if (std::string_view(entry->key).starts_with(prefix)) Evict(entry);
    entry = next;
  }
}

ResponseCache::Usage ResponseCache::usage() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {lru_.size(), bytes_};
}

CachingServable::CachingServable(ResponseCache& cache, const ModelVersion& mv, std::shared_ptr<Servable> inner,
                                 ServerMetrics* metrics)
    : cache_(cache), mv_(mv), inner_(std::move(inner)), metrics_(metrics) {}

CachingServable::~CachingServable() {
  cache_.EraseWithPrefix(LoadPrefix(mv_));
  if (metrics_ != nullptr) {
    const ResponseCache::Usage usage = cache_.usage();
    metrics_->SetCacheUsage(usage.entries, usage.bytes);
  }
}

std::string CachingServable::LoadPrefix(const ModelVersion& mv) {
  std::string prefix;
  AppendNumber(prefix, mv.load_id);
  AppendBytes(prefix, mv.name);
  AppendBytes(prefix, mv.version_str);
  return prefix;
}

std::string CachingServable::KeyOf(const ModelVersion& mv, const std::vector<Tensor>& inputs) {
  std::string key = LoadPrefix(mv);
  AppendNumber(key, inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) AppendTensor(key, mv.inputs[k].name, inputs[k]);
  return key;
}

void CachingServable::Run(ServableRequest request, ServableDone done) {
  const absl::Time start = absl::Now();
  std::string key = KeyOf(mv_, request.inputs);
  if (std::shared_ptr<const CachedAnswer> answer = cache_.Lookup(key)) {
    ServableResponse response{.outputs = TensorsOf(*answer), .timing = {}};
    Record(true, absl::Now() - start);
    return done(std::move(response));
  }
  const absl::Duration lookup = absl::Now() - start;
  inner_->Run(std::move(request), [this, key = std::move(key), lookup, done = std::move(done)](
                                      ServableResponse response) mutable {
    const absl::Time store_start = absl::Now();
    if (response.outputs.ok()) Store(std::move(key), *response.outputs);
    Record(false, lookup + (absl::Now() - store_start));
    done(std::move(response));
  });
}

void CachingServable::Store(std::string key, const std::vector<Tensor>& outputs) {
  try {
    // Not cached when raw form cannot hold it: the request's own encoding reports that.
    if (absl::StatusOr<CachedAnswer> answer = AnswerOf(mv_, outputs); answer.ok()) {
      cache_.Insert(std::move(key), *std::move(answer));
    }
  } catch (const std::bad_alloc&) {
    // Not cached; the request itself has its answer.
  }
}

void CachingServable::Record(bool hit, absl::Duration took) const {
  mv_.stats->RecordCacheLookup(hit, took);
  if (metrics_ == nullptr) return;
  metrics_->OnCacheLookup(mv_.name, mv_.version_str, hit);
  const ResponseCache::Usage usage = cache_.usage();
  metrics_->SetCacheUsage(usage.entries, usage.bytes);
}

}  // namespace onnxserve::server

#include "server/response_cache.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/time/clock.h"
#include "server/datatype.h"
#include "server/repository.h"

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
  AppendRaw(tensor, key);
  const uint64_t raw_bytes = key.size() - length_at - sizeof(uint64_t);
  std::memcpy(key.data() + length_at, &raw_bytes, sizeof raw_bytes);
}

// Requested outputs in request order, each with its parameters sorted by name (a map's order is not stable).
void AppendRequestedOutputs(std::string& key, const inference::ModelInferRequest& wire) {
  AppendNumber(key, static_cast<uint64_t>(wire.outputs_size()));
  for (const auto& output : wire.outputs()) {
    AppendBytes(key, output.name());
    std::vector<std::pair<std::string_view, const inference::InferParameter*>> parameters;
    for (const auto& [name, value] : output.parameters()) parameters.emplace_back(name, &value);
    std::sort(parameters.begin(), parameters.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    AppendNumber(key, parameters.size());
    for (const auto& [name, value] : parameters) {
      AppendBytes(key, name);
      AppendBytes(key, value->SerializeAsString());
    }
  }
}

CachedAnswer AnswerOf(const inference::ModelInferResponse& response) {
  CachedAnswer answer(static_cast<size_t>(response.outputs_size()));
  for (int i = 0; i < response.outputs_size(); ++i) {
    const auto& output = response.outputs(i);
    answer[i].name = output.name();
    answer[i].datatype = output.datatype();
    answer[i].shape.assign(output.shape().begin(), output.shape().end());
    answer[i].raw = response.raw_output_contents(i);
  }
  return answer;
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

ResponseCache::Usage ResponseCache::usage() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {lru_.size(), bytes_};
}

std::string CachedRequest::KeyOf(const ModelVersion& mv, const std::vector<Tensor>& inputs,
                                 const inference::ModelInferRequest& wire) {
  std::string key;
  AppendNumber(key, mv.load_id);
  AppendBytes(key, mv.name);
  AppendBytes(key, mv.version_str);
  AppendNumber(key, inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) AppendTensor(key, mv.inputs[k].name, inputs[k]);
  AppendRequestedOutputs(key, wire);
  return key;
}

std::unique_ptr<CachedRequest> CachedRequest::Lookup(ResponseCache* cache, ServerMetrics* metrics,
                                                     const ModelVersion& mv, const std::vector<Tensor>& inputs,
                                                     const inference::ModelInferRequest& wire) {
  if (cache == nullptr || !mv.config.response_cache().enable()) return nullptr;
  const absl::Time start = absl::Now();
  std::unique_ptr<CachedRequest> request(new CachedRequest(*cache, metrics, mv));
  request->key_ = KeyOf(mv, inputs, wire);
  request->answer_ = cache->Lookup(request->key_);
  request->lookup_time_ = absl::Now() - start;
  return request;
}

void CachedRequest::Answer(const std::string& id, inference::ModelInferResponse& response) {
  const absl::Time start = absl::Now();
  response.set_model_name(mv_.name);
  response.set_model_version(mv_.version_str);
  response.set_id(id);
  for (const CachedOutput& cached : *answer_) {
    auto* output = response.add_outputs();
    output->set_name(cached.name);
    output->set_datatype(cached.datatype);
    for (int64_t d : cached.shape) output->add_shape(d);
    response.add_raw_output_contents(cached.raw);
  }
  Record(true, lookup_time_ + (absl::Now() - start));
}

void CachedRequest::Store(const absl::Status& status, const inference::ModelInferResponse& response) {
  const absl::Time start = absl::Now();
  if (status.ok() && response.outputs_size() == response.raw_output_contents_size()) {
    try {
      cache_.Insert(std::move(key_), AnswerOf(response));
    } catch (const std::bad_alloc&) {
      // Not cached; the request itself has its answer.
    }
  }
  Record(false, lookup_time_ + (absl::Now() - start));
}

void CachedRequest::Record(bool hit, absl::Duration took) const {
  mv_.stats->RecordCacheLookup(hit, took);
  if (metrics_ == nullptr) return;
  metrics_->OnCacheLookup(mv_.name, mv_.version_str, hit);
  const ResponseCache::Usage usage = cache_.usage();
  metrics_->SetCacheUsage(usage.entries, usage.bytes);
}

}  // namespace onnxserve::server

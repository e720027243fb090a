// ServerMetrics on prometheus-cpp: one registry, families built from the table below, and a per
// (model, version) cache of the series so the request path neither builds label maps nor hashes them twice.
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <array>
#include <atomic>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/observability/metrics.h"
#include "server/observability/process_metrics.h"

namespace onnxserve::server {
namespace {

// Every metric onnxserve exports, defined once: id, Prometheus name (base units, counters end in _total),
// help. Model metrics carry the labels model and version; onnxserve_requests_total also carries code.
#define ONNXSERVE_METRICS(X)                                                                                 \
  X(kRequests, "onnxserve_requests_total", "Inference requests finished, by final gRPC status code.")       \
  X(kInferences, "onnxserve_inferences_total", "Batch items inferred (rows over all model executions).")    \
  X(kBatchExecutions, "onnxserve_batch_executions_total", "Model executions; one execution runs a batch.") \
  X(kRequestDuration, "onnxserve_request_duration_seconds", "Time from a request's arrival to its response.") \
  X(kQueueDuration, "onnxserve_queue_duration_seconds", "Time a request waited in the batch queue.")         \
  X(kComputeDuration, "onnxserve_compute_duration_seconds", "Time one model execution (one batch) took.")    \
  X(kBatchSize, "onnxserve_batch_size", "Batch items per model execution.")                                 \
  X(kQueueDepth, "onnxserve_queue_depth", "Requests waiting in the batch queue.")                           \
  X(kInFlight, "onnxserve_inflight_requests", "Requests accepted and not yet answered (queued or computing).") \
  X(kModelReady, "onnxserve_model_ready", "1 when the model version is loaded and serving, else 0.")       \
  X(kCacheHits, "onnxserve_cache_hits_total", "Requests answered from the response cache.")                 \
  X(kCacheMisses, "onnxserve_cache_misses_total", "Response cache lookups that found no answer.")           \
  X(kCacheEntries, "onnxserve_cache_entries", "Answers held by the response cache (no labels).")             \
  X(kCacheBytes, "onnxserve_cache_bytes", "Bytes charged to the response cache's answers (no labels).")      \
  X(kProcessCpu, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.")           \
  X(kProcessResident, "process_resident_memory_bytes", "Resident memory size in bytes.")                   \
  X(kProcessOpenFds, "process_open_fds", "Number of open file descriptors.")

enum Metric {
#define ONNXSERVE_METRIC_ID(id, name, help) id,
  ONNXSERVE_METRICS(ONNXSERVE_METRIC_ID)
#undef ONNXSERVE_METRIC_ID
};

struct MetricSpec {
  const char* name;
  const char* help;
};

constexpr MetricSpec kMetrics[] = {
#define ONNXSERVE_METRIC_SPEC(id, name, help) {name, help},
    ONNXSERVE_METRICS(ONNXSERVE_METRIC_SPEC)
#undef ONNXSERVE_METRIC_SPEC
};

template <typename Builder>
auto& Build(Builder builder, Metric metric, prometheus::Registry& registry) {
  return builder.Name(kMetrics[metric].name).Help(kMetrics[metric].help).Register(registry);
}

// Seconds, from 100 us (a tiny model's compute) to 10 s (a request stuck behind a large batch).
const prometheus::Histogram::BucketBoundaries& DurationBuckets() {
  static const auto* buckets = new prometheus::Histogram::BucketBoundaries{
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  return *buckets;
}

const prometheus::Histogram::BucketBoundaries& BatchSizeBuckets() {
  static const auto* buckets =
      new prometheus::Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
  return *buckets;
}

// grpc::StatusCode values 0 (OK) .. 16 (UNAUTHENTICATED); the code label is the code's canonical name.
constexpr size_t kNumCodes = grpc::StatusCode::UNAUTHENTICATED + 1;

// Distinct (model, version) label pairs kept; requests naming ever more unknown models must not grow the
// exposition without bound, so later pairs share the model="__overflow__" series.
constexpr size_t kMaxSeries = 1024;
constexpr char kOverflowModel[] = "__overflow__";
// Longest label value kept, in bytes; longer ones are cut (at a UTF-8 character boundary), so that no
// caller can make one series cost more than a few kilobytes.
constexpr size_t kMaxLabelBytes = 128;

absl::string_view BoundedLabel(absl::string_view value) {
  if (value.size() <= kMaxLabelBytes) return value;
  size_t end = kMaxLabelBytes;
  while (end > 0 && (static_cast<unsigned char>(value[end]) & 0xC0) == 0x80) --end;  // a continuation byte
  return value.substr(0, end);
}

using SeriesKey = std::pair<std::string, std::string>;
using SeriesKeyView = std::pair<absl::string_view, absl::string_view>;

// Transparent, so lookups take views of the caller's strings instead of copying them into a key.
struct SeriesKeyHash {
  using is_transparent = void;
  size_t operator()(SeriesKeyView key) const { return absl::Hash<SeriesKeyView>()(key); }
};
struct SeriesKeyEq {
  using is_transparent = void;
  bool operator()(SeriesKeyView a, SeriesKeyView b) const { return a == b; }
};

class PrometheusMetrics final : public ServerMetrics {
 public:
  PrometheusMetrics();

  void OnRequest(const std::string& model, const std::string& version, grpc::StatusCode code,
                 double seconds) override;
  void OnQueue(const std::string& model, const std::string& version, double seconds) override;
  void OnBatch(const std::string& model, const std::string& version, int batch_size,
               double compute_seconds) override;
  void SetQueueDepth(const std::string& model, const std::string& version, int depth) override;
  void AddInFlight(const std::string& model, const std::string& version, int delta) override;
  void SetModelReady(const std::string& model, const std::string& version, bool ready) override;
  void OnCacheLookup(const std::string& model, const std::string& version, bool hit) override;
  void SetCacheUsage(size_t entries, size_t bytes) override;
  std::string Expose() const override;

 private:
  // The series of one (model, version). Pointers into the registry's families, which never free them.
  struct Series {
    prometheus::Labels labels;  // model and version as exported (the overflow series has its own)
    std::array<std::atomic<prometheus::Counter*>, kNumCodes> requests{};  // per code, made on first use
    prometheus::Counter* inferences;
    prometheus::Counter* batch_executions;
    prometheus::Histogram* request_duration;
    prometheus::Histogram* queue_duration;
    prometheus::Histogram* compute_duration;
    prometheus::Histogram* batch_size;
    prometheus::Gauge* queue_depth;
    prometheus::Gauge* inflight;
    prometheus::Gauge* model_ready;
    prometheus::Counter* cache_hits;
    prometheus::Counter* cache_misses;
  };

  Series& SeriesFor(absl::string_view model, absl::string_view version);
  std::unique_ptr<Series> MakeSeries(absl::string_view model, absl::string_view version);
  prometheus::Counter& RequestCounter(Series& series, grpc::StatusCode code);
  void AppendProcessMetrics(std::vector<prometheus::MetricFamily>& families) const;

  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Counter>& inferences_;
  prometheus::Family<prometheus::Counter>& batch_executions_;
  prometheus::Family<prometheus::Histogram>& request_duration_;
  prometheus::Family<prometheus::Histogram>& queue_duration_;
  prometheus::Family<prometheus::Histogram>& compute_duration_;
  prometheus::Family<prometheus::Histogram>& batch_size_;
  prometheus::Family<prometheus::Gauge>& queue_depth_;
  prometheus::Family<prometheus::Gauge>& inflight_;
  prometheus::Family<prometheus::Gauge>& model_ready_;
  prometheus::Family<prometheus::Counter>& cache_hits_;
  prometheus::Family<prometheus::Counter>& cache_misses_;
  prometheus::Gauge& cache_entries_;
  prometheus::Gauge& cache_bytes_;

  absl::Mutex mu_;
  absl::flat_hash_map<SeriesKey, std::unique_ptr<Series>, SeriesKeyHash, SeriesKeyEq> series_
      ABSL_GUARDED_BY(mu_);
};

PrometheusMetrics::PrometheusMetrics()
    : requests_(Build(prometheus::BuildCounter(), kRequests, *registry_)),
      inferences_(Build(prometheus::BuildCounter(), kInferences, *registry_)),
      batch_executions_(Build(prometheus::BuildCounter(), kBatchExecutions, *registry_)),
      request_duration_(Build(prometheus::BuildHistogram(), kRequestDuration, *registry_)),
      queue_duration_(Build(prometheus::BuildHistogram(), kQueueDuration, *registry_)),
      compute_duration_(Build(prometheus::BuildHistogram(), kComputeDuration, *registry_)),
      batch_size_(Build(prometheus::BuildHistogram(), kBatchSize, *registry_)),
      queue_depth_(Build(prometheus::BuildGauge(), kQueueDepth, *registry_)),
      inflight_(Build(prometheus::BuildGauge(), kInFlight, *registry_)),
      model_ready_(Build(prometheus::BuildGauge(), kModelReady, *registry_)),
      cache_hits_(Build(prometheus::BuildCounter(), kCacheHits, *registry_)),
      cache_misses_(Build(prometheus::BuildCounter(), kCacheMisses, *registry_)),
      cache_entries_(Build(prometheus::BuildGauge(), kCacheEntries, *registry_).Add({})),
      cache_bytes_(Build(prometheus::BuildGauge(), kCacheBytes, *registry_).Add({})) {}

std::unique_ptr<PrometheusMetrics::Series> PrometheusMetrics::MakeSeries(absl::string_view model,
                                                                         absl::string_view version) {
  auto series = std::make_unique<Series>();
  series->labels = {{"model", std::string(model)}, {"version", std::string(version)}};
  const prometheus::Labels& labels = series->labels;
  series->inferences = &inferences_.Add(labels);
  series->batch_executions = &batch_executions_.Add(labels);
  series->request_duration = &request_duration_.Add(labels, DurationBuckets());
  series->queue_duration = &queue_duration_.Add(labels, DurationBuckets());
  series->compute_duration = &compute_duration_.Add(labels, DurationBuckets());
  series->batch_size = &batch_size_.Add(labels, BatchSizeBuckets());
  series->queue_depth = &queue_depth_.Add(labels);
  series->inflight = &inflight_.Add(labels);
  series->model_ready = &model_ready_.Add(labels);
  series->cache_hits = &cache_hits_.Add(labels);
  series->cache_misses = &cache_misses_.Add(labels);
  return series;
}

PrometheusMetrics::Series& PrometheusMetrics::SeriesFor(absl::string_view model, absl::string_view version) {
  const SeriesKeyView key(BoundedLabel(model), BoundedLabel(version));
  {
    absl::ReaderMutexLock lock(&mu_);
    auto it = series_.find(key);
    if (it != series_.end()) return *it->second;
  }
  absl::MutexLock lock(&mu_);
  auto it = series_.find(key);
  if (it != series_.end()) return *it->second;
  if (series_.size() >= kMaxSeries) {
    const SeriesKeyView overflow(kOverflowModel, "");
    it = series_.find(overflow);
    if (it != series_.end()) return *it->second;
    return *series_.emplace(SeriesKey(kOverflowModel, ""), MakeSeries(kOverflowModel, "")).first->second;
  }
  return *series_.emplace(SeriesKey(key), MakeSeries(key.first, key.second)).first->second;
}

prometheus::Counter& PrometheusMetrics::RequestCounter(Series& series, grpc::StatusCode code) {
  size_t index = static_cast<size_t>(code);
  if (index >= kNumCodes) index = grpc::StatusCode::UNKNOWN;
  prometheus::Counter* counter = series.requests[index].load(std::memory_order_acquire);
  if (counter == nullptr) {
    // Family::Add returns the existing series for equal labels, so racing first uses agree on one counter.
    prometheus::Labels labels = series.labels;
    // absl::StatusCode and grpc::StatusCode share google.rpc.Code numbering (asserted in status.cc).
    labels.emplace("code", absl::StatusCodeToString(static_cast<absl::StatusCode>(index)));
    counter = &requests_.Add(labels);
    series.requests[index].store(counter, std::memory_order_release);
  }
  return *counter;
}

void PrometheusMetrics::OnRequest(const std::string& model, const std::string& version, grpc::StatusCode code,
                                  double seconds) {
  Series& series = SeriesFor(model, version);
  RequestCounter(series, code).Increment();
  series.request_duration->Observe(seconds);
}

void PrometheusMetrics::OnQueue(const std::string& model, const std::string& version, double seconds) {
  SeriesFor(model, version).queue_duration->Observe(seconds);
}

void PrometheusMetrics::OnBatch(const std::string& model, const std::string& version, int batch_size,
                                double compute_seconds) {
  Series& series = SeriesFor(model, version);
  series.inferences->Increment(batch_size);
  series.batch_executions->Increment();
  series.compute_duration->Observe(compute_seconds);
  series.batch_size->Observe(batch_size);
}

void PrometheusMetrics::SetQueueDepth(const std::string& model, const std::string& version, int depth) {
  SeriesFor(model, version).queue_depth->Set(depth);
}

void PrometheusMetrics::AddInFlight(const std::string& model, const std::string& version, int delta) {
  SeriesFor(model, version).inflight->Increment(delta);  // atomic: concurrent deltas never lose one another
}

void PrometheusMetrics::SetModelReady(const std::string& model, const std::string& version, bool ready) {
  SeriesFor(model, version).model_ready->Set(ready ? 1 : 0);
}

void PrometheusMetrics::OnCacheLookup(const std::string& model, const std::string& version, bool hit) {
  Series& series = SeriesFor(model, version);
  (hit ? series.cache_hits : series.cache_misses)->Increment();
}

void PrometheusMetrics::SetCacheUsage(size_t entries, size_t bytes) {
  cache_entries_.Set(static_cast<double>(entries));
  cache_bytes_.Set(static_cast<double>(bytes));
}

prometheus::MetricFamily ProcessFamily(Metric metric, prometheus::MetricType type, double value) {
  prometheus::ClientMetric sample;
  (type == prometheus::MetricType::Counter ? sample.counter.value : sample.gauge.value) = value;
  return {kMetrics[metric].name, kMetrics[metric].help, type, {sample}};
}

// Read at scrape time; a process without /proc simply exports no process metrics.
void PrometheusMetrics::AppendProcessMetrics(std::vector<prometheus::MetricFamily>& families) const {
  auto stats = ReadProcessStats();
  if (!stats.ok()) return;
  families.push_back(ProcessFamily(kProcessCpu, prometheus::MetricType::Counter, stats->cpu_seconds));
  families.push_back(ProcessFamily(kProcessResident, prometheus::MetricType::Gauge, stats->resident_bytes));
  families.push_back(ProcessFamily(kProcessOpenFds, prometheus::MetricType::Gauge, stats->open_fds));
}

std::string PrometheusMetrics::Expose() const {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  AppendProcessMetrics(families);
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace

std::unique_ptr<ServerMetrics> MakePrometheusMetrics() { return std::make_unique<PrometheusMetrics>(); }

}  // namespace onnxserve::server

// The model repository: Triton's layout ROOT/<model>/<version>/model.onnx plus an optional
// ROOT/<model>/config.pbtxt, loaded into ModelVersions that requests share.
//
// Confinement: a model name is one folder name (CheckModelName), and every folder and file the repository
// reads resolves, after symlinks, inside ROOT; the files are regular files. Names that break either rule are not models: loading one
// answers as for a missing model, scans skip them with a log line, RepositoryIndex never lists them.
//
// Swaps are atomic: a (re)load happens outside the repository lock and replaces the served version only when
// it succeeded; requests hold a shared_ptr to the version they started on, so in-flight work finishes on
// the old one. A failed load keeps the previous version serving and records the error as the version's
// reason (RepositoryIndex, logs). Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "model_config.pb.h"
#include "runtime/exec/session.h"
#include "server/observability/metrics.h"
#include "server/observability/version_stats.h"
#include "server/serving/config.h"
#include "server/servable/servable.h"

namespace onnxserve::server {

class ResponseCache;  // response_cache.h

// Longest model name accepted, in bytes; also bounds the metrics labels and messages that quote a name.
inline constexpr size_t kMaxModelNameBytes = 128;

// OK when `name` can name a model: 1 to kMaxModelNameBytes of letters, digits, '_', '-' and '.', not
// starting with '.' (so neither "." nor ".." nor a hidden folder). INVALID_ARGUMENT otherwise.
absl::Status CheckModelName(absl::string_view name);

// A name from a request (model or version) quoted for a message, cut to kMaxModelNameBytes: a request may
// carry a name of megabytes, and an error must not echo it back whole.
std::string QuotedName(absl::string_view name);

// none: load everything at start, never change. poll: also rescan every poll interval. explicit: load
// nothing at start; RepositoryModelLoad/Unload decide.
enum class ControlMode { kNone, kPoll, kExplicit };
absl::StatusOr<ControlMode> ParseControlMode(std::string_view name);

// One loaded model version. Immutable once published; destroyed when the repository and the last request
// using it let go.
struct ModelVersion {
  std::string name;
  int64_t version = 0;
  std::string version_str;
  // Unique to this load in the process: a reload of the same version number is another load, whose answers
  // the response cache must not mix with the old one's.
  uint64_t load_id = 0;
  absl::Duration execution_timeout = absl::InfiniteDuration();  // config parameter execution_timeout_ms
  inference::ModelConfig config;  // completed
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::shared_ptr<const Session> session;
  std::unique_ptr<VersionStats> stats;
  // What requests run on (AssembleServable); last: its workers stop before the stats go.
  std::unique_ptr<Servable> servable;
};

// The servable that runs `mv`'s Session, bounded by its execution timeout.
std::shared_ptr<Servable> ModelServableOf(const ModelVersion& mv);

// `mv`'s chain of servables around `model` (ModelServableOf), as its config asks: batching, which also gives
// the version its instances and queue policy, and outermost the response cache (when `cache` is not null and
// the config enables it), so that a hit skips the queue. The one place a decorator joins the chain. `metrics`
// and `cache` may be null and must outlive the servable.
std::unique_ptr<Servable> AssembleServable(const ModelVersion& mv, std::shared_ptr<Servable> model,
                                           ServerMetrics* metrics, ResponseCache* cache);

struct RepositoryOptions {
  std::string root;
  ControlMode mode = ControlMode::kNone;
  int intra_op_threads = 1;
  int64_t memory_budget_bytes = 0;  // per execution, for models whose config sets none; 0: no budget
  int64_t max_request_bytes = 64 << 20;  // the server's bound on a request, and so on a warmup sample's inputs
  ServerMetrics* metrics = nullptr;  // may be null; must outlive the repository
  // The server's response cache, or null: a model enabling one without it is served uncached, with a warning.
  // Must outlive the repository.
  ResponseCache* response_cache = nullptr;
  // Called (outside the repository lock) when a model's readiness may have changed: `ready` is true when at
  // least one of its versions serves.
  std::function<void(const std::string& model, bool ready)> on_model_ready;
};

// The version a folder of a model's directory holds: a positive number written as StrCat writes it, so that
// no two folders ("1", "01", " 1", "+1") hold one version and which serves it never hangs on the order the
// directory lists them. nullopt for any other name.
std::optional<int64_t> VersionOfFolder(std::string_view folder);

struct IndexEntry {
  std::string name;
  std::string version;  // "" for a model with no version loaded or tried
  std::string state;    // "READY", "UNAVAILABLE" or "" (known on disk, not loaded)
  std::string reason;
};

class ModelRepository {
 public:
  explicit ModelRepository(RepositoryOptions options);
  ~ModelRepository();  // stops polling and unloads everything

  // Loads the models the control mode asks for at start. Models that fail to load are logged and listed as
  // UNAVAILABLE while the others serve. Fails when the root cannot be read, and with `exit_on_error` also
  // with the first model load failure (after every model has been tried).
  absl::Status Start(bool exit_on_error);
  // Rescans every `interval` in a background thread until destruction or UnloadAll().
  void StartPolling(absl::Duration interval);

  // Explicit mode: (re)loads a model's versions from disk; FAILED_PRECONDITION in other modes. A name that
  // is not a model name is INVALID_ARGUMENT; one whose folder is missing or resolves outside the root is
  // NOT_FOUND with the same message either way, so that answers do not map the server's file system.
  absl::Status Load(const std::string& name);
  absl::Status Unload(const std::string& name);
  // Shutdown: stops polling and drops every version (in-flight requests keep theirs).
  void UnloadAll();

  // The version serving `version` ("" = the newest ready one). NOT_FOUND for unknown models or versions,
  // UNAVAILABLE (with the load error) for versions that are known but not ready.
  absl::StatusOr<std::shared_ptr<const ModelVersion>> Find(const std::string& name,
                                                           const std::string& version) const;
  // Every ready version of `name` ("" = of every model), by name then version.
  std::vector<std::shared_ptr<const ModelVersion>> ReadyVersions(const std::string& name) const;
  std::vector<IndexEntry> Index(bool ready_only) const;
  ControlMode mode() const { return options_.mode; }

 private:
  struct VersionSlot;
  struct ModelSlot;

  absl::Status CheckExplicit() const;
  void Poll();
  absl::Status Sync(const std::string& name, bool retry_failed);
  void Publish(const std::string& name, int64_t version, const std::string& fingerprint,
               absl::StatusOr<std::shared_ptr<ModelVersion>> loaded);
  void Retire(const std::string& name, const std::vector<int64_t>& keep);
  absl::StatusOr<std::shared_ptr<ModelVersion>> LoadVersion(const std::string& name, int64_t version,
                                                            const std::filesystem::path& model_file,
                                                            inference::ModelConfig config, bool from_file) const;
  absl::StatusOr<std::shared_ptr<ModelVersion>> BuildVersion(const std::string& name, int64_t version,
                                                             const std::filesystem::path& model_file,
                                                             inference::ModelConfig config, bool from_file) const;
  void Forget(const std::string& name);
  bool AllServing(const std::string& name, const std::vector<int64_t>& versions) const;
  void NotifyReady(const std::string& name);

  const RepositoryOptions options_;
  std::mutex load_mu_;  // serializes loads and unloads (poll thread vs. RPCs); never held by requests
  mutable std::mutex mu_;  // guards models_; held only briefly
  std::map<std::string, ModelSlot> models_;

  std::mutex poll_mu_;
  std::condition_variable poll_cv_;
  bool stop_polling_ = false;
  std::thread poller_;
};

}  // namespace onnxserve::server

#include "server/serving/repository.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "runtime/core/path.h"
#include "runtime/core/status_macros.h"
#include "server/batching/batching_servable.h"
#include "server/observability/log.h"
#include "server/serving/model_servable.h"
#include "server/serving/request_parameters.h"
#include "server/serving/response_cache.h"
#include "server/serving/warmup.h"

namespace onnxserve::server {
namespace fs = std::filesystem;

std::optional<int64_t> VersionOfFolder(std::string_view folder) {
  int64_t version = 0;
  if (!absl::SimpleAtoi(absl::string_view(folder.data(), folder.size()), &version) || version < 1 ||
      folder != absl::StrCat(version)) {
    return std::nullopt;
  }
  return version;
}

struct ModelRepository::VersionSlot {
  std::shared_ptr<const ModelVersion> serving;
  std::string reason;       // the last load error, "" when the last load succeeded
  std::string fingerprint;  // of the files the last load attempt read
};

struct ModelRepository::ModelSlot {
  std::map<int64_t, VersionSlot> versions;
  std::string error;  // a model-level problem (config.pbtxt, no versions), "" when none
};

namespace {

constexpr const char* kConfigFile = "config.pbtxt";

uint64_t NextLoadId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// Changes whenever a file is rewritten, replaced or removed.
std::string FileFingerprint(const fs::path& path) {
  std::error_code ec;
  const auto mtime = fs::last_write_time(path, ec);
  if (ec) return "absent";
  const auto size = fs::file_size(path, ec);
  return absl::StrCat(mtime.time_since_epoch().count(), ":", ec ? 0 : size);
}

bool IsModelNameChar(char c) { return absl::ascii_isalnum(c) || c == '_' || c == '-' || c == '.'; }

// The answer for a name with no model folder inside the root, whether the folder is missing or resolves
// outside: one message for both, so that answers do not map the server's file system.
absl::Status NoSuchModel(const std::string& name) {
  return absl::NotFoundError(absl::StrCat("no model ", QuotedName(name), " in the repository"));
}

// ROOT/<name>, resolved, when `name` is a model name and its folder lies inside the root after symlinks.
absl::StatusOr<fs::path> ResolveModelDir(const std::string& root, const std::string& name) {
  RETURN_IF_ERROR(CheckModelName(name));
  auto dir = ResolveInside(root, name);
  std::error_code ec;
  if (!dir.ok() || !fs::is_directory(*dir, ec)) return NoSuchModel(name);
  return dir;
}

// ROOT/`relative` (a file of a model), resolved, when it is a regular file inside the root after symlinks:
// opening a FIFO blocks until something writes to it, and a load never ended (holding up every later load and
// unload). The model's folder is known to exist, so these messages tell nothing new about the disk.
absl::StatusOr<fs::path> ResolveModelFile(const std::string& root, const fs::path& relative) {
  auto path = ResolveInside(root, relative);
  if (absl::IsNotFound(path.status())) {
    return absl::NotFoundError(absl::StrCat("no ", relative.string(), " in the repository"));
  }
  if (!path.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(relative.string(), " resolves outside the repository through a symlink"));
  }
  std::error_code ec;
  if (!fs::is_regular_file(*path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(relative.string(), " is not a regular file"));
  }
  return path;
}

// The entries of `dir`, without throwing: a folder that cannot be read lists as far as it could be read.
std::vector<fs::directory_entry> ListDir(const fs::path& dir) {
  std::vector<fs::directory_entry> entries;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) entries.push_back(*it);
  return entries;
}

bool IsDirectory(const fs::directory_entry& entry) {
  std::error_code ec;
  return entry.is_directory(ec);
}

// What ROOT/<model>/ holds right now.
struct DiskVersion {
  std::string fingerprint;              // of its model file (model.onnx or default_model_filename)
  absl::StatusOr<fs::path> model_file;  // resolved
};

struct DiskModel {
  bool has_config = false;
  absl::Status config_status;
  inference::ModelConfig config;
  std::string config_fingerprint;
  std::map<int64_t, DiskVersion> versions;
};

// `dir` is ROOT/<name> resolved.
DiskModel ScanDisk(const std::string& root, const std::string& name, const fs::path& dir) {
  DiskModel disk;
  auto config_path = ResolveModelFile(root, fs::path(name) / kConfigFile);
  disk.has_config = !absl::IsNotFound(config_path.status());
  disk.config_fingerprint = FileFingerprint(dir / kConfigFile);
  if (config_path.ok()) {
    auto config = ReadModelConfig(config_path->string());
    if (config.ok()) {
      disk.config = *std::move(config);
    } else {
      disk.config_status = config.status();
    }
  } else if (disk.has_config) {
    disk.config_status = config_path.status();
  }
  const absl::StatusOr<std::string> model_file = ModelFileName(disk.config);
  if (!model_file.ok() && disk.config_status.ok()) disk.config_status = model_file.status();
  const std::string file = model_file.value_or(kDefaultModelFile);
  for (const auto& entry : ListDir(dir)) {
    const std::string folder = entry.path().filename().string();
    const std::optional<int64_t> version = VersionOfFolder(folder);
    if (!IsDirectory(entry) || !version) continue;
    disk.versions[*version] = {FileFingerprint(entry.path() / file),
                              ResolveModelFile(root, fs::path(name) / folder / file)};
  }
  return disk;
}

// The versions the policy serves among those on disk (default: the newest one).
std::vector<int64_t> SelectVersions(const inference::ModelVersionPolicy& policy,
                                    const std::map<int64_t, DiskVersion>& available) {
  std::vector<int64_t> picked;
  if (policy.has_all()) {
    for (const auto& [v, fp] : available) picked.push_back(v);
  } else if (policy.has_specific()) {
    for (int64_t v : policy.specific().versions()) {
      if (available.count(v)) picked.push_back(v);
    }
  } else {
    const uint32_t n = policy.has_latest() ? std::max<uint32_t>(1, policy.latest().num_versions()) : 1;
    for (auto it = available.rbegin(); it != available.rend() && picked.size() < n; ++it) {
      picked.push_back(it->first);
    }
  }
  return picked;
}

// The names of the model folders in the root, sorted. Hidden entries are ignored; folders that are not
// models (not a model name, or a symlink resolving outside the root) are skipped, with a log line when
// `log_skipped`.
std::vector<std::string> ModelDirs(const std::string& root, bool log_skipped) {
  std::vector<std::string> names;
  for (const auto& entry : ListDir(root)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.' || !IsDirectory(entry)) continue;
    absl::Status usable = CheckModelName(name);
    if (usable.ok() && !ResolveInside(root, name).ok()) {
      usable = absl::PermissionDeniedError("resolves outside the repository through a symlink");
    }
    if (usable.ok()) {
      names.push_back(name);
    } else if (log_skipped) {
      Log(LogLevel::kWarning, "model_dir_skipped",
          {{"dir", name}, {"reason", std::string(usable.message())}});
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

SchedulerOptions SchedulerOptionsFor(const ModelVersion& mv) {
  const auto& config = mv.config;
  SchedulerOptions options;
  options.model = mv.name;
  options.version = mv.version_str;
  options.instances = InstanceCount(config);
  if (!config.has_dynamic_batching()) return options;
  const auto& batching = config.dynamic_batching();
  options.max_batch_size = config.max_batch_size();
  options.preferred_batch_sizes.assign(batching.preferred_batch_size().begin(),
                                       batching.preferred_batch_size().end());
  options.max_queue_delay = absl::Microseconds(static_cast<int64_t>(batching.max_queue_delay_microseconds()));
  options.max_queue_sizes.clear();
  for (uint32_t level = 1; level <= std::max<uint32_t>(batching.priority_levels(), 1); ++level) {
    options.max_queue_sizes.push_back(QueuePolicyOf(batching, level).max_queue_size());
  }
  return options;
}

std::vector<std::string> NamesOf(const std::vector<TensorSpec>& specs) {
  std::vector<std::string> names;
  for (const auto& spec : specs) names.push_back(spec.name);
  return names;
}

}  // namespace

std::shared_ptr<Servable> ModelServableOf(const ModelVersion& mv) {
  return std::make_shared<ModelServable>(mv.session, NamesOf(mv.inputs), NamesOf(mv.outputs),
                                         absl::StrCat("model ", QuotedName(mv.name), " version ", mv.version),
                                         mv.execution_timeout);
}

std::unique_ptr<Servable> AssembleServable(const ModelVersion& mv, std::shared_ptr<Servable> model,
                                           ServerMetrics* metrics, ResponseCache* cache) {
  auto batching =
      std::make_unique<BatchingServable>(SchedulerOptionsFor(mv), std::move(model), mv.stats.get(), metrics);
  if (cache == nullptr || !mv.config.response_cache().enable()) return batching;
  return std::make_unique<CachingServable>(*cache, mv, std::move(batching), metrics);
}

absl::Status CheckModelName(absl::string_view name) {
  if (!name.empty() && name.size() <= kMaxModelNameBytes && name[0] != '.' &&
      std::all_of(name.begin(), name.end(), IsModelNameChar)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "model name ", QuotedName(name), " is not valid: expected 1 to ", kMaxModelNameBytes,
      " letters, digits, '_', '-' or '.', not starting with '.'"));
}

std::string QuotedName(absl::string_view name) {
  if (name.size() <= kMaxModelNameBytes) return absl::StrCat("\"", name, "\"");
  return absl::StrCat("\"", name.substr(0, kMaxModelNameBytes), "...\" (", name.size(), " bytes)");
}

absl::StatusOr<ControlMode> ParseControlMode(std::string_view name) {
  if (name == "none") return ControlMode::kNone;
  if (name == "poll") return ControlMode::kPoll;
  if (name == "explicit") return ControlMode::kExplicit;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown model control mode \"", std::string(name), "\": expected none, poll or explicit"));
}

ModelRepository::ModelRepository(RepositoryOptions options) : options_(std::move(options)) {}

ModelRepository::~ModelRepository() { UnloadAll(); }

absl::Status ModelRepository::Start(bool exit_on_error) {
  std::error_code ec;
  if (!fs::is_directory(options_.root, ec)) {
    return absl::NotFoundError(absl::StrCat("model repository \"", options_.root, "\" is not a directory"));
  }
  if (options_.mode == ControlMode::kExplicit) return absl::OkStatus();
  absl::Status first_error;
  for (const auto& name : ModelDirs(options_.root, true)) {
    const absl::Status status = Sync(name, false);  // logged by Sync
    if (!status.ok() && first_error.ok()) {
      first_error =
          absl::Status(status.code(), absl::StrCat("model ", QuotedName(name), ": ", status.message()));
    }
  }
  return exit_on_error ? first_error : absl::OkStatus();
}

void ModelRepository::StartPolling(absl::Duration interval) {
  poller_ = std::thread([this, interval] {
    std::unique_lock<std::mutex> lock(poll_mu_);
    const std::chrono::milliseconds period(absl::ToInt64Milliseconds(interval));
    while (!poll_cv_.wait_for(lock, period, [this] { return stop_polling_; })) {
      lock.unlock();
      Poll();
      lock.lock();
    }
  });
}

void ModelRepository::Poll() {
  std::set<std::string> names;
  for (const auto& name : ModelDirs(options_.root, true)) names.insert(name);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, slot] : models_) names.insert(name);
  }
  for (const auto& name : names) Sync(name, false).IgnoreError();  // logged by Sync
}

absl::Status ModelRepository::CheckExplicit() const {
  if (options_.mode == ControlMode::kExplicit) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "models are loaded and unloaded by the server in this model control mode; start onnxserve with "
      "--model-control-mode explicit to control them");
}

absl::Status ModelRepository::Load(const std::string& name) {
  RETURN_IF_ERROR(CheckExplicit());
  return Sync(name, true);
}

absl::Status ModelRepository::Unload(const std::string& name) {
  RETURN_IF_ERROR(CheckExplicit());
  std::lock_guard<std::mutex> load_lock(load_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!models_.count(name)) {
      return absl::NotFoundError(absl::StrCat("model ", QuotedName(name), " is not loaded"));
    }
  }
  Forget(name);
  return absl::OkStatus();
}

// Drops every version of `name` and the model itself. Names the repository never knew are left alone: the
// health service keeps an entry for every name it is told about, and requests may name anything.
void ModelRepository::Forget(const std::string& name) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!models_.count(name)) return;
  }
  Retire(name, {});
  {
    std::lock_guard<std::mutex> lock(mu_);
    models_.erase(name);
  }
  NotifyReady(name);
}

void ModelRepository::UnloadAll() {
  {
    std::lock_guard<std::mutex> lock(poll_mu_);
    stop_polling_ = true;
  }
  poll_cv_.notify_all();
  if (poller_.joinable()) poller_.join();
  std::lock_guard<std::mutex> load_lock(load_mu_);
  std::vector<std::string> names;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, slot] : models_) names.push_back(name);
  }
  for (const auto& name : names) Retire(name, {});
}

// Brings `name` in line with the disk: loads new and changed versions (failed ones again only when
// `retry_failed`), retires versions the policy no longer serves. Returns the first load error.
absl::Status ModelRepository::Sync(const std::string& name, bool retry_failed) {
  std::lock_guard<std::mutex> load_lock(load_mu_);
  auto dir = ResolveModelDir(options_.root, name);
  if (!dir.ok()) {
    Forget(name);
    return dir.status();
  }
  const DiskModel disk = ScanDisk(options_.root, name, *dir);
  auto set_model_error = [&](const std::string& error) {
    std::lock_guard<std::mutex> lock(mu_);
    models_[name].error = error;
  };
  if (!disk.config_status.ok()) {
    Log(LogLevel::kError, "model_config_invalid", {{"model", name}, {"error", disk.config_status.ToString()}});
    set_model_error(std::string(disk.config_status.message()));
    return disk.config_status;
  }
  const std::vector<int64_t> wanted = SelectVersions(disk.config.version_policy(), disk.versions);
  set_model_error(wanted.empty() ? "no version directory with a version the policy serves" : "");
  absl::Status first_error;
  for (int64_t version : wanted) {
    const DiskVersion& on_disk = disk.versions.at(version);
    const std::string fingerprint = absl::StrCat(on_disk.fingerprint, "|", disk.config_fingerprint);
    {
      std::lock_guard<std::mutex> lock(mu_);
      const auto& slots = models_[name].versions;
      auto it = slots.find(version);
      if (it != slots.end() && it->second.fingerprint == fingerprint &&
          (it->second.serving || !retry_failed)) {
        continue;
      }
    }
    Log(LogLevel::kInfo, "model_loading", {{"model", name}, {"version", absl::StrCat(version)}});
    auto loaded = on_disk.model_file.ok()
                      ? LoadVersion(name, version, *on_disk.model_file, disk.config, disk.has_config)
                      : absl::StatusOr<std::shared_ptr<ModelVersion>>(on_disk.model_file.status());
    if (!loaded.ok() && first_error.ok()) first_error = loaded.status();
    Publish(name, version, fingerprint, std::move(loaded));
  }
  // Older versions stay until every version the policy wants serves, so a failed load never leaves the
  // model with less than it had.
  if (AllServing(name, wanted)) Retire(name, wanted);
  NotifyReady(name);
  if (wanted.empty()) {
    return absl::NotFoundError(absl::StrCat("model \"", name, "\" has no version to serve"));
  }
  return first_error;
}

// Loading runs code that may throw (allocation, thread creation, the protobuf and filesystem libraries):
// whatever one model version does must fail that version, never the process serving the others.
absl::StatusOr<std::shared_ptr<ModelVersion>> ModelRepository::LoadVersion(const std::string& name,
                                                                           int64_t version,
                                                                           const fs::path& model_file,
                                                                           inference::ModelConfig config,
                                                                           bool from_file) const {
  try {
    return BuildVersion(name, version, model_file, std::move(config), from_file);
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("model ", QuotedName(name), " version ", version, ": load failed: ", e.what()));
  }
}

absl::StatusOr<std::shared_ptr<ModelVersion>> ModelRepository::BuildVersion(const std::string& name,
                                                                            int64_t version,
                                                                            const fs::path& model_file,
                                                                            inference::ModelConfig config,
                                                                            bool from_file) const {
  const absl::Time start = absl::Now();
  auto mv = std::make_shared<ModelVersion>();
  mv->name = name;
  mv->version = version;
  mv->version_str = absl::StrCat(version);
  mv->load_id = NextLoadId();
  SessionOptions session_options;
  ASSIGN_OR_RETURN(session_options.intra_op_threads, ThreadsParameter(config, options_.intra_op_threads));
  ASSIGN_OR_RETURN(mv->execution_timeout, ExecutionTimeoutParameter(config));
  ASSIGN_OR_RETURN(session_options.memory_budget_bytes,
                   MemoryBudgetParameter(config, options_.memory_budget_bytes));
  ASSIGN_OR_RETURN(mv->session, Session::LoadFile(model_file.string(), session_options));
  RETURN_IF_ERROR(CompleteModelConfig(name, *mv->session, from_file, config));
  mv->config = std::move(config);
  if (mv->config.response_cache().enable() && options_.response_cache == nullptr) {
    Log(LogLevel::kWarning, "response_cache_off",
        {{"model", name}, {"version", mv->version_str},
         {"reason", "the config enables response_cache but the server has none (--response-cache-byte-size)"}});
  }
  mv->inputs = InputSpecs(mv->config);
  mv->outputs = OutputSpecs(mv->config);
  mv->stats = std::make_unique<VersionStats>(name, mv->version_str);
  std::shared_ptr<Servable> model = ModelServableOf(*mv);
  const absl::Time warmup_start = absl::Now();
  RETURN_IF_ERROR(Warmup(mv->config, *model, options_.max_request_bytes));
  if (!mv->config.model_warmup().empty()) {
    Log(LogLevel::kInfo, "model_warmed_up",
        {{"model", name},
         {"version", mv->version_str},
         {"samples", absl::StrCat(mv->config.model_warmup_size())},
         {"ms", absl::StrCat(absl::ToInt64Milliseconds(absl::Now() - warmup_start))}});
  }
  mv->servable = AssembleServable(*mv, std::move(model), options_.metrics, options_.response_cache);
  Log(LogLevel::kInfo, "model_loaded",
      {{"model", name},
       {"version", mv->version_str},
       {"max_batch_size", absl::StrCat(mv->config.max_batch_size())},
       {"instances", absl::StrCat(InstanceCount(mv->config))},
       {"ms", absl::StrCat(absl::ToInt64Milliseconds(absl::Now() - start))}});
  return mv;
}

// Makes a load attempt's outcome visible: a success replaces the served version, a failure leaves it.
void ModelRepository::Publish(const std::string& name, int64_t version, const std::string& fingerprint,
                              absl::StatusOr<std::shared_ptr<ModelVersion>> loaded) {
  std::shared_ptr<const ModelVersion> replaced;  // released outside the lock
  bool serving = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    VersionSlot& slot = models_[name].versions[version];
    slot.fingerprint = fingerprint;
    if (loaded.ok()) {
      replaced = std::exchange(slot.serving, *std::move(loaded));
      slot.reason.clear();
    } else {
      slot.reason = std::string(loaded.status().message());
      if (slot.serving) slot.reason = absl::StrCat("reload failed, serving the previous load: ", slot.reason);
    }
    serving = slot.serving != nullptr;
  }
  if (!loaded.ok()) {
    Log(LogLevel::kError, "model_load_failed",
        {{"model", name}, {"version", absl::StrCat(version)}, {"error", loaded.status().ToString()},
         {"still_serving", serving ? "previous" : "none"}});
  }
  if (options_.metrics) options_.metrics->SetModelReady(name, absl::StrCat(version), serving);
}

// Drops the versions of `name` not in `keep`. In-flight requests finish on their shared_ptr.
void ModelRepository::Retire(const std::string& name, const std::vector<int64_t>& keep) {
  std::vector<std::shared_ptr<const ModelVersion>> retired;  // released outside the lock
  std::vector<int64_t> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto model = models_.find(name);
    if (model == models_.end()) return;
    auto& versions = model->second.versions;
    for (auto it = versions.begin(); it != versions.end();) {
      if (std::find(keep.begin(), keep.end(), it->first) != keep.end()) {
        ++it;
        continue;
      }
      dropped.push_back(it->first);
      if (it->second.serving) retired.push_back(std::move(it->second.serving));
      it = versions.erase(it);
    }
  }
  for (int64_t version : dropped) {
    Log(LogLevel::kInfo, "model_unloaded", {{"model", name}, {"version", absl::StrCat(version)}});
    if (options_.metrics) options_.metrics->SetModelReady(name, absl::StrCat(version), false);
  }
}

bool ModelRepository::AllServing(const std::string& name, const std::vector<int64_t>& versions) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto model = models_.find(name);
  for (int64_t version : versions) {
    if (model == models_.end()) return false;
    auto slot = model->second.versions.find(version);
    if (slot == model->second.versions.end() || !slot->second.serving) return false;
  }
  return true;
}

void ModelRepository::NotifyReady(const std::string& name) {
  if (!options_.on_model_ready) return;
  options_.on_model_ready(name, !ReadyVersions(name).empty());
}

absl::StatusOr<std::shared_ptr<const ModelVersion>> ModelRepository::Find(const std::string& name,
                                                                          const std::string& version) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto model = models_.find(name);
  if (model == models_.end()) return absl::NotFoundError(absl::StrCat("unknown model ", QuotedName(name)));
  const auto& versions = model->second.versions;
  if (version.empty()) {
    for (auto it = versions.rbegin(); it != versions.rend(); ++it) {
      if (it->second.serving) return it->second.serving;
    }
    const std::string why = !versions.empty() ? versions.rbegin()->second.reason : model->second.error;
    return absl::UnavailableError(absl::StrCat("model ", QuotedName(name), " has no ready version: ", why));
  }
  int64_t number = 0;
  auto it = absl::SimpleAtoi(version, &number) ? versions.find(number) : versions.end();
  if (it == versions.end()) {
    return absl::NotFoundError(absl::StrCat("model ", QuotedName(name), " has no version ",
                                            QuotedName(version)));
  }
  if (!it->second.serving) {
    return absl::UnavailableError(
        absl::StrCat("model ", QuotedName(name), " version ", number, " is not ready: ", it->second.reason));
  }
  return it->second.serving;
}

std::vector<std::shared_ptr<const ModelVersion>> ModelRepository::ReadyVersions(const std::string& name) const {
  std::vector<std::shared_ptr<const ModelVersion>> ready;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [model_name, model] : models_) {
    if (!name.empty() && model_name != name) continue;
    for (const auto& [version, slot] : model.versions) {
      if (slot.serving) ready.push_back(slot.serving);
    }
  }
  return ready;
}

std::vector<IndexEntry> ModelRepository::Index(bool ready_only) const {
  std::vector<IndexEntry> index;
  std::set<std::string> listed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, model] : models_) {
      listed.insert(name);
      if (model.versions.empty() && !ready_only) {
        index.push_back({name, "", "UNAVAILABLE", model.error});
      }
      for (const auto& [version, slot] : model.versions) {
        if (ready_only && !slot.serving) continue;
        index.push_back({name, absl::StrCat(version), slot.serving ? "READY" : "UNAVAILABLE",
                         slot.reason.empty() ? model.error : slot.reason});
      }
    }
  }
  if (ready_only) return index;
  for (const auto& name : ModelDirs(options_.root, false)) {
    if (!listed.count(name)) index.push_back({name, "", "", ""});
  }
  return index;
}

}  // namespace onnxserve::server

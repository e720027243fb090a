#include "server/serving/config.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <optional>
#include <string_view>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/core/status_macros.h"
#include "runtime/ir/determinism.h"
#include "server/observability/log.h"
#include "server/serving/datatype.h"

namespace onnxserve::server {
namespace {

constexpr char kThreadsParameter[] = "threads";
constexpr char kExecutionTimeoutParameter[] = "execution_timeout_ms";
constexpr char kMemoryBudgetParameter[] = "memory_budget_bytes";
// A day: longer is a typo, not a budget.
constexpr int64_t kMaxExecutionTimeoutMs = int64_t{24} * 3600 * 1000;

constexpr const char* kPlatform = "onnxruntime_onnx";
constexpr const char* kBackend = "onnxruntime";

class CollectErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    // The parser counts from 0; editors count from 1.
    errors_.push_back(absl::StrCat(line + 1, ":", column + 1, ": ", message));
  }
  std::string Joined() const { return absl::StrJoin(errors_, "; "); }

 private:
  std::vector<std::string> errors_;
};

std::string DimsToString(const google::protobuf::RepeatedField<int64_t>& dims) {
  return ShapeToString(Shape(dims.begin(), dims.end()));
}

bool HasDynamicFirstDim(const ValueInfo& info) {
  return info.has_shape && !info.dims.empty() && info.dims[0] < 0;
}

// Config dims (without the batch dim) for a model tensor, where the model declares its shape.
Shape ModelDimsWithoutBatch(const ValueInfo& info, bool batching) {
  if (!info.has_shape) return {-1};
  Shape dims(info.dims.begin() + (batching ? 1 : 0), info.dims.end());
  for (auto& d : dims) d = d < 0 ? -1 : d;
  return dims;
}

// Merges the dims a config gives for a tensor with the model's, keeping the more specific of each pair.
absl::Status MergeDims(const std::string& what, const ValueInfo& info, bool batching,
                       google::protobuf::RepeatedField<int64_t>& dims) {
  if (!info.has_shape) return absl::OkStatus();
  if (batching && !HasDynamicFirstDim(info)) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " \"", info.name, "\": max_batch_size > 0 needs a dynamic first dimension, the model declares ",
        info.DebugString()));
  }
  const Shape model = ModelDimsWithoutBatch(info, batching);
  if (static_cast<size_t>(dims.size()) != model.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " \"", info.name, "\": config dims ", DimsToString(dims), " disagree with the model's ",
        info.DebugString(), batching ? " (config dims exclude the batch dimension)" : ""));
  }
  for (int i = 0; i < dims.size(); ++i) {
    if (model[i] >= 0 && dims[i] >= 0 && model[i] != dims[i]) {
      return absl::InvalidArgumentError(absl::StrCat(what, " \"", info.name, "\": config dims ",
                                                     DimsToString(dims), " disagree with the model's ",
                                                     info.DebugString()));
    }
    if (dims[i] < 0) dims[i] = model[i];
  }
  return absl::OkStatus();
}

// The protocol carries tensors: a sequence, map or optional input or output cannot be listed or served.
absl::Status RequireTensor(const std::string& what, const ValueInfo& info) {
  if (info.is_tensor) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, " \"", info.name,
                                                 "\" is not a tensor (a sequence, map or optional), which KServe "
                                                 "cannot carry: the server serves tensor inputs and outputs only"));
}

template <typename ConfigTensor>
absl::Status CheckTensor(const std::string& what, const ValueInfo& info, bool batching, ConfigTensor& t) {
  RETURN_IF_ERROR(RequireTensor(what, info));
  ASSIGN_OR_RETURN(DataType dtype, DataTypeFromConfig(t.data_type()));
  if (dtype != info.dtype) {
    return absl::InvalidArgumentError(absl::StrCat(what, " \"", info.name, "\": config data_type ",
                                                   inference::DataType_Name(t.data_type()),
                                                   " disagrees with the model's ", DataTypeName(info.dtype)));
  }
  return MergeDims(what, info, batching, *t.mutable_dims());
}

template <typename ConfigTensor>
absl::Status FillFromModel(const std::string& what, const ValueInfo& info, bool batching, ConfigTensor& t) {
  RETURN_IF_ERROR(RequireTensor(what, info));
  t.set_name(info.name);
  t.set_data_type(ConfigDataType(info.dtype));
  if (t.data_type() == inference::TYPE_INVALID) {
    return absl::InvalidArgumentError(absl::StrCat(what, " \"", info.name, "\" has type ",
                                                   DataTypeName(info.dtype), ", which KServe cannot carry"));
  }
  for (int64_t d : ModelDimsWithoutBatch(info, batching)) t.add_dims(d);
  return absl::OkStatus();
}

// Completes config.input (or config.output) from the model's inputs (or outputs). The config may list a
// subset of outputs, but must list every input when it lists any, and none twice.
template <typename ConfigTensors>
absl::Status CompleteTensors(const std::string& what, const std::vector<ValueInfo>& model, bool batching,
                             bool all_required, ConfigTensors& tensors) {
  // By name in hash tables: a config.pbtxt of 1 MiB lists some 65K tensors, and a model may have as many,
  // so comparing every pair would hold the load (and every load queued behind it) for seconds.
  absl::flat_hash_map<std::string_view, const ValueInfo*> model_by_name;
  for (const auto& m : model) model_by_name.insert_or_assign(m.name, &m);
  absl::flat_hash_set<std::string_view> listed;
  for (const auto& t : tensors) {
    if (!listed.insert(t.name()).second) {
      return absl::InvalidArgumentError(absl::StrCat("config ", what, " \"", t.name(), "\" is listed twice"));
    }
  }
  for (auto& t : tensors) {
    const auto info = model_by_name.find(t.name());
    if (info == model_by_name.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config ", what, " \"", t.name(), "\" is not a ", what, " of the model"));
    }
    RETURN_IF_ERROR(CheckTensor(what, *info->second, batching, t));
  }
  const bool listed_any = !tensors.empty();
  if (listed_any && !all_required) return absl::OkStatus();
  for (const auto& info : model) {
    // Outputs that are not tensors are left out of what the model serves; the model still loads.
    if (listed.contains(info.name) || (!all_required && !info.is_tensor)) continue;
    if (listed_any) {
      return absl::InvalidArgumentError(
          absl::StrCat("config lists some inputs but not the model's input \"", info.name, "\""));
    }
    RETURN_IF_ERROR(FillFromModel(what, info, batching, *tensors.Add()));
    listed.insert(info.name);
  }
  return absl::OkStatus();
}

// The name the model gives `info`'s first dim (its dim_param), "" when it gives none.
const std::string& FirstDimName(const ValueInfo& info) {
  static const std::string kNone;
  return info.dim_names.empty() ? kNone : info.dim_names[0];
}

// Whether a model whose first dims all bear the batch dim's name (NamesOneBatchDim) mixes the rows of a
// batch: a dim past the first bears that name too (a Gram matrix y [N, N] of x [N, d]: every row reads every
// row). Batched, each of its requests would read the others' inputs into its answer.
bool MixesRows(const Session& session) {
  const std::string& batch = FirstDimName(session.inputs().front());
  const auto names_the_batch_past_its_first_dim = [&batch](const ValueInfo& info) {
    return info.dim_names.size() > 1 &&
           std::find(info.dim_names.begin() + 1, info.dim_names.end(), batch) != info.dim_names.end();
  };
  return std::any_of(session.inputs().begin(), session.inputs().end(), names_the_batch_past_its_first_dim) ||
         std::any_of(session.outputs().begin(), session.outputs().end(), names_the_batch_past_its_first_dim);
}

// Whether every input's and tensor output's first dim bears one name: the batch dim the model declares.
// Unnamed dims show nothing, and a model whose rows mix (a Gram matrix y [?, ?] of x [?, d]) would answer
// each request of a batch with the others' rows.
bool NamesOneBatchDim(const Session& session) {
  const std::string& batch = FirstDimName(session.inputs().front());
  const auto bears_it = [&batch](const ValueInfo& info) { return !info.is_tensor || FirstDimName(info) == batch; };
  return !batch.empty() && std::all_of(session.inputs().begin(), session.inputs().end(), bears_it) &&
         std::all_of(session.outputs().begin(), session.outputs().end(), bears_it);
}

bool CanBatch(const std::string& model_name, const Session& session) {
  if (session.inputs().empty()) return false;
  for (const auto& info : session.inputs()) {
    if (!HasDynamicFirstDim(info)) return false;
  }
  for (const auto& info : session.outputs()) {
    if (info.is_tensor && !HasDynamicFirstDim(info)) return false;
  }
  const char* reason = !NamesOneBatchDim(session) ? "its inputs and outputs do not name one batch dim"
                       : MixesRows(session)        ? "its shapes mix the rows of a batch"
                                                   : nullptr;
  if (reason == nullptr) return true;
  Log(LogLevel::kInfo, "default_batching_off",
      {{"model", model_name},
       {"reason", absl::StrCat(reason, "; a config.pbtxt with max_batch_size would batch it")}});
  return false;
}

// Triton's rules: levels 1..priority_levels, the default one of them, policies only for them.
absl::Status CheckPriorityLevels(const inference::ModelDynamicBatching& batching) {
  const uint32_t levels = batching.priority_levels();
  if (levels > kMaxPriorityLevels) {
    return absl::InvalidArgumentError(
        absl::StrCat("dynamic_batching.priority_levels must be at most ", kMaxPriorityLevels, ", got ", levels));
  }
  if (levels == 0 && (batching.default_priority_level() != 0 || !batching.priority_queue_policy().empty())) {
    return absl::InvalidArgumentError(
        "dynamic_batching.default_priority_level and priority_queue_policy need priority_levels > 0");
  }
  if (levels > 0 && (batching.default_priority_level() < 1 || batching.default_priority_level() > levels)) {
    return absl::InvalidArgumentError(absl::StrCat("dynamic_batching.default_priority_level must be in [1, ",
                                                   levels, "] (priority_levels), got ",
                                                   batching.default_priority_level()));
  }
  for (const auto& [level, policy] : batching.priority_queue_policy()) {
    if (level < 1 || level > levels) {
      return absl::InvalidArgumentError(absl::StrCat("dynamic_batching.priority_queue_policy key ", level,
                                                     " is not a priority level in [1, ", levels, "]"));
    }
    if (policy.timeout_action() != inference::ModelQueuePolicy::REJECT) {
      return absl::InvalidArgumentError(absl::StrCat("priority_queue_policy ", level,
                                                     ": timeout_action DELAY is not supported"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckBatching(inference::ModelConfig& config) {
  if (config.max_batch_size() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_batch_size must be >= 0, got ", config.max_batch_size()));
  }
  if (!config.has_dynamic_batching()) return absl::OkStatus();
  if (config.max_batch_size() == 0) {
    return absl::InvalidArgumentError("dynamic_batching needs max_batch_size > 0");
  }
  const auto& batching = config.dynamic_batching();
  for (int size : batching.preferred_batch_size()) {
    if (size < 1 || size > config.max_batch_size()) {
      return absl::InvalidArgumentError(absl::StrCat("preferred_batch_size ", size, " is outside [1, ",
                                                     config.max_batch_size(), "] (max_batch_size)"));
    }
  }
  if (batching.default_queue_policy().timeout_action() != inference::ModelQueuePolicy::REJECT) {
    return absl::InvalidArgumentError(
        "default_queue_policy.timeout_action DELAY is not supported: timed-out requests are rejected");
  }
  if (batching.preserve_ordering()) {
    return absl::InvalidArgumentError(
        "dynamic_batching.preserve_ordering is not supported: concurrent requests may complete in any order");
  }
  return CheckPriorityLevels(batching);
}

// Scheduling and backend fields onnxserve declares (so clients decode them) but does not implement.
absl::Status CheckScheduling(const inference::ModelConfig& config) {
  if (config.has_sequence_batching()) {
    return absl::InvalidArgumentError(
        "sequence_batching is not supported: onnxserve has no stateful scheduler (use dynamic_batching)");
  }
  if (config.has_ensemble_scheduling()) {
    return absl::InvalidArgumentError("ensemble_scheduling is not supported: onnxserve serves single ONNX models");
  }
  if (!config.runtime().empty()) {
    return absl::InvalidArgumentError(absl::StrCat("runtime \"", config.runtime().substr(0, 64),
                                                   "\" is not supported: onnxserve runs ONNX models itself"));
  }
  return absl::OkStatus();
}

// A response cache replays a model's first answer to every equal request: wrong for a model that draws random
// numbers, so such a model may not enable it.
absl::Status CheckResponseCache(const inference::ModelConfig& config, const Session& session) {
  if (!config.response_cache().enable()) return absl::OkStatus();
  const ir::Node* random = ir::FindRandomNode(session.plan().graph());
  if (random == nullptr) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("response_cache is enabled, but the model is not deterministic: ", random->Label(),
                   " draws random numbers, so equal requests may get different answers"));
}

// Per-tensor fields that ask for what onnxserve does not do.
absl::Status CheckInputFeatures(const inference::ModelInput& input) {
  const char* unsupported = input.is_shape_tensor()      ? "is_shape_tensor (a TensorRT feature)"
                            : input.allow_ragged_batch() ? "allow_ragged_batch (batched inputs must agree on "
                                                           "every dimension but the first)"
                            : input.optional()           ? "optional (every input is required)"
                                                         : nullptr;
  if (unsupported == nullptr) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("input \"", input.name(), "\": ", unsupported, " is not supported"));
}

absl::Status CheckOutputFeatures(const inference::ModelOutput& output) {
  const char* unsupported = output.is_shape_tensor()          ? "is_shape_tensor (a TensorRT feature)"
                            : !output.label_filename().empty() ? "label_filename (onnxserve has no classification "
                                                                 "extension)"
                                                               : nullptr;
  if (unsupported == nullptr) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("output \"", output.name(), "\": ", unsupported, " is not supported"));
}

// An image format promises three dims besides the batch dimension (HWC or CHW), as Triton checks.
absl::Status CheckInputFormat(const inference::ModelInput& input) {
  if (input.format() == inference::ModelInput::FORMAT_NONE || input.dims_size() == 3) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("input \"", input.name(), "\": format ",
                                                 inference::ModelInput::Format_Name(input.format()),
                                                 " needs 3 dims besides the batch dimension, got ",
                                                 DimsToString(input.dims())));
}

absl::Status CheckTensorFeatures(const inference::ModelConfig& config) {
  for (const auto& input : config.input()) {
    RETURN_IF_ERROR(CheckInputFeatures(input));
    RETURN_IF_ERROR(CheckInputFormat(input));
  }
  for (const auto& output : config.output()) RETURN_IF_ERROR(CheckOutputFeatures(output));
  return absl::OkStatus();
}

absl::Status CheckInstanceGroups(inference::ModelConfig& config) {
  if (config.instance_group().empty()) config.add_instance_group();
  int total = 0;  // stays <= 2 * kMaxInstances: checked after each group
  for (auto& group : *config.mutable_instance_group()) {
    if (group.kind() == inference::ModelInstanceGroup::KIND_AUTO) {
      group.set_kind(inference::ModelInstanceGroup::KIND_CPU);
    }
    if (group.kind() != inference::ModelInstanceGroup::KIND_CPU) {
      return absl::InvalidArgumentError(absl::StrCat(
          "instance_group kind ", inference::ModelInstanceGroup::Kind_Name(group.kind()),
          " is not supported: onnxserve runs KIND_CPU instances only"));
    }
    if (group.count() < 0 || group.count() > kMaxInstances) {
      return absl::InvalidArgumentError(
          absl::StrCat("instance_group count must be in [1, ", kMaxInstances, "], got ", group.count()));
    }
    if (group.count() == 0) group.set_count(1);
    total += group.count();
    if (total > kMaxInstances) {
      return absl::InvalidArgumentError(absl::StrCat("instance_group counts add up to more than ",
                                                     kMaxInstances, " instances, the most a model may run"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckVersionPolicy(inference::ModelConfig& config) {
  auto& policy = *config.mutable_version_policy();
  if (policy.policy_choice_case() == inference::ModelVersionPolicy::POLICY_CHOICE_NOT_SET) {
    policy.mutable_latest()->set_num_versions(1);
  }
  if (policy.has_latest() && policy.latest().num_versions() == 0) policy.mutable_latest()->set_num_versions(1);
  if (policy.has_specific() && policy.specific().versions().empty()) {
    return absl::InvalidArgumentError("version_policy specific lists no versions");
  }
  return absl::OkStatus();
}

absl::Status CheckIdentity(const std::string& model_name, inference::ModelConfig& config) {
  if (config.name().empty()) config.set_name(model_name);
  if (config.name() != model_name) {
    return absl::InvalidArgumentError(absl::StrCat("config name \"", config.name(),
                                                   "\" differs from the model directory \"", model_name, "\""));
  }
  if (!config.platform().empty() && config.platform() != kPlatform) {
    return absl::InvalidArgumentError(
        absl::StrCat("platform \"", config.platform(), "\" is not supported: expected \"", kPlatform, "\""));
  }
  if (!config.backend().empty() && config.backend() != kBackend) {
    return absl::InvalidArgumentError(
        absl::StrCat("backend \"", config.backend(), "\" is not supported: expected \"", kBackend, "\""));
  }
  config.set_platform(kPlatform);
  config.set_backend(kBackend);
  for (const auto& [key, value] : config.parameters()) {
    if (key != kThreadsParameter && key != kExecutionTimeoutParameter && key != kMemoryBudgetParameter) {
      Log(LogLevel::kWarning, "config_parameter_ignored", {{"model", model_name}, {"parameter", key}});
    }
  }
  return absl::OkStatus();
}

template <typename ConfigTensors>
std::vector<TensorSpec> SpecsOf(const ConfigTensors& tensors, bool batching) {
  std::vector<TensorSpec> specs;
  for (const auto& t : tensors) {
    TensorSpec spec;
    spec.name = t.name();
    spec.dtype = DataTypeFromConfig(t.data_type()).value_or(DataType::kUndefined);
    if (batching) spec.dims.push_back(-1);
    spec.dims.insert(spec.dims.end(), t.dims().begin(), t.dims().end());
    specs.push_back(std::move(spec));
  }
  return specs;
}

}  // namespace

absl::StatusOr<inference::ModelConfig> ReadModelConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  // Read up to the limit, whatever size the file had when it was listed: checked first and read whole
  // after, a file that grew in between was read to its end.
  std::string text;
  char block[4096];
  while (in.read(block, sizeof block) || in.gcount() > 0) {
    text.append(block, static_cast<size_t>(in.gcount()));
    if (text.size() > static_cast<size_t>(kMaxConfigBytes)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": larger than the ", kMaxConfigBytes, " bytes a config.pbtxt may have"));
    }
  }
  google::protobuf::TextFormat::Parser parser;
  CollectErrors errors;
  parser.RecordErrorsTo(&errors);
  inference::ModelConfig config;
  if (!parser.ParseFromString(text, &config)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":", errors.Joined(),
                                                   " (onnxserve supports a subset of Triton's ModelConfig)"));
  }
  return config;
}

absl::Status CompleteModelConfig(const std::string& model_name, const Session& session, bool from_file,
                                 inference::ModelConfig& config) {
  RETURN_IF_ERROR(CheckIdentity(model_name, config));
  RETURN_IF_ERROR(CheckScheduling(config));
  RETURN_IF_ERROR(CheckResponseCache(config, session));
  if (!from_file && CanBatch(model_name, session)) {
    config.set_max_batch_size(kDefaultMaxBatchSize);
    config.mutable_dynamic_batching();
  }
  RETURN_IF_ERROR(CheckBatching(config));
  const bool batching = config.max_batch_size() > 0;
  RETURN_IF_ERROR(CompleteTensors("input", session.inputs(), batching, true, *config.mutable_input()));
  RETURN_IF_ERROR(CompleteTensors("output", session.outputs(), batching, false, *config.mutable_output()));
  RETURN_IF_ERROR(CheckTensorFeatures(config));
  RETURN_IF_ERROR(CheckInstanceGroups(config));
  return CheckVersionPolicy(config);
}

std::vector<TensorSpec> InputSpecs(const inference::ModelConfig& config) {
  return SpecsOf(config.input(), config.max_batch_size() > 0);
}

std::vector<TensorSpec> OutputSpecs(const inference::ModelConfig& config) {
  return SpecsOf(config.output(), config.max_batch_size() > 0);
}

namespace {

// The whole number a `parameters` entry holds, in [min, max]; nullopt when the config has no such key.
// `expected` completes "must be ..." in the error, which quotes (at most 64 bytes of) the value.
absl::StatusOr<std::optional<int64_t>> BoundedIntegerParameter(const inference::ModelConfig& config,
                                                               const char* key, int64_t min, int64_t max,
                                                               const std::string& expected) {
  auto it = config.parameters().find(key);
  if (it == config.parameters().end()) return std::nullopt;
  int64_t value = 0;
  if (!absl::SimpleAtoi(it->second.string_value(), &value) || value < min || value > max) {
    return absl::InvalidArgumentError(absl::StrCat("parameters \"", key, "\" must be ", expected, ", got \"",
                                                   it->second.string_value().substr(0, 64), "\""));
  }
  return value;
}

}  // namespace

absl::StatusOr<int> ThreadsParameter(const inference::ModelConfig& config, int fallback) {
  ASSIGN_OR_RETURN(std::optional<int64_t> threads,
                   BoundedIntegerParameter(config, kThreadsParameter, 1, 256, "a whole number in [1, 256]"));
  return threads ? static_cast<int>(*threads) : fallback;
}

absl::StatusOr<absl::Duration> ExecutionTimeoutParameter(const inference::ModelConfig& config) {
  ASSIGN_OR_RETURN(std::optional<int64_t> ms,
                   BoundedIntegerParameter(config, kExecutionTimeoutParameter, 1, kMaxExecutionTimeoutMs,
                                           absl::StrCat("a whole number of milliseconds in [1, ",
                                                        kMaxExecutionTimeoutMs, "]")));
  return ms ? absl::Milliseconds(*ms) : absl::InfiniteDuration();
}

absl::StatusOr<int64_t> MemoryBudgetParameter(const inference::ModelConfig& config, int64_t fallback) {
  ASSIGN_OR_RETURN(std::optional<int64_t> bytes,
                   BoundedIntegerParameter(config, kMemoryBudgetParameter, 0, std::numeric_limits<int64_t>::max(),
                                           "a whole number of bytes (0: no budget)"));
  return bytes ? *bytes : fallback;
}

absl::StatusOr<std::string> ModelFileName(const inference::ModelConfig& config) {
  const std::string& name = config.default_model_filename();
  if (name.empty()) return std::string(kDefaultModelFile);
  if (name.size() > 255 || name == "." || name == ".." || name.find_first_of("/\\") != std::string::npos ||
      name.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("default_model_filename \"", name.substr(0, 64),
                                                   "\" must be a file name inside the version folder"));
  }
  return name;
}

int InstanceCount(const inference::ModelConfig& config) {
  int count = 0;
  for (const auto& group : config.instance_group()) count += group.count();
  return count > 0 ? count : 1;
}

}  // namespace onnxserve::server

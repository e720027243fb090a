// Model configuration: Triton's config.pbtxt (protobuf text format of inference.ModelConfig), checked
// against the ONNX model and completed from it. A completed config names every input and output with its
// type and dims, the batch limit, the scheduler settings and the instance count; the server reads only it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model_config.pb.h"
#include "runtime/core/tensor.h"
#include "runtime/exec/session.h"

namespace onnxserve::server {

// Parses a config.pbtxt. Fields outside Triton's ModelConfig, or the part of it onnxserve declares, are
// errors naming the line and field.
absl::StatusOr<inference::ModelConfig> ReadModelConfig(const std::string& path);

// Checks `config` against the model and fills what it leaves out: name, platform, inputs and outputs (from
// the model), one CPU instance. With `from_file` false (no config.pbtxt) batching is turned on
// (max_batch_size kDefaultMaxBatchSize, dynamic_batching {}) when every input and output has a dynamic
// first dimension, unless the model's dim names say it mixes the rows of a batch (inputs whose first dims
// are named differently, or the first dim's name at another dim). Unsupported settings (sequence_batching, ensemble_scheduling, preserve_ordering, shape
// tensors, ...) are errors naming the field; ignored ones (parameters) are logged as warnings. A model
// with a random op (runtime/ir/determinism.h) may not enable response_cache: the error names the node.
absl::Status CompleteModelConfig(const std::string& model_name, const Session& session, bool from_file,
                                 inference::ModelConfig& config);

inline constexpr int kDefaultMaxBatchSize = 32;

// The intra-op thread count a model asks for with `parameters { key: "threads" value { string_value: "N" } }`,
// or `fallback` (the --threads flag) when it does not. A value that is not a whole number >= 1 is an error.
absl::StatusOr<int> ThreadsParameter(const inference::ModelConfig& config, int fallback);

// How long one execution of the model may run, from `parameters { key: "execution_timeout_ms" value {
// string_value: "N" } }`; infinite when absent. Past it a run stops between steps with DEADLINE_EXCEEDED.
absl::StatusOr<absl::Duration> ExecutionTimeoutParameter(const inference::ModelConfig& config);

// The bytes of tensor storage one execution of the model may hold at once (SessionOptions::
// memory_budget_bytes), from `parameters { key: "memory_budget_bytes" value { string_value: "N" } }`, or
// `fallback` (the --model-memory-budget-bytes flag) when absent. 0 means no budget; a value that is not a
// whole number >= 0 is an error.
absl::StatusOr<int64_t> MemoryBudgetParameter(const inference::ModelConfig& config, int64_t fallback);

// What a request must send (inputs) or gets back (outputs), per a completed config.
struct TensorSpec {
  std::string name;
  DataType dtype = DataType::kUndefined;
  Shape dims;  // as sent on the wire: a leading -1 batch dimension when max_batch_size > 0; -1 = any size
};
std::vector<TensorSpec> InputSpecs(const inference::ModelConfig& config);
std::vector<TensorSpec> OutputSpecs(const inference::ModelConfig& config);

// The model file each version folder holds: default_model_filename, or kDefaultModelFile when the config
// names none. A name with a path separator (or "." / "..") is an error: it would reach outside the folder.
absl::StatusOr<std::string> ModelFileName(const inference::ModelConfig& config);
inline constexpr char kDefaultModelFile[] = "model.onnx";

// Model instances that may run at once: the sum of the instance groups' counts, at most kMaxInstances.
int InstanceCount(const inference::ModelConfig& config);

// Each priority level is a queue bound; more levels than this is a typo.
inline constexpr uint32_t kMaxPriorityLevels = 1024;
// Each instance is a thread; a config asking for more is an error, not an attempt to start them.
inline constexpr int kMaxInstances = 64;
// A config.pbtxt is a few hundred bytes; a bigger file is read no further.
inline constexpr int64_t kMaxConfigBytes = 1 << 20;

}  // namespace onnxserve::server

#include "server/serving/warmup.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "runtime/core/checked_size.h"
#include "runtime/core/status_macros.h"
#include "server/serving/datatype.h"
#include "server/serving/sample_tensors.h"

namespace onnxserve::server {
namespace {

using Sample = inference::ModelWarmup;

absl::Status SampleError(const Sample& sample, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("model_warmup \"", sample.name(), "\": ", what));
}

absl::StatusOr<int64_t> BatchSize(const inference::ModelConfig& config, const Sample& sample) {
  const int64_t batch = sample.batch_size();
  const int64_t most = config.max_batch_size() > 0 ? config.max_batch_size() : 1;
  if (batch < 1 || batch > most) {
    return SampleError(sample, absl::StrCat("batch_size must be in [1, ", most, "]",
                                            config.max_batch_size() > 0 ? " (max_batch_size)" : " (no batching)",
                                            ", got ", batch));
  }
  return batch;
}

// A sample's runs delay its version's publication (and a starting server's readiness): a count past this is a
// typo, not a warmup.
constexpr uint32_t kMaxWarmupCount = 1000;

absl::Status CheckCount(const Sample& sample) {
  if (sample.count() <= kMaxWarmupCount) return absl::OkStatus();
  return SampleError(sample, absl::StrCat("count must be at most ", kMaxWarmupCount, ", got ", sample.count()));
}

// The sample's tensor for config input `spec`: its dims, after the batch dimension when the model batches.
// `bytes_left` of the sample's allowance are taken by the tensor's bytes, checked before it is made: dims from
// the config (a [1e9, 3] float sample of a dynamic input: 12 GB, within the tensor limits) were zeroed.
absl::StatusOr<Tensor> SampleInput(const inference::ModelConfig& config, const Sample& sample,
                                   const inference::ModelInput& spec, int64_t batch, std::mt19937& rng,
                                   int64_t& bytes_left) {
  auto it = sample.inputs().find(spec.name());
  if (it == sample.inputs().end()) return SampleError(sample, absl::StrCat("no data for input \"", spec.name(), "\""));
  const Sample::Input& input = it->second;
  const std::string label = absl::StrCat("input \"", spec.name(), "\": ");
  if (input.data_type() != spec.data_type()) {
    return SampleError(sample, absl::StrCat(label, "data_type ", inference::DataType_Name(input.data_type()),
                                            " differs from the config's ", inference::DataType_Name(spec.data_type())));
  }
  bool fits = input.dims_size() == spec.dims_size();
  for (int i = 0; fits && i < input.dims_size(); ++i) {
    fits = input.dims(i) >= 0 && (spec.dims(i) < 0 || spec.dims(i) == input.dims(i));
  }
  if (!fits) {
    return SampleError(sample, absl::StrCat(label, "dims ", ShapeToString(Shape(input.dims().begin(), input.dims().end())),
                                            " do not fit the config's ",
                                            ShapeToString(Shape(spec.dims().begin(), spec.dims().end())),
                                            " (every dim concrete)"));
  }
  Shape shape;
  if (config.max_batch_size() > 0) shape.push_back(batch);
  shape.insert(shape.end(), input.dims().begin(), input.dims().end());
  ASSIGN_OR_RETURN(DataType dtype, DataTypeFromConfig(input.data_type()));
  const absl::StatusOr<int64_t> bytes = CheckedByteSize(dtype, shape);
  if (!bytes.ok() || *bytes > bytes_left) {
    return SampleError(sample, absl::StrCat(label, ShapeToString(shape), " brings the sample's inputs past ",
                                            "the bytes a request may carry (--max-request-bytes)"));
  }
  bytes_left -= *bytes;
  switch (input.input_data_type_case()) {
    case Sample::Input::kZeroData: return ZeroTensor(dtype, std::move(shape));
    case Sample::Input::kRandomData: return RandomTensor(dtype, std::move(shape), rng);
    case Sample::Input::kInputDataFile:
      return SampleError(sample, absl::StrCat(label, "input_data_file is not supported: use zero_data or random_data"));
    case Sample::Input::INPUT_DATA_TYPE_NOT_SET: break;
  }
  return SampleError(sample, absl::StrCat(label, "needs zero_data or random_data"));
}

// The sample's inputs in config input order, as the model takes them.
absl::StatusOr<std::vector<Tensor>> SampleInputs(const inference::ModelConfig& config, const Sample& sample,
                                                  int64_t max_sample_bytes) {
  ASSIGN_OR_RETURN(int64_t batch, BatchSize(config, sample));
  RETURN_IF_ERROR(CheckCount(sample));
  for (const auto& [name, input] : sample.inputs()) {
    bool known = false;
    for (const auto& spec : config.input()) known = known || spec.name() == name;
    if (!known) return SampleError(sample, absl::StrCat("\"", name, "\" is not an input of the model"));
  }
  std::mt19937 rng(static_cast<uint32_t>(sample.batch_size()));
  std::vector<Tensor> inputs;
  int64_t bytes_left = max_sample_bytes;
  for (const auto& spec : config.input()) {
    ASSIGN_OR_RETURN(Tensor tensor, SampleInput(config, sample, spec, batch, rng, bytes_left));
    inputs.push_back(std::move(tensor));
  }
  return inputs;
}

}  // namespace

absl::Status Warmup(const inference::ModelConfig& config, Servable& model, int64_t max_sample_bytes) {
  for (const Sample& sample : config.model_warmup()) {
    ASSIGN_OR_RETURN(std::vector<Tensor> inputs, SampleInputs(config, sample, max_sample_bytes));
    for (uint32_t i = 0; i < std::max<uint32_t>(sample.count(), 1); ++i) {
      ServableRequest request;
      request.inputs = inputs;
      request.rows = inputs.empty() || config.max_batch_size() == 0 ? 1 : inputs[0].dim(0);
      const absl::StatusOr<std::vector<Tensor>> outputs = RunAndWait(model, std::move(request)).outputs;
      if (!outputs.ok()) {
        return absl::Status(outputs.status().code(), absl::StrCat("model_warmup \"", sample.name(), "\": run ",
                                                                  i + 1, " failed: ", outputs.status().message()));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace onnxserve::server

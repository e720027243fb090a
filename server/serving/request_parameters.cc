#include "server/serving/request_parameters.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"

namespace onnxserve::server {
namespace {

const char* ChoiceName(const inference::InferParameter& parameter) {
  switch (parameter.parameter_choice_case()) {
    case inference::InferParameter::kBoolParam: return "bool_param";
    case inference::InferParameter::kInt64Param: return "int64_param";
    case inference::InferParameter::kStringParam: return "string_param";
    case inference::InferParameter::kDoubleParam: return "double_param";
    case inference::InferParameter::kUint64Param: return "uint64_param";
    case inference::InferParameter::PARAMETER_CHOICE_NOT_SET: break;
  }
  return "no value";
}

}  // namespace

absl::StatusOr<std::optional<int64_t>> IntegerParameter(const InferParameters& parameters, const std::string& key) {
  auto it = parameters.find(key);
  if (it == parameters.end()) return std::nullopt;
  const inference::InferParameter& parameter = it->second;
  if (parameter.has_int64_param()) return parameter.int64_param();
  if (parameter.has_uint64_param() &&
      parameter.uint64_param() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return static_cast<int64_t>(parameter.uint64_param());
  }
  return absl::InvalidArgumentError(absl::StrCat("parameter \"", key, "\" must be a whole number ",
                                                 "(int64_param, or uint64_param up to 2^63 - 1), got ",
                                                 ChoiceName(parameter)));
}

absl::StatusOr<uint32_t> PriorityLevel(const inference::ModelDynamicBatching& batching,
                                       const InferParameters& parameters) {
  const uint32_t levels = batching.priority_levels();
  if (levels == 0) return 1;
  ASSIGN_OR_RETURN(std::optional<int64_t> requested, IntegerParameter(parameters, "priority"));
  if (requested && *requested >= 1 && *requested <= levels) return static_cast<uint32_t>(*requested);
  return batching.default_priority_level();
}

const inference::ModelQueuePolicy& QueuePolicyOf(const inference::ModelDynamicBatching& batching, uint32_t level) {
  auto it = batching.priority_queue_policy().find(level);
  return it != batching.priority_queue_policy().end() ? it->second : batching.default_queue_policy();
}

absl::StatusOr<absl::Duration> QueueTimeout(const inference::ModelQueuePolicy& policy,
                                            const InferParameters& parameters) {
  int64_t timeout_us = static_cast<int64_t>(
      std::min<uint64_t>(policy.default_timeout_microseconds(), std::numeric_limits<int64_t>::max()));
  if (policy.allow_timeout_override()) {
    ASSIGN_OR_RETURN(std::optional<int64_t> requested, IntegerParameter(parameters, "timeout"));
    if (requested && *requested < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter \"timeout\" must be >= 0 microseconds, got ", *requested));
    }
    if (requested) timeout_us = *requested;
  }
  return timeout_us > 0 ? absl::Microseconds(timeout_us) : absl::InfiniteDuration();
}

}  // namespace onnxserve::server

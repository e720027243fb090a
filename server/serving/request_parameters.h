// The request parameters the server acts on (ModelInferRequest.parameters). Triton's clients send a whole
// number as int64_param or uint64_param depending on the language and version; both are read the same way,
// and a parameter of the wrong type is an error that names it rather than one silently ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpc_service.pb.h"
#include "model_config.pb.h"

namespace onnxserve::server {

using InferParameters = google::protobuf::Map<std::string, inference::InferParameter>;

// The whole number `key` holds (int64_param, or uint64_param up to INT64_MAX); nullopt when absent.
absl::StatusOr<std::optional<int64_t>> IntegerParameter(const InferParameters& parameters, const std::string& key);

// The priority level of a request to a model batching with `batching`: its "priority" parameter when that
// is a level of the model (1 is the highest), else default_priority_level, as Triton does; 1 for a model
// without priority levels.
absl::StatusOr<uint32_t> PriorityLevel(const inference::ModelDynamicBatching& batching,
                                       const InferParameters& parameters);

// The queue policy of priority `level`: its priority_queue_policy entry, else default_queue_policy.
const inference::ModelQueuePolicy& QueuePolicyOf(const inference::ModelDynamicBatching& batching, uint32_t level);

// How long a request may wait in the queue under `policy`: its default_timeout_microseconds, or the
// request's "timeout" parameter (microseconds) when allow_timeout_override lets it choose. Infinite for 0.
absl::StatusOr<absl::Duration> QueueTimeout(const inference::ModelQueuePolicy& policy,
                                            const InferParameters& parameters);

}  // namespace onnxserve::server

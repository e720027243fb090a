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

// How long a request may wait in the queue under `policy`: its default_timeout_microseconds, or the
// request's "timeout" parameter (microseconds) when allow_timeout_override lets it choose. Infinite for 0.
absl::StatusOr<absl::Duration> QueueTimeout(const inference::ModelQueuePolicy& policy,
                                            const InferParameters& parameters);

}  // namespace onnxserve::server

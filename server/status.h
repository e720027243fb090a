// The one place an absl::Status becomes a grpc::Status. Both use the canonical code numbering
// (google.rpc.Code), so the code carries over unchanged and the message is kept verbatim.
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace onnxserve::server {

grpc::Status ToGrpcStatus(const absl::Status& status);
grpc::StatusCode ToGrpcCode(absl::StatusCode code);

}  // namespace onnxserve::server

// The one place an absl::Status becomes a grpc::Status or an HTTP status code. absl and gRPC use the canonical
// code numbering (google.rpc.Code), so the code carries over unchanged and the message is kept verbatim; the
// REST endpoints answer the HTTP code below with the message as {"error": "..."}.
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace onnxserve::server {

grpc::Status ToGrpcStatus(const absl::Status& status);
grpc::StatusCode ToGrpcCode(absl::StatusCode code);
// The HTTP status of a REST answer with `code`: 200 for OK, 400 for a bad request, 404 for an unknown model,
// 429 when a queue or a limit is exhausted, 503 when unavailable, 504 past a deadline, ... (docs/server.md).
unsigned HttpStatusCode(absl::StatusCode code);

}  // namespace onnxserve::server

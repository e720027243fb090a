#include "server/protocol/status.h"

#include <string>

namespace onnxserve::server {

grpc::StatusCode ToGrpcCode(absl::StatusCode code) {
  // absl::StatusCode and grpc::StatusCode are both google.rpc.Code: 0 OK .. 16 UNAUTHENTICATED.
  static_assert(static_cast<int>(absl::StatusCode::kUnauthenticated) == grpc::StatusCode::UNAUTHENTICATED);
  static_assert(static_cast<int>(absl::StatusCode::kResourceExhausted) == grpc::StatusCode::RESOURCE_EXHAUSTED);
  return static_cast<grpc::StatusCode>(code);
}

unsigned HttpStatusCode(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk: return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange: return 400;
    case absl::StatusCode::kUnauthenticated: return 401;
    case absl::StatusCode::kPermissionDenied: return 403;
    case absl::StatusCode::kNotFound: return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted: return 409;
    case absl::StatusCode::kResourceExhausted: return 429;  // a full queue above all: the client should back off
    case absl::StatusCode::kCancelled: return 499;          // the client's (nginx's convention)
    case absl::StatusCode::kUnimplemented: return 501;
    case absl::StatusCode::kUnavailable: return 503;
    case absl::StatusCode::kDeadlineExceeded: return 504;
    default: return 500;  // kInternal, kUnknown, kDataLoss
  }
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(ToGrpcCode(status.code()), std::string(status.message()));
}

}  // namespace onnxserve::server

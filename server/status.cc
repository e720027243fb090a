#include "server/status.h"

#include <string>

namespace onnxserve::server {

grpc::StatusCode ToGrpcCode(absl::StatusCode code) {
  // absl::StatusCode and grpc::StatusCode are both google.rpc.Code: 0 OK .. 16 UNAUTHENTICATED.
  static_assert(static_cast<int>(absl::StatusCode::kUnauthenticated) == grpc::StatusCode::UNAUTHENTICATED);
  static_assert(static_cast<int>(absl::StatusCode::kResourceExhausted) == grpc::StatusCode::RESOURCE_EXHAUSTED);
  return static_cast<grpc::StatusCode>(code);
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(ToGrpcCode(status.code()), std::string(status.message()));
}

}  // namespace onnxserve::server

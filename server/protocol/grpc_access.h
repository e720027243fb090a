// Access control on the gRPC side: which API group each method belongs to, and its enforcement.
//
// gRPC C++ server interceptors cannot stop a call from reaching its handler (grpc/grpc#24017), and an
// AuthMetadataProcessor cannot be set on insecure credentials, so enforcement has two parts that share one
// decision (GrpcAccess::Check):
// - an interceptor covers every method of every service, grpc.health.v1 and reflection included: it cancels a
//   refused call with PERMISSION_DENIED before its handler runs, so nothing the handler writes reaches the
//   client. Those two services only read, so their handler running to no effect is harmless;
// - InferenceService's handlers, which have effects (inference, model loading), first ask the same question
//   and do nothing for a refused call.
// Refusals are PERMISSION_DENIED (Triton answers UNAVAILABLE, which clients retry as if it were transient).
#pragma once

#include <memory>
#include <optional>

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_interceptor.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/protocol/access.h"

namespace onnxserve::server {

// The group of a full method name ("/inference.GRPCInferenceService/ModelInfer"), or nullopt for a method
// the server does not serve (gRPC answers those UNIMPLEMENTED).
std::optional<ApiGroup> GrpcMethodGroup(absl::string_view method);

class GrpcAccess {
 public:
  explicit GrpcAccess(const AccessRules& rules) : rules_(rules) {}

  bool restricts_anything() const { return !rules_.empty(); }

  // OK when the call to `method` may proceed, given its client metadata.
  absl::Status Check(absl::string_view method, const grpc::ServerContextBase& context) const;

  // The interceptor described above; `this` must outlive the server it is given to.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> InterceptorFactory() const;

 private:
  const AccessRules rules_;
};

}  // namespace onnxserve::server

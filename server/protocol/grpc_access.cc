#include "server/protocol/grpc_access.h"

#include <grpc/grpc.h>

#include <string>
#include <utility>

#include "server/protocol/status.h"

namespace onnxserve::server {
namespace {

// Every method the server serves and its group: KServe v2 as Triton groups it, grpc.health.v1 as health,
// reflection (which describes the services) as metadata.
constexpr std::pair<absl::string_view, ApiGroup> kMethodGroups[] = {
    {"/inference.GRPCInferenceService/ServerLive", ApiGroup::kHealth},
    {"/inference.GRPCInferenceService/ServerReady", ApiGroup::kHealth},
    {"/inference.GRPCInferenceService/ModelReady", ApiGroup::kHealth},
    {"/inference.GRPCInferenceService/ServerMetadata", ApiGroup::kMetadata},
    {"/inference.GRPCInferenceService/ModelMetadata", ApiGroup::kMetadata},
    {"/inference.GRPCInferenceService/ModelInfer", ApiGroup::kInference},
    {"/inference.GRPCInferenceService/ModelStreamInfer", ApiGroup::kInference},
    {"/inference.GRPCInferenceService/ModelConfig", ApiGroup::kModelConfig},
    {"/inference.GRPCInferenceService/ModelStatistics", ApiGroup::kStatistics},
    {"/inference.GRPCInferenceService/RepositoryIndex", ApiGroup::kModelRepository},
    {"/inference.GRPCInferenceService/RepositoryModelLoad", ApiGroup::kModelRepository},
    {"/inference.GRPCInferenceService/RepositoryModelUnload", ApiGroup::kModelRepository},
    {"/grpc.health.v1.Health/Check", ApiGroup::kHealth},
    {"/grpc.health.v1.Health/Watch", ApiGroup::kHealth},
    {"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", ApiGroup::kMetadata},
    {"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", ApiGroup::kMetadata},
};

class AccessInterceptor final : public grpc::experimental::Interceptor {
 public:
  AccessInterceptor(const GrpcAccess& access, grpc::experimental::ServerRpcInfo* info)
      : access_(access), info_(info) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(grpc::experimental::InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      grpc::ServerContextBase* context = info_->server_context();
      const absl::Status status = access_.Check(info_->method(), *context);
      if (!status.ok()) {
        // Ends the call with this status now; whatever the handler later writes is dropped.
        const std::string message(status.message());
        grpc_call_cancel_with_status(context->c_call(), static_cast<grpc_status_code>(ToGrpcCode(status.code())),
                                     message.c_str(), nullptr);
      }
    }
    methods->Proceed();
  }

 private:
  const GrpcAccess& access_;
  grpc::experimental::ServerRpcInfo* info_;
};

class AccessInterceptorFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit AccessInterceptorFactory(const GrpcAccess& access) : access_(access) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    return new AccessInterceptor(access_, info);
  }

 private:
  const GrpcAccess& access_;
};

}  // namespace

std::optional<ApiGroup> GrpcMethodGroup(absl::string_view method) {
  for (const auto& [name, group] : kMethodGroups) {
    if (name == method) return group;
  }
  return std::nullopt;
}

absl::Status GrpcAccess::Check(absl::string_view method, const grpc::ServerContextBase& context) const {
  const std::optional<ApiGroup> group = GrpcMethodGroup(method);
  if (!group) return absl::OkStatus();  // not served: gRPC answers UNIMPLEMENTED
  const auto& metadata = context.client_metadata();
  return rules_.Check(*group, [&metadata](absl::string_view name) -> std::optional<absl::string_view> {
    const auto it = metadata.find(grpc::string_ref(name.data(), name.size()));
    if (it == metadata.end()) return std::nullopt;
    return absl::string_view(it->second.data(), it->second.size());
  });
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> GrpcAccess::InterceptorFactory() const {
  return std::make_unique<AccessInterceptorFactory>(*this);
}

}  // namespace onnxserve::server

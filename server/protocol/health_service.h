// grpc.health.v1.Health: Check answers the serving status of the server ("") or of a model by name; Watch
// streams it, now and at each change. Ours rather than gRPC's built-in service, for two reasons: reflection
// describes it (it comes from proto/health.proto, in protobuf's generated pool), and Shutdown ends every
// Watch (NOT_SERVING, then UNAVAILABLE) where the built-in one left them open until the grace period ran
// out, so a client that watches (gRPC's client-side health checking does) held every shutdown that long.
// A Watch of a name no model can have (past kMaxModelNameBytes) ends at once, INVALID_ARGUMENT.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "health.grpc.pb.h"

namespace onnxserve::server {

class HealthService final : public grpc::health::v1::Health::CallbackService {
 public:
  using ServingStatus = grpc::health::v1::HealthCheckResponse::ServingStatus;

  HealthService() = default;
  ~HealthService() override;

  // Sets a service's status ("" is the server) and tells its watchers. Ignored after Shutdown.
  void SetServingStatus(const std::string& service, bool serving);
  // Every service NOT_SERVING, for good: each watcher is told, then its stream ends.
  void Shutdown();

  grpc::ServerUnaryReactor* Check(grpc::CallbackServerContext* context,
                                  const grpc::health::v1::HealthCheckRequest* request,
                                  grpc::health::v1::HealthCheckResponse* response) override;
  grpc::ServerWriteReactor<grpc::health::v1::HealthCheckResponse>* Watch(
      grpc::CallbackServerContext* context, const grpc::health::v1::HealthCheckRequest* request) override;

  class Watcher;  // one Watch stream (health_service.cc)

 private:
  ServingStatus StatusOf(const std::string& service) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void Forget(Watcher* watcher);

  mutable absl::Mutex mutex_;
  bool shut_down_ ABSL_GUARDED_BY(mutex_) = false;
  absl::flat_hash_map<std::string, ServingStatus> statuses_ ABSL_GUARDED_BY(mutex_);
  std::vector<std::shared_ptr<Watcher>> watchers_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace onnxserve::server

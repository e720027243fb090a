// grpc.health.v1.Health on gRPC's async API (grpc_poller.h), in place of gRPC's default health service, whose
// Watch is on the callback API (its threads are what the poller saves). Same semantics: the serving status of
// the server ("") and of each model; Check answers it, or NOT_FOUND for a name never set; Watch sends it at
// once (SERVICE_UNKNOWN for such a name) and then each change, the latest one when several come during a
// write, until the client cancels or the server shuts down. After Shutdown() everything is NOT_SERVING for good.
//
// Its descriptor comes from proto/health.proto, so reflection describes it like every other service.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "health.grpc.pb.h"
#include "server/protocol/grpc_poller.h"

namespace onnxserve::server {

class HealthService final : public grpc::health::v1::Health::AsyncService {
 public:
  using ServingStatus = grpc::health::v1::HealthCheckResponse::ServingStatus;

  // Thread-safe. Ignored after Shutdown().
  void SetServingStatus(const std::string& service, bool serving);
  // Every service NOT_SERVING, and it stays so.
  void Shutdown();
  // Serves Check and Watch on `poller` from now on; `poller` must have been made with the builder this service
  // is registered with, and stop before this service is destroyed.
  void ServeOn(GrpcPoller& poller);

 private:
  class WatchCall;

  // The status of `service`; nullopt for a name never set.
  std::optional<ServingStatus> StatusOf(const std::string& service) const;
  void Set(const std::string& service, ServingStatus status);  // with mu_ held
  // Tells `call` the status of its service now and at each change, until Unwatch.
  void Watch(const std::string& service, WatchCall* call);
  void Unwatch(const std::string& service, WatchCall* call);

  mutable std::mutex mu_;
  std::map<std::string, ServingStatus> statuses_;
  std::multimap<std::string, WatchCall*> watchers_;
  bool shut_down_ = false;
  std::shared_ptr<const void> check_;  // the Check method, for as long as calls of it may come
};

}  // namespace onnxserve::server

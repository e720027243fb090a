#include "server/protocol/health_service.h"

#include <functional>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/serving/repository.h"

namespace onnxserve::server {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

// What the service and a Watch stream's reactor share: the stream may end (client gone) while the service
// tells it a new status, and the service may end the stream while a write is in flight. One write at a
// time: a status that comes meanwhile replaces the one waiting, since a watcher wants the latest, not the
// history, and a client that stops reading then costs one message, not a queue.
class HealthService::Watcher {
 public:
  Watcher(std::string service, grpc::ServerWriteReactor<HealthCheckResponse>* reactor)
      : service_(std::move(service)), reactor_(reactor) {}

  const std::string& service() const { return service_; }

  void Send(ServingStatus status) {
    absl::MutexLock lock(&mutex_);
    if (ending_ || finished_) return;
    SendLocked(status);
  }

  // The last status, then the end of the stream (the server is shutting down).
  void End() {
    absl::MutexLock lock(&mutex_);
    if (finished_) return;
    ending_ = true;
    SendLocked(HealthCheckResponse::NOT_SERVING);
    if (!writing_) FinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
  }

  void OnWriteDone(bool ok) {
    absl::MutexLock lock(&mutex_);
    writing_ = false;
    if (!ok || cancelled_) return FinishLocked(grpc::Status::CANCELLED);
    if (waiting_) {
      const ServingStatus next = *std::exchange(waiting_, std::nullopt);
      SendLocked(next);
      if (writing_) return;
    }
    if (ending_) FinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
  }

  // The end of a stream that never starts: its request is refused.
  void Refuse(const grpc::Status& status) {
    absl::MutexLock lock(&mutex_);
    FinishLocked(status);
  }

  void OnCancel() {
    absl::MutexLock lock(&mutex_);
    cancelled_ = true;
    if (!writing_) FinishLocked(grpc::Status::CANCELLED);  // else OnWriteDone(false) finishes
  }

 private:
  void SendLocked(ServingStatus status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    if (writing_) {
      waiting_ = status;
      return;
    }
    if (sent_ && *sent_ == status) return;
    sent_ = status;
    response_.set_status(status);
    writing_ = true;
    reactor_->StartWrite(&response_);
  }

  // Finish exactly once, and never with a write in flight.
  void FinishLocked(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    if (finished_) return;
    finished_ = true;
    reactor_->Finish(status);
  }

  const std::string service_;
  grpc::ServerWriteReactor<HealthCheckResponse>* const reactor_;
  absl::Mutex mutex_;
  HealthCheckResponse response_ ABSL_GUARDED_BY(mutex_);  // the message in flight
  std::optional<ServingStatus> sent_ ABSL_GUARDED_BY(mutex_);
  std::optional<ServingStatus> waiting_ ABSL_GUARDED_BY(mutex_);
  bool writing_ ABSL_GUARDED_BY(mutex_) = false;
  bool ending_ ABSL_GUARDED_BY(mutex_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mutex_) = false;
  bool finished_ ABSL_GUARDED_BY(mutex_) = false;
};

namespace {

// gRPC owns it from Watch until OnDone, which removes it from the service's list and deletes it.
class WatchReactor final : public grpc::ServerWriteReactor<HealthCheckResponse> {
 public:
  WatchReactor(std::string watched, std::function<void(HealthService::Watcher*)> forget)
      : watcher_(std::make_shared<HealthService::Watcher>(std::move(watched), this)), forget_(std::move(forget)) {}

  const std::shared_ptr<HealthService::Watcher>& watcher() const { return watcher_; }

  void OnWriteDone(bool ok) override { watcher_->OnWriteDone(ok); }
  void OnCancel() override { watcher_->OnCancel(); }
  void OnDone() override {
    forget_(watcher_.get());
    delete this;
  }

 private:
  const std::shared_ptr<HealthService::Watcher> watcher_;
  const std::function<void(HealthService::Watcher*)> forget_;
};

}  // namespace

HealthService::~HealthService() = default;

HealthService::ServingStatus HealthService::StatusOf(const std::string& service) const {
  if (shut_down_) return HealthCheckResponse::NOT_SERVING;
  auto it = statuses_.find(service);
  return it == statuses_.end() ? HealthCheckResponse::SERVICE_UNKNOWN : it->second;
}

// Watchers are told under the service's lock, so that two changes reach them in the order they were made.
// The lock order is always the service's, then a watcher's: a watcher never takes the service's lock, and
// its stream's end (OnDone -> Forget) takes it holding none.
void HealthService::SetServingStatus(const std::string& service, bool serving) {
  const ServingStatus status = serving ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
  absl::MutexLock lock(&mutex_);
  if (shut_down_) return;
  statuses_[service] = status;
  for (const auto& watcher : watchers_) {
    if (watcher->service() == service) watcher->Send(status);
  }
}

void HealthService::Shutdown() {
  absl::MutexLock lock(&mutex_);
  shut_down_ = true;
  for (auto& [service, status] : statuses_) status = HealthCheckResponse::NOT_SERVING;
  for (const auto& watcher : watchers_) watcher->End();
}

void HealthService::Forget(Watcher* watcher) {
  absl::MutexLock lock(&mutex_);
  std::erase_if(watchers_, [watcher](const std::shared_ptr<Watcher>& w) { return w.get() == watcher; });
}

grpc::ServerUnaryReactor* HealthService::Check(grpc::CallbackServerContext* context,
                                               const HealthCheckRequest* request, HealthCheckResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  ServingStatus status;
  {
    absl::MutexLock lock(&mutex_);
    status = StatusOf(request->service());
  }
  // The protocol: Check of a service the server does not know is NOT_FOUND, not a status.
  if (status == HealthCheckResponse::SERVICE_UNKNOWN) {
    reactor->Finish(grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service"));
    return reactor;
  }
  response->set_status(status);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerWriteReactor<HealthCheckResponse>* HealthService::Watch(grpc::CallbackServerContext* /*context*/,
                                                                     const HealthCheckRequest* request) {
  const bool nameable = request->service().size() <= kMaxModelNameBytes;
  auto* reactor = new WatchReactor(nameable ? request->service() : std::string(),
                                   [this](Watcher* watcher) { Forget(watcher); });
  // Such a stream could only ever say SERVICE_UNKNOWN, while it and gRPC held a name of up to a request's
  // size, outside the bound on held requests, for as long as its client kept it open.
  if (!nameable) {
    reactor->watcher()->Refuse(grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("a service name of ", request->service().size(), " bytes: models have at most ",
                     kMaxModelNameBytes)));
    return reactor;
  }
  absl::MutexLock lock(&mutex_);
  if (shut_down_) {
    reactor->watcher()->End();
  } else {
    watchers_.push_back(reactor->watcher());
    reactor->watcher()->Send(StatusOf(request->service()));
  }
  return reactor;
}

}  // namespace onnxserve::server

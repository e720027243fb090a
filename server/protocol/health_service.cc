#include "server/protocol/health_service.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/protocol/unary_call.h"

namespace onnxserve::server {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

// One Watch call, from its request to gRPC to its end. Statuses come from any thread (under the service's
// lock, through Tell), its events on the polling thread; it deletes itself once the call is done and no write
// is in flight. It never finishes the stream itself: the client cancels it, or the server's shutdown does.
class HealthService::WatchCall {
 public:
  static void Await(HealthService& service, GrpcPoller& poller) { new WatchCall(service, poller); }
  WatchCall(const WatchCall&) = delete;
  WatchCall& operator=(const WatchCall&) = delete;

  // Sends `status` if it differs from the last one sent; while a write is in flight, the latest status told
  // goes once it ends. Called with the service's lock held, so never after Unwatch.
  void Tell(ServingStatus status) {
    std::lock_guard<std::mutex> lock(mu_);
    if (writing_) {
      next_ = status;
      return;
    }
    WriteIfNew(status);
  }

 private:
  WatchCall(HealthService& service, GrpcPoller& poller) : count_(poller), service_(service) {
    context_.AsyncNotifyWhenDone(&done_);
    service_.RequestWatch(&context_, &request_, &writer_, count_.queue(), count_.queue(), &arrived_);
  }
  void OnArrived(bool ok) {
    if (!ok) {  // the server is shutting down; a call that never arrived gets no done event
      delete this;
      return;
    }
    Await(service_, count_.poller());
    service_.Watch(request_.service(), this);
  }

  void OnWritten(bool ok) {
    bool end = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      writing_ = false;
      if (ok && !done_seen_ && next_) WriteIfNew(*std::exchange(next_, std::nullopt));
      end = done_seen_ && !writing_;
    }
    if (end) delete this;
  }

  // The call ended (cancelled: Watch has no other end). Events come one at a time from the poller, so no other
  // event of this call runs meanwhile, and once unwatched no Tell does either.
  void OnDone(bool) {
    service_.Unwatch(request_.service(), this);
    bool end = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_seen_ = true;
      end = !writing_;
    }
    if (end) delete this;
  }

  void WriteIfNew(ServingStatus status) {  // with mu_ held and no write in flight
    if (sent_ == status) return;
    sent_ = status;
    response_.set_status(status);
    writing_ = true;
    writer_.Write(response_, &written_);
  }

  PolledCallCount count_;
  HealthService& service_;
  grpc::ServerContext context_;
  HealthCheckRequest request_;
  grpc::ServerAsyncWriter<HealthCheckResponse> writer_{&context_};
  std::mutex mu_;
  HealthCheckResponse response_;  // the one in flight
  std::optional<ServingStatus> sent_;
  std::optional<ServingStatus> next_;
  bool writing_ = false;
  bool done_seen_ = false;
  PollEvent arrived_ = PollEvent::Of<&WatchCall::OnArrived>(this);
  PollEvent written_ = PollEvent::Of<&WatchCall::OnWritten>(this);
  PollEvent done_ = PollEvent::Of<&WatchCall::OnDone>(this);
};

void HealthService::SetServingStatus(const std::string& service, bool serving) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!shut_down_) Set(service, serving ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING);
}

void HealthService::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  shut_down_ = true;
  for (auto& [service, status] : statuses_) Set(service, HealthCheckResponse::NOT_SERVING);
}

void HealthService::Set(const std::string& service, ServingStatus status) {
  statuses_[service] = status;
  const auto [first, end] = watchers_.equal_range(service);
  for (auto it = first; it != end; ++it) it->second->Tell(status);
}

std::optional<HealthService::ServingStatus> HealthService::StatusOf(const std::string& service) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = statuses_.find(service);
  if (it == statuses_.end()) return std::nullopt;
  return it->second;
}

void HealthService::Watch(const std::string& service, WatchCall* call) {
  std::lock_guard<std::mutex> lock(mu_);
  watchers_.emplace(service, call);
  const auto it = statuses_.find(service);
  call->Tell(it == statuses_.end() ? HealthCheckResponse::SERVICE_UNKNOWN : it->second);
}

void HealthService::Unwatch(const std::string& service, WatchCall* call) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto [first, end] = watchers_.equal_range(service);
  for (auto it = first; it != end; ++it) {
    if (it->second == call) {
      watchers_.erase(it);
      return;
    }
  }
}

void HealthService::ServeOn(GrpcPoller& poller) {
  using Messages = UnaryMessages<HealthCheckRequest, HealthCheckResponse>;
  check_ = ServeUnary<HealthService, Messages>(
      this, poller, &HealthService::RequestCheck,
      [this](grpc::ServerContext&, const std::shared_ptr<Messages>& messages, AnswerCall answer) {
        const std::optional<ServingStatus> status = StatusOf(messages->request().service());
        if (!status) return answer(absl::NotFoundError("unknown service"));
        messages->response().set_status(*status);
        answer(absl::OkStatus());
      });
  WatchCall::Await(*this, poller);
}

}  // namespace onnxserve::server

// One call of a unary method on gRPC's async API (grpc_poller.h), from its request to gRPC to its end. The
// method's handler runs on the polling thread when the call arrives and answers it exactly once, then or later
// from any thread; an exception out of the handler answers the call INTERNAL (RESOURCE_EXHAUSTED for memory)
// instead, unless it was answered already.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <utility>

#include <grpcpp/server_context.h>
#include <grpcpp/support/async_unary_call.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/protocol/grpc_poller.h"
#include "server/protocol/status.h"

namespace onnxserve::server {

// A unary method's request and response, made afresh for each call.
template <class Request, class Response>
class UnaryMessages {
 public:
  static std::shared_ptr<UnaryMessages> Create() { return std::make_shared<UnaryMessages>(); }
  Request& request() { return request_; }
  Response& response() { return response_; }

 private:
  Request request_;
  Response response_;
};

using AnswerCall = std::function<void(const absl::Status&)>;

// A unary method of `Service` served through `Messages` (UnaryMessages, or any type with the same members).
// Lives as long as the server, which its calls may outlast only until the poller stops.
template <class Service, class Messages>
struct UnaryMethod {
  using Request = std::remove_reference_t<decltype(std::declval<Messages&>().request())>;
  using Response = std::remove_reference_t<decltype(std::declval<Messages&>().response())>;
  // The generated RequestX of the method (of Service or a base of it).
  using RequestFn = void (Service::*)(grpc::ServerContext*, Request*, grpc::ServerAsyncResponseWriter<Response>*,
                                      grpc::CompletionQueue*, grpc::ServerCompletionQueue*, void*);
  // Fills the messages' response and answers through AnswerCall, exactly once, on any thread. `context` and
  // `messages` stay valid until then.
  using Handler = std::function<void(grpc::ServerContext& context, const std::shared_ptr<Messages>& messages,
                                     AnswerCall answer)>;

  Service* service;
  RequestFn request_call;
  Handler handle;
  GrpcPoller* poller;
};

template <class Service, class Messages>
class UnaryCall {
 public:
  using Method = UnaryMethod<Service, Messages>;

  // Asks gRPC for the next call of `method`; the call object deletes itself once the call has ended.
  static void Await(const Method& method) { new UnaryCall(method); }

 private:
  explicit UnaryCall(const Method& method) : count_(*method.poller), method_(method), messages_(Messages::Create()) {
    context_.AsyncNotifyWhenDone(&done_);
    (method_.service->*method_.request_call)(&context_, &messages_->request(), &writer_, count_.queue(),
                                             count_.queue(), &arrived_);
  }
  UnaryCall(const UnaryCall&) = delete;
  UnaryCall& operator=(const UnaryCall&) = delete;

  void OnArrived(bool ok) {
    if (!ok) {  // the server is shutting down; a call that never arrived gets no done event
      delete this;
      return;
    }
    Await(method_);
    std::optional<absl::Status> failed;
    try {
      method_.handle(context_, messages_, [this](const absl::Status& status) { Answer(status); });
    } catch (const std::bad_alloc&) {
      failed = absl::ResourceExhaustedError("out of memory while handling the request");
    } catch (const std::exception& e) {
      failed = absl::InternalError(absl::StrCat("request failed: ", e.what()));
    }
    if (failed) Answer(*failed);
  }

  void Answer(const absl::Status& status) {
    if (answered_.exchange(true)) return;
    writer_.Finish(messages_->response(), ToGrpcStatus(status), &finished_);
  }

  void OnFinished(bool) { EventPassed(); }
  void OnDone(bool) { EventPassed(); }
  void EventPassed() {
    if (events_left_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  PolledCallCount count_;
  const Method& method_;
  std::shared_ptr<Messages> messages_;
  grpc::ServerContext context_;
  grpc::ServerAsyncResponseWriter<typename Method::Response> writer_{&context_};
  std::atomic<bool> answered_{false};
  std::atomic<int> events_left_{2};  // finished and done, once arrived
  PollEvent arrived_ = PollEvent::Of<&UnaryCall::OnArrived>(this);
  PollEvent finished_ = PollEvent::Of<&UnaryCall::OnFinished>(this);
  PollEvent done_ = PollEvent::Of<&UnaryCall::OnDone>(this);
};

// Serves `request_call`'s method with `handle` on `poller` from now on: awaits its first call. The result holds
// the method; keep it until the poller has stopped.
template <class Service, class Messages>
std::shared_ptr<const void> ServeUnary(Service* service, GrpcPoller& poller,
                                       typename UnaryMethod<Service, Messages>::RequestFn request_call,
                                       typename UnaryMethod<Service, Messages>::Handler handle) {
  auto method = std::make_shared<const UnaryMethod<Service, Messages>>(
      UnaryMethod<Service, Messages>{service, request_call, std::move(handle), &poller});
  UnaryCall<Service, Messages>::Await(*method);
  return method;
}

}  // namespace onnxserve::server

// gRPC's async API served by one thread. Every call of every service is an object whose operations (the call's
// arrival, a read, a write, its end) complete on one ServerCompletionQueue, each tagged with a PollEvent of the
// object; the thread takes them off the queue one after another and handles each. No method is on the callback
// API, so gRPC starts none of its callback threads: with a single thread polling, a call costs no hand-offs
// between gRPC threads (docs/server.md, "Dynamic batching").
//
// The one thread is shared by every call, so an event's handler must never block or run long: it answers
// cheap methods itself and hands everything else (inference, model loads) to threads of its own, which give
// their answers through the call's thread-safe async writer.
//
// Lifecycle: construct before the builder's BuildAndStart (it adds the queue); request the first call of each
// method and Start() once the server is built; Stop() once the server's Shutdown has returned, before the
// server is destroyed: it waits for every call to end, then shuts the queue and joins the thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include <grpcpp/completion_queue.h>
#include <grpcpp/server_builder.h>

namespace onnxserve::server {

// The tag of one operation of a call: handling it calls the member of the call that the operation's outcome
// goes to (`ok` as gRPC reports it). Without an allocation or a virtual call per event.
class PollEvent {
 public:
  template <auto Member, class Call>
  static PollEvent Of(Call* call) {
    return PollEvent(call, [](void* c, bool ok) { (static_cast<Call*>(c)->*Member)(ok); });
  }
  void Happen(bool ok) { handle_(call_, ok); }

 private:
  PollEvent(void* call, void (*handle)(void*, bool)) : call_(call), handle_(handle) {}

  void* call_;
  void (*handle_)(void* call, bool ok);
};

class GrpcPoller {
 public:
  explicit GrpcPoller(grpc::ServerBuilder& builder);
  ~GrpcPoller();  // Stop()
  GrpcPoller(const GrpcPoller&) = delete;
  GrpcPoller& operator=(const GrpcPoller&) = delete;

  // The queue every call is requested on and completes on.
  grpc::ServerCompletionQueue* queue() const { return queue_.get(); }

  // Call objects are counted (PolledCallCount) from their construction (before they request their call) to
  // their destruction, so that Stop waits for them. Thread-safe.
  void CallBegan() { calls_.fetch_add(1, std::memory_order_relaxed); }
  void CallEnded();

  // Starts the thread; the server must have been built.
  void Start();
  // The server must have been shut down (which fails the calls requested and not arrived, and lets no new one
  // arrive, so the count reaches 0 once the calls in flight end). Idempotent.
  void Stop();

 private:
  // Handles the queue's events until it is shut down and drained.
  void Poll();

  std::unique_ptr<grpc::ServerCompletionQueue> queue_;
  std::atomic<int64_t> calls_{0};
  std::thread thread_;
  bool stopped_ = false;
};

// The first member of every call object: counts the call on `poller` for as long as the object exists, the rest
// of its members included (the queue must outlive their destruction).
class PolledCallCount {
 public:
  explicit PolledCallCount(GrpcPoller& poller) : poller_(poller) { poller_.CallBegan(); }
  ~PolledCallCount() { poller_.CallEnded(); }
  PolledCallCount(const PolledCallCount&) = delete;
  PolledCallCount& operator=(const PolledCallCount&) = delete;

  GrpcPoller& poller() const { return poller_; }
  grpc::ServerCompletionQueue* queue() const { return poller_.queue(); }

 private:
  GrpcPoller& poller_;
};

}  // namespace onnxserve::server

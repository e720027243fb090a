#include "server/protocol/grpc_poller.h"

namespace onnxserve::server {

GrpcPoller::GrpcPoller(grpc::ServerBuilder& builder) : queue_(builder.AddCompletionQueue()) {}

GrpcPoller::~GrpcPoller() { Stop(); }

void GrpcPoller::CallEnded() {
  if (calls_.fetch_sub(1, std::memory_order_acq_rel) == 1) calls_.notify_all();
}

void GrpcPoller::Start() { thread_ = std::thread([this] { Poll(); }); }

void GrpcPoller::Poll() {
  void* tag = nullptr;
  bool ok = false;
  while (queue_->Next(&tag, &ok)) static_cast<PollEvent*>(tag)->Happen(ok);
}

void GrpcPoller::Stop() {
  if (stopped_) return;
  stopped_ = true;
  // gRPC must see no operation on a queue that is shut down, and a call's last events are still to be handled.
  if (thread_.joinable()) {
    for (int64_t left = calls_.load(); left != 0; left = calls_.load()) calls_.wait(left);
    queue_->Shutdown();
    thread_.join();
  } else {  // never started (the server did not build, or failed later): the calls end as the queue drains
    queue_->Shutdown();
    Poll();
  }
}

}  // namespace onnxserve::server

#include "server/protocol/stream_infer_call.h"

#include <deque>
#include <memory>
#include <mutex>

#include <grpcpp/support/async_stream.h>
#include <grpcpp/support/byte_buffer.h>

#include "absl/strings/str_cat.h"
#include "server/protocol/status.h"

namespace onnxserve::server {
namespace {

using inference::ModelInferRequest;
using inference::ModelStreamInferResponse;

// One ModelStreamInfer call: reads requests one after another and runs them concurrently, at most
// kMaxInFlightPerStream unanswered at a time (past that it stops reading: gRPC's flow control then holds the
// client back); writes one response per request in completion order (errors in error_message); and finishes
// once the client has half-closed and every response is written, with INVALID_ARGUMENT instead of OK when a
// message did not decode. Deletes itself once finished and done.
//
// Its events come on the polling thread, answers on workers. Every decision is made under mu_ by Advance();
// the gRPC operations it decides on are started after the lock is released, Finish last of all, because the
// poller may delete the call the moment the finish and done events have come.
class StreamInferCall {
 public:
  static void Await(InferenceService& service, GrpcPoller& poller) { new StreamInferCall(service, poller); }

 private:
  StreamInferCall(InferenceService& service, GrpcPoller& poller) : count_(poller), service_(service) {
    context_.AsyncNotifyWhenDone(&done_);
    service_.RequestModelStreamInfer(&context_, &stream_, count_.queue(), count_.queue(), &arrived_);
  }
  StreamInferCall(const StreamInferCall&) = delete;
  StreamInferCall& operator=(const StreamInferCall&) = delete;

  struct Call {
    ModelInferRequest request;
    ModelStreamInferResponse response;
  };

  void OnArrived(bool ok) {
    if (!ok) {  // the server is shutting down; a call that never arrived gets no done event
      delete this;
      return;
    }
    Await(service_, count_.poller());
    std::unique_lock<std::mutex> lock(mu_);
    if (absl::Status allowed = service_.Allowed(&context_, "ModelStreamInfer"); !allowed.ok()) {
      reads_done_ = true;  // refused before it reads anything
      final_status_ = ToGrpcStatus(allowed);
    }
    Advance(std::move(lock));
  }

  void OnReadDone(bool ok) {
    auto call = std::make_shared<Call>();
    const bool decoded = ok && Decode(incoming_, call->request);
    incoming_.Clear();
    std::unique_lock<std::mutex> lock(mu_);
    reading_ = false;
    ++messages_;
    if (!decoded) {
      reads_done_ = true;
      if (ok) {
        final_status_ = grpc::Status(grpc::INVALID_ARGUMENT,
                                     absl::StrCat("message ", messages_, " of the stream is not a ModelInferRequest"));
      }
      return Advance(std::move(lock));
    }
    ++in_flight_;
    lock.unlock();
    // Reads are not done, so the stream cannot finish, and `this` outlives Infer even if the call completes.
    service_.Infer(std::shared_ptr<const ModelInferRequest>(call, &call->request), ControlOf(&context_),
                   call->response.mutable_infer_response(),
                   [this, call](const absl::Status& status) { Complete(*call, status); });
    Advance(std::unique_lock<std::mutex>(mu_));
  }

  void OnWriteDone(bool ok) {
    std::unique_lock<std::mutex> lock(mu_);
    writing_ = false;
    writes_.pop_front();
    if (!ok) {
      broken_ = true;
      writes_.clear();
    }
    Advance(std::move(lock));
  }

  void OnFinished(bool) { EventPassed(); }
  void OnDone(bool) { EventPassed(); }
  void EventPassed() {
    if (events_left_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  static bool Decode(grpc::ByteBuffer& buffer, ModelInferRequest& request) {
    return grpc::SerializationTraits<ModelInferRequest>::Deserialize(&buffer, &request).ok();
  }

  void Complete(Call& call, const absl::Status& status) {
    if (!status.ok()) {
      call.response.Clear();
      call.response.set_error_message(std::string(status.message()));
      // A name longer than any model's is not echoed: it may be megabytes.
      if (call.request.model_name().size() <= kMaxModelNameBytes) {
        call.response.mutable_infer_response()->set_model_name(call.request.model_name());
      }
      call.response.mutable_infer_response()->set_id(call.request.id());
    }
    grpc::ByteBuffer encoded;
    bool own_buffer = false;
    const bool serialized =
        grpc::SerializationTraits<ModelStreamInferResponse>::Serialize(call.response, &encoded, &own_buffer).ok();
    std::unique_lock<std::mutex> lock(mu_);
    --in_flight_;
    if (!serialized) {
      final_status_ = grpc::Status(grpc::INTERNAL, "a response could not be serialized");
    } else if (!broken_) {
      writes_.push_back(std::move(encoded));
    }
    Advance(std::move(lock));
  }

  // Starts the next read or write, or finishes, as the state allows. Called with mu_ held by the change of
  // state it follows, in the same critical section: a thread that changed the state and then looked again
  // could find the call already finished and deleted by another. After unlocking, a thread acts only on a
  // read or write it started, and either keeps the stream from finishing until it completes.
  void Advance(std::unique_lock<std::mutex> lock) {
    bool read = false, finish = false;
    grpc::ByteBuffer* write = nullptr;
    grpc::Status status;
    {
      if (!reads_done_ && !reading_ && in_flight_ + static_cast<int>(writes_.size()) < kMaxInFlightPerStream) {
        reading_ = read = true;
      }
      if (!writing_ && !writes_.empty()) {
        writing_ = true;
        write = &writes_.front();  // a deque keeps it in place while later responses are appended
      }
      if (reads_done_ && in_flight_ == 0 && !writing_ && !reading_ && writes_.empty() && !finished_) {
        finished_ = finish = true;
        status = final_status_;
      }
      lock.unlock();
    }
    if (read) stream_.Read(&incoming_, &read_);
    if (write != nullptr) stream_.Write(*write, &written_);
    if (finish) stream_.Finish(status, &finished_event_);  // last: `this` may be gone once it returns
  }

  // Unanswered requests one stream may hold: bounds its memory (requests and responses waiting to be
  // written) while keeping a batcher fed.
  static constexpr int kMaxInFlightPerStream = 64;

  PolledCallCount count_;
  InferenceService& service_;
  grpc::ServerContext context_;
  grpc::ServerAsyncReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer> stream_{&context_};
  grpc::ByteBuffer incoming_;
  std::mutex mu_;
  std::deque<grpc::ByteBuffer> writes_;  // front is being written while writing_
  int in_flight_ = 0;
  int64_t messages_ = 0;
  grpc::Status final_status_;
  bool reading_ = false;
  bool reads_done_ = false;
  bool writing_ = false;
  bool broken_ = false;
  bool finished_ = false;
  std::atomic<int> events_left_{2};  // finished and done, once arrived
  PollEvent arrived_ = PollEvent::Of<&StreamInferCall::OnArrived>(this);
  PollEvent read_ = PollEvent::Of<&StreamInferCall::OnReadDone>(this);
  PollEvent written_ = PollEvent::Of<&StreamInferCall::OnWriteDone>(this);
  PollEvent finished_event_ = PollEvent::Of<&StreamInferCall::OnFinished>(this);
  PollEvent done_ = PollEvent::Of<&StreamInferCall::OnDone>(this);
};

}  // namespace

void AwaitStreamInfer(InferenceService& service, GrpcPoller& poller) { StreamInferCall::Await(service, poller); }

}  // namespace onnxserve::server

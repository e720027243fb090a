// End-to-end tests of `onnxserve serve`: every RPC, input validation, batching, queue limits, timeouts,
// repository control modes and graceful shutdown, against the real binary through the generated stubs.
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <thread>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/descriptor_database.h>
#include <google/protobuf/dynamic_message.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/proto_utils.h>  // SerializationTraits for protobuf messages
#include <gtest/gtest.h>

#include "grpc_service.grpc.pb.h"
#include "health.grpc.pb.h"
#include "reflection.grpc.pb.h"
#include "tests/e2e/server_process.h"

namespace onnxserve::e2e {
namespace {

using inference::GRPCInferenceService;
using inference::ModelInferRequest;
using inference::ModelInferResponse;

constexpr auto kCallTimeout = std::chrono::seconds(10);

std::unique_ptr<grpc::ClientContext> Context(std::chrono::milliseconds timeout = kCallTimeout) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
  return ctx;
}

void AddRawInput(ModelInferRequest& req, const std::string& name, const std::vector<int64_t>& shape,
                 const std::vector<float>& values) {
  auto* input = req.add_inputs();
  input->set_name(name);
  input->set_datatype("FP32");
  for (int64_t d : shape) input->add_shape(d);
  req.add_raw_input_contents()->assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

// A request for the add models: `rows` rows of x = base + i, y = 10 * (base + i).
ModelInferRequest AddRequest(const std::string& model, int rows, float base) {
  ModelInferRequest req;
  req.set_model_name(model);
  std::vector<float> x, y;
  for (int i = 0; i < rows * 4; ++i) {
    x.push_back(base + static_cast<float>(i));
    y.push_back(10 * (base + static_cast<float>(i)));
  }
  AddRawInput(req, "x", {rows, 4}, x);
  AddRawInput(req, "y", {rows, 4}, y);
  return req;
}

// z = x + y = 11 * (base + i).
std::vector<float> ExpectedSum(int rows, float base) {
  std::vector<float> z;
  for (int i = 0; i < rows * 4; ++i) z.push_back(11 * (base + static_cast<float>(i)));
  return z;
}

// x as AddRequest sends it: base + i.
std::vector<float> ExpectedEcho(int rows, float base) {
  std::vector<float> x;
  for (int i = 0; i < rows * 4; ++i) x.push_back(base + static_cast<float>(i));
  return x;
}

// A request for the held models: AddRequest's rows, each with `trips` Loop iterations.
ModelInferRequest HeldRequest(const std::string& model, int rows, float base, int64_t trips) {
  ModelInferRequest req = AddRequest(model, rows, base);
  auto* input = req.add_inputs();
  input->set_name("trips");
  input->set_datatype("INT64");
  input->add_shape(rows);
  const std::vector<int64_t> values(static_cast<size_t>(rows), trips);
  req.add_raw_input_contents()->assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(trips));
  return req;
}

std::vector<float> RawFloats(const ModelInferResponse& resp, int output) {
  const std::string& raw = resp.raw_output_contents(output);
  std::vector<float> values(raw.size() / sizeof(float));
  std::memcpy(values.data(), raw.data(), raw.size());
  return values;
}

// A request for the spin models: a Loop of `trips` iterations.
ModelInferRequest SpinRequest(const std::string& model, int64_t trips) {
  ModelInferRequest req;
  req.set_model_name(model);
  auto* input = req.add_inputs();
  input->set_name("trips");
  input->set_datatype("INT64");
  input->add_shape(1);
  req.add_raw_input_contents()->assign(reinterpret_cast<const char*>(&trips), sizeof(trips));
  return req;
}

constexpr int64_t kForever = 10'000'000'000'000;  // Loop trips: hours of work

// A request for an Expand model ("budgeted", "unbounded"): x = 3 broadcast to `rows` x `cols`.
ModelInferRequest ExpandRequest(int64_t rows, int64_t cols, const std::string& model = "budgeted") {
  ModelInferRequest req;
  req.set_model_name(model);
  AddRawInput(req, "x", {1}, {3.f});
  auto* shape = req.add_inputs();
  shape->set_name("shape");
  shape->set_datatype("INT64");
  shape->add_shape(2);
  const int64_t dims[] = {rows, cols};
  req.add_raw_input_contents()->assign(reinterpret_cast<const char*>(dims), sizeof(dims));
  return req;
}

grpc::Status Infer(GRPCInferenceService::Stub& stub, const ModelInferRequest& req, ModelInferResponse* resp,
                   std::chrono::milliseconds timeout = kCallTimeout) {
  return stub.ModelInfer(Context(timeout).get(), req, resp);
}

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    repository_ = new std::string(MakeRepository("shared"));
    server_ = ServerProcess::Start(*repository_, {"--max-request-bytes", "65536", "--max-tensor-elements", "1000000"})
                  .release();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete repository_;
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    stub_ = GRPCInferenceService::NewStub(server_->channel());
  }

  static std::string* repository_;
  static ServerProcess* server_;
  std::unique_ptr<GRPCInferenceService::Stub> stub_;
};
std::string* ServerTest::repository_ = nullptr;
ServerProcess* ServerTest::server_ = nullptr;

TEST_F(ServerTest, LivenessReadinessAndServerMetadata) {
  inference::ServerLiveResponse live;
  ASSERT_TRUE(stub_->ServerLive(Context().get(), {}, &live).ok());
  EXPECT_TRUE(live.live());
  inference::ServerReadyResponse ready;
  ASSERT_TRUE(stub_->ServerReady(Context().get(), {}, &ready).ok());
  EXPECT_TRUE(ready.ready());
  inference::ServerMetadataResponse meta;
  ASSERT_TRUE(stub_->ServerMetadata(Context().get(), {}, &meta).ok());
  EXPECT_EQ(meta.name(), "onnxserve");
  EXPECT_FALSE(meta.version().empty());
  EXPECT_NE(std::find(meta.extensions().begin(), meta.extensions().end(), "model_repository"),
            meta.extensions().end());
}

TEST_F(ServerTest, ModelReadyAndMetadataDescribeTheModel) {
  inference::ModelReadyRequest ready_req;
  ready_req.set_name("add");
  inference::ModelReadyResponse ready;
  ASSERT_TRUE(stub_->ModelReady(Context().get(), ready_req, &ready).ok());
  EXPECT_TRUE(ready.ready());

  inference::ModelMetadataRequest req;
  req.set_name("add");
  inference::ModelMetadataResponse meta;
  ASSERT_TRUE(stub_->ModelMetadata(Context().get(), req, &meta).ok());
  EXPECT_EQ(meta.name(), "add");
  EXPECT_EQ(meta.platform(), "onnxruntime_onnx");
  ASSERT_EQ(meta.versions_size(), 1);
  EXPECT_EQ(meta.versions(0), "1");
  ASSERT_EQ(meta.inputs_size(), 2);
  EXPECT_EQ(meta.inputs(0).name(), "x");
  EXPECT_EQ(meta.inputs(0).datatype(), "FP32");
  EXPECT_EQ(std::vector<int64_t>(meta.inputs(0).shape().begin(), meta.inputs(0).shape().end()),
            (std::vector<int64_t>{-1, 4}));
  ASSERT_EQ(meta.outputs_size(), 2);
  EXPECT_EQ(meta.outputs(1).name(), "w");
}

TEST_F(ServerTest, ModelConfigIsCompletedFromTheModel) {
  inference::ModelConfigRequest req;
  req.set_name("add");
  inference::ModelConfigResponse resp;
  ASSERT_TRUE(stub_->ModelConfig(Context().get(), req, &resp).ok());
  EXPECT_EQ(resp.config().name(), "add");
  EXPECT_EQ(resp.config().max_batch_size(), 32);  // every first dim is dynamic: batching on
  EXPECT_TRUE(resp.config().has_dynamic_batching());
  ASSERT_EQ(resp.config().input_size(), 2);
  EXPECT_EQ(resp.config().input(0).data_type(), inference::TYPE_FP32);
  EXPECT_EQ(resp.config().input(0).dims_size(), 1);  // [4]: the batch dim is implied

  req.set_name("fixed");
  ASSERT_TRUE(stub_->ModelConfig(Context().get(), req, &resp).ok());
  EXPECT_EQ(resp.config().max_batch_size(), 0);  // fixed shapes: no batching
}

TEST_F(ServerTest, RepositoryIndexListsEveryModelReady) {
  inference::RepositoryIndexResponse index;
  ASSERT_TRUE(stub_->RepositoryIndex(Context().get(), {}, &index).ok());
  std::vector<std::string> names;
  for (const auto& m : index.models()) {
    names.push_back(m.name());
    EXPECT_EQ(m.state(), "READY") << m.name() << ": " << m.reason();
    EXPECT_EQ(m.version(), "1");
  }
  EXPECT_EQ(names, (std::vector<std::string>{"add", "batched", "budgeted", "fixed", "held", "prioritized", "renamed",
                                             "spin", "spin_limited", "strings", "timeout", "tiny_queue", "unbounded",
                                             "warmed", "wide_sum", "with_sequence"}));
}

TEST_F(ServerTest, InferRawAddsAndEchoesId) {
  ModelInferRequest req = AddRequest("add", 2, 1);
  req.set_id("req-7");
  ModelInferResponse resp;
  ASSERT_TRUE(Infer(*stub_, req, &resp).ok());
  EXPECT_EQ(resp.id(), "req-7");
  EXPECT_EQ(resp.model_name(), "add");
  EXPECT_EQ(resp.model_version(), "1");
  ASSERT_EQ(resp.outputs_size(), 2);
  EXPECT_EQ(resp.outputs(0).name(), "z");
  EXPECT_EQ(resp.outputs(0).datatype(), "FP32");
  EXPECT_EQ(std::vector<int64_t>(resp.outputs(0).shape().begin(), resp.outputs(0).shape().end()),
            (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(RawFloats(resp, 0), ExpectedSum(2, 1));
}

// Raw inputs are read in place from their request message, and an Identity output shares its input's storage:
// each answer must carry its own request's bytes, never those of another request in flight or since gone. "add"
// batches (w = x), "fixed" does not (b = a) and runs a request on the thread that received it when it can.
TEST_F(ServerTest, AnOutputThatIsAnInputAnswersEveryRequestWithItsOwnBytes) {
  constexpr int kClients = 8;
  constexpr int kRequests = 40;
  std::vector<std::future<void>> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.push_back(std::async(std::launch::async, [this, c] {
      for (int i = 0; i < kRequests; ++i) {
        const float base = 1000.f * static_cast<float>(c) + static_cast<float>(i);
        const int rows = 1 + (c + i) % 3;
        ModelInferResponse added;
        ASSERT_TRUE(Infer(*stub_, AddRequest("add", rows, base), &added).ok());
        ASSERT_EQ(added.outputs_size(), 2);
        EXPECT_EQ(RawFloats(added, 1), ExpectedEcho(rows, base)) << "client " << c << " request " << i;
        ModelInferRequest fixed;
        fixed.set_model_name("fixed");
        AddRawInput(fixed, "a", {2, 2}, {base, base + 1, base + 2, base + 3});
        ModelInferResponse echoed;
        ASSERT_TRUE(Infer(*stub_, fixed, &echoed).ok());
        EXPECT_EQ(RawFloats(echoed, 0), ExpectedEcho(1, base)) << "client " << c << " request " << i;
      }
    }));
  }
  for (auto& client : clients) client.get();
}

TEST_F(ServerTest, InferTypedContentsAndRequestedOutputSubset) {
  ModelInferRequest req;
  req.set_model_name("add");
  req.set_model_version("1");
  for (const char* name : {"x", "y"}) {
    auto* input = req.add_inputs();
    input->set_name(name);
    input->set_datatype("FP32");
    input->add_shape(1);
    input->add_shape(4);
    for (float v : {1.f, 2.f, 3.f, 4.f}) input->mutable_contents()->add_fp32_contents(v);
  }
  req.add_outputs()->set_name("w");
  ModelInferResponse resp;
  ASSERT_TRUE(Infer(*stub_, req, &resp).ok());
  ASSERT_EQ(resp.outputs_size(), 1);
  EXPECT_EQ(resp.outputs(0).name(), "w");
  EXPECT_EQ(RawFloats(resp, 0), (std::vector<float>{1, 2, 3, 4}));
}

TEST_F(ServerTest, ANonTensorOutputIsRefusedByNameWhileTheTensorOutputsServe) {
  ModelInferRequest req;
  req.set_model_name("with_sequence");
  AddRawInput(req, "x", {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  ModelInferResponse resp;
  grpc::Status status = Infer(*stub_, req, &resp);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(resp.outputs_size(), 1);  // every served output: the sequence is not one
  EXPECT_EQ(resp.outputs(0).name(), "y");
  EXPECT_EQ(RawFloats(resp, 0), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));

  req.add_outputs()->set_name("rows");
  status = Infer(*stub_, req, &resp);
  EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("output \"rows\" of model \"with_sequence\" is seq(float"),
            std::string::npos)
      << status.error_message();
}

TEST_F(ServerTest, BytesTensorsRoundTripWithLengthPrefixes) {
  ModelInferRequest req;
  req.set_model_name("strings");
  auto* input = req.add_inputs();
  input->set_name("s");
  input->set_datatype("BYTES");
  input->add_shape(2);
  std::string raw;
  for (const std::string s : {"hi", "onnx"}) {
    const uint32_t n = static_cast<uint32_t>(s.size());
    raw.append(reinterpret_cast<const char*>(&n), 4);  // little-endian on every platform we run
    raw += s;
  }
  req.add_raw_input_contents(raw);
  ModelInferResponse resp;
  ASSERT_TRUE(Infer(*stub_, req, &resp).ok());
  ASSERT_EQ(resp.outputs_size(), 1);
  EXPECT_EQ(resp.outputs(0).datatype(), "BYTES");
  EXPECT_EQ(resp.raw_output_contents(0), raw);
}

TEST_F(ServerTest, StreamInferAnswersEveryRequestWithErrorsInline) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
  auto stream = stub_->ModelStreamInfer(&ctx);
  ModelInferRequest good = AddRequest("add", 1, 5);
  good.set_id("a");
  ModelInferRequest bad = AddRequest("nope", 1, 5);
  bad.set_id("b");
  ModelInferRequest good2 = AddRequest("add", 3, 2);
  good2.set_id("c");
  ASSERT_TRUE(stream->Write(good));
  ASSERT_TRUE(stream->Write(bad));
  ASSERT_TRUE(stream->Write(good2));
  ASSERT_TRUE(stream->WritesDone());
  std::map<std::string, inference::ModelStreamInferResponse> by_id;
  inference::ModelStreamInferResponse resp;
  while (stream->Read(&resp)) by_id[resp.infer_response().id()] = resp;
  ASSERT_TRUE(stream->Finish().ok());
  ASSERT_EQ(by_id.size(), 3u);
  EXPECT_EQ(by_id["a"].error_message(), "");
  EXPECT_EQ(RawFloats(by_id["a"].infer_response(), 0), ExpectedSum(1, 5));
  EXPECT_NE(by_id["b"].error_message().find("unknown model \"nope\""), std::string::npos);
  EXPECT_EQ(RawFloats(by_id["c"].infer_response(), 0), ExpectedSum(3, 2));
}

// ModelStreamInfer with messages as bytes, so that a test can send one that is not a ModelInferRequest.
std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>> RawStream(grpc::Channel& channel,
                                                                                     grpc::ClientContext& ctx) {
  const grpc::internal::RpcMethod method("/inference.GRPCInferenceService/ModelStreamInfer",
                                         grpc::internal::RpcMethod::BIDI_STREAMING);
  return std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>>(
      grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer, grpc::ByteBuffer>::Create(&channel, method, &ctx));
}

grpc::ByteBuffer Bytes(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

TEST_F(ServerTest, StreamEndsWithInvalidArgumentAfterAMessageThatDoesNotDecode) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
  auto stream = RawStream(*server_->channel(), ctx);
  ModelInferRequest good = AddRequest("add", 1, 5);
  good.set_id("good");
  ASSERT_TRUE(stream->Write(Bytes(good.SerializeAsString())));
  // Field 1 (model_name) claims 2^35 bytes: no ModelInferRequest decodes from this.
  ASSERT_TRUE(stream->Write(Bytes(std::string("\x0a\x80\x80\x80\x80\x80\x01", 7))));
  stream->WritesDone();
  std::vector<inference::ModelStreamInferResponse> responses;
  grpc::ByteBuffer buffer;
  while (stream->Read(&buffer)) {
    inference::ModelStreamInferResponse response;
    ASSERT_TRUE(grpc::SerializationTraits<inference::ModelStreamInferResponse>::Deserialize(&buffer, &response).ok());
    responses.push_back(response);
  }
  const grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT) << status.error_message();
  EXPECT_NE(status.error_message().find("message 2 of the stream"), std::string::npos) << status.error_message();
  ASSERT_EQ(responses.size(), 1u);  // the request before it is still answered
  EXPECT_EQ(responses[0].infer_response().id(), "good");
  EXPECT_EQ(RawFloats(responses[0].infer_response(), 0), ExpectedSum(1, 5));
}

TEST_F(ServerTest, StreamAnswersManyMoreRequestsThanItHoldsInFlight) {
  // Far past the per-stream bound on requests in flight, written before any response is read: the server
  // stops reading while it holds the bound and resumes as responses go out, losing none.
  constexpr int kRequests = 500;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto stream = stub_->ModelStreamInfer(&ctx);
  auto writer = std::async(std::launch::async, [&] {
    for (int i = 0; i < kRequests; ++i) {
      ModelInferRequest req = AddRequest("add", 1, static_cast<float>(i));
      req.set_id(std::to_string(i));
      if (!stream->Write(req)) return false;
    }
    return stream->WritesDone();
  });
  std::map<std::string, std::vector<float>> sums, echoes;
  inference::ModelStreamInferResponse resp;
  while (stream->Read(&resp)) {
    EXPECT_EQ(resp.error_message(), "");
    sums[resp.infer_response().id()] = RawFloats(resp.infer_response(), 0);
    echoes[resp.infer_response().id()] = RawFloats(resp.infer_response(), 1);
  }
  EXPECT_TRUE(writer.get());
  ASSERT_TRUE(stream->Finish().ok());
  ASSERT_EQ(sums.size(), static_cast<size_t>(kRequests));
  for (int i = 0; i < kRequests; ++i) {
    EXPECT_EQ(sums[std::to_string(i)], ExpectedSum(1, static_cast<float>(i))) << i;
    // w = x shares the storage of x, which is read in place from its own message.
    EXPECT_EQ(echoes[std::to_string(i)], ExpectedEcho(1, static_cast<float>(i))) << i;
  }
}

TEST_F(ServerTest, ARunIsStoppedAtTheClientDeadlineAndTheModelServesAgain) {
  ModelInferResponse resp;
  const auto start = std::chrono::steady_clock::now();
  grpc::Status status = Infer(*stub_, SpinRequest("spin", kForever), &resp, std::chrono::milliseconds(300));
  EXPECT_EQ(status.error_code(), grpc::DEADLINE_EXCEEDED) << status.error_message();
  // The model has one instance: it answers again only if the endless run was stopped.
  status = Infer(*stub_, SpinRequest("spin", 5), &resp);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(RawFloats(resp, 0), std::vector<float>{5});
  EXPECT_LT(std::chrono::steady_clock::now() - start, kCallTimeout);
}

TEST_F(ServerTest, ACancelledCallStopsItsRunAndTheModelServesAgain) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
  auto spin = std::async(std::launch::async, [&] {
    ModelInferResponse resp;
    return stub_->ModelInfer(&ctx, SpinRequest("spin", kForever), &resp);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ctx.TryCancel();
  EXPECT_EQ(spin.get().error_code(), grpc::CANCELLED);
  // The model has one instance: it answers again only if the endless run was stopped.
  ModelInferResponse resp;
  const grpc::Status status = Infer(*stub_, SpinRequest("spin", 4), &resp);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(RawFloats(resp, 0), std::vector<float>{4});
}

// gRPC's calls share one polling thread: a run of a model that does not batch, started on an idle instance, must
// not run on it, or every other call would wait for the run's end.
TEST_F(ServerTest, ARunThatLastsUntilCancelledHoldsUpNoOtherCall) {
  grpc::ClientContext spin_ctx;
  spin_ctx.set_deadline(std::chrono::system_clock::now() + kCallTimeout);  // a failing test ends too
  auto spin = std::async(std::launch::async, [&] {
    ModelInferResponse resp;
    return stub_->ModelInfer(&spin_ctx, SpinRequest("spin", kForever), &resp);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  inference::ServerLiveResponse live;
  EXPECT_TRUE(stub_->ServerLive(Context().get(), {}, &live).ok());
  EXPECT_TRUE(live.live());
  ModelInferResponse resp;
  const grpc::Status status = Infer(*stub_, AddRequest("add", 2, 1), &resp);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(RawFloats(resp, 0), ExpectedSum(2, 1));
  spin_ctx.TryCancel();
  EXPECT_EQ(spin.get().error_code(), grpc::CANCELLED);
}

TEST_F(ServerTest, ExecutionTimeoutStopsARunTheClientWouldWaitForForever) {
  ModelInferResponse resp;
  grpc::Status status = Infer(*stub_, SpinRequest("spin_limited", kForever), &resp);
  EXPECT_EQ(status.error_code(), grpc::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_NE(status.error_message().find("deadline"), std::string::npos) << status.error_message();
  status = Infer(*stub_, SpinRequest("spin_limited", 3), &resp);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(RawFloats(resp, 0), std::vector<float>{3});
}

TEST_F(ServerTest, ARequestPastTheModelsMemoryBudgetFailsAndTheModelServesAgain) {
  ModelInferResponse resp;
  grpc::Status status = Infer(*stub_, ExpandRequest(500, 500), &resp);  // 1 MB against a budget of 64 KiB
  EXPECT_EQ(status.error_code(), grpc::RESOURCE_EXHAUSTED) << status.error_message();
  for (const char* part : {"model \"budgeted\"", "memory budget of 65536 bytes", "node \"expand\""}) {
    EXPECT_NE(status.error_message().find(part), std::string::npos) << part << ": " << status.error_message();
  }
  status = Infer(*stub_, ExpandRequest(2, 3), &resp);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(RawFloats(resp, 0), std::vector<float>(6, 3.f));
  inference::ServerLiveResponse live;
  ASSERT_TRUE(stub_->ServerLive(Context().get(), {}, &live).ok());
  EXPECT_TRUE(live.live());
}

TEST_F(ServerTest, MaxTensorElementsBoundsWhatAModelComputes) {
  ModelInferResponse resp;
  grpc::Status status = Infer(*stub_, ExpandRequest(2000, 1000), &resp);  // past --max-tensor-elements 1000000
  EXPECT_EQ(status.error_code(), grpc::RESOURCE_EXHAUSTED) << status.error_message();
  EXPECT_NE(status.error_message().find("more than 1000000 elements"), std::string::npos) << status.error_message();
}

// Protobuf cannot serialize a message of 2 GiB, and gRPC's unary path aborted the server when its response
// could not be serialized: one request for a 2.4 GB output ended it.
TEST(LargeResponseTest, AnAnswerPastWhatGrpcCarriesIsResourceExhaustedAndTheServerServesOn) {
  // No run memory budget: on a small machine the default one would refuse the run before its answer.
  auto server = ServerProcess::Start(MakeRepository("large-response"), {"--model-memory-budget-bytes", "0"});
  ASSERT_NE(server, nullptr);
  auto stub = GRPCInferenceService::NewStub(server->channel());
  const ModelInferRequest too_large = ExpandRequest(600'000, 1'000, "unbounded");  // 2.4 GB of floats
  ModelInferResponse resp;
  grpc::Status status = Infer(*stub, too_large, &resp, std::chrono::seconds(60));
  EXPECT_EQ(status.error_code(), grpc::RESOURCE_EXHAUSTED) << status.error_message();
  EXPECT_NE(status.error_message().find("REST with binary data"), std::string::npos) << status.error_message();

  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto stream = stub->ModelStreamInfer(&ctx);
  ASSERT_TRUE(stream->Write(too_large));
  ASSERT_TRUE(stream->Write(ExpandRequest(2, 3, "unbounded")));
  ASSERT_TRUE(stream->WritesDone());
  std::vector<inference::ModelStreamInferResponse> answers(2);
  ASSERT_TRUE(stream->Read(&answers[0]));
  ASSERT_TRUE(stream->Read(&answers[1]));
  EXPECT_TRUE(stream->Finish().ok());
  std::sort(answers.begin(), answers.end(),
            [](const auto& a, const auto& b) { return a.error_message() < b.error_message(); });
  EXPECT_EQ(RawFloats(answers[0].infer_response(), 0), std::vector<float>(6, 3.f));
  EXPECT_NE(answers[1].error_message().find("more than the"), std::string::npos) << answers[1].error_message();

  status = Infer(*stub, ExpandRequest(2, 3, "unbounded"), &resp);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(RawFloats(resp, 0), std::vector<float>(6, 3.f));
}

// With no budget by default, one run of a model that allocates more than the machine has (within the tensor
// limits: 16 GiB a tensor, any number of them) had the kernel end the server. By default a run may now hold
// half the memory the process may use.
TEST(RunMemoryBudgetTest, ByDefaultARunPastHalfTheMachinesMemoryFailsAndTheServerServesOn) {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t machine_kib = 0;
  while (meminfo >> key && key != "MemTotal:") {}
  if (!(meminfo >> machine_kib)) GTEST_SKIP() << "no MemTotal in /proc/meminfo";
  auto server = ServerProcess::Start(MakeRepository("default-budget"), {});
  ASSERT_NE(server, nullptr);
  const std::string log = server->Log();
  const size_t at = log.find("event=run_memory_budget bytes=");
  ASSERT_NE(at, std::string::npos) << log;
  const int64_t budget = std::stoll(log.substr(at + std::strlen("event=run_memory_budget bytes=")));
  EXPECT_GT(budget, 0);
  EXPECT_LE(budget, machine_kib * 1024 / 2);

  constexpr int64_t kRows = 1'000'000, kCols = 4'000;  // 16e9 bytes of floats, within the tensor limits
  if (budget >= kRows * kCols * 4) GTEST_SKIP() << "a machine this large lets the run hold 16 GB";
  auto stub = GRPCInferenceService::NewStub(server->channel());
  ModelInferResponse resp;
  grpc::Status status = Infer(*stub, ExpandRequest(kRows, kCols, "unbounded"), &resp);
  EXPECT_EQ(status.error_code(), grpc::RESOURCE_EXHAUSTED) << status.error_message();
  EXPECT_NE(status.error_message().find("memory budget"), std::string::npos) << status.error_message();
  status = Infer(*stub, ExpandRequest(2, 3, "unbounded"), &resp);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(RawFloats(resp, 0), std::vector<float>(6, 3.f));
}

// Clients sending many large requests to a busy model made the server hold every one of them while they
// queued: nothing bounded the total short of the machine's memory.
TEST(MaxHeldRequestBytesTest, ARequestThatWouldPassItIsRefusedUntilTheHeldOneIsAnswered) {
  auto server = ServerProcess::Start(MakeRepository("held-requests"), {"--max-held-request-bytes", "60000"});
  ASSERT_NE(server, nullptr);
  auto stub = GRPCInferenceService::NewStub(server->channel());
  const std::string large_id(40'000, 'i');  // the id makes each request about 40 KB
  auto held = std::async(std::launch::async, [&stub, &large_id] {
    ModelInferRequest req = SpinRequest("spin", kForever);
    req.set_id(large_id);
    ModelInferResponse resp;
    grpc::Status status;
    do {  // refused only if it arrived while one of the short requests below was held
      status = Infer(*stub, req, &resp, std::chrono::milliseconds(3000));
    } while (status.error_code() == grpc::RESOURCE_EXHAUSTED);
    return status;
  });
  ModelInferRequest second = SpinRequest("spin", 5);
  second.set_id(large_id);
  // Until the held request has arrived the second one is answered; from then on it is refused.
  grpc::Status refused;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(2500);
  while (refused.ok() && std::chrono::steady_clock::now() < give_up) {
    ModelInferResponse resp;
    refused = Infer(*stub, second, &resp);
  }
  EXPECT_EQ(refused.error_code(), grpc::RESOURCE_EXHAUSTED) << refused.error_message();
  EXPECT_NE(refused.error_message().find("--max-held-request-bytes 60000"), std::string::npos)
      << refused.error_message();
  EXPECT_EQ(held.get().error_code(), grpc::DEADLINE_EXCEEDED);
  // The client sees its deadline pass before the server has stopped the run and let go of its bytes.
  ModelInferResponse resp;
  grpc::Status after = Infer(*stub, second, &resp);
  for (int retry = 0; retry < 100 && after.error_code() == grpc::RESOURCE_EXHAUSTED; ++retry) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    after = Infer(*stub, second, &resp);
  }
  ASSERT_TRUE(after.ok()) << after.error_message();
  EXPECT_EQ(RawFloats(resp, 0), std::vector<float>{5});
}

TEST(LimitFlagsTest, AnInvalidLimitIsAStartupErrorNamingItsFlag) {
  const std::string repo = MakeRepository("limit-flags");
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--max-tensor-elements", "0"}, {"--max-tensor-bytes", "-1"}, {"--model-memory-budget-bytes", "-5"}}) {
    std::string log;
    EXPECT_EQ(ServerProcess::RunToExit(repo, {flag, value}, std::chrono::seconds(30), &log), 2) << log;
    EXPECT_NE(log.find(flag + " must be"), std::string::npos) << log;
  }
}

struct BadCase {
  const char* what;
  std::function<void(ModelInferRequest&)> mutate;
  grpc::StatusCode code;
  const char* message;
};

TEST_F(ServerTest, BadRequestsGetTheirCodeAndAMessageNamingTheProblem) {
  const std::vector<BadCase> cases = {
      {"unknown model", [](auto& r) { r.set_model_name("nope"); }, grpc::NOT_FOUND, "unknown model \"nope\""},
      {"unknown version", [](auto& r) { r.set_model_version("9"); }, grpc::NOT_FOUND, "has no version \"9\""},
      {"wrong dtype", [](auto& r) { r.mutable_inputs(0)->set_datatype("INT32"); }, grpc::INVALID_ARGUMENT,
       "input \"x\": expected FP32 [-1,4], got INT32 [1,4]"},
      {"wrong shape", [](auto& r) { r.mutable_inputs(1)->set_shape(1, 5); }, grpc::INVALID_ARGUMENT,
       "input \"y\": expected FP32 [-1,4], got FP32 [1,5]"},
      {"wrong rank", [](auto& r) { r.mutable_inputs(1)->add_shape(1); }, grpc::INVALID_ARGUMENT,
       "input \"y\": expected FP32 [-1,4], got FP32 [1,4,1]"},
      {"byte size", [](auto& r) { r.mutable_raw_input_contents(0)->resize(12); }, grpc::INVALID_ARGUMENT,
       "input \"x\": raw content is 12 bytes, expected 16 for FP32 [1,4]"},
      {"missing input",
       [](auto& r) {
         r.mutable_inputs()->RemoveLast();
         r.mutable_raw_input_contents()->RemoveLast();
       },
       grpc::INVALID_ARGUMENT, "missing input \"y\""},
      {"unknown output", [](auto& r) { r.add_outputs()->set_name("q"); }, grpc::INVALID_ARGUMENT,
       "unknown output \"q\""},
      {"classification",
       [](auto& r) {
         auto* out = r.add_outputs();
         out->set_name("z");
         (*out->mutable_parameters())["classification"].set_int64_param(3);
       },
       grpc::UNIMPLEMENTED, "classification extension is not supported"},
      {"batch too big", [](auto& r) { r = AddRequest("add", 33, 0); }, grpc::INVALID_ARGUMENT,
       "batch size 33 exceeds max_batch_size 32"},
      // Each copy of an output costs the server its bytes again: a few bytes per name multiplied the answer.
      {"output twice",
       [](auto& r) {
         r.add_outputs()->set_name("z");
         r.add_outputs()->set_name("w");
         r.add_outputs()->set_name("z");
       },
       grpc::INVALID_ARGUMENT, "output \"z\" is requested twice"},
  };
  for (const auto& c : cases) {
    ModelInferRequest req = AddRequest("add", 1, 0);
    c.mutate(req);
    ModelInferResponse resp;
    grpc::Status status = Infer(*stub_, req, &resp);
    EXPECT_EQ(status.error_code(), c.code) << c.what << ": " << status.error_message();
    EXPECT_NE(status.error_message().find(c.message), std::string::npos) << c.what << ": " << status.error_message();
  }
}

TEST_F(ServerTest, OversizedRequestIsRejected) {
  ModelInferRequest req = AddRequest("add", 32, 0);
  req.mutable_raw_input_contents(0)->append(70000, 'x');  // past --max-request-bytes 65536
  ModelInferResponse resp;
  grpc::Status status = Infer(*stub_, req, &resp);
  EXPECT_EQ(status.error_code(), grpc::RESOURCE_EXHAUSTED) << status.error_message();
  EXPECT_NE(status.error_message().find("larger than max"), std::string::npos) << status.error_message();
}

// Keeps `model`'s one instance busy until `deadline` from now, when the client gives up and the run stops.
std::future<grpc::Status> Occupy(GRPCInferenceService::Stub& stub, const std::string& model,
                                 std::chrono::milliseconds deadline, bool no_queue_timeout = false) {
  auto call = std::async(std::launch::async, [&stub, model, deadline, no_queue_timeout] {
    ModelInferRequest req = HeldRequest(model, 1, 0, kForever);
    if (no_queue_timeout) (*req.mutable_parameters())["timeout"].set_uint64_param(0);
    ModelInferResponse resp;
    return Infer(stub, req, &resp, deadline);
  });
  // Wide margin for the call to reach the instance on a loaded machine; everything sent afterwards queues.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  return call;
}

inference::ModelStatistics StatisticsOf(GRPCInferenceService::Stub& stub, const std::string& model) {
  inference::ModelStatisticsRequest req;
  req.set_name(model);
  inference::ModelStatisticsResponse stats;
  EXPECT_TRUE(stub.ModelStatistics(Context().get(), req, &stats).ok());
  EXPECT_EQ(stats.model_stats_size(), 1);
  return stats.model_stats_size() == 1 ? stats.model_stats(0) : inference::ModelStatistics();
}

TEST_F(ServerTest, ALoneRequestIsNotHeldForCompany) {
  // "batched" may hold requests 100 ms; one client at a time never overlaps another request, so none is.
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) {
    ModelInferResponse resp;
    ASSERT_TRUE(Infer(*stub_, AddRequest("batched", 1, static_cast<float>(i)), &resp).ok());
  }
  // Ten requests held 100 ms each would take a second; the margin is for a loaded machine.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(900));
}

TEST_F(ServerTest, RequestsQueuedBehindABusyInstanceAreBatchedWithUnbatchedResults) {
  auto blocker = Occupy(*stub_, "held", std::chrono::milliseconds(3000));
  constexpr int kClients = 8;
  std::vector<std::future<std::pair<grpc::Status, ModelInferResponse>>> calls;
  for (int i = 0; i < kClients; ++i) {
    calls.push_back(std::async(std::launch::async, [this, i] {
      ModelInferResponse resp;
      grpc::Status status = Infer(*stub_, HeldRequest("held", 1 + i % 2, 100.f * i, 0), &resp);
      return std::make_pair(status, resp);
    }));
  }
  for (int i = 0; i < kClients; ++i) {
    auto [status, resp] = calls[i].get();
    ASSERT_TRUE(status.ok()) << status.error_message();
    // What the same request gives alone, computed independently: x + y.
    EXPECT_EQ(RawFloats(resp, 0), ExpectedSum(1 + i % 2, 100.f * i)) << "client " << i;
    EXPECT_EQ(resp.outputs(0).shape(0), 1 + i % 2);
  }
  EXPECT_EQ(blocker.get().error_code(), grpc::DEADLINE_EXCEEDED);
  const inference::ModelStatistics s = StatisticsOf(*stub_, "held");
  EXPECT_EQ(s.inference_stats().success().count(), static_cast<uint64_t>(kClients));
  EXPECT_EQ(s.inference_count(), 12u);  // 4 clients x 1 row + 4 x 2 rows
  // The blocker's run failed and counts no execution: the eight queued requests ran as one batch.
  EXPECT_EQ(s.execution_count(), 1u);
  ASSERT_EQ(s.batch_stats_size(), 1);
  EXPECT_EQ(s.batch_stats(0).batch_size(), 12u);
  EXPECT_GT(s.inference_stats().queue().ns(), 0u);
}

TEST_F(ServerTest, FullQueueRejectsWithResourceExhausted) {
  auto blocker = Occupy(*stub_, "tiny_queue", std::chrono::milliseconds(3000));
  std::vector<std::future<grpc::Status>> calls;
  for (int i = 0; i < 6; ++i) {
    calls.push_back(std::async(std::launch::async, [this] {
      ModelInferResponse resp;
      return Infer(*stub_, HeldRequest("tiny_queue", 1, 0, 0), &resp);
    }));
  }
  int ok = 0, exhausted = 0;
  std::string others;
  for (auto& call : calls) {
    grpc::Status status = call.get();
    if (status.ok()) ++ok;
    if (status.error_code() == grpc::RESOURCE_EXHAUSTED) {
      ++exhausted;
      EXPECT_NE(status.error_message().find("queue full"), std::string::npos) << status.error_message();
    } else if (!status.ok()) {
      others += status.error_message() + "; ";
    }
  }
  // Two wait behind the running request and are answered once it stops; the other four are turned away.
  EXPECT_EQ(ok, 2) << others;
  EXPECT_EQ(exhausted, 4) << others;
  const grpc::Status blocked = blocker.get();
  EXPECT_EQ(blocked.error_code(), grpc::DEADLINE_EXCEEDED) << blocked.error_message();
}

TEST_F(ServerTest, QueueTimeoutAndClientDeadlineAreDeadlineExceeded) {
  // The blocker overrides the model's 20 ms queue timeout (allow_timeout_override), the next request not.
  auto blocker = Occupy(*stub_, "timeout", std::chrono::milliseconds(2000), /*no_queue_timeout=*/true);
  ModelInferResponse resp;
  grpc::Status status = Infer(*stub_, HeldRequest("timeout", 1, 0, 0), &resp);
  EXPECT_EQ(status.error_code(), grpc::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_EQ(blocker.get().error_code(), grpc::DEADLINE_EXCEEDED);
  const inference::ModelStatistics s = StatisticsOf(*stub_, "timeout");
  EXPECT_EQ(s.execution_count(), 0u);  // the queued request was dropped before compute
  EXPECT_EQ(s.inference_stats().fail().count(), 2u);

  // The client's own deadline (50 ms) runs out while the request waits behind a busy instance.
  blocker = Occupy(*stub_, "held", std::chrono::milliseconds(2000));
  status = Infer(*stub_, HeldRequest("held", 1, 0, 0), &resp, std::chrono::milliseconds(50));
  EXPECT_EQ(status.error_code(), grpc::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_EQ(blocker.get().error_code(), grpc::DEADLINE_EXCEEDED);
}

TEST_F(ServerTest, HealthServiceReportsServerAndModels) {
  auto health = grpc::health::v1::Health::NewStub(server_->channel());
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  ASSERT_TRUE(health->Check(Context().get(), req, &resp).ok());
  EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  req.set_service("add");
  ASSERT_TRUE(health->Check(Context().get(), req, &resp).ok());
  EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  req.set_service("nope");
  EXPECT_EQ(health->Check(Context().get(), req, &resp).error_code(), grpc::NOT_FOUND);
}

// A Watch stream holds its service name, and gRPC its request, until it ends: a name longer than any model's
// (128 bytes) can only ever be SERVICE_UNKNOWN, and streams of names of a request's size (64 MiB) held that
// much each, outside the held-request bound, for as long as their client kept them open. Such a Watch ends
// at once, INVALID_ARGUMENT; Check of it is NOT_FOUND, as of any other unknown service.
TEST_F(ServerTest, HealthWatchOfANameNoModelCanHaveEndsAtOnce) {
  auto health = grpc::health::v1::Health::NewStub(server_->channel());
  grpc::health::v1::HealthCheckRequest watched;
  watched.set_service(std::string(60000, 'm'));  // within this server's 64 KiB request bound
  grpc::ClientContext watch_ctx;
  watch_ctx.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
  auto watch = health->Watch(&watch_ctx, watched);
  grpc::health::v1::HealthCheckResponse update;
  EXPECT_FALSE(watch->Read(&update)) << "a status of " << update.status();
  EXPECT_EQ(watch->Finish().error_code(), grpc::INVALID_ARGUMENT);
  grpc::health::v1::HealthCheckResponse resp;
  EXPECT_EQ(health->Check(Context().get(), watched, &resp).error_code(), grpc::NOT_FOUND);
  // The longest name a model may have is watched as any other.
  watched.set_service(std::string(128, 'm'));
  grpc::ClientContext longest_ctx;
  longest_ctx.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
  auto longest = health->Watch(&longest_ctx, watched);
  ASSERT_TRUE(longest->Read(&update));
  EXPECT_EQ(update.status(), grpc::health::v1::HealthCheckResponse::SERVICE_UNKNOWN);
  longest_ctx.TryCancel();
  EXPECT_EQ(longest->Finish().error_code(), grpc::CANCELLED);
}

// Behind a busy instance, a request of level 1 ("priority" parameter) overtakes one of the default level 2
// that came first. The overtaken one spins until its deadline, 3 s after the instance frees up: run first,
// as it should not be, it would hold the instance until then and the other would answer after it. Its spin
// is bounded by time, not by trips, so a slow machine only narrows the 3 s the quick one has to answer in.
TEST_F(ServerTest, AHigherPriorityRequestOvertakesTheQueue) {
  auto blocker = Occupy(*stub_, "prioritized", std::chrono::milliseconds(3000));
  auto send = [this](int64_t trips, int64_t priority, std::chrono::milliseconds deadline) {
    return std::async(std::launch::async, [this, trips, priority, deadline] {
      ModelInferRequest req = HeldRequest("prioritized", 1, 0, trips);
      if (priority > 0) (*req.mutable_parameters())["priority"].set_uint64_param(static_cast<uint64_t>(priority));
      ModelInferResponse resp;
      const grpc::Status status = Infer(*stub_, req, &resp, deadline);
      return std::make_pair(status, std::chrono::steady_clock::now());
    });
  };
  auto low = send(kForever, 0, std::chrono::milliseconds(6000));  // sent 0.3 s into the blocker's 3 s
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto high = send(0, 1, kCallTimeout);
  const auto [low_status, low_done] = low.get();
  const auto [high_status, high_done] = high.get();
  EXPECT_EQ(low_status.error_code(), grpc::DEADLINE_EXCEEDED) << low_status.error_message();
  ASSERT_TRUE(high_status.ok()) << high_status.error_message();
  EXPECT_LT(high_done, low_done);
  EXPECT_EQ(blocker.get().error_code(), grpc::DEADLINE_EXCEEDED);
}

TEST_F(ServerTest, ATimeoutParameterOfTheWrongTypeIsAnErrorNamingIt) {
  ModelInferRequest req = HeldRequest("timeout", 1, 0, 0);
  (*req.mutable_parameters())["timeout"].set_double_param(5000);
  ModelInferResponse resp;
  grpc::Status status = Infer(*stub_, req, &resp);
  EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT) << status.error_message();
  EXPECT_NE(status.error_message().find("\"timeout\""), std::string::npos) << status.error_message();
  EXPECT_NE(status.error_message().find("double_param"), std::string::npos) << status.error_message();
}

TEST_F(ServerTest, ParametersOfEveryTypeAreAccepted) {
  ModelInferRequest req = AddRequest("add", 1, 3);
  auto& parameters = *req.mutable_parameters();
  parameters["ratio"].set_double_param(0.5);
  parameters["sequence_id"].set_uint64_param(uint64_t{1} << 63);
  parameters["label"].set_string_param("x");
  parameters["flag"].set_bool_param(true);
  ModelInferResponse resp;
  ASSERT_TRUE(Infer(*stub_, req, &resp).ok());
  EXPECT_EQ(RawFloats(resp, 0), ExpectedSum(1, 3));
}

TEST_F(ServerTest, DefaultModelFilenameNamesTheModelFile) {
  ModelInferResponse resp;
  grpc::Status status = Infer(*stub_, AddRequest("renamed", 2, 7), &resp);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(RawFloats(resp, 0), ExpectedSum(2, 7));
}

TEST_F(ServerTest, AWarmedModelServesAfterItsWarmupWhichCountsNoRequests) {
  EXPECT_NE(server_->Log().find("event=model_warmed_up model=warmed version=1 samples=2"), std::string::npos)
      << server_->Log();
  ModelInferResponse resp;
  ASSERT_TRUE(Infer(*stub_, AddRequest("warmed", 1, 5), &resp).ok());
  EXPECT_EQ(RawFloats(resp, 0), ExpectedSum(1, 5));
  const inference::ModelStatistics s = StatisticsOf(*stub_, "warmed");
  EXPECT_EQ(s.execution_count(), 1u);
  EXPECT_EQ(s.inference_count(), 1u);
}

// What a grpcurl-like client learns from the server's reflection alone: the services it lists, and a pool
// of the file descriptors it sends to describe them.
struct Reflected {
  std::vector<std::string> services;
  google::protobuf::SimpleDescriptorDatabase files;
};

void Reflect(const std::shared_ptr<grpc::Channel>& channel, Reflected& out) {
  using grpc::reflection::v1alpha::ServerReflectionRequest;
  using grpc::reflection::v1alpha::ServerReflectionResponse;
  auto reflection = grpc::reflection::v1alpha::ServerReflection::NewStub(channel);
  auto ctx = Context();
  auto stream = reflection->ServerReflectionInfo(ctx.get());
  ServerReflectionRequest req;
  ServerReflectionResponse resp;
  req.set_list_services("");
  ASSERT_TRUE(stream->Write(req)) << "the stream ended: " << stream->Finish().error_message();
  ASSERT_TRUE(stream->Read(&resp));
  for (const auto& s : resp.list_services_response().service()) out.services.push_back(s.name());
  std::set<std::string> added;
  for (const std::string& service : out.services) {
    req.set_file_containing_symbol(service);
    ASSERT_TRUE(stream->Write(req));
    ASSERT_TRUE(stream->Read(&resp));
    ASSERT_TRUE(resp.has_file_descriptor_response()) << service << ": " << resp.error_response().error_message();
    for (const std::string& bytes : resp.file_descriptor_response().file_descriptor_proto()) {
      google::protobuf::FileDescriptorProto file;
      ASSERT_TRUE(file.ParseFromString(bytes)) << service;
      if (!added.insert(file.name()).second) continue;
      ASSERT_TRUE(out.files.Add(file)) << file.name();
    }
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(ServerTest, ReflectionDescribesEveryServiceItLists) {
  Reflected reflected;
  ASSERT_NO_FATAL_FAILURE(Reflect(server_->channel(), reflected));
  const auto& services = reflected.services;
  EXPECT_NE(std::find(services.begin(), services.end(), "inference.GRPCInferenceService"), services.end());
  EXPECT_NE(std::find(services.begin(), services.end(), "grpc.health.v1.Health"), services.end());
  google::protobuf::DescriptorPool pool(&reflected.files);
  for (const std::string& service : services) EXPECT_NE(pool.FindServiceByName(service), nullptr) << service;
}

// grpcurl's way: Health/Check with request and response types known only from reflection's answers.
TEST_F(ServerTest, HealthCanBeCalledThroughReflectionWithoutAProto) {
  Reflected reflected;
  ASSERT_NO_FATAL_FAILURE(Reflect(server_->channel(), reflected));
  google::protobuf::DescriptorPool pool(&reflected.files);
  const google::protobuf::MethodDescriptor* check = pool.FindMethodByName("grpc.health.v1.Health.Check");
  ASSERT_NE(check, nullptr);
  google::protobuf::DynamicMessageFactory factory(&pool);
  std::unique_ptr<google::protobuf::Message> request(factory.GetPrototype(check->input_type())->New());
  std::unique_ptr<google::protobuf::Message> response(factory.GetPrototype(check->output_type())->New());
  request->GetReflection()->SetString(request.get(), check->input_type()->FindFieldByName("service"), "add");

  grpc::TemplatedGenericStub<google::protobuf::Message, google::protobuf::Message> stub(server_->channel());
  auto ctx = Context();
  grpc::CompletionQueue cq;
  auto call = stub.PrepareUnaryCall(ctx.get(), "/grpc.health.v1.Health/Check", *request, &cq);
  call->StartCall();
  grpc::Status status;
  call->Finish(response.get(), &status, &cq);
  void* tag = nullptr;
  bool ok = false;
  ASSERT_TRUE(cq.Next(&tag, &ok));
  ASSERT_TRUE(status.ok()) << status.error_message();
  const google::protobuf::FieldDescriptor* field = check->output_type()->FindFieldByName("status");
  ASSERT_NE(field, nullptr);
  EXPECT_EQ(response->GetReflection()->GetEnum(*response, field)->name(), "SERVING");
}

TEST_F(ServerTest, RepositoryLoadIsRefusedOutsideExplicitMode) {
  inference::RepositoryModelLoadRequest req;
  req.set_model_name("add");
  inference::RepositoryModelLoadResponse resp;
  EXPECT_EQ(stub_->RepositoryModelLoad(Context().get(), req, &resp).error_code(), grpc::FAILED_PRECONDITION);
}

TEST(ExplicitModeTest, LoadAndUnloadDriveReadinessAndHealth) {
  const std::string repo = MakeRepository("explicit");
  auto server = ServerProcess::Start(repo, {"--model-control-mode", "explicit"});
  ASSERT_NE(server, nullptr);
  auto stub = GRPCInferenceService::NewStub(server->channel());
  auto health = grpc::health::v1::Health::NewStub(server->channel());
  grpc::health::v1::HealthCheckRequest check;
  check.set_service("add");
  grpc::health::v1::HealthCheckResponse health_resp;
  EXPECT_EQ(health->Check(Context().get(), check, &health_resp).error_code(), grpc::NOT_FOUND);

  inference::RepositoryIndexResponse index;
  ASSERT_TRUE(stub->RepositoryIndex(Context().get(), {}, &index).ok());
  EXPECT_EQ(index.models_size(), 16);  // listed, none loaded
  ModelInferResponse resp;
  EXPECT_EQ(Infer(*stub, AddRequest("add", 1, 0), &resp).error_code(), grpc::NOT_FOUND);

  inference::RepositoryModelLoadRequest load;
  load.set_model_name("add");
  inference::RepositoryModelLoadResponse load_resp;
  ASSERT_TRUE(stub->RepositoryModelLoad(Context().get(), load, &load_resp).ok());
  ASSERT_TRUE(Infer(*stub, AddRequest("add", 1, 3), &resp).ok());
  EXPECT_EQ(RawFloats(resp, 0), ExpectedSum(1, 3));
  ASSERT_TRUE(health->Check(Context().get(), check, &health_resp).ok());
  EXPECT_EQ(health_resp.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  inference::RepositoryModelUnloadRequest unload;
  unload.set_model_name("add");
  inference::RepositoryModelUnloadResponse unload_resp;
  ASSERT_TRUE(stub->RepositoryModelUnload(Context().get(), unload, &unload_resp).ok());
  EXPECT_EQ(Infer(*stub, AddRequest("add", 1, 0), &resp).error_code(), grpc::NOT_FOUND);
  ASSERT_TRUE(health->Check(Context().get(), check, &health_resp).ok());
  EXPECT_EQ(health_resp.status(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);

  load.set_model_name("missing");
  EXPECT_EQ(stub->RepositoryModelLoad(Context().get(), load, &load_resp).error_code(), grpc::NOT_FOUND);
  EXPECT_EQ(server->Terminate(std::chrono::seconds(20)), 0);
}

grpc::Status LoadModel(GRPCInferenceService::Stub& stub, const std::string& name) {
  inference::RepositoryModelLoadRequest req;
  req.set_model_name(name);
  inference::RepositoryModelLoadResponse resp;
  return stub.RepositoryModelLoad(Context().get(), req, &resp);
}

// Watch sends the status at once (SERVICE_UNKNOWN for a model never loaded), then each change.
TEST(ExplicitModeTest, HealthWatchStreamsEachChangeOfAModelsStatus) {
  const std::string repo = MakeRepository("explicit_watch");
  auto server = ServerProcess::Start(repo, {"--model-control-mode", "explicit"});
  ASSERT_NE(server, nullptr);
  auto stub = GRPCInferenceService::NewStub(server->channel());
  auto health = grpc::health::v1::Health::NewStub(server->channel());
  grpc::ClientContext watch_ctx;
  watch_ctx.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
  grpc::health::v1::HealthCheckRequest watched;
  watched.set_service("add");
  auto watch = health->Watch(&watch_ctx, watched);
  using Status = grpc::health::v1::HealthCheckResponse;
  Status update;
  ASSERT_TRUE(watch->Read(&update));
  EXPECT_EQ(update.status(), Status::SERVICE_UNKNOWN);

  ASSERT_TRUE(LoadModel(*stub, "add").ok());
  ASSERT_TRUE(watch->Read(&update));
  EXPECT_EQ(update.status(), Status::SERVING);

  inference::RepositoryModelUnloadRequest unload;
  unload.set_model_name("add");
  inference::RepositoryModelUnloadResponse unload_resp;
  ASSERT_TRUE(stub->RepositoryModelUnload(Context().get(), unload, &unload_resp).ok());
  ASSERT_TRUE(watch->Read(&update));
  EXPECT_EQ(update.status(), Status::NOT_SERVING);
  watch_ctx.TryCancel();
  EXPECT_EQ(watch->Finish().error_code(), grpc::CANCELLED);
  EXPECT_EQ(server->Terminate(std::chrono::seconds(20)), 0);
}

// `message` with each occurrence of `name` replaced by NAME: two errors that differ only in the name they
// quote have the same shape.
std::string WithoutName(std::string message, const std::string& name) {
  for (size_t at; !name.empty() && (at = message.find(name)) != std::string::npos;) {
    message.replace(at, name.size(), "NAME");
  }
  return message;
}

// name -> (state, reason) of every RepositoryIndex entry.
std::map<std::string, std::pair<std::string, std::string>> IndexByName(GRPCInferenceService::Stub& stub) {
  inference::RepositoryIndexResponse index;
  EXPECT_TRUE(stub.RepositoryIndex(Context().get(), {}, &index).ok());
  std::map<std::string, std::pair<std::string, std::string>> by_name;
  for (const auto& m : index.models()) by_name[m.name()] = {m.state(), m.reason()};
  return by_name;
}

// A copy of the add model in a folder beside the repository, outside it.
std::string ModelOutside(const std::string& repo) {
  const std::string outside = repo + "-outside";
  std::filesystem::remove_all(outside);
  std::filesystem::create_directories(outside + "/1");
  std::filesystem::copy_file(repo + "/add/1/model.onnx", outside + "/1/model.onnx");
  return outside;
}

TEST(ExplicitModeTest, LoadRefusesNamesThatLeaveTheRepository) {
  const std::string repo = MakeRepository("confined");
  const std::string outside = ModelOutside(repo);
  std::filesystem::create_directory_symlink(outside, repo + "/linked");
  std::filesystem::create_directories(repo + "/nested/inner/1");
  std::filesystem::copy_file(repo + "/add/1/model.onnx", repo + "/nested/inner/1/model.onnx");
  auto server = ServerProcess::Start(repo, {"--model-control-mode", "explicit"});
  ASSERT_NE(server, nullptr);
  auto stub = GRPCInferenceService::NewStub(server->channel());

  const std::string up = "../" + std::filesystem::path(outside).filename().string();
  for (const std::string& name : {outside, up, std::string("nested/inner"), std::string("linked"),
                                  std::string("./add"), std::string(".."), std::string("")}) {
    const grpc::Status status = LoadModel(*stub, name);
    EXPECT_TRUE(status.error_code() == grpc::NOT_FOUND || status.error_code() == grpc::INVALID_ARGUMENT)
        << name << ": " << status.error_code() << " " << status.error_message();
    ModelInferResponse resp;
    EXPECT_EQ(Infer(*stub, AddRequest(name, 1, 0), &resp).error_code(), grpc::NOT_FOUND) << name;
  }
  // Whether a folder exists outside the repository must not show: same code, same message but for the name.
  const grpc::Status linked = LoadModel(*stub, "linked"), missing = LoadModel(*stub, "missing");
  EXPECT_EQ(linked.error_code(), missing.error_code());
  EXPECT_EQ(WithoutName(linked.error_message(), "linked"), WithoutName(missing.error_message(), "missing"));
  const grpc::Status there = LoadModel(*stub, outside), absent = LoadModel(*stub, outside + "-absent");
  EXPECT_EQ(there.error_code(), absent.error_code());
  EXPECT_EQ(WithoutName(there.error_message(), outside), WithoutName(absent.error_message(), outside + "-absent"));

  for (const auto& [name, entry] : IndexByName(*stub)) {
    EXPECT_TRUE(name != "linked" && name.find('/') == std::string::npos && name.find("..") == std::string::npos)
        << "refused name listed: " << name;
    EXPECT_NE(entry.first, "READY") << name;
  }
  // A refused name leaves no trace in the health service either.
  auto health = grpc::health::v1::Health::NewStub(server->channel());
  grpc::health::v1::HealthCheckRequest check;
  check.set_service("linked");
  grpc::health::v1::HealthCheckResponse health_resp;
  EXPECT_EQ(health->Check(Context().get(), check, &health_resp).error_code(), grpc::NOT_FOUND);
  EXPECT_TRUE(LoadModel(*stub, "add").ok());
  EXPECT_EQ(server->Terminate(std::chrono::seconds(20)), 0);
  std::filesystem::remove_all(outside);
}

// A model file or config.pbtxt that is a FIFO blocked its load forever in open(), and with it every later
// load and unload (they wait for one another): such files are refused like any other unreadable model.
TEST(ExplicitModeTest, FilesThatAreNotRegularFilesFailTheirModelAtOnce) {
  const std::string repo = MakeRepository("explicit-fifo");
  std::filesystem::create_directories(repo + "/piped_model/1");
  ASSERT_EQ(mkfifo((repo + "/piped_model/1/model.onnx").c_str(), 0600), 0);
  std::filesystem::create_directories(repo + "/piped_config/1");
  std::filesystem::copy_file(repo + "/add/1/model.onnx", repo + "/piped_config/1/model.onnx");
  ASSERT_EQ(mkfifo((repo + "/piped_config/config.pbtxt").c_str(), 0600), 0);
  auto server = ServerProcess::Start(repo, {"--model-control-mode", "explicit"});
  ASSERT_NE(server, nullptr);
  auto stub = GRPCInferenceService::NewStub(server->channel());
  for (const char* name : {"piped_model", "piped_config"}) {
    const grpc::Status status = LoadModel(*stub, name);
    EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT) << name << ": " << status.error_message();
    EXPECT_NE(status.error_message().find("is not a regular file"), std::string::npos) << status.error_message();
  }
  ASSERT_TRUE(LoadModel(*stub, "add").ok());
  EXPECT_EQ(server->Terminate(std::chrono::seconds(20)), 0);
}

// A load waits for the loads queued ahead of it, which may take seconds or never end: a name no model can have
// (here a megabyte) is answered at once instead of being held in the queue, outside --max-held-request-bytes.
TEST(ExplicitModeTest, ANameNoModelCanHaveIsRefusedWithoutWaitingForTheLoadsAhead) {
  const std::string repo = MakeRepository("explicit-queue");
  AddStuckWarmupModel(repo);
  auto server = ServerProcess::Start(repo, {"--model-control-mode", "explicit", "--shutdown-grace-secs", "1"});
  ASSERT_NE(server, nullptr);
  auto stub = GRPCInferenceService::NewStub(server->channel());
  auto stuck = std::async(std::launch::async, [&stub] { return LoadModel(*stub, "stuck"); });
  ASSERT_TRUE(server->WaitForLog("event=model_loading model=stuck", std::chrono::seconds(10))) << server->Log();
  const grpc::Status refused = LoadModel(*stub, std::string(1 << 20, 'm'));
  EXPECT_EQ(refused.error_code(), grpc::INVALID_ARGUMENT) << refused.error_message();
  EXPECT_NE(refused.error_message().find("is not valid"), std::string::npos) << refused.error_message();
  EXPECT_EQ(server->Terminate(std::chrono::seconds(10)), 1) << "the stuck load outlives the grace period";
  EXPECT_FALSE(stuck.get().ok());
}

TEST(ExplicitModeTest, LoadingABrokenModelFailsThatModelOnly) {
  const std::string repo = MakeRepository("explicit-broken");
  AddBrokenModels(repo);
  auto server = ServerProcess::Start(repo, {"--model-control-mode", "explicit"});
  ASSERT_NE(server, nullptr);
  auto stub = GRPCInferenceService::NewStub(server->channel());
  for (const char* name : {"too_many_instances", "huge_initializer", "bad_offset", "sequence", "escaping_file", "cold"}) {
    EXPECT_FALSE(LoadModel(*stub, name).ok()) << name;
  }
  ASSERT_TRUE(LoadModel(*stub, "add").ok());
  ModelInferResponse resp;
  ASSERT_TRUE(Infer(*stub, AddRequest("add", 1, 2), &resp).ok());
  EXPECT_EQ(RawFloats(resp, 0), ExpectedSum(1, 2));
  const auto index = IndexByName(*stub);
  for (const char* name : {"too_many_instances", "huge_initializer", "bad_offset", "sequence", "escaping_file", "cold"}) {
    ASSERT_TRUE(index.count(name)) << name;
    EXPECT_EQ(index.at(name).first, "UNAVAILABLE") << name;
    EXPECT_FALSE(index.at(name).second.empty()) << name;
  }
  EXPECT_EQ(server->Terminate(std::chrono::seconds(20)), 0);
}

TEST(StartupTest, BadModelsAreUnavailableWhileTheOthersServe) {
  const std::string repo = MakeRepository("startup-broken");
  AddBrokenModels(repo);
  const std::string outside = ModelOutside(repo);
  std::filesystem::create_directory_symlink(outside, repo + "/escaped");
  auto server = ServerProcess::Start(repo);
  ASSERT_NE(server, nullptr);
  auto stub = GRPCInferenceService::NewStub(server->channel());
  ModelInferResponse resp;
  ASSERT_TRUE(Infer(*stub, AddRequest("add", 1, 4), &resp).ok());
  EXPECT_EQ(RawFloats(resp, 0), ExpectedSum(1, 4));

  const auto index = IndexByName(*stub);
  EXPECT_EQ(index.at("add").first, "READY");
  EXPECT_EQ(index.count("escaped"), 0u) << "a symlinked folder leading outside is not a model";
  const std::map<std::string, std::string> reasons = {
      {"too_many_instances", "instance_group count must be in [1, 64], got 2147483647"},
      {"huge_initializer", ""},  // bad_alloc while decoding, or a size check: any reason will do
      {"bad_offset", "offset \"abc\" is not a whole number"},
      {"sequence", "sequence_batching is not supported"},
      {"escaping_file", "default_model_filename \"../model.onnx\" must be a file name inside the version folder"},
      {"cold", "model_warmup \"five\": run 1 failed"}};
  for (const auto& [name, reason] : reasons) {
    ASSERT_TRUE(index.count(name)) << name;
    EXPECT_EQ(index.at(name).first, "UNAVAILABLE") << name;
    EXPECT_FALSE(index.at(name).second.empty()) << name;
    EXPECT_NE(index.at(name).second.find(reason), std::string::npos) << name << ": " << index.at(name).second;
  }
  const std::string log = server->Log();
  EXPECT_NE(log.find("event=model_dir_skipped dir=escaped"), std::string::npos) << log;
  EXPECT_NE(log.find("unavailable=bad_offset,cold,escaping_file,huge_initializer,sequence,too_many_instances"), std::string::npos) << log;
  EXPECT_EQ(server->Terminate(std::chrono::seconds(20)), 0);
  std::filesystem::remove_all(outside);
}

TEST(StartupTest, ExitOnErrorMakesALoadFailureFatal) {
  const std::string repo = MakeRepository("exit-on-error");
  AddBrokenModels(repo);
  std::string log;
  EXPECT_EQ(ServerProcess::RunToExit(repo, {"--exit-on-error"}, std::chrono::seconds(30), &log), 1) << log;
  EXPECT_NE(log.find("event=start_failed"), std::string::npos) << log;
  EXPECT_EQ(log.find("event=server_ready"), std::string::npos) << log;
}

// Clients choose model names: however long or many, they must not grow the metrics or come back whole.
TEST(LongNamesTest, UnknownModelsAreAnsweredBrieflyAndShareOneSeries) {
  const std::string repo = MakeRepository("long-names");
  auto server = ServerProcess::Start(repo, {"--http-port", "0"});
  ASSERT_NE(server, nullptr);
  auto stub = GRPCInferenceService::NewStub(server->channel());
  constexpr int kRequests = 8;
  for (int i = 0; i < kRequests; ++i) {
    const std::string name(4 << 20, static_cast<char>('a' + i));
    const auto start = std::chrono::steady_clock::now();
    ModelInferResponse resp;
    const grpc::Status status = Infer(*stub, AddRequest(name, 1, 0), &resp);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
    EXPECT_EQ(status.error_code(), grpc::NOT_FOUND);
    EXPECT_LT(status.error_message().size(), 1024u);
    EXPECT_NE(status.error_message().find("(4194304 bytes)"), std::string::npos) << status.error_message();
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
  auto stream = stub->ModelStreamInfer(&ctx);
  ASSERT_TRUE(stream->Write(AddRequest(std::string(4 << 20, 'z'), 1, 0)));
  ASSERT_TRUE(stream->WritesDone());
  inference::ModelStreamInferResponse streamed;
  ASSERT_TRUE(stream->Read(&streamed));
  EXPECT_LT(streamed.ByteSizeLong(), 1024u);
  EXPECT_TRUE(stream->Finish().ok());

  const std::string metrics = HttpGet(server->http_port(), "/metrics");
  EXPECT_NE(metrics.find("onnxserve_requests_total{code=\"NOT_FOUND\",model=\"\",version=\"\"} 9"),
            std::string::npos) << metrics.substr(0, 4096);
  for (char letter : std::string("abcdefghz")) {
    EXPECT_EQ(metrics.find(std::string(64, letter)), std::string::npos) << "a series labelled with the name " << letter;
  }
  EXPECT_EQ(server->Terminate(std::chrono::seconds(20)), 0);
}

// Runs `clients` threads sending add requests until `stop`; returns every status seen.
std::vector<grpc::Status> Hammer(std::shared_ptr<grpc::Channel> channel, const std::string& model, int clients,
                                 std::atomic<bool>& stop, std::vector<std::string>* versions_seen) {
  std::mutex mu;
  std::vector<grpc::Status> statuses;
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      auto stub = GRPCInferenceService::NewStub(channel);
      for (int i = 0; !stop.load(); ++i) {
        ModelInferResponse resp;
        grpc::Status status = Infer(*stub, AddRequest(model, 1, static_cast<float>(c * 1000 + i)), &resp);
        if (status.ok() && RawFloats(resp, 0) != ExpectedSum(1, static_cast<float>(c * 1000 + i))) {
          status = grpc::Status(grpc::DATA_LOSS, "wrong result");
        }
        std::lock_guard<std::mutex> lock(mu);
        statuses.push_back(status);
        if (versions_seen && status.ok()) versions_seen->push_back(resp.model_version());
      }
    });
  }
  for (auto& t : threads) t.join();
  return statuses;
}

TEST(PollModeTest, NewVersionsSwapInUnderLoadWithoutFailedRequests) {
  const std::string repo = MakeRepository("poll");
  auto server = ServerProcess::Start(repo, {"--model-control-mode", "poll", "--repository-poll-secs", "1"});
  ASSERT_NE(server, nullptr);
  std::atomic<bool> stop{false};
  std::vector<std::string> versions;
  auto load = std::async(std::launch::async, [&] { return Hammer(server->channel(), "add", 3, stop, &versions); });
  AddVersion(repo, 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  // A broken version 3: its load fails and version 2 keeps serving.
  std::filesystem::create_directories(repo + "/add/3");
  std::ofstream(repo + "/add/3/model.onnx") << "not an onnx model";
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  stop = true;
  const auto statuses = load.get();
  ASSERT_FALSE(statuses.empty());
  for (const auto& status : statuses) ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(versions.front(), "1");
  EXPECT_EQ(versions.back(), "2");

  auto stub = GRPCInferenceService::NewStub(server->channel());
  inference::RepositoryIndexResponse index;
  ASSERT_TRUE(stub->RepositoryIndex(Context().get(), {}, &index).ok());
  bool saw_failure = false;
  for (const auto& m : index.models()) {
    if (m.name() == "add" && m.version() == "3") {
      saw_failure = true;
      EXPECT_EQ(m.state(), "UNAVAILABLE");
      EXPECT_FALSE(m.reason().empty());
    }
  }
  EXPECT_TRUE(saw_failure);
  inference::ModelReadyRequest ready_req;
  ready_req.set_name("add");
  ready_req.set_version("3");
  inference::ModelReadyResponse ready;
  ASSERT_TRUE(stub->ModelReady(Context().get(), ready_req, &ready).ok());
  EXPECT_FALSE(ready.ready());
  EXPECT_NE(server->Log().find("event=model_load_failed model=add version=3"), std::string::npos);
  EXPECT_EQ(server->Terminate(std::chrono::seconds(20)), 0);
}

TEST(ShutdownTest, SigtermExitsWithinTheGracePeriodWhileARunWouldNeverEnd) {
  const std::string repo = MakeRepository("shutdown_spin");
  auto server = ServerProcess::Start(repo, {"--shutdown-grace-secs", "1"});
  ASSERT_NE(server, nullptr);
  auto stub = GRPCInferenceService::NewStub(server->channel());
  // No deadline: only the shutdown can end this run.
  auto call = std::async(std::launch::async, [&] {
    grpc::ClientContext ctx;
    ModelInferResponse resp;
    return stub->ModelInfer(&ctx, SpinRequest("spin", kForever), &resp);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(server->Terminate(std::chrono::seconds(10)), 0);
  EXPECT_FALSE(call.get().ok());
}

// A REST inference of the wide_sum model, `width` wide.
std::string WideSumBody(int64_t width) {
  return R"({"inputs":[{"name":"x","shape":[1,1],"datatype":"FP32","data":[1.0]},)"
         R"({"name":"width","shape":[1,1],"datatype":"INT64","data":[)" +
         std::to_string(width) + "]}]}";
}

// A REST request still computing when the grace period ends gets 503 at once, but the batch worker running it
// still holds the service, the model version and the metrics it answers through: the server must wait for it
// before tearing them down (it tore them down under the worker, which then used freed memory). Its request
// line then comes before shutdown_complete; the run is uninterruptible, so it outlives the grace by its size.
TEST(ShutdownTest, ARestRequestRunningPastTheGracePeriodIsLetGoBeforeTheServerTearsDown) {
  const std::string repo = MakeRepository("shutdown_rest");
  auto server = ServerProcess::Start(repo, {"--shutdown-grace-secs", "0", "--http-port", "0", "--log-requests"});
  ASSERT_NE(server, nullptr);
  const int port = server->http_port();
  // A run of about 0.4 s on this build, however fast it is: within the second past the grace that a server
  // gets to unwind, and many times what tearing it down takes; at most 0.5 GB of floats on a fast machine.
  constexpr int64_t kProbeWidth = int64_t{1} << 20;
  const auto probe_start = std::chrono::steady_clock::now();
  ASSERT_NE(HttpPost(port, "/v2/models/wide_sum/infer", WideSumBody(kProbeWidth)).find(" 200 "),
            std::string::npos);
  const std::chrono::duration<double> probe_took = std::chrono::steady_clock::now() - probe_start;
  const double probe_seconds = probe_took.count();
  const auto width = static_cast<int64_t>(std::clamp(kProbeWidth * 0.4 / probe_seconds, 1e6, 1.25e8));
  auto call = std::async(std::launch::async,
                         [&] { return HttpPost(port, "/v2/models/wide_sum/infer", WideSumBody(width)); });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (HttpGet(port, "/metrics").find(R"(onnxserve_inflight_requests{model="wide_sum",version="1"} 1)") ==
             std::string::npos &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(server->Terminate(std::chrono::seconds(20)), 0) << server->Log();
  EXPECT_NE(call.get().find(" 503 "), std::string::npos);
  const std::string log = server->Log();
  const size_t answered = log.find("event=request model=wide_sum version=1 code=CANCELLED");
  ASSERT_NE(answered, std::string::npos) << log;
  EXPECT_LT(answered, log.find("event=shutdown_complete")) << log;
}

// A load cannot be cancelled: the server still ends a second past the grace period, status 1, even when the
// signal comes while the repository is loading at startup (it used to wait for a signal only once ready).
TEST(ShutdownTest, SigtermDuringAStartupLoadThatNeverEndsExitsOneSecondPastTheGracePeriod) {
  const std::string repo = MakeRepository("shutdown_stuck");
  AddStuckWarmupModel(repo);
  auto server = ServerProcess::Spawn(repo, {"--shutdown-grace-secs", "1"});
  ASSERT_TRUE(server->WaitForLog("event=server_listening", std::chrono::seconds(30))) << server->Log();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto signalled = std::chrono::steady_clock::now();
  EXPECT_EQ(server->Terminate(std::chrono::seconds(10)), 1) << server->Log();
  EXPECT_LT(std::chrono::steady_clock::now() - signalled, std::chrono::seconds(5));
  EXPECT_NE(server->Log().find("event=shutdown_grace_exceeded"), std::string::npos) << server->Log();
  EXPECT_EQ(server->Log().find("event=server_ready"), std::string::npos) << server->Log();
}

TEST(ShutdownTest, SigtermWithModelLoadsQueuedAnswersEveryLoadAndExitsZero) {
  const std::string repo = MakeRepository("shutdown_loads");
  auto server = ServerProcess::Start(repo, {"--model-control-mode", "explicit", "--shutdown-grace-secs", "5"});
  ASSERT_NE(server, nullptr);
  auto stub = GRPCInferenceService::NewStub(server->channel());
  std::vector<std::future<grpc::Status>> loads;
  for (int i = 0; i < 12; ++i) {
    loads.push_back(std::async(std::launch::async, [&stub, i] {
      inference::RepositoryModelLoadRequest load;
      load.set_model_name(i % 2 ? "add" : "batched");
      inference::RepositoryModelLoadResponse resp;
      return stub->RepositoryModelLoad(Context().get(), load, &resp);
    }));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(server->Terminate(std::chrono::seconds(20)), 0);
  for (auto& load : loads) {
    const grpc::Status status = load.get();
    // Loaded, refused as the server stops, or never accepted: but answered, and never a crash.
    EXPECT_TRUE(status.ok() || status.error_code() == grpc::UNAVAILABLE) << status.error_message();
  }
}

TEST(ShutdownTest, SigtermFinishesAcceptedRequestsAndExitsZero) {
  const std::string repo = MakeRepository("shutdown");
  auto server = ServerProcess::Start(repo, {"--shutdown-grace-secs", "10"});
  ASSERT_NE(server, nullptr);
  auto stub = GRPCInferenceService::NewStub(server->channel());
  // The signal lands while one request runs (for 2 s, well within the grace period) and six wait behind it.
  auto blocker = Occupy(*stub, "held", std::chrono::milliseconds(2000));
  std::vector<std::future<std::pair<grpc::Status, ModelInferResponse>>> queued;
  for (int i = 0; i < 6; ++i) {
    queued.push_back(std::async(std::launch::async, [&stub, i] {
      ModelInferResponse resp;
      grpc::Status status = Infer(*stub, HeldRequest("held", 1, static_cast<float>(i), 0), &resp);
      return std::make_pair(status, resp);
    }));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(server->Terminate(std::chrono::seconds(20)), 0);
  EXPECT_EQ(blocker.get().error_code(), grpc::DEADLINE_EXCEEDED);
  for (int i = 0; i < 6; ++i) {
    auto [status, resp] = queued[static_cast<size_t>(i)].get();
    ASSERT_TRUE(status.ok()) << "queued request " << i << ": " << status.error_message();
    EXPECT_EQ(RawFloats(resp, 0), ExpectedSum(1, static_cast<float>(i)));
  }
  EXPECT_NE(server->Log().find("event=shutdown_complete"), std::string::npos);
}

// gRPC clients with health checking in their service config keep a Watch open on every backend. Such a stream
// must end at the signal, told NOT_SERVING first: gRPC's built-in health service left it open until the grace
// period ran out, so every shutdown took the whole of it.
TEST(ShutdownTest, SigtermEndsHealthWatchesWithoutWaitingOutTheGracePeriod) {
  const std::string repo = MakeRepository("shutdown_watch");
  auto server = ServerProcess::Start(repo, {"--shutdown-grace-secs", "60"});
  ASSERT_NE(server, nullptr);
  auto health = grpc::health::v1::Health::NewStub(server->channel());
  using Status = grpc::health::v1::HealthCheckResponse;
  grpc::ClientContext watch_ctx;
  grpc::health::v1::HealthCheckRequest watched;
  watched.set_service("add");
  auto watch = health->Watch(&watch_ctx, watched);
  Status update;
  ASSERT_TRUE(watch->Read(&update));
  EXPECT_EQ(update.status(), Status::SERVING);

  const auto signalled = std::chrono::steady_clock::now();
  EXPECT_EQ(server->Terminate(std::chrono::seconds(30)), 0) << server->Log();
  EXPECT_LT(std::chrono::steady_clock::now() - signalled, std::chrono::seconds(20))
      << "the open Watch held the shutdown";
  std::vector<Status::ServingStatus> statuses;
  while (watch->Read(&update)) statuses.push_back(update.status());
  EXPECT_EQ(statuses, std::vector<Status::ServingStatus>{Status::NOT_SERVING});
  EXPECT_EQ(watch->Finish().error_code(), grpc::UNAVAILABLE);
}

// Calls of every kind still open at the signal: a health watch (told NOT_SERVING, then ended by the shutdown), a
// stream and a unary call whose runs never end, and a call whose client went away mid-run. The server cancels
// what the grace period leaves and exits 0.
TEST(ShutdownTest, SigtermWithCallsOfEveryKindOpenExitsZero) {
  const std::string repo = MakeRepository("shutdown_open_calls");
  auto server = ServerProcess::Start(repo, {"--shutdown-grace-secs", "1"});
  ASSERT_NE(server, nullptr);
  auto stub = GRPCInferenceService::NewStub(server->channel());
  auto health = grpc::health::v1::Health::NewStub(server->channel());
  using Status = grpc::health::v1::HealthCheckResponse;
  grpc::ClientContext watch_ctx;
  auto watch = health->Watch(&watch_ctx, {});
  auto watched = std::async(std::launch::async, [&] {
    std::vector<Status::ServingStatus> statuses;
    Status update;
    while (watch->Read(&update)) statuses.push_back(update.status());
    return std::make_pair(statuses, watch->Finish());
  });

  grpc::ClientContext stream_ctx;
  auto stream = stub->ModelStreamInfer(&stream_ctx);
  ASSERT_TRUE(stream->Write(SpinRequest("spin", kForever)));
  auto unary = std::async(std::launch::async, [&] {
    grpc::ClientContext ctx;
    ModelInferResponse resp;
    return stub->ModelInfer(&ctx, SpinRequest("spin", kForever), &resp);
  });
  {
    grpc::ClientContext gone;
    ModelInferResponse resp;
    gone.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
    EXPECT_EQ(stub->ModelInfer(&gone, SpinRequest("spin", kForever), &resp).error_code(), grpc::DEADLINE_EXCEEDED);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  EXPECT_EQ(server->Terminate(std::chrono::seconds(20)), 0) << server->Log();
  auto [statuses, watch_end] = watched.get();
  EXPECT_EQ(statuses, (std::vector<Status::ServingStatus>{Status::SERVING, Status::NOT_SERVING}));
  EXPECT_FALSE(watch_end.ok());
  EXPECT_FALSE(unary.get().ok());
  inference::ModelStreamInferResponse streamed;
  while (stream->Read(&streamed)) {
  }
  EXPECT_FALSE(stream->Finish().ok());
  EXPECT_NE(server->Log().find("event=shutdown_complete"), std::string::npos) << server->Log();
}

}  // namespace
}  // namespace onnxserve::e2e

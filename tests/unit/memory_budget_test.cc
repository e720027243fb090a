// The per-run memory budget: what a run's tensors hold at once is charged to its own account, on every thread
// that works for it and in its subgraphs; a run past the budget fails naming the node, and the next one runs.
#include "runtime/core/memory_budget.h"

#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/core/tensor.h"
#include "runtime/core/thread_pool.h"
#include "runtime/exec/session.h"
#include "tests/support/graph_builder.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::TensorsClose;

constexpr int64_t kBudget = 64 << 10;

TEST(MemoryAccountTest, ChargesUpToTheBudgetAndRefusesPastItLeavingTheCountAlone) {
  MemoryAccount account(1000);
  account.Charge(600);
  EXPECT_THROW(account.Charge(401), MemoryBudgetExceeded);
  EXPECT_EQ(account.live_bytes(), 600);
  account.Charge(400);
  account.Release(1000);
  EXPECT_EQ(account.live_bytes(), 0);
  EXPECT_EQ(account.peak_bytes(), 1000);
}

TEST(MemoryAccountTest, TensorsChargeTheCurrentRunUntilFreedAndNothingOutsideOne) {
  auto account = std::make_shared<MemoryAccount>(kBudget);
  {
    ScopedMemoryAccount scope(account);
    Tensor t(DataType::kFloat, {100});  // 400 bytes, rounded up to the 64-byte alignment
    Tensor strings(DataType::kString, {2});
    EXPECT_EQ(account->live_bytes(), 448 + 2 * static_cast<int64_t>(sizeof(std::string)));
    EXPECT_THROW(Tensor(DataType::kFloat, {kBudget}), MemoryBudgetExceeded);
  }
  EXPECT_EQ(account->live_bytes(), 0);
  Tensor outside(DataType::kFloat, {kBudget});
  EXPECT_EQ(account->live_bytes(), 0);
  EXPECT_EQ(CurrentMemoryAccount(), nullptr);
}

// A run that gets a larger cached buffer is charged what it asked for: the rest was charged to whoever
// allocated it, and released with it.
TEST(MemoryAccountTest, ATensorInALargerCachedBufferChargesItsOwnSize) {
  { Tensor cached(DataType::kFloat, {3000}); }
  auto account = std::make_shared<MemoryAccount>(kBudget);
  {
    ScopedMemoryAccount scope(account);
    Tensor t(DataType::kFloat, {2500});
    EXPECT_EQ(account->live_bytes(), 10048);  // 10,000 bytes rounded up to the 64-byte alignment
  }
  EXPECT_EQ(account->live_bytes(), 0);
}

// Tensors allocated inside ParallelFor chunks, whichever thread runs them, count against the caller's run.
TEST(MemoryAccountTest, ParallelForChunksChargeTheCallersAccount) {
  ThreadPool pool(4);
  auto account = std::make_shared<MemoryAccount>(kBudget);
  ScopedMemoryAccount scope(account);
  std::mutex mu;
  std::vector<Tensor> kept;
  pool.ParallelFor(4, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      Tensor t(DataType::kFloat, {256});
      std::lock_guard<std::mutex> lock(mu);
      kept.push_back(t);
    }
  });
  EXPECT_EQ(account->live_bytes(), 4 * 1024);
}

onnx::ValueInfoProto* AddInput(onnx::GraphProto& g, const std::string& name, int elem_type) {
  auto* v = g.add_input();
  v->set_name(name);
  v->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
  return v;
}

void AddOutput(onnx::GraphProto& g, const std::string& name, int elem_type) {
  auto* v = g.add_output();
  v->set_name(name);
  v->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
}

void AddNode(onnx::GraphProto& g, const std::string& op, const std::string& name,
             const std::vector<std::string>& inputs, const std::string& output) {
  auto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& in : inputs) n->add_input(in);
  n->add_output(output);
}

onnx::ModelProto ModelOf(onnx::GraphProto graph) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(16);
  *model.mutable_graph() = std::move(graph);
  return model;
}

// y = Relu^relus(Expand(x, shape)): the shape, from the request, decides what the run allocates.
onnx::ModelProto ExpandThenRelus(int relus) {
  onnx::GraphProto g;
  g.set_name("expand_relus");
  AddInput(g, "x", onnx::TensorProto::FLOAT);
  AddInput(g, "shape", onnx::TensorProto::INT64);
  AddNode(g, "Expand", "expand", {"x", "shape"}, "v0");
  for (int i = 0; i < relus; ++i) {
    AddNode(g, "Relu", absl::StrCat("relu_", i), {absl::StrCat("v", i)}, absl::StrCat("v", i + 1));
  }
  AddOutput(g, absl::StrCat("v", relus), onnx::TensorProto::FLOAT);
  return ModelOf(std::move(g));
}

std::unique_ptr<Session> Load(const onnx::ModelProto& proto, int64_t budget, int threads = 1) {
  auto model = Model::FromProto(proto, "");
  EXPECT_TRUE(model.ok()) << model.status();
  auto session = Session::Create(*std::move(model), {.intra_op_threads = threads, .memory_budget_bytes = budget});
  EXPECT_TRUE(session.ok()) << session.status();
  return *std::move(session);
}

std::vector<std::pair<std::string, Tensor>> ExpandFeeds(std::vector<int64_t> shape) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  return {{"x", Tensor::FromVector<float>({1}, {-2.f})}, {"shape", Tensor::FromVector<int64_t>({rank}, shape)}};
}

void ExpectOverBudget(const absl::Status& status, const std::string& node) {
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_NE(status.message().find(absl::StrCat("memory budget of ", kBudget, " bytes exceeded")), std::string::npos)
      << status;
  EXPECT_NE(status.message().find(absl::StrCat("node \"", node, "\"")), std::string::npos) << status;
}

TEST(MemoryBudgetTest, AnOutputPastTheBudgetFailsThatRunNamingTheNodeAndTheNextRunSucceeds) {
  auto session = Load(ExpandThenRelus(1), kBudget, /*threads=*/2);
  ExpectOverBudget(session->Run(ExpandFeeds({1000, 1000})).status(), "expand");
  auto out = session->Run(ExpandFeeds({2, 2}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 2}, {0, 0, 0, 0}), (*out)[0]));
}

TEST(MemoryBudgetTest, AnIntermediateThatFitsAloneFailsWhereItsProducersOutputIsStillLive) {
  // 40 KiB each: Expand's output fits, but Relu's beside it (Relu cannot write into its input) does not.
  auto session = Load(ExpandThenRelus(1), kBudget);
  ExpectOverBudget(session->Run(ExpandFeeds({10240})).status(), "relu_0");
}

// The budget bounds what is held at once, not what a run allocates in all: a long chain of steps, each
// freeing its input, fits however long it is.
TEST(MemoryBudgetTest, BoundsLiveBytesNotTheTotalAllocated) {
  auto session = Load(ExpandThenRelus(16), kBudget);
  auto out = session->Run(ExpandFeeds({4096}));  // 16 KiB per value, 272 KiB in all
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].NumElements(), 4096);
}

onnx::AttributeProto GraphAttr(const std::string& name, onnx::GraphProto g) {
  onnx::AttributeProto attr;
  attr.set_name(name);
  attr.set_type(onnx::AttributeProto::GRAPH);
  *attr.mutable_g() = std::move(g);
  return attr;
}

// Loop(M) whose body scans out `op` of `inputs`, graph inputs of the enclosing graph (float x first).
onnx::ModelProto LoopScanningOut(const std::string& op, const std::vector<std::string>& inputs) {
  onnx::GraphProto body;
  body.set_name("body");
  AddInput(body, "iter", onnx::TensorProto::INT64);
  AddInput(body, "cond_in", onnx::TensorProto::BOOL);
  AddNode(body, "Identity", "keep_going", {"cond_in"}, "cond_out");
  AddNode(body, op, "scan_op", inputs, "scanned");
  AddOutput(body, "cond_out", onnx::TensorProto::BOOL);
  AddOutput(body, "scanned", onnx::TensorProto::FLOAT);

  onnx::GraphProto g;
  g.set_name("loop");
  AddInput(g, "M", onnx::TensorProto::INT64);
  for (const std::string& input : inputs) {
    AddInput(g, input, input == "x" ? onnx::TensorProto::FLOAT : onnx::TensorProto::INT64);
  }
  AddNode(g, "Loop", "loop", {"M", ""}, "stacked");
  *g.mutable_node(0)->add_attribute() = GraphAttr("body", std::move(body));
  AddOutput(g, "stacked", onnx::TensorProto::FLOAT);
  return ModelOf(std::move(g));
}

TEST(MemoryBudgetTest, SubgraphAllocationsCountAgainstTheRunsBudget) {
  auto session = Load(LoopScanningOut("Expand", {"x", "shape"}), kBudget);
  auto feeds = [](int64_t trips) {
    auto f = ExpandFeeds({1024});  // 4 KiB per iteration
    f.push_back({"M", Tensor::Scalar<int64_t>(trips)});
    return f;
  };
  ExpectOverBudget(session->Run(feeds(64)).status(), "loop");
  auto out = session->Run(feeds(4));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({4, 1024}));
}

// What a Loop stacks is charged as it grows. The scan outputs were kept as one tensor per iteration until the
// end, and a value passed through (Identity of x) allocates nothing to charge: 2^40 trips of a 4-byte x ran to the deadline
// growing by 220 MB a second (without a deadline, until the machine ran out of memory), past a 64 KiB budget.
// The deadline only bounds the test; the budget must be what stops the run.
TEST(MemoryBudgetTest, ALoopsScanOutputsCountAsTheyGrowEvenOfAValuePassedThrough) {
  auto session = Load(LoopScanningOut("Identity", {"x"}), kBudget);
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Tensor::FromVector<float>({1}, {3.f})},
                                                             {"M", Tensor::Scalar<int64_t>(int64_t{1} << 40)}};
  ExpectOverBudget(session->Run(feeds, {}, RunLimits(absl::Now() + absl::Seconds(30))).status(), "loop");
  const std::vector<std::pair<std::string, Tensor>> three = {{"x", Tensor::FromVector<float>({1}, {3.f})},
                                                             {"M", Tensor::Scalar<int64_t>(3)}};
  auto out = session->Run(three);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3, 1}, {3.f, 3.f, 3.f}), (*out)[0]));
}

// SequenceLength(Loop(M) growing a sequence by inserting the enclosing graph's x each trip).
onnx::ModelProto LoopInsertingX() {
  onnx::GraphProto body;
  body.set_name("body");
  AddInput(body, "iter", onnx::TensorProto::INT64);
  AddInput(body, "cond_in", onnx::TensorProto::BOOL);
  *body.add_input() = testing::Declared("seq_in", testing::SequenceTypeOf(onnx::TensorProto::FLOAT));
  AddNode(body, "Identity", "keep_going", {"cond_in"}, "cond_out");
  AddNode(body, "SequenceInsert", "insert_x", {"seq_in", "x"}, "seq_out");
  AddOutput(body, "cond_out", onnx::TensorProto::BOOL);
  *body.add_output() = testing::Declared("seq_out", testing::SequenceTypeOf(onnx::TensorProto::FLOAT));

  onnx::GraphProto g;
  g.set_name("loop");
  AddInput(g, "M", onnx::TensorProto::INT64);
  AddInput(g, "x", onnx::TensorProto::FLOAT);
  AddNode(g, "SequenceEmpty", "empty", {}, "seq0");
  AddNode(g, "Loop", "loop", {"M", "", "seq0"}, "seq");
  *g.mutable_node(1)->add_attribute() = GraphAttr("body", std::move(body));
  AddNode(g, "SequenceLength", "count", {"seq"}, "n");
  AddOutput(g, "n", onnx::TensorProto::INT64);
  return ModelOf(std::move(g));
}

// A sequence's values are charged, not only their tensors' storage: each is a slot the run holds whatever
// its tensor, and a sequence of one x inserted 4096 times allocates no tensor byte at all. Nothing saw them
// (a split of an empty [2^24, 0] held 4.9 GB, of which the budget saw the pieces' empty buffers, 1 GB).
TEST(MemoryBudgetTest, ASequencesValuesCountEvenWhenTheyShareOneTensor) {
  auto session = Load(LoopInsertingX(), kBudget);
  const auto feeds = [](int64_t trips) {
    return std::vector<std::pair<std::string, Tensor>>{{"M", Tensor::Scalar<int64_t>(trips)},
                                                       {"x", Tensor::FromVector<float>({1}, {3.f})}};
  };
  ExpectOverBudget(session->Run(feeds(4096)).status(), "loop");
  auto out = session->Run(feeds(16));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::Scalar<int64_t>(16), (*out)[0]));
}

// Each run has a budget of its own: runs that each fit pass together however they overlap, where one
// account shared between them would run out (two overlapping runs hold 96 KiB).
TEST(MemoryBudgetTest, ConcurrentRunsEachHaveTheirOwnBudget) {
  auto session = Load(ExpandThenRelus(8), kBudget);
  std::vector<std::thread> threads;
  std::vector<absl::Status> failures[4];
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto out = session->Run(ExpandFeeds({6144}));  // 24 KiB per value, 48 KiB at the peak
        if (!out.ok()) failures[t].push_back(out.status());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& f : failures) EXPECT_TRUE(f.empty()) << f.front();
}

TEST(MemoryBudgetTest, ANegativeBudgetIsAnError) {
  auto model = Model::FromProto(ExpandThenRelus(1), "");
  ASSERT_TRUE(model.ok());
  auto session = Session::Create(*std::move(model), {.memory_budget_bytes = -1});
  EXPECT_EQ(session.status().code(), absl::StatusCode::kInvalidArgument) << session.status();
}

// String characters are not charged to the run (std::string allocates them), but an output of more than the
// run has left is refused: one 4 KiB string expanded 64 times is 256 KiB, past the 64 KiB budget; 8 times
// (32 KiB) fits.
TEST(MemoryBudgetTest, StringCharactersPastWhatTheRunHasLeftAreRefused) {
  const Tensor text = Tensor::FromVector<std::string>({1}, {std::string(4096, 'a')});
  auto session = Load(testing::OpTest("Expand", 13)
                          .Input("x", text)
                          .Input("shape", Tensor::FromVector<int64_t>({1}, {1}))
                          .Output("y")
                          .BuildModel(),
                      kBudget);
  auto feeds = [&](int64_t copies) {
    return std::vector<std::pair<std::string, Tensor>>{{"x", text},
                                                       {"shape", Tensor::FromVector<int64_t>({1}, {copies})}};
  };
  const absl::Status too_many = session->Run(feeds(64)).status();
  EXPECT_EQ(too_many.code(), absl::StatusCode::kResourceExhausted) << too_many;
  auto fits = session->Run(feeds(8));
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ((*fits)[0].NumElements(), 8);
}

}  // namespace
}  // namespace onnxserve

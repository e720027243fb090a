// If, Loop and Scan: subgraphs run with values of the enclosing graph read by name.
#include <atomic>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

onnx::ValueInfoProto Value(const std::string& name, int elem_type) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  v.mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
  return v;
}

void AddIdentity(onnx::GraphProto& g, const std::string& in, const std::string& out) {
  auto* n = g.add_node();
  n->set_op_type("Identity");
  n->add_input(in);
  n->add_output(out);
}

onnx::AttributeProto GraphAttr(const std::string& name, const onnx::GraphProto& g) {
  onnx::AttributeProto attr;
  attr.set_name(name);
  attr.set_type(onnx::AttributeProto::GRAPH);
  *attr.mutable_g() = g;
  return attr;
}

// A branch whose only output copies the enclosing graph's value `outer`.
onnx::GraphProto Branch(const std::string& outer) {
  onnx::GraphProto g;
  g.set_name("branch_" + outer);
  AddIdentity(g, outer, "out");
  *g.add_output() = Value("out", onnx::TensorProto::FLOAT);
  return g;
}

TEST(IfTest, RunsTheBranchTheConditionPicksReadingOuterValues) {
  for (bool cond : {true, false}) {
    auto out = OpTest("If", 13)
                   .Input("cond", Tensor::Scalar(cond))
                   .OuterInput("a", Tensor::FromVector<float>({2}, {1.f, 2.f}))
                   .OuterInput("b", Tensor::FromVector<float>({1}, {9.f}))
                   .Output("y")
                   .Attr(GraphAttr("then_branch", Branch("a")))
                   .Attr(GraphAttr("else_branch", Branch("b")))
                   .Run();
    ASSERT_TRUE(out.ok()) << out.status();
    const Tensor expected = cond ? Tensor::FromVector<float>({2}, {1.f, 2.f}) : Tensor::FromVector<float>({1}, {9.f});
    EXPECT_TRUE(TensorsClose(expected, (*out)[0])) << "cond " << cond;
  }
}

TEST(IfTest, BranchesReadingUndefinedValuesFailToLoad) {
  auto out = OpTest("If", 13)
                 .Input("cond", Tensor::Scalar(true))
                 .Output("y")
                 .Attr(GraphAttr("then_branch", Branch("a")))
                 .Attr(GraphAttr("else_branch", Branch("a")))
                 .Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("\"a\" is not defined"), std::string::npos) << out.status();
}

struct Typed {
  std::string name;
  int elem_type;
};

// A body graph that only copies values: output i is Identity(sources[i]), of its type. A source may be an
// input or a value of the enclosing graph.
onnx::GraphProto CopyingBody(const std::string& name, const std::vector<Typed>& inputs,
                             const std::vector<std::string>& sources, const std::vector<Typed>& outputs) {
  onnx::GraphProto g;
  g.set_name(name);
  for (const Typed& in : inputs) *g.add_input() = Value(in.name, in.elem_type);
  for (size_t i = 0; i < outputs.size(); ++i) {
    AddIdentity(g, sources[i], outputs[i].name);
    *g.add_output() = Value(outputs[i].name, outputs[i].elem_type);
  }
  return g;
}

// Loop body: carries x unchanged, keeps cond, and scans out the iteration number.
onnx::GraphProto CountingBody() {
  return CopyingBody("body",
                     {{"iter", onnx::TensorProto::INT64}, {"cond_in", onnx::TensorProto::BOOL},
                      {"x_in", onnx::TensorProto::FLOAT}},
                     {"cond_in", "x_in", "iter"},
                     {{"cond_out", onnx::TensorProto::BOOL}, {"x_out", onnx::TensorProto::FLOAT},
                      {"iter_out", onnx::TensorProto::INT64}});
}

// Loop over CountingBody: outputs x_final and the stacked iteration numbers.
absl::StatusOr<std::vector<Tensor>> RunCountingLoop(int opset, Tensor m, Tensor cond, Tensor x) {
  return OpTest("Loop", opset)
      .Input("M", std::move(m))
      .Input("cond", std::move(cond))
      .Input("x", std::move(x))
      .Output("x_final")
      .Output("iters")
      .Attr(GraphAttr("body", CountingBody()))
      .Run();
}

TEST(LoopTest, RunsTripCountTimesAndStacksScanOutputs) {
  auto out = RunCountingLoop(16, Tensor::Scalar<int64_t>(3), Tensor::Scalar(true),
                             Tensor::FromVector<float>({2}, {1.f, 2.f}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2}, {1.f, 2.f}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({3}, {0, 1, 2}), (*out)[1]));
}

TEST(LoopTest, AFalseConditionRunsNoIteration) {
  auto out =
      RunCountingLoop(11, Tensor::Scalar<int64_t>(5), Tensor::Scalar(false), Tensor::FromVector<float>({1}, {7.f}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1}, {7.f}), (*out)[0]));
  EXPECT_EQ((*out)[1].shape(), Shape({0}));
}

// M is a scalar: element 0 of an empty M was read anyway, so the trip count came from whatever an earlier
// run (maybe another request) had left in the recycled buffer.
TEST(LoopTest, AnEmptyTripCountIsAnError) {
  auto out =
      RunCountingLoop(16, Tensor(DataType::kInt64, {0}), Tensor::Scalar(true), Tensor::FromVector<float>({1}, {7.f}));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
}

// A Loop told to run 1e13 times stops at its run's deadline or cancellation, even with an empty body (no
// step of its own to check between), and says why.
TEST(LoopTest, StopsAtTheDeadlineOrCancellationWhateverItsTripCount) {
  // Carries x through without a single node.
  onnx::GraphProto empty_body;
  empty_body.set_name("empty_body");
  *empty_body.add_input() = Value("iter", onnx::TensorProto::INT64);
  *empty_body.add_input() = Value("cond_in", onnx::TensorProto::BOOL);
  *empty_body.add_input() = Value("x_in", onnx::TensorProto::FLOAT);
  *empty_body.add_output() = Value("cond_in", onnx::TensorProto::BOOL);
  *empty_body.add_output() = Value("x_in", onnx::TensorProto::FLOAT);
  for (const onnx::GraphProto& body : {CountingBody(), empty_body}) {
    OpTest loop = OpTest("Loop", 16)
                      .Input("M", Tensor::Scalar<int64_t>(10'000'000'000'000))
                      .Input("cond", Tensor::Scalar(true))
                      .Input("x", Tensor::FromVector<float>({1}, {1.f}))
                      .Output("x_final")
                      .Attr(GraphAttr("body", body));
    if (body.output_size() == 3) loop.Output("iters");
    auto out = loop.Run(RunLimits(absl::Now() + absl::Milliseconds(50)));
    EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded) << body.name() << ": " << out.status();
    std::atomic<int> polls{0};
    out = loop.Run(RunLimits(absl::InfiniteFuture(), [&polls] { return ++polls > 1000; }));
    EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled) << body.name() << ": " << out.status();
  }
}

// Scan body: state passes through; the scanned element is emitted as a scan output.
onnx::GraphProto EchoBody() {
  return CopyingBody("scan_body", {{"s_in", onnx::TensorProto::FLOAT}, {"e_in", onnx::TensorProto::FLOAT}},
                     {"s_in", "e_in"}, {{"s_out", onnx::TensorProto::FLOAT}, {"e_out", onnx::TensorProto::FLOAT}});
}

// `scan` (with any inputs before them and attributes) over state s and scan input x through `body`.
absl::StatusOr<std::vector<Tensor>> RunScanOf(OpTest scan, Tensor s, Tensor x, const onnx::GraphProto& body) {
  return scan.Input("s", std::move(s))
      .Input("x", std::move(x))
      .Output("s_final")
      .Output("ys")
      .Attr(GraphAttr("body", body))
      .Run();
}

// The same through EchoBody, x being the one scan input.
absl::StatusOr<std::vector<Tensor>> RunEchoScan(OpTest scan, Tensor s, Tensor x) {
  scan.Attr("num_scan_inputs", int64_t{1});
  return RunScanOf(std::move(scan), std::move(s), std::move(x), EchoBody());
}

TEST(ScanTest, ReverseInputAlongAxisOneComesOutReversedOnAxisZero) {
  auto out = RunEchoScan(OpTest("Scan", 16)
                             .Attr("scan_input_axes", std::vector<int64_t>{1})
                             .Attr("scan_input_directions", std::vector<int64_t>{1}),
                         Tensor::FromVector<float>({1}, {5.f}), Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1}, {5.f}), (*out)[0]));
  // Columns of x, last first: [3,6], [2,5], [1,4].
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3, 2}, {3, 6, 2, 5, 1, 4}), (*out)[1]));
}

TEST(ScanTest, Scan8ScansEachBatchItemAlongAxisOne) {
  auto out = RunEchoScan(OpTest("Scan", 8).NoInput(), Tensor::FromVector<float>({2, 1}, {5.f, 6.f}),
                         Tensor::FromVector<float>({2, 2, 1}, {1, 2, 3, 4}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 1}, {5.f, 6.f}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 2, 1}, {1, 2, 3, 4}), (*out)[1]));
}

// A Scan-8 batch of no items gives the states as they came and empty scan outputs of [0, the scan length, the
// body's declared dims]. No item ran, so no output was made, and the run failed saying the node listed more
// outputs than the op has.
TEST(ScanTest, Scan8OverNoBatchItemsGivesEmptyOutputs) {
  onnx::GraphProto body = EchoBody();
  body.mutable_output(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(1);
  OpTest scan("Scan", 8);
  scan.NoInput().Attr("num_scan_inputs", int64_t{1});
  auto out = RunScanOf(scan, Tensor(DataType::kFloat, {0, 1}), Tensor(DataType::kFloat, {0, 2, 1}), body);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({0, 1}));
  EXPECT_EQ((*out)[1].shape(), Shape({0, 2, 1}));
}

// A scalar has no axis 0 to scan along, though NormalizeAxis accepts 0 for rank 0: its length was read
// through an empty shape (a null read that killed the process).
TEST(ScanTest, AScalarScanInputIsAnError) {
  auto out = RunEchoScan(OpTest("Scan", 16), Tensor::FromVector<float>({1}, {5.f}), Tensor::Scalar(1.f));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
}

// Scan-8 takes batch item b of every input, counting the items from the first state: an x of one item under
// a state of two had item 1 read past its end, bytes that went into the output.
TEST(ScanTest, Scan8InputsOfDifferentBatchSizesAreAnError) {
  auto out = RunEchoScan(OpTest("Scan", 8).NoInput(), Tensor::FromVector<float>({2, 1}, {5.f, 6.f}),
                         Tensor::FromVector<float>({1, 2, 1}, {1, 2}));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
}

// The body is fed its inputs by name, one per state and scan input: a body of one input under a state and a
// scan input had the second name read past the end of its input list (an out-of-memory error, or worse).
TEST(ScanTest, ABodyOfFewerInputsThanTheNodeFailsToLoad) {
  const onnx::GraphProto one_input = CopyingBody(
      "one_input", {{"s_in", onnx::TensorProto::FLOAT}}, {"s_in", "s_in"},
      {{"s_out", onnx::TensorProto::FLOAT}, {"e_out", onnx::TensorProto::FLOAT}});
  auto out = RunScanOf(OpTest("Scan", 16).Attr("num_scan_inputs", int64_t{1}), Tensor::FromVector<float>({1}, {5.f}),
                       Tensor::FromVector<float>({2, 1}, {1.f, 2.f}), one_input);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
  EXPECT_NE(out.status().message().find("body takes 1 inputs"), std::string::npos) << out.status();
}

// num_scan_inputs is an int64 attribute: 2^32 + 1 narrowed to int ran as 1.
TEST(ScanTest, NumScanInputsOutsideTheNodesInputsFailsToLoad) {
  for (int64_t num_scan_inputs : {int64_t{-1}, int64_t{3}, (int64_t{1} << 32) + 1}) {
    auto out = RunScanOf(OpTest("Scan", 16).Attr("num_scan_inputs", num_scan_inputs),
                         Tensor::FromVector<float>({1}, {5.f}), Tensor::FromVector<float>({2, 1}, {1.f, 2.f}),
                         EchoBody());
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << num_scan_inputs << ": " << out.status();
  }
}

// Zero steps to scan (an empty sequence in a request) run the body never: the state comes out as it went in
// and each scan output is empty along its axis, shaped otherwise as the body declares it. It was UNIMPLEMENTED.
TEST(ScanTest, ZeroLengthInputsGiveTheStateAndEmptyScanOutputsOfTheDeclaredShape) {
  onnx::GraphProto body = EchoBody();
  body.mutable_output(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(3);
  for (const int64_t axis : {int64_t{0}, int64_t{1}}) {
    OpTest scan("Scan", 16);
    scan.Attr("num_scan_inputs", int64_t{1}).Attr("scan_output_axes", std::vector<int64_t>{axis});
    auto out = RunScanOf(scan, Tensor::FromVector<float>({1}, {5.f}), Tensor(DataType::kFloat, {0, 3}), body);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1}, {5.f}), (*out)[0]));
    EXPECT_EQ((*out)[1].shape(), axis == 0 ? Shape({0, 3}) : Shape({3, 0}));
    EXPECT_EQ((*out)[1].dtype(), DataType::kFloat);
  }
}

// Scan outputs stack along a new axis, so every iteration's must have the first one's shape: this body
// doubles its state and scans it out, [2] then [4].
TEST(ScanTest, ScanOutputsThatChangeShapeAreAnErrorNamingBoth) {
  onnx::GraphProto body;
  body.set_name("doubling");
  *body.add_input() = Value("s_in", onnx::TensorProto::FLOAT);
  *body.add_input() = Value("e_in", onnx::TensorProto::FLOAT);
  auto* concat = body.add_node();
  concat->set_op_type("Concat");
  concat->add_input("s_in");
  concat->add_input("s_in");
  concat->add_output("s_out");
  auto* axis = concat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  AddIdentity(body, "s_out", "e_out");
  *body.add_output() = Value("s_out", onnx::TensorProto::FLOAT);
  *body.add_output() = Value("e_out", onnx::TensorProto::FLOAT);
  auto out = RunScanOf(OpTest("Scan", 16).Attr("num_scan_inputs", int64_t{1}), Tensor::FromVector<float>({1}, {5.f}),
                       Tensor::FromVector<float>({2, 1}, {1.f, 2.f}), body);
  EXPECT_TRUE(testing::FailsWith(out, "scan outputs differ across iterations: float[2] vs float[4]"));
}

// A direction is 0 (forward) or 1 (reverse); 2 or -1 ran forward without a word.
TEST(ScanTest, DirectionsOtherThanForwardOrReverseFailToLoad) {
  for (const char* attr : {"scan_input_directions", "scan_output_directions"}) {
    for (int64_t direction : {int64_t{2}, int64_t{-1}}) {
      auto out = RunEchoScan(OpTest("Scan", 16).Attr(attr, std::vector<int64_t>{direction}),
                             Tensor::FromVector<float>({1}, {5.f}), Tensor::FromVector<float>({2, 1}, {1.f, 2.f}));
      EXPECT_TRUE(testing::FailsWith(out, "expected 0 (forward) or 1 (reverse)")) << attr << " " << direction;
    }
  }
}

// Loop body: keeps cond and scans out the enclosing graph's string "s" unchanged.
onnx::GraphProto EchoStringBody() {
  return CopyingBody("echo_string", {{"iter", onnx::TensorProto::INT64}, {"cond_in", onnx::TensorProto::BOOL}},
                     {"cond_in", "s"}, {{"cond_out", onnx::TensorProto::BOOL}, {"s_out", onnx::TensorProto::STRING}});
}

// A string's characters are not in a tensor's byte size: each iteration passes the same 400 KiB string
// through, and three of them stack into 1.2 MiB of characters, past the 1 MiB limit (a million iterations
// of a 4 MB string asked for 4 TB).
TEST(LoopTest, RefusesStackedStringsPastTheByteLimit) {
  testing::ScopedSizeLimits limits(int64_t{1} << 20);
  auto out = OpTest("Loop", 16)
                 .Input("M", Tensor::Scalar<int64_t>(3))
                 .Input("cond", Tensor::Scalar(true))
                 .OuterInput("s", Tensor::FromVector<std::string>({1}, {std::string(400 << 10, 'a')}))
                 .Output("stacked")
                 .Attr(GraphAttr("body", EchoStringBody()))
                 .Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
}

}  // namespace
}  // namespace onnxserve

// KernelContext::OutputOver: an output goes over an input's storage only where nothing can see the input
// again (the executor says this step reads it for the last time, and no other handle shares its storage);
// everywhere else the output is a new tensor. Then whole runs of a residual sum (FusedConv's Z) in the
// places where writing over Z would show: Z read again later, Z a model input, Z a graph output.
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/thread_pool.h"
#include "runtime/core/value.h"
#include "runtime/exec/session.h"
#include "runtime/registry/kernel.h"
#include "tests/support/graph_builder.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::GraphBuilder;
using testing::TensorsClose;

// Runs OutputOver(0, 0, ...) in a context whose input 0 holds `input`, read for the last time or not, and
// says whether the output landed on the input's storage.
bool LandsOnInput(Tensor input, bool last_read, DataType type, const Shape& shape) {
  const Value value(std::move(input));
  const std::vector<const Value*> inputs = {&value};
  std::vector<Value> outputs(1);
  const std::vector<bool> wanted = {true}, last = {last_read};
  ThreadPool pool(1);
  KernelContext ctx(inputs, &outputs, wanted, &pool, {}, nullptr, &last);
  const Tensor& out = ctx.OutputOver(0, 0, type, shape);
  EXPECT_EQ(out.dtype(), type);
  EXPECT_EQ(out.shape(), shape);
  return out.raw_data() == value.tensor()->raw_data();
}

TEST(OutputOverTest, AnInputReadForTheLastTimeAndHeldByNothingElseTakesTheOutput) {
  EXPECT_TRUE(LandsOnInput(Tensor(DataType::kFloat, {2, 3}), true, DataType::kFloat, {2, 3}));
}

TEST(OutputOverTest, AnInputReadAgainLaterKeepsItsStorage) {
  EXPECT_FALSE(LandsOnInput(Tensor(DataType::kFloat, {2, 3}), false, DataType::kFloat, {2, 3}));
}

TEST(OutputOverTest, StorageAnotherHandleSharesIsNeverWrittenOver) {
  // A view (Reshape's output, an Identity) of a value the run still holds shares its storage.
  const Tensor held(DataType::kFloat, {2, 3});
  EXPECT_FALSE(LandsOnInput(held, true, DataType::kFloat, {2, 3}));
  EXPECT_FALSE(LandsOnInput(held.Reshaped({3, 2}), true, DataType::kFloat, {3, 2}));
}

TEST(OutputOverTest, WrappedStorageIsNeverWrittenOver) {
  // A request's bytes read in place, or a model's initializer: wrapped, owned elsewhere.
  auto bytes = std::make_shared<std::vector<float>>(6);
  const Tensor wrapped = Tensor::Wrap(DataType::kFloat, {2, 3}, bytes, bytes->data());
  bytes.reset();  // the tensor is now the only owner, and still must not be written
  EXPECT_FALSE(LandsOnInput(wrapped, true, DataType::kFloat, {2, 3}));
}

TEST(OutputOverTest, AnotherTypeOrShapeGetsANewTensor) {
  EXPECT_FALSE(LandsOnInput(Tensor(DataType::kFloat, {2, 3}), true, DataType::kInt32, {2, 3}));
  EXPECT_FALSE(LandsOnInput(Tensor(DataType::kFloat, {2, 3}), true, DataType::kFloat, {3, 2}));
}

TEST(OutputOverTest, WithoutTheExecutorsWordNothingIsWrittenOver) {
  const Value value(Tensor(DataType::kFloat, {4}));
  const std::vector<const Value*> inputs = {&value};
  std::vector<Value> outputs(1);
  const std::vector<bool> wanted = {true};
  ThreadPool pool(1);
  KernelContext ctx(inputs, &outputs, wanted, &pool, {});
  EXPECT_NE(ctx.OutputOver(0, 0, DataType::kFloat, {4}).raw_data(), value.tensor()->raw_data());
}

// y = Relu(Conv1x1(x) + r) with r = Relu(z) (FusedConv's Z, computed by the run), plus what `then` adds.
GraphBuilder ResidualGraph() {
  return GraphBuilder()
      .Input("x", {1, 2, 2, 2})
      .Input("z", {1, 2, 2, 2})
      .Initializer("w", Tensor::FromVector<float>({2, 2, 1, 1}, {0.5f, -1, 2, 0.25f}))
      .Node("Relu", {"z"}, "r")
      .Node("Conv", {"x", "w"}, "conv")
      .Node("Add", {"conv", "r"}, "sum")
      .Node("Relu", {"sum"}, "y");
}

const std::vector<float> kX = {1, -2, 3, 0.5f, -1, 2, 0, 4}, kZ = {1, 1, -5, 0, 0.5f, -0.5f, 2, -3};

// Relu(Conv1x1(x) + Relu(z)) by hand.
std::vector<float> ExpectedY() {
  const float w[2][2] = {{0.5f, -1}, {2, 0.25f}};
  std::vector<float> y(8);
  for (int m = 0; m < 2; ++m) {
    for (int p = 0; p < 4; ++p) {
      const float conv = w[m][0] * kX[p] + w[m][1] * kX[4 + p];
      y[m * 4 + p] = std::max(0.f, conv + std::max(0.f, kZ[m * 4 + p]));
    }
  }
  return y;
}

std::vector<float> Relu(std::vector<float> v) {
  for (float& e : v) e = std::max(0.f, e);
  return v;
}

absl::StatusOr<std::vector<Tensor>> RunResidual(const GraphBuilder& builder, const Tensor& z) {
  auto session = Session::Create(builder.Load());
  if (!session.ok()) return session.status();
  EXPECT_EQ(testing::CountOps((*session)->plan().StepOps(), "FusedConv"), 1);
  return (*session)->Run({{"x", Tensor::FromVector<float>({1, 2, 2, 2}, kX)}, {"z", z}});
}

TEST(OutputOverTest, AResidualSumOverItsAddendGivesTheUnfusedResult) {
  auto out = RunResidual(ResidualGraph().Output("y"), Tensor::FromVector<float>({1, 2, 2, 2}, kZ));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 2, 2, 2}, ExpectedY()), (*out)[0], 1e-6, 1e-6));
}

TEST(OutputOverTest, AnAddendReadAgainLaterIsLeftIntact) {
  auto out = RunResidual(ResidualGraph().Node("Add", {"y", "r"}, "later").Output("later"),
                 Tensor::FromVector<float>({1, 2, 2, 2}, kZ));
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> expected = ExpectedY();
  const std::vector<float> r = Relu(kZ);
  for (int i = 0; i < 8; ++i) expected[i] += r[i];
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 2, 2, 2}, expected), (*out)[0], 1e-6, 1e-6));
}

TEST(OutputOverTest, AnAddendThatIsAGraphOutputIsReturnedIntact) {
  auto out = RunResidual(ResidualGraph().Output("y").Output("r"), Tensor::FromVector<float>({1, 2, 2, 2}, kZ));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 2, 2, 2}, ExpectedY()), (*out)[0], 1e-6, 1e-6));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 2, 2, 2}, Relu(kZ)), (*out)[1], 0, 0));
}

TEST(OutputOverTest, AModelInputAsTheAddendIsNotWrittenOver) {
  // The feed itself is Z (no Relu before the sum): the caller's tensor keeps its values.
  const Tensor z = Tensor::FromVector<float>({1, 2, 2, 2}, kZ);
  auto out = RunResidual(GraphBuilder()
                     .Input("x", {1, 2, 2, 2})
                     .Input("z", {1, 2, 2, 2})
                     .Initializer("w", Tensor::FromVector<float>({2, 2, 1, 1}, {0.5f, -1, 2, 0.25f}))
                     .Node("Conv", {"x", "w"}, "conv")
                     .Node("Add", {"conv", "z"}, "y")
                     .Output("y"),
                 z);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 2, 2, 2}, kZ), z, 0, 0));
  EXPECT_NE((*out)[0].raw_data(), z.raw_data());
}

}  // namespace
}  // namespace onnxserve

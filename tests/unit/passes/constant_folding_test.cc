// The constant-folding pass (runtime/passes/constant_folding.cc): nodes whose inputs are all known at load
// run once and become constants; random ops and nodes that fail stay for the run.
#include <limits>

#include "gtest/gtest.h"
#include "runtime/exec/session.h"
#include "runtime/passes/pass.h"
#include "tests/support/graph_builder.h"
#include "tests/support/op_test.h"
#include "tests/support/sanitizer.h"

namespace onnxserve {
namespace {

using testing::GraphBuilder;
using testing::RunPass;
using testing::TensorsClose;

TEST(ConstantFoldingTest, NodesOnConstantsRunAtLoad) {
  auto model = GraphBuilder()
                   .Input("x", {2})
                   .Initializer("a", Tensor::FromVector<float>({2}, {1.f, 2.f}))
                   .Initializer("b", Tensor::FromVector<float>({2}, {10.f, 20.f}))
                   .Node("Mul", {"a", "b"}, "ab")
                   .Node("Add", {"x", "ab"}, "y")
                   .Output("y")
                   .Load();
  auto result = RunPass(*model, *passes::MakeConstantFolding());
  EXPECT_EQ(result.ops, std::vector<std::string>{"Add"});
  EXPECT_EQ(result.changes, std::vector<std::string>{"folded node \"ab\" (Mul)"});
  const Tensor* folded = result.graph->FindValue("ab")->constant();
  ASSERT_NE(folded, nullptr);
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2}, {10.f, 40.f}), *folded));

  auto session = Session::Create(model);
  ASSERT_TRUE(session.ok()) << session.status();
  auto out = (*session)->Run({{"x", Tensor::FromVector<float>({2}, {0.5f, -1.f})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2}, {10.5f, 39.f}), (*out)[0]));
}

TEST(ConstantFoldingTest, ChainsFoldAndAFoldedGraphOutputIsServed) {
  auto model = GraphBuilder()
                   .Initializer("shape", Tensor::FromVector<int64_t>({2}, {2, 3}))
                   .Node("ConstantOfShape", {"shape"}, "zeros")
                   .Node("Shape", {"zeros"}, "y")
                   .Output("y")
                   .Load();
  auto result = RunPass(*model, *passes::MakeConstantFolding());
  EXPECT_TRUE(result.ops.empty());
  EXPECT_EQ(result.changes.size(), 2u);
  auto session = Session::Create(model);
  ASSERT_TRUE(session.ok()) << session.status();
  auto out = (*session)->Run({});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({2}, {2, 3}), (*out)[0]));
}

// Random ops have constant inputs (or none) and must still run each time; so must a node that fails.
TEST(ConstantFoldingTest, RandomOpsAndFailingNodesStayForTheRun) {
  auto model = GraphBuilder()
                   .Initializer("c", Tensor::FromVector<float>({2}, {1.f, 2.f}))
                   .Initializer("p", Tensor::FromVector<float>({2}, {0.5f, 0.5f}))
                   .Initializer("bad", Tensor::FromVector<int64_t>({1}, {-1}))
                   .Node("Dropout", {"c"}, "noise")
                   .NodeWith("RandomNormal", {}, {"normal"}, {testing::IntsAttr("shape", {2})})
                   .Node("RandomUniformLike", {"c"}, "uniform")
                   .Node("Bernoulli", {"p"}, "coin")
                   .Node("ConstantOfShape", {"bad"}, "broken")
                   .Output("noise")
                   .Output("normal")
                   .Output("uniform")
                   .Output("coin")
                   .Output("broken")
                   .Load();
  auto result = RunPass(*model, *passes::MakeConstantFolding());
  EXPECT_EQ(result.ops, (std::vector<std::string>{"Dropout", "RandomNormal", "RandomUniformLike", "Bernoulli",
                                                  "ConstantOfShape"}));
  EXPECT_TRUE(result.changes.empty());
  // The failure surfaces when the model runs, naming the node.
  auto session = Session::Create(model);
  ASSERT_TRUE(session.ok()) << session.status();
  auto out = (*session)->Run({});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("\"broken\""), std::string::npos) << out.status();
}

// A load cannot be cancelled, so folding is what bounds the work a model spells on constants. With the budget
// spent, the next foldable node and everything after it stay in the graph for the run.
TEST(ConstantFoldingTest, FoldingStopsOnceItsBudgetIsSpent) {
  auto model = GraphBuilder()
                   .Initializer("shape", Tensor::FromVector<int64_t>({1}, {3}))
                   .Node("ConstantOfShape", {"shape"}, "zeros")
                   .Node("Shape", {"zeros"}, "y")
                   .Output("y")
                   .Load();
  auto result = RunPass(*model, *passes::MakeConstantFolding(absl::ZeroDuration()));
  EXPECT_EQ(result.ops, (std::vector<std::string>{"ConstantOfShape", "Shape"}));
  ASSERT_EQ(result.changes.size(), 1u);
  EXPECT_NE(result.changes[0].find("budget is spent"), std::string::npos) << result.changes[0];

  auto unspent = RunPass(*model, *passes::MakeConstantFolding(absl::Seconds(60)));
  EXPECT_TRUE(unspent.ops.empty());
}

// One fold can be longer than the whole budget: an 8192^3 MatMul of constant zeros is 5.5e11 multiply-adds
// (at least 4 s on one core of any CPU today). It ran to the end, the load with it, and was folded; the
// budget now stops the kernel, and the MatMul stays to run per request. The zeros are an initializer, made
// before the clock starts: made by a ConstantOfShape fold they took the whole second on a VM slow to fault
// in 256 MB, and the MatMul's turn never came.
TEST(ConstantFoldingTest, TheBudgetStopsAFoldInsideItsKernel) {
  constexpr int64_t kSide = 8192;
  auto model = GraphBuilder()
                   .Initializer("zeros", Tensor::FromVector<float>({kSide, kSide},
                                                                   std::vector<float>(kSide * kSide, 0.0f)))
                   .Node("MatMul", {"zeros", "zeros"}, "y")
                   .Output("y")
                   .Load();
  const absl::Duration budget = absl::Seconds(1);
  const absl::Time start = absl::Now();
  auto result = RunPass(*model, *passes::MakeConstantFolding(budget));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(result.ops, (std::vector<std::string>{"MatMul"}));
  ASSERT_EQ(result.changes.size(), 1u);
  EXPECT_NE(result.changes[0].find("budget is spent"), std::string::npos) << result.changes[0];
  // Unstopped, the MatMul runs at least 4 s, minutes under ASan.
  const absl::Duration margin = testing::kUnderAddressSanitizer ? absl::Seconds(20) : absl::Seconds(3);
  EXPECT_LT(took, budget + margin) << "the MatMul's fold ran past the budget";
}

// A 284-byte model of three ConstantOfShape nodes of 2e9 bytes each held 5.9 GB after its load; a dozen would
// have ended the server. Folding now has a memory budget over the model's folds: what passes it stays in the
// graph, and the run's own limits meet it per request.
TEST(ConstantFoldingTest, FoldsPastTheMemoryBudgetStayInTheGraph) {
  auto model = GraphBuilder()
                   .Input("x", {1})
                   .Initializer("shape", Tensor::FromVector<int64_t>({1}, {150}))  // 600 bytes of float zeros
                   .Node("ConstantOfShape", {"shape"}, "first")
                   .Node("ConstantOfShape", {"shape"}, "second")
                   .Node("Identity", {"x"}, "y")
                   .Output("first")
                   .Output("second")
                   .Output("y")
                   .Load();
  auto result = RunPass(*model, *passes::MakeConstantFolding(passes::kConstantFoldingBudget, 1000));
  // The first fold's 600 bytes stay charged while its constant lives, so the second would pass 1000.
  EXPECT_EQ(result.ops, (std::vector<std::string>{"ConstantOfShape", "Identity"}));
  EXPECT_NE(result.graph->FindValue("first")->constant(), nullptr);
  EXPECT_EQ(result.graph->FindValue("second")->constant(), nullptr);

  auto roomy = RunPass(*model, *passes::MakeConstantFolding(passes::kConstantFoldingBudget, 2000));
  EXPECT_EQ(roomy.ops, (std::vector<std::string>{"Identity"}));

  auto session = Session::Create(model);
  ASSERT_TRUE(session.ok()) << session.status();
  auto out = (*session)->Run({{"x", Tensor::FromVector<float>({1}, {1.f})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({150}, std::vector<float>(150, 0.f)), (*out)[1]));
}

TEST(ConstantFoldingTest, TheMemoryBudgetIsFourTimesTheConstantsAndAtLeastTheMinimum) {
  EXPECT_EQ(passes::ConstantFoldingMemoryBudget(0), passes::kMinConstantFoldingBytes);
  EXPECT_EQ(passes::ConstantFoldingMemoryBudget(passes::kMinConstantFoldingBytes / 4),
            passes::kMinConstantFoldingBytes);
  const int64_t weights = passes::kMinConstantFoldingBytes / 4 + 1000;
  EXPECT_EQ(passes::ConstantFoldingMemoryBudget(weights), 4 * weights);
  // Four times a model's constants may not fit in int64: the budget saturates instead of wrapping negative.
  EXPECT_EQ(passes::ConstantFoldingMemoryBudget(std::numeric_limits<int64_t>::max() / 2),
            std::numeric_limits<int64_t>::max());
}

}  // namespace
}  // namespace onnxserve

#include "runtime/registry/registry.h"

#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

TEST(RegistryTest, RangesOfOneOpNeverOverlap) { EXPECT_TRUE(KernelRegistry::Global().Validate().ok()); }

TEST(RegistryTest, ResolvesThroughTheModelsOpset) {
  const KernelDef* def = KernelRegistry::Global().Find("", "Identity", 15);
  ASSERT_NE(def, nullptr);
  EXPECT_EQ(def->since_version, 14);
  EXPECT_EQ(def->last_version, 15);
  EXPECT_EQ(KernelRegistry::Global().Find("ai.onnx", "Identity", 15), def);
}

TEST(RegistryTest, UnknownOpsAreListedWithTheirNodes) {
  auto result = testing::OpTest("NoSuchOp", 13).Input("x", Tensor::Scalar(1.0f)).Output("y").Run();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(result.status().message().find("ai.onnx NoSuchOp (opset 13"), std::string::npos)
      << result.status();
  EXPECT_NE(result.status().message().find("\"node\""), std::string::npos) << result.status();
}

}  // namespace
}  // namespace onnxserve

// Pooling: window geometry (pads, auto_pad, ceil_mode, dilations), Indices and the per-version attributes.
#include <cmath>

#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

// X [1, 1, 3, 3] = 1..9.
Tensor Grid() { return Tensor::FromVector<float>({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}); }

TEST(MaxPoolTest, TwoByTwoWindowsWithIndices) {
  auto out = OpTest("MaxPool", 8)
                 .Input("x", Grid())
                 .Attr("kernel_shape", std::vector<int64_t>{2, 2})
                 .Output("y")
                 .Output("indices")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 2, 2}, {5, 6, 8, 9}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({1, 1, 2, 2}, {4, 5, 7, 8}), (*out)[1]));
}

TEST(MaxPoolTest, ColumnMajorIndices) {
  // storage_order 1: the element at (h, w) is h + 3 * w.
  auto out = OpTest("MaxPool", 12)
                 .Input("x", Grid())
                 .Attr("kernel_shape", std::vector<int64_t>{2, 2})
                 .Attr("storage_order", int64_t{1})
                 .Output("y")
                 .Output("indices")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({1, 1, 2, 2}, {4, 7, 5, 8}), (*out)[1]));
}

TEST(MaxPoolTest, CeilModeKeepsThePartialLastWindowFromVersion10) {
  // kernel 2, stride 2 over 3: floor gives one window, ceil two (the second holds the last row/column).
  auto out = OpTest("MaxPool", 10)
                 .Input("x", Grid())
                 .Attr("kernel_shape", std::vector<int64_t>{2, 2})
                 .Attr("strides", std::vector<int64_t>{2, 2})
                 .Attr("ceil_mode", int64_t{1})
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 2, 2}, {5, 6, 8, 9}), (*out)[0]));
}

TEST(MaxPoolTest, DilatedWindowSkipsElements) {
  // kernel 2 with dilation 2 covers rows/columns 0 and 2.
  auto out = OpTest("MaxPool", 22)
                 .Input("x", Tensor::FromVector<float>({1, 1, 3, 3}, {9, 1, 1, 1, 8, 1, 1, 1, 1}))
                 .Attr("kernel_shape", std::vector<int64_t>{2, 2})
                 .Attr("dilations", std::vector<int64_t>{2, 2})
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 1, 1}, {9}), (*out)[0]));
}

TEST(MaxPoolTest, Int8FromVersion12) {
  const Tensor x = Tensor::FromVector<int8_t>({1, 1, 4}, {-5, -3, 7, -8});
  auto out = OpTest("MaxPool", 12).Input("x", x).Attr("kernel_shape", std::vector<int64_t>{2}).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int8_t>({1, 1, 3}, {-3, 7, 7}), (*out)[0]));
  EXPECT_FALSE(OpTest("MaxPool", 11).Input("x", x).Attr("kernel_shape", std::vector<int64_t>{2}).Output("y").Run().ok());
}

TEST(AveragePoolTest, CountIncludePadChangesTheDivisorAtTheBorder) {
  // pads 1 on every side, kernel 2, stride 2: corner window holds x[0,0] = 1 and three pads.
  OpTest base = OpTest("AveragePool", 7)
                    .Input("x", Grid())
                    .Attr("kernel_shape", std::vector<int64_t>{2, 2})
                    .Attr("strides", std::vector<int64_t>{2, 2})
                    .Attr("pads", std::vector<int64_t>{1, 1, 1, 1})
                    .Output("y");
  auto exclude = base.Run();
  ASSERT_TRUE(exclude.ok()) << exclude.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 2, 2}, {1, 2.5f, 5.5f, 7}), (*exclude)[0]));
  auto include = base.Attr("count_include_pad", int64_t{1}).Run();
  ASSERT_TRUE(include.ok()) << include.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 2, 2}, {0.25f, 1.25f, 2.75f, 7}), (*include)[0]));
}

TEST(AveragePoolTest, SameUpperPadsAtTheEnd) {
  // 1-D [1, 2, 3], kernel 2, SAME_UPPER: pad one at the end; windows (1,2), (2,3), (3).
  auto out = OpTest("AveragePool", 11)
                 .Input("x", Tensor::FromVector<float>({1, 1, 3}, {1, 2, 3}))
                 .Attr("kernel_shape", std::vector<int64_t>{2})
                 .Attr("auto_pad", std::string("SAME_UPPER"))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 3}, {1.5f, 2.5f, 3}), (*out)[0]));
}

TEST(AveragePoolTest, DilationsOnlyFromVersion19) {
  const Tensor x = Tensor::FromVector<float>({1, 1, 3}, {1, 2, 3});
  auto v19 = OpTest("AveragePool", 19)
                 .Input("x", x)
                 .Attr("kernel_shape", std::vector<int64_t>{2})
                 .Attr("dilations", std::vector<int64_t>{2})
                 .Output("y")
                 .Run();
  ASSERT_TRUE(v19.ok()) << v19.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 1}, {2}), (*v19)[0]));
}

TEST(LpPoolTest, PIsAFloatInVersion1AndAnIntLater) {
  const Tensor x = Tensor::FromVector<float>({1, 1, 2}, {3, -4});
  auto v1 = OpTest("LpPool", 1).Input("x", x).Attr("kernel_shape", std::vector<int64_t>{2}).Attr("p", 2.0f).Output(
      "y").Run();
  ASSERT_TRUE(v1.ok()) << v1.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 1}, {5}), (*v1)[0]));
  auto v18 = OpTest("LpPool", 18).Input("x", x).Attr("kernel_shape", std::vector<int64_t>{2}).Attr("p", int64_t{1})
                 .Output("y").Run();
  ASSERT_TRUE(v18.ok()) << v18.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 1}, {7}), (*v18)[0]));
}

TEST(GlobalPoolTest, OneValuePerPlane) {
  const Tensor x = Tensor::FromVector<float>({1, 2, 2}, {1, 3, -4, 3});
  auto avg = OpTest("GlobalAveragePool", 1).Input("x", x).Output("y").Run();
  ASSERT_TRUE(avg.ok()) << avg.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 2, 1}, {2, -0.5f}), (*avg)[0]));
  auto max = OpTest("GlobalMaxPool", 22).Input("x", x).Output("y").Run();
  ASSERT_TRUE(max.ok()) << max.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 2, 1}, {3, 3}), (*max)[0]));
  auto lp = OpTest("GlobalLpPool", 2).Input("x", x).Output("y").Run();
  ASSERT_TRUE(lp.ok()) << lp.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 2, 1}, {std::sqrt(10.0f), 5}), (*lp)[0]));
}

TEST(PoolTest, KernelShapeMustMatchTheSpatialRank) {
  auto out = OpTest("MaxPool", 22).Input("x", Grid()).Attr("kernel_shape", std::vector<int64_t>{2}).Output("y").Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("spatial"), std::string::npos) << out.status();
}

}  // namespace
}  // namespace onnxserve

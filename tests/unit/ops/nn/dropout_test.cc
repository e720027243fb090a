// Dropout: what each spec version decides (mode, ratio source, mask type) and the seeded mask stream.
#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

Tensor Ramp() { return Tensor::FromVector<float>({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}); }

// In training every y is either 0 (dropped) or x / (1 - ratio) (kept), and the mask says which.
template <typename M>
void ExpectConsistentDrop(const Tensor& x, const Tensor& y, const Tensor& mask, float ratio) {
  ASSERT_EQ(y.shape(), x.shape());
  ASSERT_EQ(mask.shape(), x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    const bool kept = static_cast<double>(mask.data<M>()[i]) != 0;
    EXPECT_FLOAT_EQ(y.data<float>()[i], kept ? x.data<float>()[i] / (1 - ratio) : 0.0f) << "element " << i;
  }
}

TEST(Dropout1Test, IsTestMakesItTheIdentity) {
  auto out = OpTest("Dropout", 1).Input("x", Ramp()).Attr("is_test", int64_t{1}).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Ramp(), (*out)[0]));
}

TEST(Dropout1Test, DefaultIsTrainingWithAMaskOfTheInputType) {
  auto out = OpTest("Dropout", 1).Input("x", Ramp()).Attr("ratio", 0.5f).Output("y").Output("mask").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[1].dtype(), DataType::kFloat);
  ExpectConsistentDrop<float>(Ramp(), (*out)[0], (*out)[1], 0.5f);
}

TEST(Dropout6Test, IsTestZeroTrainsAndOneIsTheIdentity) {
  auto train = OpTest("Dropout", 6).Input("x", Ramp()).Attr("ratio", 0.25f).Output("y").Output("mask").Run();
  ASSERT_TRUE(train.ok()) << train.status();
  EXPECT_EQ((*train)[1].dtype(), DataType::kFloat);
  ExpectConsistentDrop<float>(Ramp(), (*train)[0], (*train)[1], 0.25f);

  auto test = OpTest("Dropout", 6).Input("x", Ramp()).Attr("is_test", int64_t{1}).Output("y").Run();
  ASSERT_TRUE(test.ok()) << test.status();
  EXPECT_TRUE(TensorsClose(Ramp(), (*test)[0]));
}

TEST(Dropout7Test, IgnoresIsTestAndIsAlwaysInferenceWithAFloatMask) {
  // is_test no longer exists in version 7: a stale is_test=0 must not turn training on.
  auto out = OpTest("Dropout", 7)
                 .Input("x", Ramp())
                 .Attr("ratio", 0.5f)
                 .Attr("is_test", int64_t{0})
                 .Output("y")
                 .Output("mask")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Ramp(), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 4}, std::vector<float>(8, 1.0f)), (*out)[1]));
}

TEST(Dropout10Test, MaskIsBool) {
  auto out = OpTest("Dropout", 10).Input("x", Ramp()).Attr("ratio", 0.5f).Output("y").Output("mask").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Ramp(), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<bool>({2, 4}, std::vector<bool>(8, true)), (*out)[1]));
}

TEST(Dropout12Test, RatioIsAnInputAndTrainingModeTurnsDroppingOn) {
  auto out = OpTest("Dropout", 12)
                 .Input("x", Ramp())
                 .Input("ratio", Tensor::Scalar(0.75f))
                 .Input("training_mode", Tensor::Scalar(true))
                 .Attr("seed", int64_t{3})
                 .Output("y")
                 .Output("mask")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[1].dtype(), DataType::kBool);
  ExpectConsistentDrop<bool>(Ramp(), (*out)[0], (*out)[1], 0.75f);
}

TEST(Dropout12Test, WithoutTrainingModeTheRatioInputIsIgnored) {
  auto out = OpTest("Dropout", 12)
                 .Input("x", Ramp())
                 .Input("ratio", Tensor::Scalar(0.75f))
                 .Output("y")
                 .Output("mask")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Ramp(), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<bool>({2, 4}, std::vector<bool>(8, true)), (*out)[1]));
}

TEST(Dropout12Test, SeededMaskFollowsNumpysLegacyStream) {
  // np.random.seed(0); np.random.uniform(0, 1, 5) = [0.5488, 0.7152, 0.6028, 0.5449, 0.4237]: with ratio
  // 0.5 the first four are kept (u >= ratio) and the fifth dropped.
  const Tensor x = Tensor::FromVector<float>({5}, {1, 2, 3, 4, 5});
  auto out = OpTest("Dropout", 12)
                 .Input("x", x)
                 .Input("ratio", Tensor::Scalar(0.5f))
                 .Input("training_mode", Tensor::Scalar(true))
                 .Attr("seed", int64_t{0})
                 .Output("y")
                 .Output("mask")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({5}, {2, 4, 6, 8, 0}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<bool>({5}, {true, true, true, true, false}), (*out)[1]));
}

TEST(Dropout13Test, SameSeedSameMaskOnEveryRun) {
  const Tensor x = Tensor::FromVector<float>({64}, std::vector<float>(64, 1.0f));
  OpTest op = OpTest("Dropout", 13)
                  .Input("x", x)
                  .Input("ratio", Tensor::Scalar(0.5f))
                  .Input("training_mode", Tensor::Scalar(true))
                  .Attr("seed", int64_t{42})
                  .Output("y")
                  .Output("mask");
  auto first = op.Run();
  auto second = op.Run();
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(TensorsClose((*first)[1], (*second)[1]));
}

TEST(Dropout13Test, TrainingDropsTheRatioOfElementsAndScalesTheRest) {
  // 100000 ones, ratio 0.3: the dropped count is Binomial(n, 0.3); its one-degree-of-freedom chi-square
  // (k - n r)^2 / (n r (1 - r)) stays below 10.83 (the 0.1% critical value) at this fixed seed, and every
  // kept element is 1 / (1 - 0.3).
  constexpr int64_t n = 100000;
  constexpr double ratio = 0.3;
  auto out = OpTest("Dropout", 13)
                 .Input("x", Tensor::FromVector<float>({n}, std::vector<float>(n, 1.0f)))
                 .Input("ratio", Tensor::Scalar(0.3f))
                 .Input("training_mode", Tensor::Scalar(true))
                 .Attr("seed", int64_t{7})
                 .Output("y")
                 .Output("mask")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor& y = (*out)[0];
  const Tensor& mask = (*out)[1];
  double dropped = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!mask.data<bool>()[i]) {
      dropped += 1;
      EXPECT_EQ(y.data<float>()[i], 0.0f);
    } else {
      EXPECT_FLOAT_EQ(y.data<float>()[i], static_cast<float>(1 / (1 - ratio)));
    }
  }
  EXPECT_LT((dropped - n * ratio) * (dropped - n * ratio) / (n * ratio * (1 - ratio)), 10.83) << dropped;
}

TEST(Dropout13Test, AcceptsBFloat16) {
  const Tensor x = Tensor::FromVector<BFloat16>({2}, {BFloat16(1.5f), BFloat16(-2.0f)});
  auto out = OpTest("Dropout", 13).Input("x", x).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(x, (*out)[0]));
}

TEST(Dropout22Test, ZeroRatioInTrainingIsTheIdentityWithAnAllTrueMask) {
  auto out = OpTest("Dropout", 22)
                 .Input("x", Ramp())
                 .Input("ratio", Tensor::Scalar(0.0f))
                 .Input("training_mode", Tensor::Scalar(true))
                 .Output("y")
                 .Output("mask")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Ramp(), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<bool>({2, 4}, std::vector<bool>(8, true)), (*out)[1]));
}

TEST(Dropout22Test, RatioOfOneInTrainingIsAnError) {
  auto out = OpTest("Dropout", 22)
                 .Input("x", Ramp())
                 .Input("ratio", Tensor::Scalar(1.0f))
                 .Input("training_mode", Tensor::Scalar(true))
                 .Output("y")
                 .Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("ratio"), std::string::npos) << out.status();
}

}  // namespace
}  // namespace onnxserve

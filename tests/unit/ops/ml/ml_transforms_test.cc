// ai.onnx.ml row and feature transforms and encoders: Normalizer (MAX, L1, L2 with signs, zero rows),
// Imputer (NaN and sentinel values, per feature or shared), FeatureVectorizer (concatenation, padding),
// OneHotEncoder and CategoryMapper, with expected values worked out by hand.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/tensor.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::FailsWith;
using testing::OpTest;
using testing::ScopedSizeLimits;
using testing::TensorsClose;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

Tensor Floats(Shape shape, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(shape), v); }

absl::StatusOr<std::vector<Tensor>> RunOne(OpTest test, Tensor x) {
  test.Input("X", std::move(x)).Output("Y");
  return test.Run();
}

TEST(NormalizerTest, EachRowByItsNorm) {
  const Tensor x = Tensor::FromVector<int64_t>({3, 3}, {3, -4, 0, 0, 0, 0, -2, -1, -1});
  auto out = RunOne(OpTest("Normalizer", 1, "ai.onnx.ml").Attr("norm", std::string("L2")), x);
  ASSERT_TRUE(out.ok()) << out.status();
  // Norms 5, 0 (row copied), sqrt(6).
  const float r6 = static_cast<float>(std::sqrt(6.0));
  EXPECT_TRUE(TensorsClose(Floats({3, 3}, {0.6f, -0.8f, 0, 0, 0, 0, -2 / r6, -1 / r6, -1 / r6}), (*out)[0], 1e-6));

  out = RunOne(OpTest("Normalizer", 1, "ai.onnx.ml").Attr("norm", std::string("L1")), x);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({3, 3}, {3 / 7.0f, -4 / 7.0f, 0, 0, 0, 0, -0.5f, -0.25f, -0.25f}), (*out)[0], 1e-6));

  out = RunOne(OpTest("Normalizer", 1, "ai.onnx.ml"), x);  // MAX: the largest value, not magnitude: 3, 0, -1
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({3, 3}, {1, -4 / 3.0f, 0, 0, 0, 0, 2, 1, 1}), (*out)[0], 1e-6));

  out = RunOne(OpTest("Normalizer", 1, "ai.onnx.ml").Attr("norm", std::string("L3")), x);
  EXPECT_TRUE(FailsWith(out, "norm \"L3\" is not one of MAX, L1, L2"));
}

TEST(ImputerTest, ReplacesNaNPerFeatureOrWithOneValue) {
  OpTest per_feature("Imputer", 1, "ai.onnx.ml");
  per_feature.Attr("imputed_value_floats", std::vector<float>{10, 20}).Attr("replaced_value_float", kNaN);
  auto out = RunOne(per_feature, Floats({2, 2}, {kNaN, 1, 2, kNaN}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 2}, {10, 1, 2, 20}), (*out)[0]));

  OpTest shared("Imputer", 1, "ai.onnx.ml");
  shared.Attr("imputed_value_int64s", std::vector<int64_t>{7}).Attr("replaced_value_int64", int64_t{-1});
  out = RunOne(shared, Tensor::FromVector<int32_t>({3}, {-1, 0, -1}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({3}, {7, 0, 7}), (*out)[0]));
}

TEST(ImputerTest, ValuesThatDoNotFitFail) {
  OpTest both("Imputer", 1, "ai.onnx.ml");
  both.Attr("imputed_value_int64s", std::vector<int64_t>{7}).Attr("imputed_value_floats", std::vector<float>{1});
  EXPECT_TRUE(FailsWith(RunOne(both, Floats({1}, {0})), "exactly one of imputed_value_floats"));

  OpTest ints_for_floats("Imputer", 1, "ai.onnx.ml");
  ints_for_floats.Attr("imputed_value_int64s", std::vector<int64_t>{7});
  EXPECT_TRUE(FailsWith(RunOne(ints_for_floats, Floats({1}, {0})), "imputed_value_floats is not set"));

  OpTest three("Imputer", 1, "ai.onnx.ml");
  three.Attr("imputed_value_floats", std::vector<float>{1, 2, 3});
  EXPECT_TRUE(FailsWith(RunOne(three, Floats({1, 2}, {0, 0})), "imputed_value_floats has 3 values for 2 features"));

  OpTest too_big("Imputer", 1, "ai.onnx.ml");
  too_big.Attr("imputed_value_int64s", std::vector<int64_t>{int64_t{1} << 40});
  EXPECT_TRUE(FailsWith(RunOne(too_big, Tensor::FromVector<int32_t>({1}, {0})), "cannot hold"));
}

TEST(FeatureVectorizerTest, InputsSideBySidePaddedToTheirDimensions) {
  OpTest test("FeatureVectorizer", 1, "ai.onnx.ml");
  test.Attr("inputdimensions", std::vector<int64_t>{1, 3, 1})
      .Input("a", Tensor::FromVector<int64_t>({2, 1}, {1, 2}))
      .Input("b", Tensor::FromVector<double>({2, 2}, {0.5, 1.5, 2.5, 3.5}))  // padded to 3
      .Input("c", Floats({2, 2}, {7, 8, 9, 10}))                               // cut to 1
      .Output("Y");
  auto out = test.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 5}, {1, 0.5f, 1.5f, 0, 7, 2, 2.5f, 3.5f, 0, 9}), (*out)[0]));

  OpTest rows("FeatureVectorizer", 1, "ai.onnx.ml");
  rows.Attr("inputdimensions", std::vector<int64_t>{1, 1})
      .Input("a", Floats({2, 1}, {1, 2}))
      .Input("b", Floats({3, 1}, {1, 2, 3}))
      .Output("Y");
  EXPECT_TRUE(FailsWith(rows.Run(), "does not have the 2 rows of input 0"));

  OpTest count("FeatureVectorizer", 1, "ai.onnx.ml");
  count.Attr("inputdimensions", std::vector<int64_t>{1}).Input("a", Floats({1}, {1})).Input("b", Floats({1}, {1}));
  count.Output("Y");
  EXPECT_TRUE(FailsWith(count.Run(), "inputdimensions has 1 values for 2 inputs"));

  OpTest none("FeatureVectorizer", 1, "ai.onnx.ml");
  none.Attr("inputdimensions", std::vector<int64_t>{}).Input("a", Floats({1}, {1})).Output("Y");
  EXPECT_TRUE(FailsWith(none.Run(), "inputdimensions is empty"));
}

TEST(OneHotEncoderTest, OneColumnPerCategory) {
  OpTest strings("OneHotEncoder", 1, "ai.onnx.ml");
  strings.Attr("cats_strings", std::vector<std::string>{"r", "g", "b"});
  auto out = RunOne(strings, Tensor::FromVector<std::string>({2, 1}, {"b", "x"}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 1, 3}, {0, 0, 1, 0, 0, 0}), (*out)[0]));

  OpTest numbers("OneHotEncoder", 1, "ai.onnx.ml");
  numbers.Attr("cats_int64s", std::vector<int64_t>{4, 1, -2});
  out = RunOne(numbers, Floats({4}, {1.9f, -2, kNaN, 1e30f}));  // cast like ONNX Runtime: 1.9 -> 1
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({4, 3}, {0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}), (*out)[0]));

  OpTest strict("OneHotEncoder", 1, "ai.onnx.ml");
  strict.Attr("cats_int64s", std::vector<int64_t>{4}).Attr("zeros", int64_t{0});
  EXPECT_TRUE(FailsWith(RunOne(strict, Tensor::FromVector<int64_t>({1}, {5})), "X holds 5, which is none"));
  OpTest strict_strings("OneHotEncoder", 1, "ai.onnx.ml");
  strict_strings.Attr("cats_strings", std::vector<std::string>{"r"}).Attr("zeros", int64_t{0});
  EXPECT_TRUE(FailsWith(RunOne(strict_strings, Tensor::FromVector<std::string>({2}, {"r", "q"})), "X holds q"));

  OpTest wrong_kind("OneHotEncoder", 1, "ai.onnx.ml");
  wrong_kind.Attr("cats_int64s", std::vector<int64_t>{4});
  EXPECT_TRUE(FailsWith(RunOne(wrong_kind, Tensor::FromVector<std::string>({1}, {"4"})), "the categories are cats_int64s"));
}

// int64 -> string copies a category (or the default) per element: a 4 KiB default over 1024 elements is
// 4 MiB of characters, past a 1 MiB limit.
TEST(CategoryMapperTest, ALongCategoryOverALargeInputMustFitTheLimits) {
  OpTest test("CategoryMapper", 1, "ai.onnx.ml");
  test.Attr("cats_strings", std::vector<std::string>{"a"})
      .Attr("cats_int64s", std::vector<int64_t>{1})
      .Attr("default_string", std::string(4096, 'x'));
  ScopedSizeLimits limits(1 << 20);
  auto y = RunOne(test, Tensor::FromVector<int64_t>({1024}, std::vector<int64_t>(1024, 7)));
  EXPECT_EQ(y.status().code(), absl::StatusCode::kResourceExhausted) << y.status();
  EXPECT_TRUE(RunOne(test, Tensor::FromVector<int64_t>({200}, std::vector<int64_t>(200, 7))).ok());
}

TEST(CategoryMapperTest, StringsToIntsAndBack) {
  OpTest test("CategoryMapper", 1, "ai.onnx.ml");
  test.Attr("cats_strings", std::vector<std::string>{"cat", "dog", "cat"})
      .Attr("cats_int64s", std::vector<int64_t>{1, 2, 3})
      .Attr("default_int64", int64_t{-9})
      .Attr("default_string", std::string("?"));
  auto out = RunOne(test, Tensor::FromVector<std::string>({2, 2}, {"cat", "dog", "emu", "dog"}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({2, 2}, {3, 2, -9, 2}), (*out)[0]));  // the last "cat" wins
  out = RunOne(test, Tensor::FromVector<int64_t>({3}, {1, 3, 4}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({3}, {"cat", "cat", "?"}), (*out)[0]));

  OpTest lengths("CategoryMapper", 1, "ai.onnx.ml");
  lengths.Attr("cats_strings", std::vector<std::string>{"a"}).Attr("cats_int64s", std::vector<int64_t>{1, 2});
  EXPECT_TRUE(FailsWith(RunOne(lengths, Tensor::FromVector<int64_t>({1}, {1})), "cats_int64s has 2 values, expected 1"));
}

}  // namespace
}  // namespace onnxserve

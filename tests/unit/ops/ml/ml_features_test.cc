// ai.onnx.ml preprocessing: Binarizer, Scaler, ArrayFeatureExtractor, and LabelEncoder in each of its
// versions (1: classes_strings both ways; 2: keys_*/values_* lists; 4: tensors, NaN keys, last key wins).
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/tensor.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::ScopedSizeLimits;
using testing::TensorsClose;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

absl::StatusOr<Tensor> RunOne(OpTest test, Tensor x) {
  test.Input("X", std::move(x)).Output("Y");
  auto out = test.Run();
  if (!out.ok()) return out.status();
  return (*out)[0];
}

Tensor Strings(const std::vector<std::string>& v) {
  return Tensor::FromVector<std::string>({static_cast<int64_t>(v.size())}, v);
}
Tensor Int64s(const std::vector<int64_t>& v) { return Tensor::FromVector<int64_t>({static_cast<int64_t>(v.size())}, v); }

TEST(BinarizerTest, OneAboveTheThresholdInTheInputType) {
  auto y = RunOne(OpTest("Binarizer", 1, "ai.onnx.ml").Attr("threshold", 1.5f),
                  Tensor::FromVector<float>({4}, {1.5f, 1.6f, -3, kNaN}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({4}, {0, 1, 0, 0}), *y));
  y = RunOne(OpTest("Binarizer", 1, "ai.onnx.ml"), Tensor::FromVector<int32_t>({3}, {-1, 0, 7}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({3}, {0, 0, 1}), *y));
}

TEST(ScalerTest, PerFeatureOrSharedOffsetAndScaleGiveFloat) {
  auto y = RunOne(OpTest("Scaler", 1, "ai.onnx.ml")
                      .Attr("offset", std::vector<float>{1, 10})
                      .Attr("scale", std::vector<float>{2, 0.5f}),
                  Tensor::FromVector<int64_t>({2, 2}, {1, 10, 3, 14}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 2}, {0, 0, 4, 2}), *y));

  y = RunOne(OpTest("Scaler", 1, "ai.onnx.ml").Attr("offset", std::vector<float>{1}).Attr("scale", 3.0f),
             Tensor::FromVector<double>({3}, {1, 2, 3}));
  EXPECT_FALSE(y.ok());  // scale must be a list: a float attribute has the wrong type

  y = RunOne(OpTest("Scaler", 1, "ai.onnx.ml").Attr("offset", std::vector<float>{1, 2, 3}),
             Tensor::FromVector<float>({1, 2}, {1, 2}));
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("offset has 3 values for 2 features"), std::string::npos) << y.status();
}

TEST(ArrayFeatureExtractorTest, PicksFeaturesOfTheLastAxis) {
  OpTest test("ArrayFeatureExtractor", 1, "ai.onnx.ml");
  test.Input("X", Tensor::FromVector<std::string>({2, 3}, {"a", "b", "c", "d", "e", "f"}))
      .Input("Y", Int64s({2, 0, 2}))
      .Output("Z");
  auto out = test.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({2, 3}, {"c", "a", "c", "f", "d", "f"}), (*out)[0]));

  OpTest one_row("ArrayFeatureExtractor", 1, "ai.onnx.ml");
  one_row.Input("X", Tensor::FromVector<float>({3}, {5, 6, 7})).Input("Y", Int64s({1})).Output("Z");
  out = one_row.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1}, {6}), (*out)[0]));

  OpTest outside("ArrayFeatureExtractor", 1, "ai.onnx.ml");
  outside.Input("X", Tensor::FromVector<float>({3}, {5, 6, 7})).Input("Y", Int64s({3})).Output("Z");
  out = outside.Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("index 3, outside [0, 3)"), std::string::npos) << out.status();
}

// Y may pick one feature many times, and both come from the request: a 4 KiB string picked 1024 times is
// 4 MiB of characters in a Z whose byte size counts only its 1024 string objects, past a 1 MiB limit.
TEST(ArrayFeatureExtractorTest, AStringPickedManyTimesMustFitTheLimits) {
  const auto run = [](size_t picks) {
    return OpTest("ArrayFeatureExtractor", 1, "ai.onnx.ml")
        .Input("X", Strings({std::string(4096, 'x'), "b"}))
        .Input("Y", Int64s(std::vector<int64_t>(picks, 0)))
        .Output("Z")
        .Run()
        .status();
  };
  ScopedSizeLimits limits(1 << 20);
  EXPECT_EQ(run(1024).code(), absl::StatusCode::kResourceExhausted) << run(1024);
  EXPECT_TRUE(run(200).ok()) << run(200);  // 800 KiB fits
}

TEST(LabelEncoderTest, Opset1MapsStringsToIndicesAndBack) {
  const std::vector<std::string> classes = {"cat", "dog", "emu"};
  auto y = RunOne(OpTest("LabelEncoder", 1, "ai.onnx.ml").Attr("classes_strings", classes).Attr("default_int64",
                                                                                                int64_t{-7}),
                  Strings({"emu", "cow", "cat"}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Int64s({2, -7, 0}), *y));

  y = RunOne(OpTest("LabelEncoder", 1, "ai.onnx.ml").Attr("classes_strings", classes), Int64s({1, 5, 0}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Strings({"dog", "_Unused", "cat"}), *y));
}

// Each output element is a copy of a value string from the model: a 4 KiB label over 1024 elements is 4 MiB
// of characters, past a 1 MiB limit (the output's byte size counts only its 1024 string objects). Without
// the check a long label turned a large request into an unbounded allocation.
TEST(LabelEncoderTest, ALongLabelOverALargeInputMustFitTheLimits) {
  OpTest test("LabelEncoder", 2, "ai.onnx.ml");
  test.Attr("keys_int64s", std::vector<int64_t>{1}).Attr("values_strings", std::vector<std::string>{std::string(4096, 'x')});
  ScopedSizeLimits limits(1 << 20);
  auto y = RunOne(test, Int64s(std::vector<int64_t>(1024, 1)));
  EXPECT_EQ(y.status().code(), absl::StatusCode::kResourceExhausted) << y.status();
  EXPECT_TRUE(RunOne(test, Int64s(std::vector<int64_t>(200, 1))).ok());  // 800 KiB fits
}

TEST(LabelEncoderTest, Opset2MapsFloatsWithTheirDefault) {
  OpTest test("LabelEncoder", 2, "ai.onnx.ml");
  test.Attr("keys_floats", std::vector<float>{0.5f, -0.0f}).Attr("values_strings", std::vector<std::string>{"half", "zero"});
  auto y = RunOne(test, Tensor::FromVector<float>({3}, {0.5f, 0.0f, 2}));  // 0.0 == -0.0
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Strings({"half", "zero", "_Unused"}), *y));

  OpTest tensors_are_new_in_4("LabelEncoder", 2, "ai.onnx.ml");
  tensors_are_new_in_4.Attr("keys_tensor", Int64s({1})).Attr("values_int64s", std::vector<int64_t>{2});
  auto bad = RunOne(tensors_are_new_in_4, Int64s({1}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("keys_tensor is new in ai.onnx.ml opset 4"), std::string::npos)
      << bad.status();
}

TEST(LabelEncoderTest, Opset4TensorsNaNKeysAndTheLastRepeatedKey) {
  OpTest test("LabelEncoder", 4, "ai.onnx.ml");
  test.Attr("keys_tensor", Tensor::FromVector<double>({3}, {1.5, std::nan(""), 1.5}))
      .Attr("values_tensor", Tensor::FromVector<int16_t>({3}, {10, 20, 30}))
      .Attr("default_tensor", Tensor::FromVector<int16_t>({1}, {-5}));
  auto y = RunOne(test, Tensor::FromVector<double>({3}, {1.5, -std::nan(""), 2}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int16_t>({3}, {30, 20, -5}), *y));

  OpTest wrong_input = test;
  auto bad = RunOne(wrong_input, Int64s({1}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("but the keys are double"), std::string::npos) << bad.status();

  OpTest mismatched("LabelEncoder", 4, "ai.onnx.ml");
  mismatched.Attr("keys_strings", std::vector<std::string>{"a", "b"}).Attr("values_int64s", std::vector<int64_t>{1});
  bad = RunOne(mismatched, Strings({"a"}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("2 keys but 1 values"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace onnxserve

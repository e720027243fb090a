#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/tensor.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

Tensor Floats(Shape shape, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(shape), v); }
Tensor Bools(const std::vector<bool>& v) {
  Tensor t(DataType::kBool, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<bool>()[i] = v[i];
  return t;
}

absl::StatusOr<Tensor> RunOne(const OpTest& test) {
  auto out = test.Run();
  if (!out.ok()) return out.status();
  return (*out)[0];
}

// numpy.compress's documented examples on a = [[1, 2], [3, 4], [5, 6]].
const Tensor kA = Floats({3, 2}, {1, 2, 3, 4, 5, 6});

TEST(CompressTest, NumpyExamples) {
  auto rows = RunOne(OpTest("Compress", 11).Input("a", kA).Input("c", Bools({false, true, true})).Attr("axis", int64_t{0}).Output("y"));
  auto short_rows = RunOne(OpTest("Compress", 9).Input("a", kA).Input("c", Bools({false, true})).Attr("axis", int64_t{0}).Output("y"));
  auto cols = RunOne(OpTest("Compress", 11).Input("a", kA).Input("c", Bools({false, true})).Attr("axis", int64_t{-1}).Output("y"));
  auto flat = RunOne(OpTest("Compress", 11).Input("a", kA).Input("c", Bools({false, true})).Output("y"));
  ASSERT_TRUE(rows.ok() && short_rows.ok() && cols.ok() && flat.ok());
  EXPECT_TRUE(TensorsClose(Floats({2, 2}, {3, 4, 5, 6}), *rows));
  EXPECT_TRUE(TensorsClose(Floats({1, 2}, {3, 4}), *short_rows));
  EXPECT_TRUE(TensorsClose(Floats({3, 1}, {2, 4, 6}), *cols));
  EXPECT_TRUE(TensorsClose(Floats({1}, {2}), *flat));
}

TEST(CompressTest, StringsAndARejectedConditionBeyondTheAxis) {
  const Tensor s = Tensor::FromVector<std::string>({3}, {"a", "b", "c"});
  auto y = RunOne(OpTest("Compress", 11).Input("s", s).Input("c", Bools({true, false, true})).Attr("axis", int64_t{0}).Output("y"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({2}, {"a", "c"}), *y));
  EXPECT_FALSE(RunOne(OpTest("Compress", 11).Input("s", s).Input("c", Bools({false, false, false, true}))
                          .Attr("axis", int64_t{0}).Output("y")).ok());
}

// An axis of 3 slices of nothing: the slice count was worked out as 0 elements / (3 slices * 0 per slice), an
// integer division by zero that killed the process.
TEST(CompressTest, SlicesOfNoElementsAreKeptAsEmptySlices) {
  const Tensor empty_rows(DataType::kFloat, {3, 0});
  auto y = RunOne(OpTest("Compress", 11).Input("a", empty_rows).Input("c", Bools({true, false, true}))
                      .Attr("axis", int64_t{0}).Output("y"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2, 0}));
}

// The spec's two examples.
TEST(ReverseSequenceTest, SpecExamples) {
  const Tensor x = Floats({4, 4}, {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15});
  auto time_major = RunOne(OpTest("ReverseSequence", 10).Input("x", x)
                               .Input("lens", Tensor::FromVector<int64_t>({4}, {4, 3, 2, 1})).Output("y"));
  ASSERT_TRUE(time_major.ok()) << time_major.status();
  EXPECT_TRUE(TensorsClose(Floats({4, 4}, {3, 6, 9, 12, 2, 5, 8, 13, 1, 4, 10, 14, 0, 7, 11, 15}), *time_major));

  const Tensor b = Floats({4, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
  auto batch_major = RunOne(OpTest("ReverseSequence", 10).Input("x", b)
                                .Input("lens", Tensor::FromVector<int64_t>({4}, {1, 2, 3, 4}))
                                .Attr("batch_axis", int64_t{0}).Attr("time_axis", int64_t{1}).Output("y"));
  ASSERT_TRUE(batch_major.ok()) << batch_major.status();
  EXPECT_TRUE(TensorsClose(Floats({4, 4}, {0, 1, 2, 3, 5, 4, 6, 7, 10, 9, 8, 11, 15, 14, 13, 12}), *batch_major));
}

TEST(ReverseSequenceTest, RejectsALengthBeyondTheTimeAxis) {
  EXPECT_FALSE(RunOne(OpTest("ReverseSequence", 10).Input("x", Floats({2, 1}, {1, 2}))
                          .Input("lens", Tensor::FromVector<int64_t>({1}, {3})).Output("y")).ok());
}

TEST(DetTest, MatricesAndBatches) {
  auto two = RunOne(OpTest("Det", 11).Input("x", Floats({2, 2}, {1, 2, 3, 4})).Output("y"));
  // A zero first pivot needs a row swap; the second matrix is singular; the third is diag(2, 3, 4).
  auto batch = RunOne(OpTest("Det", 22).Input("x", Floats({3, 3, 3}, {0, 1, 0, 1, 0, 0, 0, 0, 1,
                                                                        1, 2, 3, 2, 4, 6, 0, 1, 1,
                                                                        2, 0, 0, 0, 3, 0, 0, 0, 4}))
                       .Output("y"));
  ASSERT_TRUE(two.ok() && batch.ok());
  EXPECT_TRUE(TensorsClose(Tensor::Scalar(-2.0f), *two));
  EXPECT_TRUE(TensorsClose(Floats({3}, {-1, 0, 24}), *batch, 1e-5, 1e-6));
}

TEST(DetTest, RejectsNonSquareInput) {
  EXPECT_FALSE(RunOne(OpTest("Det", 22).Input("x", Floats({2, 3}, {1, 2, 3, 4, 5, 6})).Output("y")).ok());
}

// The spec's example: MaxPool(2x2, stride 2) of a 4x4 input picked these maxima at these flat indices.
TEST(MaxUnpoolTest, ScattersTheMaximaIntoZeros) {
  const Tensor x = Floats({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor i = Tensor::FromVector<int64_t>({1, 1, 2, 2}, {5, 7, 13, 15});
  auto y = RunOne(OpTest("MaxUnpool", 11).Input("x", x).Input("i", i).Attr("kernel_shape", std::vector<int64_t>{2, 2})
                      .Attr("strides", std::vector<int64_t>{2, 2}).Output("y"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 4, 4}, {0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4}), *y));
}

// The indices address the inferred 4x4 result, which output_shape pads with zeros at the end of each dim
// (the ONNX reference implementation and node test).
TEST(MaxUnpoolTest, OutputShapePadsTheInferredShapeAtTheEnd) {
  const Tensor x = Floats({1, 1, 2, 2}, {5, 6, 7, 8});
  const Tensor i = Tensor::FromVector<int64_t>({1, 1, 2, 2}, {5, 7, 13, 15});
  auto y = RunOne(OpTest("MaxUnpool", 22).Input("x", x).Input("i", i)
                      .Input("shape", Tensor::FromVector<int64_t>({4}, {1, 1, 5, 5}))
                      .Attr("kernel_shape", std::vector<int64_t>{2, 2}).Attr("strides", std::vector<int64_t>{2, 2})
                      .Output("y"));
  ASSERT_TRUE(y.ok()) << y.status();
  std::vector<float> expected(25, 0);
  expected[6] = 5, expected[8] = 6, expected[16] = 7, expected[18] = 8;  // (1,1) (1,3) (3,1) (3,3)
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 5, 5}, expected), *y));
}

TEST(MaxUnpoolTest, RejectsAnIndexOutsideTheOutputAndASmallerOutputShape) {
  EXPECT_FALSE(RunOne(OpTest("MaxUnpool", 22).Input("x", Floats({1, 1, 1, 1}, {1}))
                          .Input("i", Tensor::FromVector<int64_t>({1, 1, 1, 1}, {0}))
                          .Input("shape", Tensor::FromVector<int64_t>({4}, {1, 1, 1, 1}))
                          .Attr("kernel_shape", std::vector<int64_t>{2, 2}).Output("y")).ok());
  EXPECT_FALSE(RunOne(OpTest("MaxUnpool", 22).Input("x", Floats({1, 1, 1, 1}, {1}))
                          .Input("i", Tensor::FromVector<int64_t>({1, 1, 1, 1}, {4}))
                          .Attr("kernel_shape", std::vector<int64_t>{2, 2}).Output("y")).ok());
}

// Pads of 3 on every side of a 1x1 input and kernel leave spatial dims of -5: the two negatives made 25
// positions, which an output_shape of [1, 1, 0, 0] (each dim "at least" -5) let an index write past its end.
TEST(MaxUnpoolTest, PadsThatLeaveANegativeDimAreAnError) {
  auto y = RunOne(OpTest("MaxUnpool", 22).Input("x", Floats({1, 1, 1, 1}, {1}))
                      .Input("i", Tensor::FromVector<int64_t>({1, 1, 1, 1}, {24}))
                      .Input("shape", Tensor::FromVector<int64_t>({4}, {1, 1, 0, 0}))
                      .Attr("kernel_shape", std::vector<int64_t>{1, 1}).Attr("pads", std::vector<int64_t>{3, 3, 3, 3})
                      .Output("y"));
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument) << y.status();
}

absl::StatusOr<Tensor> Window(const std::string& op, int64_t size, int64_t periodic) {
  return RunOne(OpTest(op, 17).Input("size", Tensor::Scalar(size)).Attr("periodic", periodic)
                    .Attr("output_datatype", int64_t{11}).Output("y"));
}

// Periodic windows of 4 points sample one period at 0, pi/2, pi, 3pi/2; symmetric ones of 3 end where
// they start.
TEST(WindowTest, HannHammingBlackman) {
  auto hann = Window("HannWindow", 4, 1);
  auto hann_symmetric = Window("HannWindow", 3, 0);
  auto hamming = Window("HammingWindow", 4, 1);
  auto blackman = Window("BlackmanWindow", 3, 0);
  ASSERT_TRUE(hann.ok() && hann_symmetric.ok() && hamming.ok() && blackman.ok());
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<double>({4}, {0, 0.5, 1, 0.5}), *hann, 1e-9, 1e-12));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<double>({3}, {0, 1, 0}), *hann_symmetric, 1e-9, 1e-12));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<double>({4}, {4.0 / 46, 25.0 / 46, 1, 25.0 / 46}), *hamming, 1e-9, 1e-12));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<double>({3}, {0, 1, 0}), *blackman, 1e-9, 1e-12));
}

TEST(WindowTest, DefaultsToFloatAndRejectsNegativeSizes) {
  auto y = RunOne(OpTest("HannWindow", 17).Input("size", Tensor::Scalar(int32_t{2})).Output("y"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({2}, {0, 1}), *y));
  EXPECT_FALSE(Window("HannWindow", -1, 1).ok());
}

}  // namespace
}  // namespace onnxserve

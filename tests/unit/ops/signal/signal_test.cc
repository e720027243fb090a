// DFT, STFT and MelWeightMatrix: transforms of impulses and of known signals, worked out by hand.
#include <cmath>
#include <limits>
#include <numbers>

#include "gtest/gtest.h"
#include "tests/support/op_test.h"
#include "tests/support/resident_memory.h"

namespace onnxserve {
namespace {

using testing::FailsWith;
using testing::OpTest;
using testing::TensorsClose;

TEST(DftTest, ShiftedImpulseGivesTheTwiddles) {
  // DFT of [0, 1, 0, 0] is exp(-2 pi i k / 4) = 1, -i, -1, i.
  auto out = OpTest("DFT", 17).Input("x", Tensor::FromVector<float>({1, 4, 1}, {0, 1, 0, 0})).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 4, 2}, {1, 0, 0, -1, -1, 0, 0, 1}), (*out)[0], 1e-5, 1e-6));
}

TEST(DftTest, OnesidedForwardThenInverseOnesidedRoundTrips) {
  const Tensor x = Tensor::FromVector<float>({1, 4, 1}, {1, 2, 3, 4});
  auto spectrum = OpTest("DFT", 20).Input("x", x).NoInput().Input("axis", Tensor::Scalar<int64_t>(1))
                      .Attr("onesided", int64_t{1}).Output("y").Run();
  ASSERT_TRUE(spectrum.ok()) << spectrum.status();
  // Sum 10; k=1: -2+2i; k=2 (Nyquist): -2.
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 3, 2}, {10, 0, -2, 2, -2, 0}), (*spectrum)[0], 1e-5, 1e-5));
  auto back = OpTest("DFT", 20).Input("x", (*spectrum)[0]).NoInput().Input("axis", Tensor::Scalar<int64_t>(-2))
                  .Attr("onesided", int64_t{1}).Attr("inverse", int64_t{1}).Output("y").Run();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(TensorsClose(x, (*back)[0], 1e-5, 1e-5));
}

TEST(DftTest, DftLengthZeroPadsAndAxisSelectsTheDimension) {
  // Along axis 2 of [1, 1, 2, 1], padded to 4: [1, 1, 0, 0] -> 2, 1-i, 0, 1+i.
  auto out = OpTest("DFT", 17).Input("x", Tensor::FromVector<float>({1, 1, 2, 1}, {1, 1}))
                 .Input("len", Tensor::Scalar<int64_t>(4)).Attr("axis", int64_t{2}).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 4, 2}, {2, 0, 1, -1, 0, 0, 1, 1}), (*out)[0], 1e-5, 1e-6));
}

TEST(DftTest, PowerOfTwoAndOtherLengthsMatchAPlainDft) {
  // Lengths 64 (the FFT path) and 12 (the direct path) against the definition, in double.
  for (int64_t n : {64, 12}) {
    std::vector<double> x(static_cast<size_t>(2 * n));
    for (int64_t i = 0; i < 2 * n; ++i) x[i] = std::sin(0.7 * i) + 0.1 * (i % 5);
    std::vector<double> expected(x.size());
    for (int64_t k = 0; k < n; ++k) {
      double re = 0, im = 0;
      for (int64_t j = 0; j < n; ++j) {
        const double angle = -2 * std::numbers::pi * static_cast<double>(k * j) / static_cast<double>(n);
        re += x[2 * j] * std::cos(angle) - x[2 * j + 1] * std::sin(angle);
        im += x[2 * j] * std::sin(angle) + x[2 * j + 1] * std::cos(angle);
      }
      expected[2 * k] = re;
      expected[2 * k + 1] = im;
    }
    auto out = OpTest("DFT", 17).Input("x", Tensor::FromVector<double>({1, n, 2}, x)).Output("y").Run();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(TensorsClose(Tensor::FromVector<double>({1, n, 2}, expected), (*out)[0], 1e-9, 1e-9)) << "n " << n;
  }
}

TEST(StftTest, FramesAreWindowedDfts) {
  // Frames of 2 every 2 samples of [1, 2, 3, 4] with window [1, 0.5]: [1, 1] and [3, 2]; one-sided bins
  // (sum, difference).
  auto out = OpTest("STFT", 17).Input("signal", Tensor::FromVector<float>({1, 4, 1}, {1, 2, 3, 4}))
                 .Input("step", Tensor::Scalar<int64_t>(2)).Input("window", Tensor::FromVector<float>({2}, {1, 0.5f}))
                 .Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 2, 2, 2}, {2, 0, 0, 0, 5, 0, 1, 0}), (*out)[0], 1e-5, 1e-6));
}

// No signal to transform, whatever length the request asks for: an empty batch may declare 2^31 samples (or
// dft_length 2^31), as nothing bounds the dims of an empty tensor but their nonzero product, and the twiddle
// and window tables of that length took 32 to 48 GB (RESOURCE_EXHAUSTED under a 6 GB address limit).
TEST(SignalTest, AnEmptyBatchMakesNoTablesForTheLengthItDeclares) {
  const int64_t huge = int64_t{1} << 31;
  auto dft = OpTest("DFT", 20).Input("x", Tensor(DataType::kFloat, {0, 5, 1}))
                 .Input("dft_length", Tensor::Scalar<int64_t>(huge)).Output("y").Run();
  ASSERT_TRUE(dft.ok()) << dft.status();
  EXPECT_EQ((*dft)[0].shape(), Shape({0, huge, 2}));
  auto stft = OpTest("STFT", 17).Input("signal", Tensor(DataType::kFloat, {0, huge, 1}))
                  .Input("frame_step", Tensor::Scalar<int64_t>(1)).NoInput()
                  .Input("frame_length", Tensor::Scalar<int64_t>(huge)).Output("y").Run();
  ASSERT_TRUE(stft.ok()) << stft.status();
  EXPECT_EQ((*stft)[0].shape(), Shape({0, 1, huge / 2 + 1, 2}));
}

TEST(MelWeightMatrixTest, OneFilterOverTheLowBins) {
  // 8-point DFT at 8 kHz, one mel bin over [0, 4000] Hz: edges fall on bins 0, 0, 2, so the filter is 1 at
  // bin 0 and falls to 0.5 at bin 1.
  auto out = OpTest("MelWeightMatrix", 17).Input("bins", Tensor::Scalar<int32_t>(1))
                 .Input("dft", Tensor::Scalar<int32_t>(8)).Input("rate", Tensor::Scalar<int32_t>(8000))
                 .Input("lo", Tensor::Scalar(0.0f)).Input("hi", Tensor::Scalar(4000.0f)).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({5, 1}, {1, 0.5f, 0, 0, 0}), (*out)[0]));
}

// Each of these inputs holds one value: element 0 of an empty tensor was read anyway, and it held whatever
// the recycled buffer behind it held last (maybe another request's bytes).
TEST(SignalTest, EmptyScalarInputsAreErrors) {
  const Tensor none(DataType::kInt64, {0});
  const Tensor signal = Tensor::FromVector<float>({1, 4, 1}, {1, 2, 3, 4});
  EXPECT_TRUE(
      FailsWith(OpTest("DFT", 20).Input("x", signal).Input("dft_length", none).Output("y").Run(), "dft_length"));
  EXPECT_TRUE(FailsWith(OpTest("DFT", 20).Input("x", signal).NoInput().Input("axis", none).Output("y").Run(), "axis"));
  EXPECT_TRUE(FailsWith(OpTest("STFT", 17).Input("x", signal).Input("step", none).NoInput()
                            .Input("length", Tensor::Scalar<int64_t>(2)).Output("y").Run(), "frame_step"));
  EXPECT_TRUE(FailsWith(OpTest("STFT", 17).Input("x", signal).Input("step", Tensor::Scalar<int64_t>(1)).NoInput()
                            .Input("length", none).Output("y").Run(), "frame_length"));
  EXPECT_TRUE(FailsWith(OpTest("MelWeightMatrix", 17).Input("bins", none)
                            .Input("dft", Tensor::Scalar<int32_t>(8)).Input("rate", Tensor::Scalar<int32_t>(8000))
                            .Input("lo", Tensor::Scalar(0.0f)).Input("hi", Tensor::Scalar(4000.0f)).Output("y").Run(),
                        "num_mel_bins"));
  EXPECT_TRUE(FailsWith(OpTest("MelWeightMatrix", 17).Input("bins", Tensor::Scalar<int32_t>(1))
                            .Input("dft", Tensor::Scalar<int32_t>(8)).Input("rate", Tensor::Scalar<int32_t>(8000))
                            .Input("lo", Tensor(DataType::kFloat, {0})).Input("hi", Tensor::Scalar(4000.0f))
                            .Output("y").Run(),
                        "lower_edge_hertz"));
}

absl::StatusOr<std::vector<Tensor>> MelFilters(float lower_hz, float upper_hz) {
  return OpTest("MelWeightMatrix", 17).Input("bins", Tensor::Scalar<int32_t>(1))
      .Input("dft", Tensor::Scalar<int32_t>(8)).Input("rate", Tensor::Scalar<int32_t>(8000))
      .Input("lo", Tensor::Scalar(lower_hz)).Input("hi", Tensor::Scalar(upper_hz)).Output("y").Run();
}

// An edge frequency of NaN or 1e30 Hz put a filter edge on bin NaN or 1e27, which was converted to int64
// (undefined behaviour) before its range was checked; it is checked in floating point and named instead.
TEST(MelWeightMatrixTest, NonFiniteOrHugeEdgeFrequenciesAreErrors) {
  EXPECT_TRUE(FailsWith(MelFilters(std::numeric_limits<float>::quiet_NaN(), 4000), "lower_edge_hertz nan"));
  EXPECT_TRUE(FailsWith(MelFilters(0, 1e30f), "upper_edge_hertz 1e+30"));
}

// The filters are written straight into the output: 1024 mel bins over 32768 spectrogram bins as uint8 are
// 32 MiB of output, and were first 256 MiB of doubles outside the run's budget.
TEST(MelWeightMatrixTest, WritesItsFiltersIntoTheOutput) {
  const int64_t growth = testing::ResidentGrowth([] {
    auto out = OpTest("MelWeightMatrix", 17)
                   .Input("bins", Tensor::Scalar<int32_t>(1024))
                   .Input("dft", Tensor::Scalar<int32_t>(65534))
                   .Input("rate", Tensor::Scalar<int32_t>(16000))
                   .Input("lo", Tensor::Scalar(0.0f))
                   .Input("hi", Tensor::Scalar(8000.0f))
                   .Attr("output_datatype", int64_t{2})  // UINT8
                   .Output("y")
                   .Run();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].shape(), (Shape{32768, 1024}));
  });
  if (growth < 0) GTEST_SKIP() << "this kernel reports no resident-set high-water mark to reset";
  EXPECT_LT(growth, int64_t{128} << 20);
}

// A DFT's twiddle table and per-thread scratch are charged to the run: a one-element float16 signal padded
// to 2^20 points asks for a 2 MiB one-sided output and some 40 MiB of tables and scratch, which a 4 MiB
// budget refuses; padded to 2^10 it fits.
TEST(DftTest, ItsTablesAndScratchCountAgainstTheBudget) {
  const auto dft = [](int64_t length) {
    return OpTest("DFT", 20)
        .Input("x", Tensor::FromVector<Float16>({1, 1, 1}, {Float16(1.0f)}))
        .Input("len", Tensor::Scalar<int64_t>(length))
        .Input("axis", Tensor::Scalar<int64_t>(1))
        .Attr("onesided", int64_t{1})
        .Output("y")
        .MemoryBudget(int64_t{4} << 20)
        .Run();
  };
  auto long_one = dft(int64_t{1} << 20);
  EXPECT_EQ(long_one.status().code(), absl::StatusCode::kResourceExhausted) << long_one.status();
  auto short_one = dft(int64_t{1} << 10);
  ASSERT_TRUE(short_one.ok()) << short_one.status();
  EXPECT_EQ((*short_one)[0].shape(), (Shape{1, 513, 2}));
}

}  // namespace
}  // namespace onnxserve

// NhwcConv against the definition, a plain loop in double over every output, channel and tap, on the ISA the
// process dispatches on (ctest runs it again with ONNXSERVE_ISA=avx2, which oneDNN follows): ResNet's and
// MobileNet's shapes scaled down (1x1, 3x3 "same", the 1x1 at stride 2 of an even image, depthwise at
// strides 1 and 2), batches, a pointwise convolution cut into runs of pixels, one to three threads (bands of rows shared out), Z through the sum post-op,
// every fused activation, images large enough to be cut into bands for the run limits; what it refuses
// (pads past the kernel, more shapes than it keeps plans for); a plan reused for calls of other batches;
// and the layout changes both ways, tensors too small to split and large ones split over the pool.
#include "runtime/math/nhwc_conv.h"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/math/isa.h"
#include "tests/support/activation_reference.h"
#include "tests/support/conv_check.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::ConvOutputSize;
using testing::DescribeActivation;
using testing::EveryActivation;
using testing::ExpectConvOutput;
using testing::GuardedOutput;
using testing::MapLayout;
using testing::RandomFloats;
using testing::ReferenceActivation;
using testing::ReferenceConvGeometry;

struct Case {
  int64_t batch, channels, maps, in_h, in_w, kernel;
  int64_t stride = 1, pad = 0;
  bool depthwise = false;
  int threads = 1;
};

std::string Describe(const Case& c) {
  return ::testing::PrintToString(std::vector<int64_t>{c.batch, c.channels, c.maps, c.in_h, c.in_w, c.kernel,
                                                       c.stride, c.pad, c.depthwise, c.threads});
}

ConvShape2D ShapeOf(const Case& c) {
  const int64_t out_h = ConvOutputSize(c.in_h, c.pad, c.pad, c.kernel, 1, c.stride);
  const int64_t out_w = ConvOutputSize(c.in_w, c.pad, c.pad, c.kernel, 1, c.stride);
  // What the kernel tells oneDNN: the zeros the last window reads, never below zero.
  auto pad_end = [&](int64_t in, int64_t out) { return std::max<int64_t>(0, (out - 1) * c.stride + c.kernel - in - c.pad); };
  return {.batch = c.batch, .in_h = c.in_h, .in_w = c.in_w, .out_h = out_h, .out_w = out_w,
          .stride_h = c.stride, .stride_w = c.stride, .pad_top = c.pad, .pad_left = c.pad,
          .pad_bottom = pad_end(c.in_h, out_h), .pad_right = pad_end(c.in_w, out_w)};
}

// NCHW [batch, channels, pixels] as NHWC, by the definition.
std::vector<float> Nhwc(const std::vector<float>& nchw, int64_t batch, int64_t channels, int64_t pixels) {
  std::vector<float> out(nchw.size());
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t p = 0; p < pixels; ++p) out[(n * pixels + p) * channels + c] = nchw[(n * channels + c) * pixels + p];
    }
  }
  return out;
}

// A pointwise convolution computed into the convolution's input (NhwcPrologue): X' = activation(conv(X, W')
// + bias'), X of `channels`.
struct PrologueCase {
  int64_t channels;
  Activation activation;
  bool with_bias = true;
};

// X' by the definition, NCHW, in double rounded to float as the kernels store it.
std::vector<float> ReferencePrologue(const PrologueCase& pre, const std::vector<float>& x, const std::vector<float>& w,
                                     const std::vector<float>& b, int64_t batch, int64_t maps, int64_t pixels) {
  std::vector<float> out(static_cast<size_t>(batch * maps * pixels));
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t m = 0; m < maps; ++m) {
      for (int64_t p = 0; p < pixels; ++p) {
        double sum = pre.with_bias ? b[m] : 0.0;
        for (int64_t k = 0; k < pre.channels; ++k) sum += double{w[m * pre.channels + k]} * x[(n * pre.channels + k) * pixels + p];
        out[(n * maps + m) * pixels + p] = static_cast<float>(ReferenceActivation(pre.activation, sum));
      }
    }
  }
  return out;
}

// The process's resident set (VmRSS), in bytes.
int64_t ResidentBytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

class NhwcConvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!NhwcConvAvailable()) GTEST_SKIP() << "built without oneDNN (ONNXSERVE_DNNL=OFF), or the CPU has no AVX2";
  }

  static std::unique_ptr<NhwcConv> Make(const Case& c, bool with_z, const Activation& activation,
                                        const std::optional<PrologueCase>& pre = std::nullopt) {
    return NhwcConv::Create({.maps = c.maps, .channels = c.depthwise ? 1 : c.channels, .kernel_h = c.kernel,
                             .kernel_w = c.kernel, .depthwise = c.depthwise},
                            with_z, activation,
                            pre ? std::optional<NhwcPrologue>({pre->channels, pre->activation}) : std::nullopt);
  }

  // Y = activation(conv(X, W) + bias [+ Z]) against the definition, with Y followed by sentinels oneDNN must
  // not write; with a prologue, on X' computed from an X of its channels; on `made` (made by Make for the
  // same weights, Z, activation and prologue) when given, else on a new one; Z given in Y's own storage
  // where `z_in_y`.
  static void Check(const Case& c, bool with_z, const Activation& activation,
                    const std::optional<PrologueCase>& pre = std::nullopt, const NhwcConv* made = nullptr,
                    bool z_in_y = false) {
    SCOPED_TRACE(::testing::Message() << "case " << Describe(c) << " on " << IsaName(ActiveIsa())
                                      << " z=" << with_z << " activation=" << DescribeActivation(activation)
                                      << " prologue=" << (pre ? DescribeActivation(pre->activation) : "none"));
    const ConvShape2D shape = ShapeOf(c);
    const int64_t group_channels = c.depthwise ? 1 : c.channels;
    const int64_t taps = group_channels * c.kernel * c.kernel, out_pixels = shape.out_h * shape.out_w;
    const int64_t y_size = c.batch * c.maps * out_pixels;
    const int64_t pixels = c.in_h * c.in_w, x_channels = pre ? pre->channels : c.channels;
    const std::vector<float> x = RandomFloats(c.batch * x_channels * pixels, 1);
    const std::vector<float> w_pre = RandomFloats(c.channels * x_channels, 5), b_pre = RandomFloats(c.channels, 6);
    const std::vector<float> conv_input =
        pre ? ReferencePrologue(*pre, x, w_pre, b_pre, c.batch, c.channels, pixels) : x;
    const std::vector<float> w = RandomFloats(c.maps * taps, 2), b = RandomFloats(c.maps, 3);
    const std::vector<float> z = RandomFloats(y_size, 4);  // NHWC already: any values do
    GuardedOutput y(y_size);
    ThreadPool pool(c.threads);
    const std::unique_ptr<NhwcConv> own = made == nullptr ? Make(c, with_z, activation, pre) : nullptr;
    const NhwcConv* conv = made != nullptr ? made : own.get();
    ASSERT_NE(conv, nullptr);
    const std::vector<float> x_nhwc = Nhwc(x, c.batch, x_channels, pixels);
    if (z_in_y) std::copy(z.begin(), z.end(), y.data());
    const float* z_data = with_z ? (z_in_y ? y.data() : z.data()) : nullptr;
    const absl::StatusOr<bool> ran =
        pre ? conv->TryRunWithPrologue(shape, x_nhwc.data(), w_pre.data(), pre->with_bias ? b_pre.data() : nullptr,
                                       w.data(), b.data(), z_data, y.data(), pool)
            : conv->TryRun(shape, x_nhwc.data(), w.data(), b.data(), z_data, y.data(), pool);
    ASSERT_TRUE(ran.ok()) << ran.status();
    ASSERT_TRUE(*ran);
    const ReferenceConvGeometry geometry{.channels = c.channels, .group_channels = group_channels,
                                         .group_maps = c.depthwise ? 1 : c.maps, .in_h = c.in_h, .in_w = c.in_w,
                                         .kernel_h = c.kernel, .kernel_w = c.kernel, .stride_h = c.stride,
                                         .stride_w = c.stride, .pad_top = c.pad, .pad_left = c.pad};
    ExpectConvOutput({.geometry = geometry, .x = conv_input.data(), .w = w.data(), .bias = b.data(),
                      .z = with_z ? z.data() : nullptr,
                      .activation = activation, .batch = c.batch, .maps = c.maps, .out_h = shape.out_h,
                      .out_w = shape.out_w, .layout = MapLayout::kNhwc,
                      // X' of a prologue sums its channels first: its rounding reaches each tap.
                      .tolerance_scale = pre ? 1.0 + static_cast<double>(pre->channels) : 1.0},
                     y.data());
    EXPECT_TRUE(y.NothingWrittenPast());
  }
};

TEST_F(NhwcConvTest, MatchesTheDefinitionOnResNetAndMobileNetShapes) {
  const Case cases[] = {
      {.batch = 1, .channels = 32, .maps = 16, .in_h = 14, .in_w = 14, .kernel = 1},
      {.batch = 1, .channels = 24, .maps = 40, .in_h = 9, .in_w = 11, .kernel = 3, .pad = 1, .threads = 2},
      // The 1x1 at stride 2 of an even image, whose last row and column no window reads.
      {.batch = 2, .channels = 16, .maps = 32, .in_h = 12, .in_w = 12, .kernel = 1, .stride = 2, .threads = 2},
      {.batch = 1, .channels = 40, .maps = 40, .in_h = 13, .in_w = 10, .kernel = 3, .pad = 1, .depthwise = true},
      {.batch = 3, .channels = 24, .maps = 24, .in_h = 15, .in_w = 15, .kernel = 5, .stride = 2, .pad = 2,
       .depthwise = true, .threads = 3},
      {.batch = 1, .channels = 3, .maps = 16, .in_h = 23, .in_w = 23, .kernel = 7, .stride = 2, .pad = 3, .threads = 2},
      // A pointwise convolution of a 7x7 map over two threads: runs of 25 and 24 pixels, not rows 4 + 3.
      {.batch = 1, .channels = 96, .maps = 96, .in_h = 7, .in_w = 7, .kernel = 1, .threads = 2},
      // Weights that outweigh X and Y: shared out by maps, 48 + 32 of them, 32 + 32 + 16 on three threads;
      // the last at stride 2, where bands of rows would read windows.
      {.batch = 1, .channels = 64, .maps = 80, .in_h = 5, .in_w = 6, .kernel = 3, .pad = 1, .threads = 2},
      {.batch = 1, .channels = 64, .maps = 80, .in_h = 5, .in_w = 6, .kernel = 3, .pad = 1, .threads = 3},
      {.batch = 1, .channels = 512, .maps = 200, .in_h = 3, .in_w = 3, .kernel = 1, .threads = 2},
      {.batch = 1, .channels = 512, .maps = 200, .in_h = 6, .in_w = 5, .kernel = 1, .stride = 2, .threads = 2},
  };
  for (const Case& c : cases) {
    Check(c, false, {});
    Check(c, true, {ActivationKind::kRelu});
  }
}

TEST_F(NhwcConvTest, AppliesEveryFusedActivationAfterZ) {
  for (const Activation& activation : EveryActivation()) {
    Check({.batch = 1, .channels = 16, .maps = 24, .in_h = 8, .in_w = 8, .kernel = 3, .pad = 1, .threads = 2}, true,
          activation);
    // Shared out by maps: each share's Z, bias and activation are its own maps'.
    Check({.batch = 1, .channels = 64, .maps = 80, .in_h = 5, .in_w = 6, .kernel = 3, .pad = 1, .threads = 2}, true,
          activation);
  }
}

TEST_F(NhwcConvTest, ZMayBeYItself) {
  // A residual sum whose Y goes over Z (KernelContext::OutputOver): bands of rows, runs of pixels, shares
  // of the maps (computed apart and copied out) and a batch each read their part of Z before writing it.
  const Case cases[] = {
      {.batch = 1, .channels = 24, .maps = 40, .in_h = 9, .in_w = 11, .kernel = 3, .pad = 1, .threads = 2},
      {.batch = 1, .channels = 96, .maps = 96, .in_h = 7, .in_w = 7, .kernel = 1, .threads = 2},
      {.batch = 1, .channels = 64, .maps = 80, .in_h = 5, .in_w = 6, .kernel = 3, .pad = 1, .threads = 2},
      {.batch = 2, .channels = 16, .maps = 32, .in_h = 12, .in_w = 12, .kernel = 1, .stride = 2, .threads = 2},
  };
  for (const Case& c : cases) {
    Check(c, true, {ActivationKind::kRelu}, std::nullopt, nullptr, /*z_in_y=*/true);
    Check(c, true, {ActivationKind::kHardSwish}, std::nullopt, nullptr, /*z_in_y=*/true);
  }
}

TEST_F(NhwcConvTest, CutsLargeImagesIntoBands) {
  // 64 x 64 x 9 multiply-adds per output, 64 x 64 outputs: past one band's work on one thread.
  Check({.batch = 1, .channels = 64, .maps = 64, .in_h = 64, .in_w = 64, .kernel = 3, .pad = 1}, true, {});
}

// A node keeps its plans per image geometry, whatever the batch: a later call of more or fewer images of
// the same size must compute each of its own images, and no image past them (the plan once ran the batch
// of the call that made it: the images past it were left unwritten, or written past Y's end).
TEST_F(NhwcConvTest, RunsTheBatchOfEachCallOnAPlanMadeForAnother) {
  for (const bool winograd : {false, true}) {
    const Case one = winograd ? Case{.batch = 1, .channels = 16, .maps = 16, .in_h = 28, .in_w = 28, .kernel = 3,
                                     .pad = 1}
                              : Case{.batch = 1, .channels = 8, .maps = 16, .in_h = 6, .in_w = 5, .kernel = 3,
                                     .pad = 1, .threads = 2};
    const std::unique_ptr<NhwcConv> conv = Make(one, false, {});
    for (const int64_t batch : {1, 3, 1, 2}) {
      Case c = one;
      c.batch = batch;
      Check(c, false, {}, std::nullopt, conv.get());
    }
  }
  // And band by band under a prologue (its maps past the 3 MiB it starts at).
  const Case one{.batch = 1, .channels = 48, .maps = 48, .in_h = 128, .in_w = 128, .kernel = 3, .pad = 1,
                 .depthwise = true, .threads = 2};
  const PrologueCase pre{.channels = 4, .activation = {ActivationKind::kRelu}};
  const std::unique_ptr<NhwcConv> conv = Make(one, false, {}, pre);
  for (const int64_t batch : {1, 2, 1}) {
    Case c = one;
    c.batch = batch;
    Check(c, false, {}, pre, conv.get());
  }
}

// Dense 3x3s at stride 1 of at least 28 x 28 output pixels per band run through oneDNN's Winograd kernel on
// AVX-512, in its blocked layout (reorders around each band), the activation after it unless it is Relu;
// on AVX2 the same shapes run the direct kernel.
TEST_F(NhwcConvTest, LargeThreeByThreeMapsMatchTheDefinition) {
  const Case cases[] = {
      {.batch = 2, .channels = 24, .maps = 40, .in_h = 30, .in_w = 30, .kernel = 3, .pad = 1},
      // Two bands of 32 and 28 rows (a multiple of Winograd's tile, 4 rows, where half would be 30).
      {.batch = 1, .channels = 16, .maps = 32, .in_h = 60, .in_w = 31, .kernel = 3, .pad = 1, .threads = 2},
      // Without pads: each band reads two rows past its own.
      {.batch = 1, .channels = 32, .maps = 16, .in_h = 34, .in_w = 30, .kernel = 3, .threads = 2},
      // Rows too few a thread for Winograd (15 and 10 of 30 and 29): bands of every row and a block of maps,
      // 32 + 8 and 32 + 32 + 2, each a strided part of Y.
      {.batch = 1, .channels = 24, .maps = 40, .in_h = 30, .in_w = 30, .kernel = 3, .pad = 1, .threads = 2},
      {.batch = 1, .channels = 16, .maps = 66, .in_h = 29, .in_w = 31, .kernel = 3, .pad = 1, .threads = 3},
  };
  for (const Case& c : cases) {
    for (const Activation& activation : EveryActivation()) Check(c, false, activation);
  }
}

// The expansion of a MobileNet block into its depthwise convolution, computed band by band into each band's
// window: X' of 48 x 128 x 128 floats (3 MiB, where computing it whole stops paying) and over. Bands meet
// inside a window's rows (stride 1 windows overlap by two rows, stride 2 by one, 5x5 by four), and the last
// band's window ends at the image, short of its pads.
TEST_F(NhwcConvTest, APrologueComputedBandByBandMatchesTheDefinition) {
  const Case cases[] = {
      {.batch = 1, .channels = 48, .maps = 48, .in_h = 128, .in_w = 128, .kernel = 3, .pad = 1, .depthwise = true},
      {.batch = 2, .channels = 48, .maps = 48, .in_h = 129, .in_w = 130, .kernel = 3, .stride = 2, .pad = 1,
       .depthwise = true, .threads = 2},
      {.batch = 1, .channels = 64, .maps = 64, .in_h = 111, .in_w = 113, .kernel = 5, .stride = 2, .pad = 2,
       .depthwise = true, .threads = 3},
  };
  const Activation hard_swish{ActivationKind::kHardSwish};
  for (const Case& c : cases) {
    Check(c, false, {ActivationKind::kRelu}, PrologueCase{.channels = 8, .activation = {ActivationKind::kRelu}});
    Check(c, true, hard_swish, PrologueCase{.channels = 5, .activation = hard_swish, .with_bias = false});
  }
  for (const Activation& activation : EveryActivation()) {
    Check(cases[0], false, {}, PrologueCase{.channels = 3, .activation = activation});
  }
}

// An X' that stays in cache whole (under 3 MiB an image) is the caller's to compute: the bands' shared rows
// would cost for nothing.
TEST_F(NhwcConvTest, APrologueOfSmallMapsIsLeftToTheCaller) {
  ThreadPool pool(1);
  const int64_t channels = 16, side = 32;
  const std::vector<float> x = RandomFloats(4 * side * side, 1), w_pre = RandomFloats(channels * 4, 2);
  const std::vector<float> w = RandomFloats(channels * 9, 3);
  std::vector<float> y(channels * side * side, 0.0f);
  const auto conv = NhwcConv::Create({.maps = channels, .channels = 1, .kernel_h = 3, .kernel_w = 3, .depthwise = true},
                                     false, {}, NhwcPrologue{.channels = 4, .activation = {}});
  const ConvShape2D shape{.batch = 1, .in_h = side, .in_w = side, .out_h = side, .out_w = side, .pad_top = 1,
                          .pad_left = 1, .pad_bottom = 1, .pad_right = 1};
  const absl::StatusOr<bool> ran =
      conv->TryRunWithPrologue(shape, x.data(), w_pre.data(), nullptr, w.data(), nullptr, nullptr, y.data(), pool);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_FALSE(*ran);
  EXPECT_EQ(y, std::vector<float>(y.size(), 0.0f)) << "a declined call must leave Y alone";
}

TEST_F(NhwcConvTest, RefusesPadsPastTheKernelAndShapesPastItsPlans) {
  ThreadPool pool(1);
  const std::vector<float> w = RandomFloats(8 * 8, 2), x = RandomFloats(8 * 64, 1);
  std::vector<float> y(8 * 64 * 4, 0.0f);
  const auto conv = NhwcConv::Create({.maps = 8, .channels = 8, .kernel_h = 1, .kernel_w = 1}, false, {});
  // A 1x1 with a pad of 1: its border outputs read only zeros, which oneDNN does not take.
  ConvShape2D padded{.batch = 1, .in_h = 8, .in_w = 8, .out_h = 10, .out_w = 10, .pad_top = 1, .pad_left = 1,
                     .pad_bottom = 1, .pad_right = 1};
  EXPECT_FALSE(*conv->TryRun(padded, x.data(), w.data(), nullptr, nullptr, y.data(), pool));
  EXPECT_EQ(y, std::vector<float>(y.size(), 0.0f)) << "a refused shape must leave Y alone";
  int ran = 0;
  for (int64_t side = 1; side <= 8; ++side) {
    const ConvShape2D shape{.batch = 1, .in_h = side, .in_w = 8, .out_h = side, .out_w = 8};
    ran += *conv->TryRun(shape, x.data(), w.data(), nullptr, nullptr, y.data(), pool);
  }
  EXPECT_EQ(ran, 4) << "plans are kept for four shapes a node; past them the caller's kernel runs";
}

// A request of no images may still declare a huge image (X has no elements whatever its height): there is
// nothing to compute, and planning bands for the image would make a primitive per row.
TEST_F(NhwcConvTest, NoImagesOfAHugeSizeComputeNothing) {
  ThreadPool pool(2);
  const std::vector<float> w = RandomFloats(8 * 8 * 9, 2);
  const auto conv = NhwcConv::Create({.maps = 8, .channels = 8, .kernel_h = 3, .kernel_w = 3}, false, {});
  const int64_t side = int64_t{1} << 30;
  const ConvShape2D shape{.batch = 0, .in_h = side, .in_w = side, .out_h = side, .out_w = side, .pad_top = 1,
                          .pad_left = 1, .pad_bottom = 1, .pad_right = 1};
  float none = 0.0f;
  const absl::StatusOr<bool> ran = conv->TryRun(shape, &none, w.data(), nullptr, nullptr, &none, pool);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_TRUE(*ran);
}

// A Winograd band (AVX-512) runs on blocked copies of its window of X and of its output, with channels and
// maps padded to oneDNN's 16, in per-thread scratch that stays after the call. A band is bounded in work,
// not in size: on one channel and one map a 3000 x 3000 image (36 MB) was one band, and the thread kept
// 1.1 GB of copies past the call, outside any run's budget. The copies now stay within 16 MB a band.
TEST_F(NhwcConvTest, KeepsNoBlockedCopiesManyTimesTheSizeOfItsMaps) {
  constexpr int64_t kSide = 3000;
  ThreadPool pool(1);
  const std::vector<float> w = RandomFloats(9, 2), x = RandomFloats(kSide * kSide, 1);
  std::vector<float> y(kSide * kSide);
  const auto conv = NhwcConv::Create({.maps = 1, .channels = 1, .kernel_h = 3, .kernel_w = 3}, false, {});
  const ConvShape2D shape{.batch = 1, .in_h = kSide, .in_w = kSide, .out_h = kSide, .out_w = kSide, .pad_top = 1,
                          .pad_left = 1, .pad_bottom = 1, .pad_right = 1};
  const int64_t before = ResidentBytes();
  const absl::StatusOr<bool> ran = conv->TryRun(shape, x.data(), w.data(), nullptr, nullptr, y.data(), pool);
  ASSERT_TRUE(ran.ok()) << ran.status();
  // Far below the 1.1 GB, far above what the process's other allocations might add meanwhile.
  EXPECT_LT(ResidentBytes() - before, int64_t{256} << 20);
  ASSERT_TRUE(*ran);
  for (const int64_t at : {int64_t{0}, kSide * kSide / 2 + kSide / 3, kSide * kSide - 1}) {
    const int64_t oh = at / kSide, ow = at % kSide;
    double want = 0;
    for (int64_t kh = 0; kh < 3; ++kh) {
      for (int64_t kw = 0; kw < 3; ++kw) {
        const int64_t ih = oh + kh - 1, iw = ow + kw - 1;
        if (ih >= 0 && ih < kSide && iw >= 0 && iw < kSide) want += double{w[kh * 3 + kw]} * x[ih * kSide + iw];
      }
    }
    EXPECT_NEAR(y[at], want, 1e-4) << "at " << oh << "," << ow;
  }
}

TEST_F(NhwcConvTest, RejectsZWhereItWasNotMadeForOne) {
  ThreadPool pool(1);
  const std::vector<float> w = RandomFloats(8 * 8, 2), x = RandomFloats(8 * 16, 1);
  std::vector<float> y(8 * 16), z(8 * 16);
  const ConvShape2D shape{.batch = 1, .in_h = 4, .in_w = 4, .out_h = 4, .out_w = 4};
  const auto conv = NhwcConv::Create({.maps = 8, .channels = 8, .kernel_h = 1, .kernel_w = 1}, false, {});
  EXPECT_FALSE(conv->TryRun(shape, x.data(), w.data(), nullptr, z.data(), y.data(), pool).ok());
}

TEST(NhwcLayoutTest, ChangesBothWaysAsTheDefinitionSays) {
  // Small tensors on one thread, large ones split over two: into NHWC by runs of pixels, into NCHW by
  // blocks of 16 maps (1040 + 1011 of the last).
  for (const auto& [batch, channels, pixels] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 3, 7}, {2, 5, 1}, {2, 96, 56 * 56}, {1, 1, 9}, {1, 2051, 49}}) {
    SCOPED_TRACE(::testing::Message() << batch << " x " << channels << " x " << pixels);
    ThreadPool pool(2);
    const std::vector<float> nchw = RandomFloats(batch * channels * pixels, 7);
    std::vector<float> nhwc(nchw.size()), back(nchw.size());
    NchwToNhwc(batch, channels, pixels, nchw.data(), nhwc.data(), pool);
    EXPECT_EQ(nhwc, Nhwc(nchw, batch, channels, pixels));
    NhwcToNchw(batch, channels, pixels, nhwc.data(), back.data(), pool);
    EXPECT_EQ(back, nchw);
  }
}

TEST(NhwcLayoutTest, NewShapesOnOneThreadLeaveAnotherThreadsChangesIntact) {
  // The process keeps its layout-change primitives in a cache that grows with new shapes: a thread running
  // one must not be reading the cache's storage while another thread's new shape reallocates it. A stress
  // test: under ASan it caught the reference into the cache that the first version handed out (not on
  // every run, since the window is the call's first instructions).
  const std::vector<float> nchw = RandomFloats(16 * 64, 7), want = Nhwc(nchw, 1, 16, 64);
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0};
  std::thread steady([&] {
    ThreadPool pool(1);
    std::vector<float> nhwc(nchw.size());
    while (!done.load()) {
      NchwToNhwc(1, 16, 64, nchw.data(), nhwc.data(), pool);
      wrong += nhwc != want;
    }
  });
  ThreadPool pool(1);
  for (int64_t pixels = 1; pixels <= 300; ++pixels) {
    const std::vector<float> x = RandomFloats(3 * pixels, 8);
    std::vector<float> y(x.size());
    NchwToNhwc(1, 3, pixels, x.data(), y.data(), pool);
    ASSERT_EQ(y, Nhwc(x, 1, 3, pixels));
  }
  done = true;
  steady.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace onnxserve

// GroupedConv2D against the definition, a plain loop in double over every output, channel and tap, for
// each instruction set the CPU has (baseline SSE2, AVX2 + FMA, AVX-512F; a level the CPU lacks is skipped
// and says so). Depthwise shapes cover 3x3 and 5x5 (the unrolled kernels) and other sizes (the general
// one), strides 1, 2 and 3, dilation, symmetric, asymmetric and oversized padding, output widths that
// leave every kind of tail (1 to 15 columns past the last whole vector, rows of several blocks), every
// height of a 4-row block at stride 1 and 2 down (the kernels that share a row's loads), several maps per
// channel, batches and two threads; many channels of small maps (the channel-blocked kernel) with every
// kind of partial block; groups of 2 to 8 channels likewise; each with bias, Z and Relu on and off; and
// every fused activation on the kernels' shapes.
#include "runtime/math/grouped_conv.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/math/vector_kernels.h"
#include "tests/support/activation_reference.h"
#include "tests/support/conv_check.h"
#include "tests/support/op_test.h"

namespace onnxserve {

// gtest names a parameter with this (found by argument-dependent lookup), not as its bytes.
void PrintTo(Isa isa, std::ostream* os) { *os << IsaName(isa); }

namespace {

using testing::ConvOutputSize;
using testing::DescribeActivation;
using testing::EveryActivation;
using testing::ExpectConvOutput;
using testing::GuardedOutput;
using testing::RandomFloats;
using testing::ReferenceConvGeometry;

struct Case {
  int64_t batch, groups, group_maps;
  int64_t in_h, in_w;
  int64_t kernel_h, kernel_w;
  int64_t stride_h, stride_w;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int threads = 1;
  int64_t group_channels = 1;  // 1: depthwise
};

std::string Describe(const Case& c) {
  return ::testing::PrintToString(std::vector<int64_t>{
      c.batch, c.groups, c.group_channels, c.group_maps, c.in_h, c.in_w, c.kernel_h, c.kernel_w, c.stride_h,
      c.stride_w, c.dilation_h, c.dilation_w, c.pad_top, c.pad_left, c.pad_bottom, c.pad_right, c.threads});
}

class GroupedConvTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (GetParam() > DetectedIsa()) {
      GTEST_SKIP() << "this CPU lacks " << IsaName(GetParam()) << " (it has " << IsaName(DetectedIsa())
                   << "): those kernels are compiled but not run here";
    }
  }

  // Y = activation(conv(X, W) + bias + Z) against the definition, with Y followed by sentinels the kernel
  // must not write. X, W, bias and Z are exactly their size, so a read past them shows under ASan.
  void Check(const Case& c, bool bias, bool z, bool relu) {
    Check(c, bias, z, relu ? Activation{ActivationKind::kRelu} : Activation{});
  }

  static GroupedConvShape ShapeOf(const Case& c) {
    return {
        .batch = c.batch,
        .groups = c.groups,
        .group_channels = c.group_channels,
        .group_maps = c.group_maps,
        .in_h = c.in_h,
        .in_w = c.in_w,
        .out_h = ConvOutputSize(c.in_h, c.pad_top, c.pad_bottom, c.kernel_h, c.dilation_h, c.stride_h),
        .out_w = ConvOutputSize(c.in_w, c.pad_left, c.pad_right, c.kernel_w, c.dilation_w, c.stride_w),
        .kernel_h = c.kernel_h,
        .kernel_w = c.kernel_w,
        .stride_h = c.stride_h,
        .stride_w = c.stride_w,
        .dilation_h = c.dilation_h,
        .dilation_w = c.dilation_w,
        .pad_top = c.pad_top,
        .pad_left = c.pad_left,
    };
  }

  void Check(const Case& c, bool bias, bool z, const Activation& activation) {
    SCOPED_TRACE(::testing::Message() << "case " << Describe(c) << " bias=" << bias << " z=" << z
                                      << " activation=" << DescribeActivation(activation));
    const GroupedConvShape shape = ShapeOf(c);
    const int64_t channels = c.groups * c.group_channels, maps = c.groups * c.group_maps;
    const int64_t taps = c.group_channels * c.kernel_h * c.kernel_w;
    const int64_t map_size = shape.out_h * shape.out_w, y_size = c.batch * maps * map_size;
    const std::vector<float> x = RandomFloats(c.batch * channels * c.in_h * c.in_w, 1);
    const std::vector<float> w = RandomFloats(maps * taps, 2);
    const std::vector<float> b = RandomFloats(maps, 3), residual = RandomFloats(y_size, 4);
    GuardedOutput y(y_size);
    ThreadPool pool(c.threads);
    GroupedConv2D(shape, x.data(), w.data(),
                  {.bias = bias ? b.data() : nullptr, .z = z ? residual.data() : nullptr, .activation = activation},
                  y.data(), pool, GetParam());
    const ReferenceConvGeometry geometry{
        .channels = channels, .group_channels = c.group_channels, .group_maps = c.group_maps, .in_h = c.in_h,
        .in_w = c.in_w, .kernel_h = c.kernel_h, .kernel_w = c.kernel_w, .stride_h = c.stride_h,
        .stride_w = c.stride_w, .dilation_h = c.dilation_h, .dilation_w = c.dilation_w, .pad_top = c.pad_top,
        .pad_left = c.pad_left};
    ExpectConvOutput({.geometry = geometry, .x = x.data(), .w = w.data(), .bias = bias ? b.data() : nullptr,
                      .z = z ? residual.data() : nullptr, .activation = activation, .batch = c.batch, .maps = maps,
                      .out_h = shape.out_h, .out_w = shape.out_w},
                     y.data());
    EXPECT_TRUE(y.NothingWrittenPast());
  }

  void CheckEveryEpilogue(const Case& c) {
    for (bool bias : {false, true}) {
      for (bool z : {false, true}) {
        for (bool relu : {false, true}) Check(c, bias, z, relu);
      }
    }
  }
};

TEST_P(GroupedConvTest, ThreeByThreeStrideOneOverEveryTail) {
  // Output widths 1..37 and 70: single partial vectors, whole ones, 4-vector blocks and the tails after
  // them, for 4-, 8- and 16-lane vectors.
  for (int64_t width = 1; width <= 37; ++width) {
    Check({.batch = 1, .groups = 3, .group_maps = 1, .in_h = 4, .in_w = width, .kernel_h = 3, .kernel_w = 3,
           .stride_h = 1, .stride_w = 1, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1},
          true, width % 2 == 0, width % 3 == 0);
  }
  CheckEveryEpilogue({.batch = 2, .groups = 5, .group_maps = 1, .in_h = 9, .in_w = 70, .kernel_h = 3,
                      .kernel_w = 3, .stride_h = 1, .stride_w = 1, .pad_top = 1, .pad_left = 1, .pad_bottom = 1,
                      .pad_right = 1});
}

TEST_P(GroupedConvTest, NarrowMapsRunInTheFlatLayout) {
  // Stride-1 maps of at most half a vector's columns lay their rows end to end (grouped_conv_kernels.h):
  // a keyword-spotting model's 25x5 maps, tall and one-column maps, 5x5 and 7x1 kernels, dilation, pads
  // wider than the kernel, several channels per group and maps per channel, two threads.
  const Case cases[] = {
      {.batch = 1, .groups = 4, .group_maps = 1, .in_h = 25, .in_w = 5, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1},
      {.batch = 2, .groups = 3, .group_maps = 2, .in_h = 40, .in_w = 1, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1, .threads = 2},
      {.batch = 1, .groups = 2, .group_maps = 1, .in_h = 9, .in_w = 4, .kernel_h = 5, .kernel_w = 5,
       .stride_h = 1, .stride_w = 1, .pad_top = 2, .pad_left = 2, .pad_bottom = 2, .pad_right = 2},
      {.batch = 1, .groups = 2, .group_maps = 1, .in_h = 12, .in_w = 3, .kernel_h = 7, .kernel_w = 1,
       .stride_h = 1, .stride_w = 1, .dilation_h = 2, .pad_top = 6, .pad_bottom = 6},
      {.batch = 1, .groups = 2, .group_maps = 1, .in_h = 6, .in_w = 2, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_top = 4, .pad_left = 3, .pad_bottom = 0, .pad_right = 2},
      {.batch = 1, .groups = 3, .group_maps = 4, .in_h = 7, .in_w = 7, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1,
       .group_channels = 4},
  };
  for (const Case& c : cases) CheckEveryEpilogue(c);
}

TEST_P(GroupedConvTest, ManyChannelsOfSmallMapsRunInChannelBlocks) {
  // Depthwise layers of at least a vector's lanes of channels on small maps go a block of channels at a
  // time (grouped_conv_kernels.h, BlockGeometry): the keyword spotter's 64 channels of 25x5, MobileNet's
  // 7x7 and 14x14 ones at stride 1 and 2, 3x3 and 5x5 and other kernels, dilation, asymmetric pads and
  // pads wider than the kernel, one-pixel and one-column maps, channel counts that leave a partial last
  // block (1 to 3 channels past a whole 4, 17 and 33: one past a block of 16), batches and two threads
  // (2 x 70 channels of 14x14: enough work to split the blocks over them).
  const Case cases[] = {
      {.batch = 1, .groups = 64, .group_maps = 1, .in_h = 25, .in_w = 5, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1},
      {.batch = 2, .groups = 17, .group_maps = 1, .in_h = 7, .in_w = 7, .kernel_h = 5, .kernel_w = 5,
       .stride_h = 1, .stride_w = 1, .pad_top = 2, .pad_left = 2, .pad_bottom = 2, .pad_right = 2, .threads = 2},
      {.batch = 2, .groups = 70, .group_maps = 1, .in_h = 14, .in_w = 14, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1, .threads = 2},
      {.batch = 1, .groups = 35, .group_maps = 1, .in_h = 14, .in_w = 14, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 2, .stride_w = 2, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1},
      {.batch = 1, .groups = 33, .group_maps = 1, .in_h = 9, .in_w = 11, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 2, .dilation_h = 2, .dilation_w = 3, .pad_top = 2, .pad_left = 3,
       .pad_bottom = 0, .pad_right = 1},
      {.batch = 1, .groups = 18, .group_maps = 1, .in_h = 5, .in_w = 6, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 2, .stride_w = 2, .pad_top = 5, .pad_left = 7, .pad_bottom = 4, .pad_right = 6},
      {.batch = 1, .groups = 19, .group_maps = 1, .in_h = 1, .in_w = 1, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1},
      {.batch = 1, .groups = 16, .group_maps = 1, .in_h = 11, .in_w = 1, .kernel_h = 2, .kernel_w = 1,
       .stride_h = 3, .stride_w = 1},
      {.batch = 1, .groups = 16, .group_maps = 1, .in_h = 9, .in_w = 8, .kernel_h = 1, .kernel_w = 4,
       .stride_h = 1, .stride_w = 1, .pad_left = 1, .pad_right = 2},
  };
  for (const Case& c : cases) CheckEveryEpilogue(c);
  for (int64_t groups : {4, 5, 6, 7, 8, 9, 10, 11, 15, 16}) {
    Check({.batch = 1, .groups = groups, .group_maps = 1, .in_h = 7, .in_w = 3, .kernel_h = 3, .kernel_w = 3,
           .stride_h = 1, .stride_w = 1, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1},
          true, true, true);
  }
}

TEST_P(GroupedConvTest, StrideTwoSplitsColumnsIntoPhases) {
  // MobileNet's downsampling layers (pad 1 for 3x3, 2 for 5x5) on even and odd sizes, and a valid one.
  for (int64_t width : {7, 8, 15, 16, 17, 33, 34, 64, 67}) {
    Check({.batch = 1, .groups = 2, .group_maps = 1, .in_h = 7, .in_w = width, .kernel_h = 3, .kernel_w = 3,
           .stride_h = 2, .stride_w = 2, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1},
          true, true, true);
    Check({.batch = 1, .groups = 2, .group_maps = 1, .in_h = 8, .in_w = width, .kernel_h = 5, .kernel_w = 5,
           .stride_h = 2, .stride_w = 2, .pad_top = 2, .pad_left = 2, .pad_bottom = 2, .pad_right = 2},
          true, false, true);
  }
  CheckEveryEpilogue({.batch = 1, .groups = 3, .group_maps = 1, .in_h = 12, .in_w = 41, .kernel_h = 3,
                      .kernel_w = 3, .stride_h = 2, .stride_w = 2});
}

TEST_P(GroupedConvTest, StrideOneOrTwoDownLoadsEachSourceRowOncePerBlock) {
  // 3x3 and 5x5 at stride 1 and 2 down (a source row feeds up to 5 of a block's 4 output rows): heights
  // that leave blocks of 1 to 4 rows (the rows past the map repeat its last reach), stride 1 and 2 across
  // (the phases' columns), pads of 0 and of half the kernel.
  for (int64_t k : {3, 5}) {
    for (int64_t stride_h : {1, 2}) {
      for (int64_t height = 1; height <= 9 * stride_h; ++height) {
        for (int64_t stride_w : {1, 2}) {
          for (int64_t pad : {int64_t{0}, k / 2}) {
            if (height + 2 * pad < k) continue;
            Check({.batch = 1, .groups = 3, .group_maps = 1, .in_h = height, .in_w = 37, .kernel_h = k,
                   .kernel_w = k, .stride_h = stride_h, .stride_w = stride_w, .pad_top = pad, .pad_left = pad,
                   .pad_bottom = pad, .pad_right = pad},
                  true, true, true);
          }
        }
      }
    }
  }
}

TEST_P(GroupedConvTest, FiveByFiveAndOtherKernelSizes) {
  CheckEveryEpilogue({.batch = 1, .groups = 4, .group_maps = 1, .in_h = 10, .in_w = 27, .kernel_h = 5,
                      .kernel_w = 5, .stride_h = 1, .stride_w = 1, .pad_top = 2, .pad_left = 2, .pad_bottom = 2,
                      .pad_right = 2});
  // The general kernel: 1x1, 7x7, rectangular, a single row (a 1-D convolution) and a single column.
  for (auto [kh, kw] : {std::pair<int64_t, int64_t>{1, 1}, {7, 7}, {2, 4}, {1, 5}, {5, 1}}) {
    Check({.batch = 1, .groups = 3, .group_maps = 1, .in_h = 9, .in_w = 19, .kernel_h = kh, .kernel_w = kw,
           .stride_h = 1, .stride_w = 1, .pad_top = kh / 2, .pad_left = kw / 2, .pad_bottom = kh / 2,
           .pad_right = kw / 2},
          true, true, true);
  }
}

TEST_P(GroupedConvTest, OtherStridesDilationsAndPads) {
  // Stride 3 (a phase with no image column when the image is narrow), unequal strides, dilation 2 (taps
  // in one phase) and 3 with stride 2 (taps spread over both phases), asymmetric pads and pads wider than
  // the kernel, whose outputs see only bias and Z.
  const Case cases[] = {
      {.batch = 1, .groups = 2, .group_maps = 1, .in_h = 11, .in_w = 23, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 3, .stride_w = 3, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1},
      {.batch = 1, .groups = 2, .group_maps = 1, .in_h = 2, .in_w = 2, .kernel_h = 1, .kernel_w = 1,
       .stride_h = 3, .stride_w = 3, .pad_top = 0, .pad_left = 0, .pad_bottom = 2, .pad_right = 2},
      {.batch = 1, .groups = 2, .group_maps = 1, .in_h = 13, .in_w = 18, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 2, .stride_w = 1, .pad_top = 0, .pad_left = 1, .pad_bottom = 1, .pad_right = 1},
      {.batch = 1, .groups = 2, .group_maps = 1, .in_h = 13, .in_w = 21, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .dilation_h = 2, .dilation_w = 2, .pad_top = 2, .pad_left = 2,
       .pad_bottom = 2, .pad_right = 2},
      {.batch = 1, .groups = 2, .group_maps = 1, .in_h = 14, .in_w = 29, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 2, .stride_w = 2, .dilation_h = 3, .dilation_w = 3, .pad_top = 3, .pad_left = 3,
       .pad_bottom = 1, .pad_right = 2},
      {.batch = 1, .groups = 2, .group_maps = 1, .in_h = 6, .in_w = 9, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_top = 0, .pad_left = 2, .pad_bottom = 2, .pad_right = 0},
      {.batch = 1, .groups = 2, .group_maps = 1, .in_h = 5, .in_w = 6, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 2, .stride_w = 2, .pad_top = 5, .pad_left = 7, .pad_bottom = 4, .pad_right = 6},
  };
  for (const Case& c : cases) CheckEveryEpilogue(c);
}

TEST_P(GroupedConvTest, ChannelMultipliersBatchesAndThreads) {
  // Each input channel feeds `group_maps` consecutive maps; channels split over two threads.
  Check({.batch = 2, .groups = 3, .group_maps = 2, .in_h = 8, .in_w = 13, .kernel_h = 3, .kernel_w = 3,
         .stride_h = 1, .stride_w = 1, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1},
        true, true, true);
  Check({.batch = 1, .groups = 2, .group_maps = 3, .in_h = 9, .in_w = 9, .kernel_h = 5, .kernel_w = 5,
         .stride_h = 2, .stride_w = 2, .pad_top = 2, .pad_left = 2, .pad_bottom = 2, .pad_right = 2},
        true, true, false);
  CheckEveryEpilogue({.batch = 2, .groups = 37, .group_maps = 1, .in_h = 30, .in_w = 30, .kernel_h = 3,
                      .kernel_w = 3, .stride_h = 1, .stride_w = 1, .pad_top = 1, .pad_left = 1, .pad_bottom = 1,
                      .pad_right = 1, .threads = 2});
}

TEST_P(GroupedConvTest, GroupsOfSeveralChannelsSumThemAll) {
  // ResNeXt's groups (4 channels x 4 maps, 8 x 8), 2 channels x 3 maps with a 5x5 kernel, stride 2 and
  // odd widths, batches and threads: each map sums its group's channels and no other.
  CheckEveryEpilogue({.batch = 2, .groups = 3, .group_maps = 4, .in_h = 9, .in_w = 21, .kernel_h = 3, .kernel_w = 3,
                      .stride_h = 1, .stride_w = 1, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1,
                      .group_channels = 4});
  Check({.batch = 1, .groups = 2, .group_maps = 8, .in_h = 14, .in_w = 14, .kernel_h = 3, .kernel_w = 3,
         .stride_h = 2, .stride_w = 2, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1,
         .group_channels = 8},
        true, true, true);
  Check({.batch = 1, .groups = 5, .group_maps = 3, .in_h = 11, .in_w = 19, .kernel_h = 5, .kernel_w = 5,
         .stride_h = 2, .stride_w = 2, .dilation_h = 1, .dilation_w = 2, .pad_top = 2, .pad_left = 4,
         .pad_bottom = 2, .pad_right = 4, .group_channels = 2},
        true, false, true);
  Check({.batch = 2, .groups = 16, .group_maps = 4, .in_h = 20, .in_w = 20, .kernel_h = 3, .kernel_w = 3,
         .stride_h = 1, .stride_w = 1, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1, .threads = 2,
         .group_channels = 4},
        true, true, true);
}

TEST_P(GroupedConvTest, NanPassesThroughRelu) {
  // Relu(NaN) is NaN, as the Relu operator gives: the fused one must not turn it into 0.
  const GroupedConvShape shape{.in_h = 1, .in_w = 3, .out_h = 1, .out_w = 3, .kernel_h = 1, .kernel_w = 1};
  const std::vector<float> x = {NAN, -1.0f, 2.0f}, w = {1.0f};
  std::vector<float> y(3);
  ThreadPool pool(1);
  GroupedConv2D(shape, x.data(), w.data(), {.activation = {ActivationKind::kRelu}}, y.data(), pool, GetParam());
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[2], 2.0f);
}

TEST_P(GroupedConvTest, AppliesEachActivation) {
  // 19 channels of a small map (channel blocks, a partial last one), 3x3 and 5x5 depthwise (stride 1 and
  // 2, tails after whole vectors, several row strips), a map of 45 rows of 61 (the activation runs on its
  // first 36 rows, then on the rest), a general kernel, and groups of 4 channels.
  const Case cases[] = {
      {.batch = 1, .groups = 19, .group_maps = 1, .in_h = 7, .in_w = 5, .kernel_h = 3, .kernel_w = 3, .stride_h = 1,
       .stride_w = 1, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1},
      {.batch = 1, .groups = 2, .group_maps = 1, .in_h = 45, .in_w = 61, .kernel_h = 3, .kernel_w = 3, .stride_h = 1,
       .stride_w = 1, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1},
      {.batch = 2, .groups = 3, .group_maps = 1, .in_h = 9, .in_w = 21, .kernel_h = 3, .kernel_w = 3, .stride_h = 1,
       .stride_w = 1, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1, .threads = 2},
      {.batch = 1, .groups = 2, .group_maps = 2, .in_h = 11, .in_w = 35, .kernel_h = 5, .kernel_w = 5, .stride_h = 2,
       .stride_w = 2, .pad_top = 2, .pad_left = 2, .pad_bottom = 2, .pad_right = 2},
      {.batch = 1, .groups = 2, .group_maps = 1, .in_h = 6, .in_w = 7, .kernel_h = 2, .kernel_w = 3, .stride_h = 1,
       .stride_w = 1},
      {.batch = 1, .groups = 2, .group_maps = 4, .in_h = 5, .in_w = 18, .kernel_h = 3, .kernel_w = 3, .stride_h = 1,
       .stride_w = 1, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1, .group_channels = 4},
  };
  for (const Activation& activation : EveryActivation()) {
    for (const Case& c : cases) Check(c, true, true, activation);
  }
}

// The fused activation equals the activation operator's vector kernel (of the same ISA) run on the
// unfused convolution, to the bit: a fused depthwise Conv gives what the unfused graph gives.
TEST_P(GroupedConvTest, FusedActivationIsBitEqualToTheUnfusedOne) {
  const Case c{.batch = 1, .groups = 4, .group_maps = 1, .in_h = 13, .in_w = 29, .kernel_h = 3, .kernel_w = 3,
               .stride_h = 2, .stride_w = 2, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1};
  const GroupedConvShape shape = ShapeOf(c);
  const std::vector<float> x = RandomFloats(4 * c.in_h * c.in_w, 5), w = RandomFloats(4 * 9, 6);
  const std::vector<float> b = RandomFloats(4, 7);
  const int64_t y_size = 4 * shape.out_h * shape.out_w;
  ThreadPool pool(1);
  for (const Activation& activation : EveryActivation()) {
    SCOPED_TRACE(DescribeActivation(activation));
    std::vector<float> fused(y_size), unfused(y_size);
    GroupedConv2D(shape, x.data(), w.data(), {.bias = b.data(), .activation = activation}, fused.data(), pool,
                  GetParam());
    GroupedConv2D(shape, x.data(), w.data(), {.bias = b.data(), .activation = {}}, unfused.data(), pool, GetParam());
    ApplyActivation(vec::KernelsFor(GetParam()), activation, unfused.data(), y_size);
    EXPECT_EQ(std::memcmp(fused.data(), unfused.data(), y_size * sizeof(float)), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, GroupedConvTest, ::testing::Values(Isa::kBaseline, Isa::kAvx2, Isa::kAvx512),
                         [](const ::testing::TestParamInfo<Isa>& info) { return std::string(IsaName(info.param)); });

}  // namespace
}  // namespace onnxserve

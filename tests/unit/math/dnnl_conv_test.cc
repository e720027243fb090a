// DnnlConv against the definition, a plain loop in double over every output, channel and tap, on the ISA
// the process dispatches on (ctest runs it again with ONNXSERVE_ISA=avx2, which oneDNN follows): ResNet's
// 3x3 and 7x7/2 shapes scaled down, channel counts off oneDNN's blocks of 8 and 16, dilation, pads on one
// side only and input rows no window reads, batches, one to three threads (bands of rows shared out),
// images whose weights outweigh them shared out by maps, images large enough to be cut into bands for the
// run limits, every fused activation, no bias. Then what
// it must not do: start threads of its own, keep plans for unboundedly many shapes, take rows of output
// too large to bound, or run past a run's end.
#include "runtime/math/dnnl_conv.h"

#include <dirent.h>

#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "runtime/core/run_limits.h"
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
using testing::RandomFloats;
using testing::ReferenceConvGeometry;

struct Case {
  int64_t batch, channels, maps, in_h, in_w, kernel;
  int64_t stride = 1, dilation = 1, pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int threads = 1;
};

std::string Describe(const Case& c) {
  return ::testing::PrintToString(std::vector<int64_t>{c.batch, c.channels, c.maps, c.in_h, c.in_w, c.kernel,
                                                       c.stride, c.dilation, c.pad_top, c.pad_left, c.pad_bottom,
                                                       c.pad_right, c.threads});
}

ConvShape2D ShapeOf(const Case& c) {
  return {.batch = c.batch,
          .in_h = c.in_h,
          .in_w = c.in_w,
          .out_h = ConvOutputSize(c.in_h, c.pad_top, c.pad_bottom, c.kernel, c.dilation, c.stride),
          .out_w = ConvOutputSize(c.in_w, c.pad_left, c.pad_right, c.kernel, c.dilation, c.stride),
          .stride_h = c.stride,
          .stride_w = c.stride,
          .dilation_h = c.dilation,
          .dilation_w = c.dilation,
          .pad_top = c.pad_top,
          .pad_left = c.pad_left};
}

std::unique_ptr<DnnlConv> Make(const Case& c) {
  return DnnlConv::Create({.maps = c.maps, .channels = c.channels, .kernel_h = c.kernel, .kernel_w = c.kernel});
}

class DnnlConvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (DnnlConv::Create({.maps = 16, .channels = 16, .kernel_h = 3, .kernel_w = 3}) == nullptr) {
      GTEST_SKIP() << "built without oneDNN (ONNXSERVE_DNNL=OFF), or the CPU has no AVX2";
    }
  }

  // Y = activation(conv(X, W) + bias) against the definition, with Y followed by sentinels oneDNN must not
  // write.
  static void Check(const Case& c, bool bias, const Activation& activation) {
    SCOPED_TRACE(::testing::Message() << "case " << Describe(c) << " on " << IsaName(ActiveIsa())
                                      << " bias=" << bias << " activation=" << DescribeActivation(activation));
    const ConvShape2D shape = ShapeOf(c);
    const int64_t taps = c.channels * c.kernel * c.kernel, map_size = shape.out_h * shape.out_w;
    const int64_t y_size = c.batch * c.maps * map_size;
    const std::vector<float> x = RandomFloats(c.batch * c.channels * c.in_h * c.in_w, 1);
    const std::vector<float> w = RandomFloats(c.maps * taps, 2), b = RandomFloats(c.maps, 3);
    GuardedOutput y(y_size);
    ThreadPool pool(c.threads);
    const auto conv = Make(c);
    ASSERT_NE(conv, nullptr);
    const absl::StatusOr<bool> ran =
        conv->TryRun(shape, x.data(), w.data(), bias ? b.data() : nullptr, activation, y.data(), pool);
    ASSERT_TRUE(ran.ok()) << ran.status();
    ASSERT_TRUE(*ran);
    const ReferenceConvGeometry geometry{.channels = c.channels, .group_channels = c.channels, .group_maps = c.maps,
                                         .in_h = c.in_h, .in_w = c.in_w, .kernel_h = c.kernel, .kernel_w = c.kernel,
                                         .stride_h = c.stride, .stride_w = c.stride, .dilation_h = c.dilation,
                                         .dilation_w = c.dilation, .pad_top = c.pad_top, .pad_left = c.pad_left};
    ExpectConvOutput({.geometry = geometry, .x = x.data(), .w = w.data(), .bias = bias ? b.data() : nullptr,
                      .activation = activation, .batch = c.batch, .maps = c.maps, .out_h = shape.out_h,
                      .out_w = shape.out_w},
                     y.data());
    EXPECT_TRUE(y.NothingWrittenPast());
  }
};

TEST_F(DnnlConvTest, MatchesTheDefinitionOnResNetShapes) {
  const Case cases[] = {
      // 3x3 "same", blocks of 16 channels; the 7x7/2 stem of 3 channels, whose last input row no window reads.
      {.batch = 1, .channels = 32, .maps = 32, .in_h = 14, .in_w = 14, .kernel = 3, .pad_top = 1, .pad_left = 1,
       .pad_bottom = 1, .pad_right = 1},
      {.batch = 1, .channels = 3, .maps = 16, .in_h = 23, .in_w = 23, .kernel = 7, .stride = 2, .pad_top = 3,
       .pad_left = 3, .pad_bottom = 2, .pad_right = 2},
      // Channels and maps off the blocks, a batch, two and three threads over fewer bands than products.
      {.batch = 2, .channels = 15, .maps = 7, .in_h = 9, .in_w = 11, .kernel = 3, .pad_top = 1, .pad_left = 1,
       .pad_bottom = 1, .pad_right = 1, .threads = 2},
      {.batch = 3, .channels = 17, .maps = 20, .in_h = 7, .in_w = 7, .kernel = 3, .pad_top = 1, .pad_left = 1,
       .pad_bottom = 1, .pad_right = 1, .threads = 3},
      // Stride 2 with pads on one side, dilation 2, no pads at all, a 5x5 taller than wide.
      {.batch = 1, .channels = 16, .maps = 24, .in_h = 15, .in_w = 12, .kernel = 3, .stride = 2, .pad_top = 1,
       .pad_left = 0, .pad_bottom = 0, .pad_right = 1, .threads = 2},
      {.batch = 1, .channels = 16, .maps = 8, .in_h = 12, .in_w = 10, .kernel = 3, .dilation = 2, .pad_top = 2,
       .pad_left = 2, .pad_bottom = 2, .pad_right = 2, .threads = 2},
      {.batch = 2, .channels = 20, .maps = 9, .in_h = 6, .in_w = 6, .kernel = 3},
      {.batch = 1, .channels = 6, .maps = 10, .in_h = 20, .in_w = 9, .kernel = 5, .pad_top = 2, .pad_left = 2,
       .pad_bottom = 2, .pad_right = 2, .threads = 2},
  };
  for (const Case& c : cases) {
    Check(c, true, {});
    Check(c, false, {ActivationKind::kRelu});
  }
}

TEST_F(DnnlConvTest, AppliesEveryFusedActivation) {
  for (const Activation& activation : EveryActivation()) {
    Check({.batch = 1, .channels = 16, .maps = 16, .in_h = 8, .in_w = 8, .kernel = 3, .pad_top = 1, .pad_left = 1,
           .pad_bottom = 1, .pad_right = 1, .threads = 2},
          true, activation);
  }
}

TEST_F(DnnlConvTest, SharesOutMapsWhereTheWeightsOutweighTheImageOrXIsSmall) {
  // W (32 x 48 x 9) outweighs X (32 x 5 x 5) and Y, or X is a small part of Y: each thread computes a share
  // of the maps, in blocks of 16, over the whole image: 32 + 16 maps, 32 + 8 (a share ending inside a block
  // of 8), 3 threads over 2 shares of 32, stride 2 with one-sided pads. A batch as large as the pool shares
  // out whole images.
  const Case cases[] = {
      {.batch = 1, .channels = 32, .maps = 48, .in_h = 5, .in_w = 5, .kernel = 3, .pad_top = 1, .pad_left = 1,
       .pad_bottom = 1, .pad_right = 1, .threads = 2},
      {.batch = 1, .channels = 32, .maps = 40, .in_h = 5, .in_w = 6, .kernel = 3, .pad_top = 1, .pad_left = 1,
       .pad_bottom = 1, .pad_right = 1, .threads = 2},
      {.batch = 1, .channels = 24, .maps = 64, .in_h = 4, .in_w = 4, .kernel = 3, .pad_top = 1, .pad_left = 1,
       .pad_bottom = 1, .pad_right = 1, .threads = 3},
      {.batch = 1, .channels = 32, .maps = 48, .in_h = 9, .in_w = 8, .kernel = 3, .stride = 2, .pad_top = 1,
       .pad_left = 0, .pad_bottom = 0, .pad_right = 1, .threads = 2},
      {.batch = 2, .channels = 32, .maps = 48, .in_h = 5, .in_w = 5, .kernel = 3, .pad_top = 1, .pad_left = 1,
       .pad_bottom = 1, .pad_right = 1, .threads = 2},
      // A stem's X (3 channels) under a quarter of its Y (64 maps at stride 2): shares of 32 maps.
      {.batch = 1, .channels = 3, .maps = 64, .in_h = 20, .in_w = 20, .kernel = 7, .stride = 2, .pad_top = 3,
       .pad_left = 3, .pad_bottom = 3, .pad_right = 3, .threads = 2},
  };
  for (const Case& c : cases) {
    Check(c, true, {});
    Check(c, false, {ActivationKind::kRelu});
  }
  for (const Activation& activation : EveryActivation()) Check(cases[1], true, activation);
}

TEST_F(DnnlConvTest, CutsLargeImagesIntoBands) {
  // 64 x 64 x 9 multiply-adds per output, 64 x 64 outputs: past one band's work on one thread.
  Check({.batch = 1, .channels = 64, .maps = 64, .in_h = 64, .in_w = 64, .kernel = 3, .pad_top = 1, .pad_left = 1,
         .pad_bottom = 1, .pad_right = 1},
        true, {});
}

int ThreadsOfThisProcess() {
  int threads = 0;
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return -1;
  while (const dirent* entry = readdir(tasks)) threads += entry->d_name[0] != '.';
  closedir(tasks);
  return threads;
}

TEST_F(DnnlConvTest, StartsNoThreadsOfItsOwn) {
  // OpenMP would start a team for oneDNN on the first parallel region of a thread that allows more than
  // one; every call runs with one, on our pool's threads.
  const Case c{.batch = 2, .channels = 32, .maps = 32, .in_h = 28, .in_w = 28, .kernel = 3, .pad_top = 1,
               .pad_left = 1, .pad_bottom = 1, .pad_right = 1, .threads = 2};
  ThreadPool pool(2);
  const int before = ThreadsOfThisProcess();
  const std::vector<float> x = RandomFloats(2 * 32 * 28 * 28, 1), w = RandomFloats(32 * 32 * 9, 2);
  std::vector<float> y(2 * 32 * 28 * 28);
  const auto conv = Make(c);
  for (int run = 0; run < 3; ++run) {
    ASSERT_TRUE(*conv->TryRun(ShapeOf(c), x.data(), w.data(), nullptr, {}, y.data(), pool));
  }
  EXPECT_EQ(ThreadsOfThisProcess(), before);
}

TEST_F(DnnlConvTest, ConcurrentCallsShareOnePlan) {
  // Requests run one node's kernel at once: each call needs its own scratchpad and blocked copies.
  const Case c{.batch = 1, .channels = 16, .maps = 16, .in_h = 20, .in_w = 20, .kernel = 3, .pad_top = 1,
               .pad_left = 1, .pad_bottom = 1, .pad_right = 1};
  const auto conv = Make(c);
  const std::vector<float> w = RandomFloats(16 * 16 * 9, 2);
  const std::vector<float> x0 = RandomFloats(16 * 20 * 20, 5), x1 = RandomFloats(16 * 20 * 20, 6);
  auto run = [&](const std::vector<float>& x, int times) {
    ThreadPool pool(1);
    std::vector<float> y(16 * 20 * 20), first;
    for (int i = 0; i < times; ++i) {
      if (!*conv->TryRun(ShapeOf(c), x.data(), w.data(), nullptr, {}, y.data(), pool)) return std::vector<float>{};
      if (i == 0) first = y;
      if (y != first) return std::vector<float>{};  // another call's bytes
    }
    return y;
  };
  const std::vector<float> alone0 = run(x0, 1), alone1 = run(x1, 1);
  std::vector<float> together0, together1;
  std::thread other([&] { together1 = run(x1, 200); });
  together0 = run(x0, 200);
  other.join();
  EXPECT_EQ(together0, alone0);
  EXPECT_EQ(together1, alone1);
}

TEST_F(DnnlConvTest, DeclinesWhatItShouldNotRun) {
  ThreadPool pool(1);
  const std::vector<float> w = RandomFloats(8 * 16 * 9, 2), x = RandomFloats(16 * 16 * 16, 1);
  std::vector<float> y(8 * 16 * 16, 7.0f);
  const auto conv = Make({.batch = 1, .channels = 16, .maps = 8, .in_h = 1, .in_w = 1, .kernel = 3});
  // Plans for a few input sizes; the next size is our kernel's.
  for (int64_t size = 8; size < 12; ++size) {
    const Case c{.batch = 1, .channels = 16, .maps = 8, .in_h = size, .in_w = size, .kernel = 3};
    EXPECT_TRUE(*conv->TryRun(ShapeOf(c), x.data(), w.data(), nullptr, {}, y.data(), pool)) << size;
  }
  std::fill(y.begin(), y.end(), 7.0f);
  const Case fifth{.batch = 1, .channels = 16, .maps = 8, .in_h = 16, .in_w = 16, .kernel = 3};
  EXPECT_FALSE(*conv->TryRun(ShapeOf(fifth), x.data(), w.data(), nullptr, {}, y.data(), pool));
  EXPECT_EQ(y, std::vector<float>(y.size(), 7.0f)) << "declined, but wrote Y";
  // A pad as wide as the kernel makes windows of zeros only.
  const auto other = Make({.batch = 1, .channels = 16, .maps = 8, .in_h = 1, .in_w = 1, .kernel = 3});
  const Case padded{.batch = 1, .channels = 16, .maps = 8, .in_h = 8, .in_w = 8, .kernel = 3, .pad_top = 3,
                    .pad_left = 3, .pad_bottom = 3, .pad_right = 3};
  EXPECT_FALSE(*other->TryRun(ShapeOf(padded), x.data(), w.data(), nullptr, {}, y.data(), pool));
  // One output row of 512 x 512 x 9 x 1000 multiply-adds is past what one band may take.
  const Case wide{.batch = 1, .channels = 512, .maps = 512, .in_h = 1, .in_w = 1000, .kernel = 3, .pad_top = 1,
                  .pad_left = 1, .pad_bottom = 1, .pad_right = 1};
  const std::vector<float> wide_w(512 * 512 * 9, 0.5f), wide_x(512 * 1000, 0.5f);
  std::vector<float> wide_y(512 * 1000);
  EXPECT_FALSE(*Make(wide)->TryRun(ShapeOf(wide), wide_x.data(), wide_w.data(), nullptr, {}, wide_y.data(), pool));
  EXPECT_EQ(DnnlConv::Create({.maps = 64, .channels = 256, .kernel_h = 1, .kernel_w = 1}), nullptr)
      << "1x1 convolutions stay on the packed GEMM";
  EXPECT_EQ(DnnlConv::Create({.maps = 32, .channels = 3, .kernel_h = 3, .kernel_w = 3}), nullptr)
      << "MobileNet's stem: 27 multiply-adds per output";
  EXPECT_EQ(DnnlConv::Create({.maps = 64, .channels = 1, .kernel_h = 10, .kernel_w = 4}), nullptr)
      << "the keyword spotter's stem: 40 multiply-adds per output";
  EXPECT_EQ(DnnlConv::Create({.maps = 0, .channels = 64, .kernel_h = 3, .kernel_w = 3}), nullptr)
      << "no maps: nothing to share out";
}

// A request of no images may still declare a huge image (X has no elements whatever its height): there is
// nothing to compute, and planning it made a plan of 589,824 bands that took one of the node's few slots.
TEST_F(DnnlConvTest, NoImagesOfAHugeSizeTakeNoPlan) {
  ThreadPool pool(2);
  const std::vector<float> w = RandomFloats(8 * 16 * 9, 2), x = RandomFloats(16 * 16 * 16, 1);
  std::vector<float> y(8 * 16 * 16);
  const auto conv = Make({.batch = 1, .channels = 16, .maps = 8, .in_h = 1, .in_w = 1, .kernel = 3});
  const int64_t tall = int64_t{1} << 30;
  const ConvShape2D none{.batch = 0, .in_h = tall, .in_w = 64, .out_h = tall, .out_w = 64, .pad_top = 1,
                         .pad_left = 1, .pad_bottom = 1, .pad_right = 1};
  const absl::StatusOr<bool> ran = conv->TryRun(none, x.data(), w.data(), nullptr, {}, y.data(), pool);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_TRUE(*ran);
  for (int64_t size = 8; size < 12; ++size) {
    const Case c{.batch = 1, .channels = 16, .maps = 8, .in_h = size, .in_w = size, .kernel = 3};
    EXPECT_TRUE(*conv->TryRun(ShapeOf(c), x.data(), w.data(), nullptr, {}, y.data(), pool))
        << size << ": the node still has a plan for each of its first four sizes";
  }
}

TEST_F(DnnlConvTest, StopsBetweenBandsWhenTheRunEnds) {
  const Case c{.batch = 4, .channels = 64, .maps = 64, .in_h = 64, .in_w = 64, .kernel = 3, .pad_top = 1,
               .pad_left = 1, .pad_bottom = 1, .pad_right = 1, .threads = 2};
  const std::vector<float> x = RandomFloats(4 * 64 * 64 * 64, 1), w = RandomFloats(64 * 64 * 9, 2);
  std::vector<float> y(4 * 64 * 64 * 64);
  ThreadPool pool(2);
  const RunLimits ended(absl::InfinitePast());
  ScopedRunLimits scope(&ended);
  try {
    (void)Make(c)->TryRun(ShapeOf(c), x.data(), w.data(), nullptr, {}, y.data(), pool);
    FAIL() << "ran to the end past its deadline";
  } catch (const RunStopped& stopped) {
    EXPECT_EQ(stopped.status().code(), absl::StatusCode::kDeadlineExceeded);
  }
}

}  // namespace
}  // namespace onnxserve

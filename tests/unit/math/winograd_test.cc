// Winograd3x3 against the definition, a plain loop in double over every output, channel and tap, on the
// ISA the process dispatches on (ctest runs it again with ONNXSERVE_ISA=avx2, where Conv uses it): odd
// and even map sizes (tiles that hang over the map's edge), pads of 0 to 2, channel and map counts off
// the micro-kernel's panels, batches, Z, every fused activation, one to three threads, an image cut into
// several passes, each on one thread where the weights are lighter than the image, results independent of
// the thread count; weights transformed outside the first run's budget; sums that overflow reported; and the
// shapes it declines.
#include "runtime/math/winograd.h"

#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/memory_budget.h"
#include "runtime/math/isa.h"
#include "runtime/math/packed_gemm.h"
#include "tests/support/activation_reference.h"
#include "tests/support/conv_check.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::DescribeActivation;
using testing::EveryActivation;
using testing::ExpectConvOutput;
using testing::GuardedOutput;
using testing::RandomFloats;
using testing::ReferenceConvGeometry;

struct Case {
  int64_t batch, channels, maps, in_h, in_w, pad;
  int threads = 1;
};

class WinogradTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!PackedGemmSupported()) GTEST_SKIP() << "the CPU has no AVX2: Conv never runs Winograd3x3 here";
  }

  // On `made` (of weights RandomFloats(maps * channels * 9, 2)) when given, else on a new Winograd3x3.
  static void Check(const Case& c, bool with_z, const Activation& activation, const Winograd3x3* made = nullptr) {
    SCOPED_TRACE(::testing::Message() << "case {" << c.batch << "," << c.channels << "," << c.maps << "," << c.in_h
                                      << "," << c.in_w << ", pad " << c.pad << ", threads " << c.threads << "} on "
                                      << IsaName(ActiveIsa()) << " z=" << with_z
                                      << " activation=" << DescribeActivation(activation));
    const int64_t out_h = c.in_h + 2 * c.pad - 2, out_w = c.in_w + 2 * c.pad - 2;
    const int64_t y_size = c.batch * c.maps * out_h * out_w;
    const std::vector<float> x = RandomFloats(c.batch * c.channels * c.in_h * c.in_w, 1);
    const std::vector<float> w = RandomFloats(c.maps * c.channels * 9, 2), b = RandomFloats(c.maps, 3);
    const std::vector<float> z = RandomFloats(y_size, 4);
    GuardedOutput y(y_size);
    const Winograd3x3 own(w.data(), c.maps, c.channels);
    const Winograd3x3& winograd = made != nullptr ? *made : own;
    const ConvShape2D shape{.batch = c.batch, .in_h = c.in_h, .in_w = c.in_w, .out_h = out_h, .out_w = out_w,
                              .pad_top = c.pad, .pad_left = c.pad};
    ASSERT_TRUE(winograd.Fits(shape));
    ThreadPool pool(c.threads);
    ASSERT_TRUE(winograd.Run(shape, x.data(),
                             {.bias = b.data(), .z = with_z ? z.data() : nullptr, .activation = activation},
                             y.data(), pool));
    const ReferenceConvGeometry geometry{.channels = c.channels, .group_channels = c.channels,
                                         .group_maps = c.maps, .in_h = c.in_h, .in_w = c.in_w, .kernel_h = 3,
                                         .kernel_w = 3, .pad_top = c.pad, .pad_left = c.pad};
    // What the transforms add to the direct convolution's roundings: a few float ulps of the sum of the
    // products' magnitudes, as for any reordering of the sum.
    ExpectConvOutput({.geometry = geometry, .x = x.data(), .w = w.data(), .bias = b.data(),
                      .z = with_z ? z.data() : nullptr, .activation = activation, .batch = c.batch, .maps = c.maps,
                      .out_h = out_h, .out_w = out_w},
                     y.data());
    EXPECT_TRUE(y.NothingWrittenPast());
  }
};

TEST_F(WinogradTest, MatchesTheDefinitionOnEvenAndOddMaps) {
  const Case cases[] = {
      {.batch = 1, .channels = 16, .maps = 16, .in_h = 16, .in_w = 16, .pad = 1},
      // Odd output sizes: the last row and column of tiles hang one pixel over the map.
      {.batch = 2, .channels = 13, .maps = 10, .in_h = 15, .in_w = 17, .pad = 1, .threads = 2},
      {.batch = 1, .channels = 9, .maps = 24, .in_h = 12, .in_w = 9, .pad = 0, .threads = 3},
      {.batch = 1, .channels = 24, .maps = 7, .in_h = 11, .in_w = 14, .pad = 2, .threads = 2},
      // A 1x1 map from a 3x3 image: one tile, three quarters of it past the map.
      {.batch = 3, .channels = 5, .maps = 3, .in_h = 3, .in_w = 3, .pad = 0},
  };
  for (const Case& c : cases) {
    Check(c, false, {});
    Check(c, true, {ActivationKind::kRelu});
  }
}

TEST_F(WinogradTest, AppliesEveryFusedActivationAfterZ) {
  for (const Activation& activation : EveryActivation()) {
    Check({.batch = 1, .channels = 8, .maps = 12, .in_h = 10, .in_w = 10, .pad = 1, .threads = 2}, true, activation);
  }
}

TEST_F(WinogradTest, CutsAnImageOfManyTilesIntoPasses) {
  // Weights lighter than the image: passes run whole, each on one thread. 16 planes x (8 + 256) x 64 tiles
  // a row is past a pass's 2^18 floats, so each of the 64 rows of tiles is a pass, shared by two threads.
  Check({.batch = 1, .channels = 8, .maps = 256, .in_h = 128, .in_w = 128, .pad = 1, .threads = 2}, false, {});
}

TEST_F(WinogradTest, CutsAnOddCountOfPassesIntoAnEvenOneOfUnequalRows) {
  // 16 planes x (64 + 64) x 25 tiles a row: at most 5 of the 15 rows of tiles a pass, so 3 passes, made 4
  // (of 3, 4, 4 and 4 rows) so that two threads take the same rows.
  for (int threads : {1, 2}) {
    Check({.batch = 2, .channels = 64, .maps = 64, .in_h = 30, .in_w = 50, .pad = 1, .threads = threads}, true,
          {ActivationKind::kRelu});
  }
}

TEST_F(WinogradTest, ThreadCountNeverChangesABit) {
  // Passes follow from the shape alone: a layer whose passes run whole on one thread each (64 x 64 on
  // 30x50: four passes of 3-4 rows of 25 tiles, 75 or 100 columns for the GEMMs, the last 4 of 100 on the
  // narrow kernel, which sums in another order) and one whose weights outweigh its 8x9 image (each phase
  // split), on one to three threads.
  const Case cases[] = {{.batch = 1, .channels = 64, .maps = 64, .in_h = 30, .in_w = 50, .pad = 1},
                        {.batch = 2, .channels = 48, .maps = 40, .in_h = 8, .in_w = 9, .pad = 1}};
  for (const Case& c : cases) {
    const int64_t out_h = c.in_h + 2 * c.pad - 2, out_w = c.in_w + 2 * c.pad - 2;
    const std::vector<float> x = RandomFloats(c.batch * c.channels * c.in_h * c.in_w, 1);
    const std::vector<float> w = RandomFloats(c.maps * c.channels * 9, 2), b = RandomFloats(c.maps, 3);
    const std::vector<float> z = RandomFloats(c.batch * c.maps * out_h * out_w, 4);
    const Winograd3x3 winograd(w.data(), c.maps, c.channels);
    const ConvShape2D shape{.batch = c.batch, .in_h = c.in_h, .in_w = c.in_w, .out_h = out_h, .out_w = out_w,
                            .pad_top = c.pad, .pad_left = c.pad};
    std::vector<float> one_thread;
    for (int threads : {1, 2, 3}) {
      std::vector<float> y(z.size());
      ThreadPool pool(threads);
      const WinogradEpilogue epilogue{.bias = b.data(), .z = z.data(), .activation = {ActivationKind::kRelu}};
      ASSERT_TRUE(winograd.Run(shape, x.data(), epilogue, y.data(), pool));
      if (threads == 1) {
        one_thread = y;
        continue;
      }
      EXPECT_EQ(std::memcmp(y.data(), one_thread.data(), y.size() * sizeof(float)), 0)
          << c.channels << " channels, " << c.in_h << "x" << c.in_w << ", threads " << threads;
    }
  }
}

// The transformed weights are made on the first Run and kept for every later one: model state, like the
// initializers, not a tensor of the run that happens to come first. A first run whose budget could not
// hold them failed half-way through making them, and every later run multiplied by the wrong planes.
TEST_F(WinogradTest, TransformsItsWeightsOutsideTheBudgetOfTheRunThatComesFirst) {
  const Case c{.batch = 1, .channels = 16, .maps = 16, .in_h = 6, .in_w = 6, .pad = 1};
  const std::vector<float> w = RandomFloats(c.maps * c.channels * 9, 2);
  const Winograd3x3 winograd(w.data(), c.maps, c.channels);
  {
    // Room for about half of the 16 planes of 16 x 16 floats.
    const ScopedMemoryAccount tight(std::make_shared<MemoryAccount>(8 * 16 * 16 * sizeof(float) + 64));
    EXPECT_NO_THROW(Check(c, false, {}, &winograd));
  }
  Check(c, false, {}, &winograd);
}

// The input transform adds neighbouring pixels before any weight scales them: 3e38 + 3e38 is inf where the
// direct convolution's products by 1e-3 sum to 5e36; an infinite pixel makes inf - inf = NaN where the
// direct sums are inf. Run says so (false) rather than return either, whatever the activation would make of
// it (a Relu turns -inf into 0): Conv then computes Y the direct way.
TEST_F(WinogradTest, SaysSoWhereItsSumsOfHugeOrInfiniteInputsOverflow) {
  const std::vector<float> w(4 * 4 * 9, 1e-3f);
  const Winograd3x3 winograd(w.data(), 4, 4);
  const ConvShape2D shape{.batch = 2, .in_h = 8, .in_w = 8, .out_h = 8, .out_w = 8, .pad_top = 1, .pad_left = 1};
  std::vector<float> y(2 * 4 * 64);
  ThreadPool pool(2);
  const std::vector<float> ones(2 * 4 * 64, 1.0f);
  EXPECT_TRUE(winograd.Run(shape, ones.data(), {}, y.data(), pool));
  for (const float bad : {3e38f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()}) {
    SCOPED_TRACE(::testing::Message() << "an input of " << bad << " in the second image");
    std::vector<float> x = ones;
    for (int64_t i = 4 * 64; i < 2 * 4 * 64; ++i) x[static_cast<size_t>(i)] = i % 7 == 0 || bad == 3e38f ? bad : 1.0f;
    EXPECT_FALSE(winograd.Run(shape, x.data(), {.activation = {ActivationKind::kRelu}}, y.data(), pool));
  }
}

TEST_F(WinogradTest, DeclinesARowOfTilesPastItsPassBuffers) {
  const std::vector<float> w(9 * 64 * 64, 0.5f);
  const Winograd3x3 winograd(w.data(), 64, 64);
  EXPECT_TRUE(winograd.Fits({.batch = 1, .in_h = 58, .in_w = 58, .out_h = 56, .out_w = 56}));
  // 16 planes x 64 channels x 2^13 tiles is 2^23 floats: past the 2^22 a pass may hold.
  EXPECT_FALSE(winograd.Fits({.batch = 1, .in_h = 3, .in_w = 16386, .out_h = 1, .out_w = 16384}));
}

}  // namespace
}  // namespace onnxserve

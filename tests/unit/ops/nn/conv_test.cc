// Conv and ConvTranspose against direct-loop references on random shapes: 1-D/2-D/3-D, groups (incl.
// depthwise), strides, dilations, asymmetric pads, every auto_pad, output_padding/output_shape, no bias;
// FusedConv against Conv + Add + Relu computed by the same reference. Each case runs twice: W fed at run
// time (the OpenBLAS path) and W an initializer (packed at load for PackedGemm where the CPU has it).
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/exec/session.h"
#include "tests/support/graph_builder.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

Tensor Random(const Shape& shape, int seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  Tensor t(DataType::kFloat, shape);
  for (float& v : t.mutable_values<float>()) v = dist(rng);
  return t;
}

// Row-major multi-index of flat position i in dims.
std::vector<int64_t> Unflatten(int64_t i, const std::vector<int64_t>& dims) {
  std::vector<int64_t> index(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    index[d] = i % dims[d];
    i /= dims[d];
  }
  return index;
}

struct ConvParams {
  std::vector<int64_t> strides = {};  // empty: the defaults (all 1, all 1, all 0)
  std::vector<int64_t> dilations = {};
  std::vector<int64_t> pads = {};  // [begin..., end...]
  int64_t group = 1;
};

// The definition: y[n,m,o] = b[m] + sum over c in m's group and kernel offsets of x[n,c,o*s-p+k*d] * w[m,c',k].
Tensor ReferenceConv(const Tensor& x, const Tensor& w, const Tensor* b, const ConvParams& p) {
  const size_t rank = x.rank() - 2;
  const std::vector<int64_t> in(x.shape().begin() + 2, x.shape().end());
  const std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  std::vector<int64_t> out(rank);
  for (size_t d = 0; d < rank; ++d) {
    out[d] = (in[d] + p.pads[d] + p.pads[d + rank] - (kernel[d] - 1) * p.dilations[d] - 1) / p.strides[d] + 1;
  }
  const int64_t maps = w.dim(0), group_channels = w.dim(1), group_maps = maps / p.group;
  Shape y_shape = {x.dim(0), maps};
  y_shape.insert(y_shape.end(), out.begin(), out.end());
  Tensor y(DataType::kFloat, y_shape);
  const int64_t out_size = NumElements(out), in_size = NumElements(in), k_size = NumElements(kernel);
  for (int64_t n = 0; n < x.dim(0); ++n) {
    for (int64_t m = 0; m < maps; ++m) {
      for (int64_t o = 0; o < out_size; ++o) {
        const auto oi = Unflatten(o, out);
        double sum = b ? b->data<float>()[m] : 0.0;
        for (int64_t c = 0; c < group_channels; ++c) {
          const int64_t channel = (m / group_maps) * group_channels + c;
          for (int64_t kk = 0; kk < k_size; ++kk) {
            const auto ki = Unflatten(kk, kernel);
            int64_t offset = 0;
            bool inside = true;
            for (size_t d = 0; d < rank; ++d) {
              const int64_t at = oi[d] * p.strides[d] - p.pads[d] + ki[d] * p.dilations[d];
              inside = inside && at >= 0 && at < in[d];
              offset = offset * in[d] + at;
            }
            if (!inside) continue;
            sum += static_cast<double>(x.data<float>()[(n * x.dim(1) + channel) * in_size + offset]) *
                   w.data<float>()[(m * group_channels + c) * k_size + kk];
          }
        }
        y.data<float>()[(n * maps + m) * out_size + o] = static_cast<float>(sum);
      }
    }
  }
  return y;
}

ConvParams Defaults(size_t rank, ConvParams p) {
  if (p.strides.empty()) p.strides.assign(rank, 1);
  if (p.dilations.empty()) p.dilations.assign(rank, 1);
  if (p.pads.empty()) p.pads.assign(2 * rank, 0);
  return p;
}

void ExpectConvMatchesReference(const Shape& x_shape, const Shape& w_shape, ConvParams p, bool bias = true,
                                int threads = 1) {
  p = Defaults(x_shape.size() - 2, p);
  const Tensor x = Random(x_shape, 1), w = Random(w_shape, 2), b = Random({w_shape[0]}, 3);
  const Tensor expected = ReferenceConv(x, w, bias ? &b : nullptr, p);
  for (bool constant_w : {false, true}) {
    OpTest test("Conv", 22);
    test.Threads(threads).Input("x", x);
    constant_w ? test.Constant("w", w) : test.Input("w", w);
    if (bias) constant_w ? test.Constant("b", b) : test.Input("b", b);
    auto result = test.Attr("strides", p.strides).Attr("dilations", p.dilations).Attr("pads", p.pads)
                      .Attr("group", p.group).Output("y").Run();
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_TRUE(TensorsClose(expected, (*result)[0], 1e-4, 1e-5))
        << "X " << ShapeToString(x_shape) << " W " << ShapeToString(w_shape) << " constant W " << constant_w
        << " threads " << threads;
  }
}

TEST(ConvTest, TwoDimensionalWithStridesDilationsAndAsymmetricPads) {
  ExpectConvMatchesReference({2, 3, 11, 9}, {4, 3, 3, 3}, {});
  ExpectConvMatchesReference({1, 3, 11, 9}, {5, 3, 3, 2}, {.strides = {2, 3}, .pads = {1, 0, 2, 1}});
  ExpectConvMatchesReference({1, 2, 12, 10}, {3, 2, 3, 3}, {.strides = {1, 2}, .dilations = {2, 3}, .pads = {0, 2, 1, 0}});
  ExpectConvMatchesReference({1, 3, 7, 7}, {2, 3, 7, 7}, {.pads = {3, 3, 3, 3}}, false);  // no bias
}

TEST(ConvTest, Im2colCopiesTheRowsOfKernelRowsAStrideApart) {
  // Kernel rows stride / dilation apart read image rows one grid row apart: im2col copies the earlier
  // tap's rows moved up a grid row and gathers only the last. Strides 2 and 3 over dilations 1 and 2,
  // pads that put copied rows on padding, a stride the dilation does not divide, and row blocks (a
  // 2 MB column matrix).
  ExpectConvMatchesReference({1, 2, 17, 9}, {3, 2, 7, 3}, {.strides = {3, 1}, .pads = {3, 1, 2, 1}});
  ExpectConvMatchesReference({1, 2, 19, 11}, {4, 2, 5, 3}, {.strides = {2, 2}, .dilations = {2, 1}, .pads = {4, 1, 3, 0}});
  ExpectConvMatchesReference({1, 2, 19, 11}, {4, 2, 5, 3}, {.strides = {3, 1}, .dilations = {2, 1}, .pads = {4, 1, 3, 0}});
  ExpectConvMatchesReference({1, 3, 200, 64}, {4, 3, 9, 3}, {.strides = {2, 1}, .pads = {4, 1, 4, 1}});
}

TEST(ConvTest, OneAndThreeDimensional) {
  ExpectConvMatchesReference({2, 4, 17}, {6, 4, 5}, {.strides = {2}, .dilations = {2}, .pads = {3, 1}});
  ExpectConvMatchesReference({1, 2, 5, 6, 7}, {3, 2, 3, 2, 3}, {.strides = {1, 2, 1}, .pads = {1, 0, 1, 0, 1, 2}});
}

TEST(ConvTest, GroupsAndDepthwise) {
  ExpectConvMatchesReference({2, 6, 9, 9}, {4, 3, 3, 3}, {.pads = {1, 1, 1, 1}, .group = 2});
  ExpectConvMatchesReference({1, 8, 10, 10}, {8, 1, 3, 3}, {.strides = {2, 2}, .pads = {1, 1, 1, 1}, .group = 8});
  ExpectConvMatchesReference({1, 4, 6, 6}, {8, 1, 3, 3}, {.group = 4});  // channel multiplier 2
}

TEST(ConvTest, DepthwiseRunsDirectlyInOneAndTwoDimensions) {
  // group == C: GroupedConv2D, 3x3 and 5x5 at strides 1 and 2, a 1-D one (a 2-D one of height 1),
  // dilated, and a dilation so wide that its padded plane would dwarf im2col's columns (im2col).
  ExpectConvMatchesReference({2, 5, 13, 19}, {5, 1, 3, 3}, {.pads = {1, 1, 1, 1}, .group = 5});
  ExpectConvMatchesReference({1, 6, 15, 15}, {6, 1, 5, 5}, {.strides = {2, 2}, .pads = {2, 2, 2, 2}, .group = 6});
  ExpectConvMatchesReference({2, 4, 23}, {8, 1, 3}, {.strides = {2}, .pads = {1, 0}, .group = 4});
  ExpectConvMatchesReference({1, 3, 12, 12}, {3, 1, 3, 3}, {.dilations = {2, 2}, .pads = {2, 2, 2, 2}, .group = 3});
  ExpectConvMatchesReference({1, 2, 5, 5}, {2, 1, 3, 3}, {.dilations = {60, 60}, .pads = {60, 60, 60, 60}, .group = 2});
}

TEST(ConvTest, PointwiseSkipsIm2colAndStillMatches) {
  ExpectConvMatchesReference({2, 16, 7, 5}, {9, 16, 1, 1}, {});
  ExpectConvMatchesReference({1, 16, 7, 5}, {8, 4, 1, 1}, {.group = 4}, false);
  ExpectConvMatchesReference({1, 8, 7, 7}, {4, 8, 1, 1}, {.strides = {2, 2}});  // strided 1x1 uses im2col
}

TEST(ConvTest, LargeColumnMatricesAreBuiltInRowBlocks) {
  // Columns of 147 x 4096 floats (2.4 MB) with a 2 KB W: im2col + GEMM run on blocks of grid rows, so
  // block edges meet padded rows and strided taps.
  ExpectConvMatchesReference({1, 3, 64, 64}, {4, 3, 7, 7}, {.pads = {3, 3, 3, 3}});
  ExpectConvMatchesReference({1, 3, 130, 129}, {4, 3, 7, 7}, {.strides = {2, 2}, .pads = {3, 2, 2, 3}});
  ExpectConvMatchesReference({1, 4, 70, 66}, {2, 2, 5, 5}, {.dilations = {2, 1}, .pads = {4, 2, 4, 2}, .group = 2});
}

TEST(ConvTest, WeightsPackedAtLoadCoverEveryTileAndBlock) {
  // At least 8 maps per group, so a constant W takes the packed path: maps past a panel's 8, grids whose
  // width leaves narrow and 16/32-wide column tiles, im2col row blocks (a 256 KiB+ column matrix), column
  // matrices built whole (at most 64 KiB: a keyword spotter's 10x4/2 stem, asymmetric pads), 1-D.
  ExpectConvMatchesReference({2, 5, 7, 7}, {13, 5, 3, 3}, {.pads = {1, 1, 1, 1}});
  ExpectConvMatchesReference({1, 1, 49, 10}, {64, 1, 10, 4}, {.strides = {2, 2}, .pads = {4, 1, 5, 2}});
  ExpectConvMatchesReference({1, 16, 14, 14}, {24, 16, 1, 1}, {});
  ExpectConvMatchesReference({1, 32, 56, 56}, {8, 32, 3, 3}, {.pads = {1, 1, 1, 1}});
  ExpectConvMatchesReference({1, 3, 61, 59}, {8, 3, 7, 7}, {.strides = {2, 2}, .pads = {3, 3, 3, 3}});
  ExpectConvMatchesReference({1, 16, 9, 9}, {16, 8, 3, 3}, {.dilations = {2, 2}, .pads = {2, 2, 2, 2}, .group = 2});
  ExpectConvMatchesReference({2, 4, 50}, {9, 4, 5}, {.strides = {2}, .pads = {2, 2}});
}

TEST(ConvTest, DeepKernelsOfOneGroupMatchOverThreads) {
  // 3x3s and 7x7s of at least 128 multiply-adds per output run on oneDNN when it is built in
  // (runtime/math/dnnl_conv.h), in bands of output rows shared out over the pool: more bands than
  // threads, batches, stride 2 with pads on one side only, and a stem whose last input rows no window reads.
  for (int threads : {1, 2, 3}) {
    ExpectConvMatchesReference({2, 16, 13, 11}, {24, 16, 3, 3}, {.pads = {1, 1, 1, 1}}, true, threads);
    ExpectConvMatchesReference({1, 32, 9, 10}, {16, 32, 3, 3}, {.strides = {2, 2}, .pads = {1, 0, 0, 1}}, false,
                               threads);
    ExpectConvMatchesReference({1, 3, 40, 37}, {16, 3, 7, 7}, {.strides = {2, 2}, .pads = {3, 3, 2, 2}}, true,
                               threads);
  }
}

TEST(ConvTest, ShapesOneDnnDeclinesRunOnWeightsPackedAtFirstNeed) {
  // A node oneDNN runs packs no W of ours at load; a shape it declines (pads as wide as the kernel) packs
  // it on that first call. Built without oneDNN these take the packed path from the start.
  for (int threads : {1, 2}) {
    ExpectConvMatchesReference({1, 16, 6, 7}, {8, 16, 3, 3}, {.pads = {3, 3, 3, 3}}, true, threads);
    ExpectConvMatchesReference({2, 16, 9, 9}, {8, 16, 3, 3}, {.strides = {2, 2}, .pads = {1, 4, 1, 4}}, false, threads);
  }
}

// That copy of W is the model's, as W is, not a tensor of the run that first needs it: charged to that run,
// it failed a request well within its budget (here 100 KiB, of which Y takes 9; the packed W is 144 more),
// and stayed counted in that run's account after it.
TEST(ConvTest, WeightsPackedAtFirstNeedAreNotChargedToTheRunThatNeedsThem) {
  const Tensor x = Random({1, 64, 2, 2}, 1), w = Random({64, 64, 3, 3}, 2);
  auto model = testing::GraphBuilder()
                   .Input("x", {1, 64, 2, 2})
                   .Initializer("w", w)
                   .NodeWith("Conv", {"x", "w"}, {"y"}, {testing::IntsAttr("pads", {3, 3, 3, 3})})
                   .Output("y")
                   .Load();
  SessionOptions options;
  options.memory_budget_bytes = 100 << 10;
  auto session = Session::Create(model, options);
  ASSERT_TRUE(session.ok()) << session.status();
  auto result = (*session)->Run({{"x", x}});
  ASSERT_TRUE(result.ok()) << result.status();
  const ConvParams p = Defaults(2, {.pads = {3, 3, 3, 3}});
  EXPECT_TRUE(TensorsClose(ReferenceConv(x, w, nullptr, p), (*result)[0], 1e-4, 1e-5));
}

TEST(ConvTest, SameSizeGridsCopyEachTapAsOneShiftedPlane) {
  // Stride 1 and a grid as wide as the image: each im2col row is the plane shifted by the tap, with the
  // columns the tap puts outside zeroed. Pads on one side only (every tap reads left of the image), taps
  // that read before the first and past the last float of a plane, and cache blocks of columns that start
  // in the middle of a grid row (1296 = 28 rows of 45 + 36).
  ExpectConvMatchesReference({1, 3, 6, 10}, {8, 3, 3, 3}, {.pads = {1, 2, 1, 0}});
  ExpectConvMatchesReference({1, 8, 40, 45}, {9, 8, 5, 5}, {.pads = {2, 2, 2, 2}});
  ExpectConvMatchesReference({1, 2, 7, 9}, {8, 2, 3, 5}, {.dilations = {3, 1}, .pads = {3, 2, 3, 2}});
}

TEST(ConvTest, SmallGroupsRunDirectlyOrPacked) {
  // Groups of at most 8 channels and maps run GroupedConv2D (ResNeXt's 3x3s, grouped 1x1s); groups of
  // more maps, and a 3-D depthwise one, PackedGemm per group. On one thread and on two, where (image,
  // group) pairs share out over the pool.
  for (int threads : {1, 2}) {
    ExpectConvMatchesReference({1, 8, 9, 9}, {24, 4, 3, 3}, {.pads = {1, 1, 1, 1}, .group = 2}, true, threads);
    ExpectConvMatchesReference({1, 64, 9, 11}, {64, 2, 3, 3}, {.pads = {1, 1, 1, 1}, .group = 32}, true, threads);
    ExpectConvMatchesReference({2, 12, 7, 7}, {12, 4, 1, 1}, {.group = 3}, true, threads);
    ExpectConvMatchesReference({1, 16, 20, 20}, {12, 4, 3, 3}, {.strides = {2, 2}, .pads = {1, 1, 1, 1},
                                .group = 4}, false, threads);
    ExpectConvMatchesReference({1, 3, 4, 5, 6}, {6, 1, 3, 3, 3}, {.pads = {1, 1, 1, 1, 1, 1}, .group = 3}, true,
                               threads);
  }
}

TEST(ConvTest, AutoPadModesMatchTheirExplicitPads) {
  // in 7, kernel 4, stride 2: SAME -> out 4, total pad (4-1)*2+4-7 = 3.
  const Tensor x = Random({1, 2, 7, 7}, 1), w = Random({3, 2, 4, 4}, 2);
  struct Mode {
    const char* name;
    std::vector<int64_t> pads;
  };
  for (const Mode& mode : {Mode{"SAME_UPPER", {1, 1, 2, 2}}, Mode{"SAME_LOWER", {2, 2, 1, 1}},
                           Mode{"VALID", {0, 0, 0, 0}}}) {
    auto result = OpTest("Conv", 11).Input("x", x).Input("w", w).Attr("auto_pad", std::string(mode.name))
                      .Attr("strides", std::vector<int64_t>{2, 2}).Output("y").Run();
    ASSERT_TRUE(result.ok()) << result.status();
    const ConvParams p{.strides = {2, 2}, .dilations = {1, 1}, .pads = mode.pads};
    EXPECT_TRUE(TensorsClose(ReferenceConv(x, w, nullptr, p), (*result)[0], 1e-4, 1e-5)) << mode.name;
  }
}

TEST(ConvTest, Float16ComputesThroughFloat) {
  // A full convolution and a depthwise one (group == C, the direct kernel).
  for (int64_t group : {1, 2}) {
    const Tensor x = Random({1, 2, 5, 5}, 1), w = Random({2, 2 / group, 3, 3}, 2);
    Tensor x16(DataType::kFloat16, x.shape()), w16(DataType::kFloat16, w.shape());
    for (int64_t i = 0; i < x.NumElements(); ++i) x16.data<Float16>()[i] = Float16(x.data<float>()[i]);
    for (int64_t i = 0; i < w.NumElements(); ++i) w16.data<Float16>()[i] = Float16(w.data<float>()[i]);
    auto result = OpTest("Conv", 11).Input("x", x16).Input("w", w16).Attr("group", group).Output("y").Run();
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_EQ((*result)[0].dtype(), DataType::kFloat16);
    // Inputs rounded to half first, so compare against the reference on the rounded values.
    Tensor xr(DataType::kFloat, x.shape()), wr(DataType::kFloat, w.shape()), yr(DataType::kFloat16, {1, 2, 3, 3});
    for (int64_t i = 0; i < x.NumElements(); ++i) xr.data<float>()[i] = static_cast<float>(x16.data<Float16>()[i]);
    for (int64_t i = 0; i < w.NumElements(); ++i) wr.data<float>()[i] = static_cast<float>(w16.data<Float16>()[i]);
    const Tensor expected = ReferenceConv(xr, wr, nullptr, Defaults(2, {.group = group}));
    for (int64_t i = 0; i < yr.NumElements(); ++i) yr.data<Float16>()[i] = Float16(expected.data<float>()[i]);
    EXPECT_TRUE(TensorsClose(yr, (*result)[0], 2e-3, 1e-3)) << "group " << group;
  }
}

TEST(ConvTest, MismatchedChannelsAreRejected) {
  auto result = OpTest("Conv", 22).Input("x", Random({1, 4, 5, 5}, 1)).Input("w", Random({2, 3, 3, 3}, 2))
                    .Output("y").Run();
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("C == W[1] * group"), std::string::npos) << result.status();
}

// Window attributes are the model's to choose; their arithmetic must be an error, never a wrapped int64
// (UBSan flags the overflow in the sanitizer build; in release the wrapped sizes indexed the wrong memory).
TEST(ConvTest, AttributesWhoseWindowArithmeticOverflowsAreErrors) {
  constexpr int64_t kHuge = int64_t{1} << 62;
  struct Case {
    const char* name;
    std::vector<int64_t> dilations, pads, strides;
    std::string auto_pad = "NOTSET";
  };
  const Case cases[] = {
      {.name = "dilated extent", .dilations = {kHuge, 1}, .pads = {}, .strides = {}},
      {.name = "padded size", .dilations = {}, .pads = {kHuge, 0, kHuge, 0}, .strides = {}},
      {.name = "SAME with a huge dilation", .dilations = {kHuge, 1}, .pads = {}, .strides = {},
       .auto_pad = "SAME_UPPER"},
  };
  for (const Case& c : cases) {
    OpTest test("Conv", 22);
    test.Input("x", Random({1, 1, 4, 4}, 1)).Input("w", Random({1, 1, 3, 3}, 2)).Output("y");
    if (!c.dilations.empty()) test.Attr("dilations", c.dilations);
    if (!c.pads.empty()) test.Attr("pads", c.pads);
    if (!c.strides.empty()) test.Attr("strides", c.strides);
    if (c.auto_pad != "NOTSET") test.Attr("auto_pad", c.auto_pad);
    auto result = test.Run();
    EXPECT_FALSE(result.ok()) << c.name;
  }
}

// SAME's ceil(in / stride) once computed in + stride - 1, which wraps for a stride near 2^63.
TEST(ConvTest, SameWithTheLargestStrideHasOneWindow) {
  auto result = OpTest("Conv", 22).Input("x", Random({1, 1, 4, 4}, 1)).Input("w", Random({1, 1, 3, 3}, 2))
                    .Attr("strides", std::vector<int64_t>{INT64_MAX, 1}).Attr("auto_pad", std::string("SAME_UPPER"))
                    .Output("y").Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ((*result)[0].shape(), (Shape{1, 1, 1, 4}));
}

// A narrow map with a huge dilation and pads as wide: only the middle tap of each window lands in the image,
// so Y = W[1] * X. The depthwise kernel's flat layout would need rows of 2^62 floats; its size arithmetic
// overflowed, and now sends the shape to im2col, whose row copies formed pointers 2^61 floats away before
// adding the offset back (UBSan: pointer overflow). In 1, 2 and 3 dimensions (the 2-D im2col, the packed
// path's rows, and the generic one), with W fed and W constant.
TEST(ConvTest, HugeDilationOnANarrowMapReadsOnlyTheTapsInTheImage) {
  constexpr int64_t kHalf = int64_t{1} << 61;
  for (const int rank : {1, 2, 3}) {
    Shape x_shape = {1, 1}, w_shape = {1, 1};
    std::vector<int64_t> dilations, pads_begin;
    for (int d = 0; d < rank; ++d) {
      const bool last = d == rank - 1;
      x_shape.push_back(last ? 4 : 3);
      w_shape.push_back(last ? 3 : 1);
      dilations.push_back(last ? kHalf : 1);
      pads_begin.push_back(last ? kHalf : 0);
    }
    std::vector<int64_t> pads = pads_begin;
    pads.insert(pads.end(), pads_begin.begin(), pads_begin.end());
    const Tensor x = Random(x_shape, 3);
    const Tensor w = Tensor::FromVector<float>(w_shape, {0.5f, 2.0f, -1.0f});
    for (bool constant_w : {false, true}) {
      OpTest test("Conv", 22);
      test.Input("x", x);
      if (constant_w) {
        test.Constant("w", w);
      } else {
        test.Input("w", w);
      }
      auto result = test.Attr("dilations", dilations).Attr("pads", pads).Output("y").Run();
      ASSERT_TRUE(result.ok()) << result.status();
      Tensor expected(DataType::kFloat, x_shape);
      for (int64_t i = 0; i < x.NumElements(); ++i) expected.data<float>()[i] = 2.0f * x.data<float>()[i];
      EXPECT_TRUE(TensorsClose(expected, (*result)[0])) << "rank " << rank << ", constant W: " << constant_w;
    }
  }
}

// Inputs whose sums a fast algorithm may overflow where the direct convolution's do not: a 3x3 at stride 1 on
// a map large enough for Winograd (on AVX2; ctest runs this with ONNXSERVE_ISA=avx2 too) must give what the
// definition gives. Huge finite inputs: Winograd's input transform adds neighbours (3e38 + 3e38 is inf),
// where the direct sums of products by small weights stay finite. One infinite pixel: the windows over it
// are inf, the others finite, where the transforms' differences made inf - inf = NaN.
TEST(ConvTest, HugeAndInfiniteInputsGiveWhatTheDefinitionGivesOnEveryPath) {
  const Shape x_shape = {1, 16, 16, 16}, w_shape = {16, 16, 3, 3};
  Tensor huge(DataType::kFloat, x_shape);
  for (float& v : huge.mutable_values<float>()) v = 3e38f;
  Tensor small_w(DataType::kFloat, w_shape);
  for (float& v : small_w.mutable_values<float>()) v = 1e-3f;
  Tensor one_infinite = Random(x_shape, 1);
  one_infinite.data<float>()[5 * 16 + 5] = std::numeric_limits<float>::infinity();
  Tensor positive_w = Random(w_shape, 2);
  for (float& v : positive_w.mutable_values<float>()) v = std::abs(v) + 0.1f;
  const ConvParams p = Defaults(2, {.pads = {1, 1, 1, 1}});
  for (const auto& [x, w] : {std::pair{huge, small_w}, std::pair{one_infinite, positive_w}}) {
    const Tensor expected = ReferenceConv(x, w, nullptr, p);
    auto result = OpTest("Conv", 22).Input("x", x).Constant("w", w).Attr("pads", p.pads).Output("y").Run();
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_TRUE(TensorsClose(expected, (*result)[0], 1e-4, 1e-4));
  }
}

TEST(ConvTransposeTest, AttributesWhoseOutputArithmeticOverflowsAreErrors) {
  constexpr int64_t kHuge = int64_t{1} << 62;
  const Tensor x = Random({1, 1, 4, 4}, 4), w = Random({1, 1, 3, 3}, 5);
  EXPECT_FALSE(OpTest("ConvTranspose", 22).Input("x", x).Input("w", w).Output("y")
                   .Attr("strides", std::vector<int64_t>{kHuge, 1}).Run().ok());
  EXPECT_FALSE(OpTest("ConvTranspose", 22).Input("x", x).Input("w", w).Output("y")
                   .Attr("dilations", std::vector<int64_t>{kHuge, 1}).Run().ok());
  EXPECT_FALSE(OpTest("ConvTranspose", 22).Input("x", x).Input("w", w).Output("y")
                   .Attr("output_padding", std::vector<int64_t>{INT64_MAX, 0}).Run().ok());
  EXPECT_FALSE(OpTest("ConvTranspose", 22).Input("x", x).Input("w", w).Output("y")
                   .Attr("output_shape", std::vector<int64_t>{INT64_MIN, 4}).Run().ok());
  EXPECT_FALSE(OpTest("ConvTranspose", 22).Input("x", x).Input("w", w).Output("y")
                   .Attr("pads", std::vector<int64_t>{INT64_MAX, 0, INT64_MAX, 0}).Run().ok());
}

// FusedConv(X, W, B, Z) with activation "Relu" must equal Relu(Conv(X, W, B) + Z).
Tensor AddThenRelu(Tensor y, const Tensor* z, bool relu) {
  float* v = y.data<float>();
  for (int64_t i = 0; i < y.NumElements(); ++i) {
    v[i] += z != nullptr ? z->data<float>()[i] : 0.f;
    if (relu) v[i] = std::max(v[i], 0.f);
  }
  return y;
}

struct FusedCase {
  Shape x_shape, w_shape;
  ConvParams params;
  bool bias, residual, relu;
};

void ExpectFusedConvMatchesConvAddRelu(const FusedCase& c) {
  const ConvParams p = Defaults(c.x_shape.size() - 2, c.params);
  const Tensor x = Random(c.x_shape, 1), w = Random(c.w_shape, 2), b = Random({c.w_shape[0]}, 3);
  const Tensor conv = ReferenceConv(x, w, c.bias ? &b : nullptr, p);
  const Tensor z = Random(conv.shape(), 4);
  const Tensor expected = AddThenRelu(conv, c.residual ? &z : nullptr, c.relu);
  for (bool constant_w : {false, true}) {
    OpTest test("FusedConv", 1, "ai.onnxserve");
    test.Input("x", x);
    constant_w ? test.Constant("w", w) : test.Input("w", w);
    if (c.bias) {
      constant_w ? test.Constant("b", b) : test.Input("b", b);
    } else if (c.residual) {
      test.NoInput();
    }
    if (c.residual) test.Input("z", z);
    auto result = test.Attr("strides", p.strides).Attr("dilations", p.dilations).Attr("pads", p.pads)
                      .Attr("group", p.group).Attr("activation", std::string(c.relu ? "Relu" : ""))
                      .Output("y").Run();
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_TRUE(TensorsClose(expected, (*result)[0], 1e-4, 1e-5))
        << "X " << ShapeToString(c.x_shape) << " W " << ShapeToString(c.w_shape) << " bias " << c.bias
        << " residual " << c.residual << " relu " << c.relu << " constant W " << constant_w;
  }
}

TEST(FusedConvTest, MatchesConvThenAddThenRelu) {
  for (bool bias : {false, true}) {
    for (bool residual : {false, true}) {
      for (bool relu : {false, true}) {
        ExpectFusedConvMatchesConvAddRelu({{2, 3, 9, 8}, {4, 3, 3, 3}, {.pads = {1, 1, 1, 1}}, bias, residual, relu});
      }
    }
  }
}

TEST(FusedConvTest, PointwiseStridedAndGroupedTiles) {
  ExpectFusedConvMatchesConvAddRelu({{2, 16, 7, 5}, {9, 16, 1, 1}, {}, true, true, true});
  ExpectFusedConvMatchesConvAddRelu({{1, 8, 11, 11}, {6, 8, 3, 3}, {.strides = {2, 2}, .pads = {1, 1, 1, 1}},
                                     true, true, true});
  ExpectFusedConvMatchesConvAddRelu({{2, 6, 9, 9}, {4, 3, 3, 3}, {.pads = {1, 1, 1, 1}, .group = 2}, true, true,
                                     true});
  ExpectFusedConvMatchesConvAddRelu({{1, 3, 15, 15}, {4, 3, 7, 7}, {.strides = {2, 2}, .pads = {3, 3, 3, 3}},
                                     false, false, true});
  ExpectFusedConvMatchesConvAddRelu({{1, 3, 64, 64}, {4, 3, 7, 7}, {.pads = {3, 3, 3, 3}}, true, true, true});
  // Enough maps for the packed path, which adds B and Z and applies Relu as it stores each tile.
  ExpectFusedConvMatchesConvAddRelu({{1, 16, 7, 7}, {24, 16, 1, 1}, {}, true, true, true});
  ExpectFusedConvMatchesConvAddRelu({{2, 8, 20, 20}, {16, 8, 3, 3}, {.pads = {1, 1, 1, 1}}, false, true, true});
  ExpectFusedConvMatchesConvAddRelu({{1, 600, 5, 5}, {9, 600, 1, 1}, {}, true, true, true});  // 3 depth blocks
}

TEST(FusedConvTest, DepthwiseAddsBiasAndResidualThenRelu) {
  for (bool bias : {false, true}) {
    ExpectFusedConvMatchesConvAddRelu({{2, 7, 10, 21}, {7, 1, 3, 3}, {.pads = {1, 1, 1, 1}, .group = 7}, bias, true,
                                       true});
  }
  ExpectFusedConvMatchesConvAddRelu({{1, 4, 11, 11}, {8, 1, 3, 3}, {.strides = {2, 2}, .pads = {1, 1, 1, 1},
                                     .group = 4}, true, false, true});
}

TEST(FusedConvTest, UnknownActivationIsRejected) {
  auto result = OpTest("FusedConv", 1, "ai.onnxserve").Input("x", Random({1, 2, 5, 5}, 1))
                    .Input("w", Random({2, 2, 3, 3}, 2)).Attr("activation", std::string("Softplus")).Output("y").Run();
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("activation \"Softplus\""), std::string::npos) << result.status();
}

TEST(FusedConvTest, ActivationWithoutItsParametersIsRejected) {
  // Clip's bounds are activation_params (min, max): without them the node cannot say what it clips to.
  auto result = OpTest("FusedConv", 1, "ai.onnxserve").Input("x", Random({1, 2, 5, 5}, 1))
                    .Input("w", Random({2, 2, 3, 3}, 2)).Attr("activation", std::string("Clip")).Output("y").Run();
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("takes 2 activation_params, got 0"), std::string::npos) << result.status();
}

TEST(FusedConvTest, ResidualThatDoesNotBroadcastIsRejected) {
  // Z is the fused Add's other operand: one that broadcasts is added as Add would; [1,2,5,5] against the
  // convolution's [1,2,3,3] does not.
  auto result = OpTest("FusedConv", 1, "ai.onnxserve").Input("x", Random({1, 2, 5, 5}, 1))
                    .Input("w", Random({2, 2, 3, 3}, 2)).NoInput().Input("z", Random({1, 2, 5, 5}, 3))
                    .Output("y").Run();
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("does not broadcast"), std::string::npos) << result.status();
}

// The definition of the transpose: every x[n,c,i] * w[c,m',k] lands on y[n,m,i*s-p+k*d] when inside.
Tensor ReferenceConvTranspose(const Tensor& x, const Tensor& w, const Tensor* b, const ConvParams& p,
                              const std::vector<int64_t>& out) {
  const size_t rank = x.rank() - 2;
  const std::vector<int64_t> in(x.shape().begin() + 2, x.shape().end());
  const std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  const int64_t channels = x.dim(1), group_maps = w.dim(1), maps = group_maps * p.group;
  const int64_t group_channels = channels / p.group;
  Shape y_shape = {x.dim(0), maps};
  y_shape.insert(y_shape.end(), out.begin(), out.end());
  Tensor y(DataType::kFloat, y_shape);
  const int64_t out_size = NumElements(out), in_size = NumElements(in), k_size = NumElements(kernel);
  for (int64_t i = 0; i < y.NumElements(); ++i) y.data<float>()[i] = b ? b->data<float>()[(i / out_size) % maps] : 0;
  for (int64_t n = 0; n < x.dim(0); ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t i = 0; i < in_size; ++i) {
        const auto ii = Unflatten(i, in);
        for (int64_t mg = 0; mg < group_maps; ++mg) {
          const int64_t m = (c / group_channels) * group_maps + mg;
          for (int64_t kk = 0; kk < k_size; ++kk) {
            const auto ki = Unflatten(kk, kernel);
            int64_t offset = 0;
            bool inside = true;
            for (size_t d = 0; d < rank; ++d) {
              const int64_t at = ii[d] * p.strides[d] - p.pads[d] + ki[d] * p.dilations[d];
              inside = inside && at >= 0 && at < out[d];
              offset = offset * out[d] + at;
            }
            if (!inside) continue;
            y.data<float>()[(n * maps + m) * out_size + offset] +=
                x.data<float>()[(n * channels + c) * in_size + i] * w.data<float>()[(c * group_maps + mg) * k_size + kk];
          }
        }
      }
    }
  }
  return y;
}

void ExpectConvTransposeMatchesReference(const Shape& x_shape, const Shape& w_shape, ConvParams p,
                                         std::vector<int64_t> output_padding, bool bias = true) {
  const size_t rank = x_shape.size() - 2;
  p = Defaults(rank, p);
  if (output_padding.empty()) output_padding.assign(rank, 0);
  std::vector<int64_t> out(rank);
  for (size_t d = 0; d < rank; ++d) {
    out[d] = p.strides[d] * (x_shape[d + 2] - 1) + output_padding[d] + (w_shape[d + 2] - 1) * p.dilations[d] + 1 -
             p.pads[d] - p.pads[d + rank];
  }
  const Tensor x = Random(x_shape, 1), w = Random(w_shape, 2), b = Random({w_shape[1] * p.group}, 3);
  OpTest test("ConvTranspose", 22);
  test.Input("x", x).Input("w", w);
  if (bias) test.Input("b", b);
  auto result = test.Attr("strides", p.strides).Attr("dilations", p.dilations).Attr("pads", p.pads)
                    .Attr("group", p.group).Attr("output_padding", output_padding).Output("y").Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(TensorsClose(ReferenceConvTranspose(x, w, bias ? &b : nullptr, p, out), (*result)[0], 1e-4, 1e-5))
      << "X " << ShapeToString(x_shape) << " W " << ShapeToString(w_shape);
}

TEST(ConvTransposeTest, StridesPadsDilationsAndOutputPadding) {
  ExpectConvTransposeMatchesReference({2, 3, 5, 4}, {3, 2, 3, 3}, {}, {});
  ExpectConvTransposeMatchesReference({1, 3, 5, 4}, {3, 4, 4, 3}, {.strides = {2, 3}, .pads = {1, 0, 2, 1}}, {1, 2});
  ExpectConvTransposeMatchesReference({1, 2, 4, 4}, {2, 3, 3, 2}, {.strides = {2, 1}, .dilations = {2, 3}}, {1, 0},
                                      false);
}

TEST(ConvTransposeTest, OneAndThreeDimensionalAndGrouped) {
  ExpectConvTransposeMatchesReference({2, 4, 7}, {4, 3, 5}, {.strides = {3}, .pads = {2, 1}}, {});
  ExpectConvTransposeMatchesReference({1, 2, 3, 4, 3}, {2, 2, 2, 3, 2}, {.strides = {2, 1, 2}}, {1, 0, 0});
  ExpectConvTransposeMatchesReference({1, 6, 5, 5}, {6, 2, 3, 3}, {.strides = {2, 2}, .group = 3}, {});
  ExpectConvTransposeMatchesReference({1, 8, 6, 5}, {8, 3, 1, 1}, {.group = 2}, {});  // pointwise GEMM path
}

TEST(ConvTransposeTest, OutputShapeDerivesThePads) {
  // in 3, stride 2, kernel 3: full extent 7. output_shape 8 leaves total pad -1: floor halves put the
  // extra (padding) element at the end, so the result is the unpadded one plus a row of bias.
  const Tensor x = Random({1, 1, 3, 3}, 1), w = Random({1, 2, 3, 3}, 2);
  auto result = OpTest("ConvTranspose", 11).Input("x", x).Input("w", w).Attr("strides", std::vector<int64_t>{2, 2})
                    .Attr("output_shape", std::vector<int64_t>{8, 7}).Output("y").Run();
  ASSERT_TRUE(result.ok()) << result.status();
  const ConvParams p = Defaults(2, {.strides = {2, 2}});
  EXPECT_TRUE(TensorsClose(ReferenceConvTranspose(x, w, nullptr, p, {8, 7}), (*result)[0], 1e-4, 1e-5));
}

TEST(ConvTransposeTest, SameUpperGivesInputTimesStride) {
  // in 3, stride 2, kernel 3: out 6, total pad 7 - 6 = 1 at the end.
  const Tensor x = Random({1, 2, 3, 3}, 1), w = Random({2, 2, 3, 3}, 2);
  auto result = OpTest("ConvTranspose", 22).Input("x", x).Input("w", w).Attr("strides", std::vector<int64_t>{2, 2})
                    .Attr("auto_pad", std::string("SAME_UPPER")).Output("y").Run();
  ASSERT_TRUE(result.ok()) << result.status();
  const ConvParams p = Defaults(2, {.strides = {2, 2}});
  EXPECT_TRUE(TensorsClose(ReferenceConvTranspose(x, w, nullptr, p, {6, 6}), (*result)[0], 1e-4, 1e-5));
}

// Found by tests/fuzz/model_fuzz.cc: an input with a 0-sized spatial axis made the column walk divide by that
// axis (SIGFPE). Any request could send one. Conv gives an empty output; ConvTranspose's output is the bias.
TEST(ConvTest, ZeroSizedSpatialInputs) {
  const Tensor w = Tensor::FromVector<float>({1, 1, 2}, {1.f, 2.f});
  auto conv = OpTest("Conv", 22).Input("x", Tensor(DataType::kFloat, {1, 1, 0})).Input("w", w).Output("y").Run();
  EXPECT_FALSE(conv.ok() && (*conv)[0].NumElements() != 0);
  auto transposed = OpTest("ConvTranspose", 22)
                        .Input("x", Tensor(DataType::kFloat, {1, 1, 0}))
                        .Input("w", w)
                        .Input("b", Tensor::FromVector<float>({1}, {0.5f}))
                        .Output("y")
                        .Run();
  if (transposed.ok()) {
    for (float v : (*transposed)[0].values<float>()) EXPECT_EQ(v, 0.5f);
  }
}

}  // namespace
}  // namespace onnxserve

namespace onnxserve {
namespace {

// A map with no rows or no columns whose windows fit (a 1x1 kernel, or pads that make room) is a valid
// input with an empty output, on every path (the NCHW kernels and oneDNN's, in each ISA): it used to fail.
TEST(ConvTest, AnEmptyMapWhoseWindowsFitGivesAnEmptyOutput) {
  struct Case {
    Shape x, w;
    std::vector<int64_t> pads;
    Shape y;
  };
  for (const Case& c : {Case{{1, 1, 0, 4}, {2, 1, 1, 1}, {0, 0, 0, 0}, {1, 2, 0, 4}},
                        Case{{1, 3, 5, 0}, {4, 3, 3, 3}, {1, 1, 1, 1}, {1, 4, 5, 0}},
                        Case{{1, 64, 0, 7}, {64, 64, 3, 3}, {1, 1, 1, 1}, {1, 64, 0, 7}},
                        Case{{2, 8, 0, 0}, {8, 1, 3, 3}, {1, 1, 1, 1}, {2, 8, 0, 0}}}) {
    for (const bool constant_w : {false, true}) {  // weights known at load take the packed and oneDNN paths
      OpTest op("Conv", 11);
      op.Input("x", Tensor(DataType::kFloat, c.x));
      const Tensor w(DataType::kFloat, c.w);
      constant_w ? op.Constant("w", w) : op.Input("w", w);
      if (c.w[1] != c.x[1]) op.Attr("group", c.x[1]);
      auto y = op.Attr("pads", c.pads).Output("y").Run();
      ASSERT_TRUE(y.ok()) << "x " << ShapeToString(c.x) << ": " << y.status();
      EXPECT_EQ((*y)[0].shape(), c.y) << "x " << ShapeToString(c.x);
    }
  }
}

// Found by the model fuzzer (through ConvInteger): with no input channels the im2col block size divided by
// a zero row size. The sum over no channels is 0 everywhere.
TEST(ConvTest, NoInputChannelsGiveZeros) {
  auto y = testing::OpTest("Conv", 11)
               .Input("x", Tensor(DataType::kFloat, {1, 0, 40, 40}))
               .Input("w", Tensor(DataType::kFloat, {2, 0, 3, 3}))
               .Output("y")
               .Run();
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(testing::TensorsClose(Tensor::FromVector<float>({1, 2, 38, 38}, std::vector<float>(2 * 38 * 38, 0.f)),
                                    (*y)[0]));
}

}  // namespace
}  // namespace onnxserve

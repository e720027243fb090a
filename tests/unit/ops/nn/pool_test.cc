// Pooling: window geometry (pads, auto_pad, ceil_mode, dilations), Indices and the per-version attributes.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

#include "gtest/gtest.h"
#include "runtime/exec/session.h"
#include "tests/support/graph_builder.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

// X [1, 1, 3, 3] = 1..9.
Tensor Grid() { return Tensor::FromVector<float>({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}); }

// Pads, strides and dilations are the model's: an output of 2^41 windows is refused before a window is
// built (each took memory, so this ran out of it), and wrapped arithmetic is an error.
TEST(MaxPoolTest, WindowArithmeticFromHostileAttributesIsAnError) {
  constexpr int64_t kHuge = int64_t{1} << 62;
  struct Case {
    const char* op;
    int opset;
    const char* name;
    std::vector<int64_t> pads, strides, dilations;
    std::string auto_pad = "NOTSET";
  };
  const Case cases[] = {
      {"MaxPool", 12, "2^41 windows", {int64_t{1} << 40, 0, int64_t{1} << 40, 0}, {}, {}},
      {"AveragePool", 19, "2^41 windows", {int64_t{1} << 40, 0, int64_t{1} << 40, 0}, {}, {}},
      {"MaxPool", 12, "padded size", {kHuge, 0, kHuge, 0}, {}, {}},
      {"MaxPool", 12, "dilated extent", {}, {}, {kHuge, 1}},
      {"LpPool", 18, "dilated extent", {}, {}, {kHuge, 1}},
      {"MaxPool", 12, "negative pads", {-1, 0, 0, 0}, {}, {}},
      {"MaxPool", 12, "SAME with huge stride and dilation", {}, {INT64_MAX, 1}, {kHuge, 1}, "SAME_UPPER"},
  };
  for (const Case& c : cases) {
    OpTest test(c.op, c.opset);
    test.Input("x", Grid()).Attr("kernel_shape", std::vector<int64_t>{3, 1}).Output("y");
    if (!c.pads.empty()) test.Attr("pads", c.pads);
    if (!c.strides.empty()) test.Attr("strides", c.strides);
    if (!c.dilations.empty()) test.Attr("dilations", c.dilations);
    if (c.auto_pad != "NOTSET") test.Attr("auto_pad", c.auto_pad);
    EXPECT_FALSE(test.Run().ok()) << c.op << ": " << c.name;
  }
}

// A request of no images or no channels may declare planes of any height: nothing bounds the dims of an empty
// tensor but their product. Pooling it computes nothing, and must make nothing per output row either (its
// windows took 32 bytes a row: 32 GB for these 2^30 rows).
TEST(MaxPoolTest, AnEmptyInputMakesNothingForTheRowsItDeclares) {
  for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) {
    for (const Shape& shape : std::vector<Shape>{{0, 1, int64_t{1} << 30, 1}, {1, 0, int64_t{1} << 30, 1}}) {
      OpTest test(op, 18);
      test.Input("x", Tensor(DataType::kFloat, shape)).Attr("kernel_shape", std::vector<int64_t>{1, 1}).Output("y");
      auto got = test.Run();
      ASSERT_TRUE(got.ok()) << op << ": " << got.status();
      EXPECT_EQ((*got)[0].shape(), shape) << op;
    }
  }
  auto with_indices = OpTest("MaxPool", 12)
                          .Input("x", Tensor(DataType::kFloat, {0, 1, int64_t{1} << 30, 1}))
                          .Attr("kernel_shape", std::vector<int64_t>{1, 1})
                          .Output("y")
                          .Output("indices")
                          .Run();
  ASSERT_TRUE(with_indices.ok()) << with_indices.status();
  ASSERT_EQ(with_indices->size(), 2u);
  EXPECT_EQ((*with_indices)[1].shape(), (Shape{0, 1, int64_t{1} << 30, 1}));
  EXPECT_EQ((*with_indices)[1].dtype(), DataType::kInt64);
}

// A pad a model chose can make a thin output (one column, 2^31 rows) whose windows (four int64 a row) take
// 8x its bytes and were built before anything was charged: 64 GB here, past the size limits (16 GB); and
// within them, past a run's budget that the output alone fits (2^23 rows: windows 256 MiB, output 32).
TEST(MaxPoolTest, TheWindowsOfAThinHugeOutputCountAsTheRunsMemory) {
  const auto thin_pool = [](int64_t pad) {
    return testing::GraphBuilder()
        .Input("x", {1, 1, 1, 1})
        .NodeWith("MaxPool", {"x"}, {"y"},
                  {testing::IntsAttr("kernel_shape", {1, 1}), testing::IntsAttr("pads", {pad, 0, 0, 0})})
        .Output("y")
        .Load();
  };
  const Tensor x = Tensor::FromVector<float>({1, 1, 1, 1}, {1.0f});
  auto unbudgeted = Session::Create(thin_pool((int64_t{1} << 31) - 2));
  ASSERT_TRUE(unbudgeted.ok()) << unbudgeted.status();
  EXPECT_EQ((*unbudgeted)->Run({{"x", x}}).status().code(), absl::StatusCode::kResourceExhausted);
  SessionOptions options;
  options.memory_budget_bytes = int64_t{256} << 20;
  auto budgeted = Session::Create(thin_pool(int64_t{1} << 23), options);
  ASSERT_TRUE(budgeted.ok()) << budgeted.status();
  EXPECT_EQ((*budgeted)->Run({{"x", x}}).status().code(), absl::StatusCode::kResourceExhausted);
  // Within the budget it runs: the output's first rows are the pad's, -inf, and its last the input.
  auto fits = Session::Create(thin_pool(3), options);
  ASSERT_TRUE(fits.ok()) << fits.status();
  auto y = (*fits)->Run({{"x", x}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].shape(), (Shape{1, 1, 4, 1}));
  EXPECT_EQ((*y)[0].data<float>()[3], 1.0f);
}

TEST(MaxPoolTest, TwoByTwoWindowsWithIndices) {
  auto out = OpTest("MaxPool", 8)
                 .Input("x", Grid())
                 .Attr("kernel_shape", std::vector<int64_t>{2, 2})
                 .Output("y")
                 .Output("indices")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 2, 2}, {5, 6, 8, 9}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({1, 1, 2, 2}, {4, 5, 7, 8}), (*out)[1]));
}

TEST(MaxPoolTest, ColumnMajorIndices) {
  // storage_order 1: the element at (h, w) is h + 3 * w.
  auto out = OpTest("MaxPool", 12)
                 .Input("x", Grid())
                 .Attr("kernel_shape", std::vector<int64_t>{2, 2})
                 .Attr("storage_order", int64_t{1})
                 .Output("y")
                 .Output("indices")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({1, 1, 2, 2}, {4, 7, 5, 8}), (*out)[1]));
}

TEST(MaxPoolTest, CeilModeKeepsThePartialLastWindowFromVersion10) {
  // kernel 2, stride 2 over 3: floor gives one window, ceil two (the second holds the last row/column).
  auto out = OpTest("MaxPool", 10)
                 .Input("x", Grid())
                 .Attr("kernel_shape", std::vector<int64_t>{2, 2})
                 .Attr("strides", std::vector<int64_t>{2, 2})
                 .Attr("ceil_mode", int64_t{1})
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 2, 2}, {5, 6, 8, 9}), (*out)[0]));
}

// A window of -inf and NaN only (NaN loses to any number) is -inf, on every path: the dilated one started
// from the lowest float and gave -3.4e38 where the undilated one and the definition give -inf.
TEST(MaxPoolTest, AWindowOfMinusInfinityIsMinusInfinityDilatedOrNot) {
  const float inf = std::numeric_limits<float>::infinity();
  for (const float fill : {-inf, std::numeric_limits<float>::quiet_NaN()}) {
    for (const int64_t dilation : {1, 2}) {
      Tensor x(DataType::kFloat, {1, 1, 6, 6});
      for (float& e : x.mutable_values<float>()) e = fill;
      x.data<float>()[0] = 5;  // in the first window only
      auto got = OpTest("MaxPool", 12)
                     .Input("x", x)
                     .Attr("kernel_shape", std::vector<int64_t>{2, 2})
                     .Attr("strides", std::vector<int64_t>{2, 2})
                     .Attr("dilations", std::vector<int64_t>{dilation, dilation})
                     .Output("y")
                     .Run();
      ASSERT_TRUE(got.ok()) << got.status();
      const Shape shape = dilation == 1 ? Shape{1, 1, 3, 3} : Shape{1, 1, 2, 2};
      std::vector<float> want(static_cast<size_t>(shape[2] * shape[3]), -inf);
      want[0] = 5;
      EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>(shape, want), (*got)[0], 0, 0))
          << "windows of " << fill << ", dilation " << dilation;
    }
  }
}

TEST(MaxPoolTest, IndicesDoNotChangeWhatNaNWindowsGive) {
  // Asking for Indices takes another path; it must answer Y as the others do: NaN loses against every
  // number wherever it stands in the window, and a window of only NaN is -inf (its index the first tap).
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const Tensor x = Tensor::FromVector<float>({1, 1, 6}, {nan, 5, nan, nan, 3, nan});
  for (const bool with_indices : {false, true}) {
    OpTest op("MaxPool", 12);
    op.Input("x", x).Attr("kernel_shape", std::vector<int64_t>{2}).Attr("strides", std::vector<int64_t>{2}).Output("y");
    if (with_indices) op.Output("indices");
    auto got = op.Run();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 3}, {5, -inf, 3}), (*got)[0], 0, 0))
        << "with Indices: " << with_indices;
    if (with_indices) {
      EXPECT_EQ((*got)[1].values<int64_t>(), (std::vector<int64_t>{1, 2, 4}));
    }
  }
}

TEST(PoolTest, AnEmptyMapWhoseWindowsFitGivesAnEmptyOutput) {
  // A 1x1 window over a map of no rows: windows fit, there are none (it used to be an error).
  for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) {
    auto got = OpTest(op, 11)
                   .Input("x", Tensor(DataType::kFloat, {1, 2, 0, 3}))
                   .Attr("kernel_shape", std::vector<int64_t>{1, 1})
                   .Output("y")
                   .Run();
    ASSERT_TRUE(got.ok()) << op << ": " << got.status();
    EXPECT_EQ((*got)[0].shape(), (Shape{1, 2, 0, 3})) << op;
  }
}

TEST(MaxPoolTest, DilatedWindowSkipsElements) {
  // kernel 2 with dilation 2 covers rows/columns 0 and 2.
  auto out = OpTest("MaxPool", 22)
                 .Input("x", Tensor::FromVector<float>({1, 1, 3, 3}, {9, 1, 1, 1, 8, 1, 1, 1, 1}))
                 .Attr("kernel_shape", std::vector<int64_t>{2, 2})
                 .Attr("dilations", std::vector<int64_t>{2, 2})
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 1, 1}, {9}), (*out)[0]));
}

TEST(MaxPoolTest, Int8FromVersion12) {
  const Tensor x = Tensor::FromVector<int8_t>({1, 1, 4}, {-5, -3, 7, -8});
  auto out = OpTest("MaxPool", 12).Input("x", x).Attr("kernel_shape", std::vector<int64_t>{2}).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int8_t>({1, 1, 3}, {-3, 7, 7}), (*out)[0]));
  EXPECT_FALSE(OpTest("MaxPool", 11).Input("x", x).Attr("kernel_shape", std::vector<int64_t>{2}).Output("y").Run().ok());
}

TEST(AveragePoolTest, CountIncludePadChangesTheDivisorAtTheBorder) {
  // pads 1 on every side, kernel 2, stride 2: corner window holds x[0,0] = 1 and three pads.
  OpTest base = OpTest("AveragePool", 7)
                    .Input("x", Grid())
                    .Attr("kernel_shape", std::vector<int64_t>{2, 2})
                    .Attr("strides", std::vector<int64_t>{2, 2})
                    .Attr("pads", std::vector<int64_t>{1, 1, 1, 1})
                    .Output("y");
  auto exclude = base.Run();
  ASSERT_TRUE(exclude.ok()) << exclude.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 2, 2}, {1, 2.5f, 5.5f, 7}), (*exclude)[0]));
  auto include = base.Attr("count_include_pad", int64_t{1}).Run();
  ASSERT_TRUE(include.ok()) << include.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 2, 2}, {0.25f, 1.25f, 2.75f, 7}), (*include)[0]));
}

TEST(AveragePoolTest, SameUpperPadsAtTheEnd) {
  // 1-D [1, 2, 3], kernel 2, SAME_UPPER: pad one at the end; windows (1,2), (2,3), (3).
  auto out = OpTest("AveragePool", 11)
                 .Input("x", Tensor::FromVector<float>({1, 1, 3}, {1, 2, 3}))
                 .Attr("kernel_shape", std::vector<int64_t>{2})
                 .Attr("auto_pad", std::string("SAME_UPPER"))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 3}, {1.5f, 2.5f, 3}), (*out)[0]));
}

TEST(AveragePoolTest, DilationsOnlyFromVersion19) {
  const Tensor x = Tensor::FromVector<float>({1, 1, 3}, {1, 2, 3});
  auto v19 = OpTest("AveragePool", 19)
                 .Input("x", x)
                 .Attr("kernel_shape", std::vector<int64_t>{2})
                 .Attr("dilations", std::vector<int64_t>{2})
                 .Output("y")
                 .Run();
  ASSERT_TRUE(v19.ok()) << v19.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 1}, {2}), (*v19)[0]));
}

TEST(LpPoolTest, PIsAFloatInVersion1AndAnIntLater) {
  const Tensor x = Tensor::FromVector<float>({1, 1, 2}, {3, -4});
  auto v1 = OpTest("LpPool", 1).Input("x", x).Attr("kernel_shape", std::vector<int64_t>{2}).Attr("p", 2.0f).Output(
      "y").Run();
  ASSERT_TRUE(v1.ok()) << v1.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 1}, {5}), (*v1)[0]));
  auto v18 = OpTest("LpPool", 18).Input("x", x).Attr("kernel_shape", std::vector<int64_t>{2}).Attr("p", int64_t{1})
                 .Output("y").Run();
  ASSERT_TRUE(v18.ok()) << v18.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 1}, {7}), (*v18)[0]));
}

TEST(GlobalPoolTest, OneValuePerPlane) {
  const Tensor x = Tensor::FromVector<float>({1, 2, 2}, {1, 3, -4, 3});
  auto avg = OpTest("GlobalAveragePool", 1).Input("x", x).Output("y").Run();
  ASSERT_TRUE(avg.ok()) << avg.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 2, 1}, {2, -0.5f}), (*avg)[0]));
  auto max = OpTest("GlobalMaxPool", 22).Input("x", x).Output("y").Run();
  ASSERT_TRUE(max.ok()) << max.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 2, 1}, {3, 3}), (*max)[0]));
  auto lp = OpTest("GlobalLpPool", 2).Input("x", x).Output("y").Run();
  ASSERT_TRUE(lp.ok()) << lp.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 2, 1}, {std::sqrt(10.0f), 5}), (*lp)[0]));
}

// One 2-D pooling problem for the reference below.
struct Pool2D {
  int64_t planes, height, width;
  std::array<int64_t, 2> kernel, stride, pad_begin, pad_end;
  bool ceil_mode, count_include_pad;
};

// The spec's output size along one dim, with the ceil_mode rule that drops a last window starting in the
// end padding.
int64_t OutputSize(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, bool ceil_mode) {
  const int64_t span = in + pb + pe - k;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + pb) --out;
  return out;
}

// Max or average of every window by direct enumeration of its taps.
Tensor ReferencePool(const Pool2D& p, const Tensor& x, bool max) {
  const int64_t oh = OutputSize(p.height, p.kernel[0], p.stride[0], p.pad_begin[0], p.pad_end[0], p.ceil_mode);
  const int64_t ow = OutputSize(p.width, p.kernel[1], p.stride[1], p.pad_begin[1], p.pad_end[1], p.ceil_mode);
  Tensor y(DataType::kFloat, {1, p.planes, oh, ow});
  float* out = y.data<float>();
  for (int64_t c = 0; c < p.planes; ++c) {
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t inside = 0, padded = 0;
        for (int64_t a = 0; a < p.kernel[0]; ++a) {
          for (int64_t b = 0; b < p.kernel[1]; ++b) {
            const int64_t r = i * p.stride[0] - p.pad_begin[0] + a, q = j * p.stride[1] - p.pad_begin[1] + b;
            if (r < p.height + p.pad_end[0] && q < p.width + p.pad_end[1]) ++padded;
            if (r < 0 || r >= p.height || q < 0 || q >= p.width) continue;
            const float v = x.data<float>()[(c * p.height + r) * p.width + q];
            best = std::max<double>(best, v);
            sum += v;
            ++inside;
          }
        }
        const int64_t count = p.count_include_pad ? padded : inside;
        *out++ = static_cast<float>(max ? best : count > 0 ? sum / static_cast<double>(count) : 0);
      }
    }
  }
  return y;
}

// Random shapes, kernels, strides, pads and ceil_mode: the float fast path (strides 1 and 2 vectorized,
// others scalar) against the reference, including rows shorter and longer than a vector.
TEST(PoolTest, FloatMaxAndAveragePoolMatchTheReferenceOnRandomGeometries) {
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> value(-10, 10);
  const auto draw = [&rng](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int trial = 0; trial < 400; ++trial) {
    Pool2D p{draw(1, 3), draw(1, 12), draw(1, 40), {draw(1, 4), draw(1, 4)}, {draw(1, 3), draw(1, 3)}, {0, 0}, {0, 0},
             draw(0, 1) == 1, draw(0, 1) == 1};
    for (int d = 0; d < 2; ++d) {
      p.pad_begin[d] = draw(0, p.kernel[d] - 1);
      p.pad_end[d] = draw(0, p.kernel[d] - 1);
    }
    if (p.height + p.pad_begin[0] + p.pad_end[0] < p.kernel[0] || p.width + p.pad_begin[1] + p.pad_end[1] < p.kernel[1]) {
      continue;
    }
    std::vector<float> values(static_cast<size_t>(p.planes * p.height * p.width));
    for (float& v : values) v = value(rng);
    const Tensor x = Tensor::FromVector<float>({1, p.planes, p.height, p.width}, values);
    const auto attrs = [&](OpTest t) {
      return t.Input("x", x)
          .Attr("kernel_shape", std::vector<int64_t>{p.kernel[0], p.kernel[1]})
          .Attr("strides", std::vector<int64_t>{p.stride[0], p.stride[1]})
          .Attr("pads", std::vector<int64_t>{p.pad_begin[0], p.pad_begin[1], p.pad_end[0], p.pad_end[1]})
          .Attr("ceil_mode", int64_t{p.ceil_mode})
          .Output("y");
    };
    const std::string what = absl::StrCat("trial ", trial, ": ", p.height, "x", p.width, " kernel ", p.kernel[0], "x",
                                          p.kernel[1], " stride ", p.stride[0], "x", p.stride[1]);
    auto max = attrs(OpTest("MaxPool", 12)).Run();
    ASSERT_TRUE(max.ok()) << what << ": " << max.status();
    EXPECT_TRUE(TensorsClose(ReferencePool(p, x, true), (*max)[0], 0, 0)) << what;
    auto avg = attrs(OpTest("AveragePool", 19)).Attr("count_include_pad", int64_t{p.count_include_pad}).Run();
    ASSERT_TRUE(avg.ok()) << what << ": " << avg.status();
    EXPECT_TRUE(TensorsClose(ReferencePool(p, x, false), (*avg)[0], 1e-5, 1e-6)) << what;
  }
}

// A window that is the whole plane (a global pool spelled as MaxPool/AveragePool) takes a path of its own:
// it must give the reference's values, including when end padding leaves a single window.
TEST(PoolTest, WholePlaneWindowsMatchTheReference) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> value(-10, 10);
  // Not a structured binding: clang 14 cannot capture one in the lambda below.
  for (const std::array<int64_t, 4>& shape : std::vector<std::array<int64_t, 4>>{
           {25, 5, 0, 1}, {7, 7, 0, 1}, {1, 1, 0, 1}, {3, 40, 0, 1}, {6, 9, 1, 2}}) {
    const int64_t height = shape[0], width = shape[1], pad_end = shape[2], stride = shape[3];
    const Pool2D p{4, height, width, {height, width}, {stride, stride}, {0, 0}, {pad_end, pad_end}, false, false};
    std::vector<float> values(static_cast<size_t>(p.planes * height * width));
    for (float& v : values) v = value(rng);
    const Tensor x = Tensor::FromVector<float>({1, p.planes, height, width}, values);
    const auto attrs = [&](OpTest t) {
      return t.Input("x", x)
          .Attr("kernel_shape", std::vector<int64_t>{height, width})
          .Attr("strides", std::vector<int64_t>{stride, stride})
          .Attr("pads", std::vector<int64_t>{0, 0, pad_end, pad_end})
          .Output("y");
    };
    const std::string what = absl::StrCat(height, "x", width, " pad_end ", pad_end);
    auto max = attrs(OpTest("MaxPool", 12)).Run();
    ASSERT_TRUE(max.ok()) << what << ": " << max.status();
    EXPECT_TRUE(TensorsClose(ReferencePool(p, x, true), (*max)[0], 0, 0)) << what;
    auto avg = attrs(OpTest("AveragePool", 19)).Run();
    ASSERT_TRUE(avg.ok()) << what << ": " << avg.status();
    EXPECT_TRUE(TensorsClose(ReferencePool(p, x, false), (*avg)[0], 1e-6, 1e-6)) << what;
  }
}

// Planes holding the same values pool to the same bits whatever their place in the tensor (vector lanes
// and the scalar tail reduce taps in one order).
TEST(PoolTest, EqualPlanesGiveBitEqualOutputs) {
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> value(-1e10f, 1e10f);
  std::vector<float> plane(13 * 29);
  for (float& v : plane) v = value(rng);
  std::vector<float> values;
  for (int c = 0; c < 5; ++c) values.insert(values.end(), plane.begin(), plane.end());
  const Tensor x = Tensor::FromVector<float>({1, 5, 13, 29}, values);
  for (const char* op : {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}) {
    OpTest test = OpTest(op, 19).Input("x", x).Output("y");
    if (std::string(op).find("Global") == std::string::npos) {
      test.Attr("kernel_shape", std::vector<int64_t>{3, 3}).Attr("strides", std::vector<int64_t>{2, 2})
          .Attr("pads", std::vector<int64_t>{1, 1, 1, 1});
    }
    auto out = test.Run();
    ASSERT_TRUE(out.ok()) << op << ": " << out.status();
    const Tensor& y = (*out)[0];
    const int64_t per_plane = y.NumElements() / 5;
    for (int64_t i = 0; i < y.NumElements(); ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(y.data<float>()[i]), std::bit_cast<uint32_t>(y.data<float>()[i % per_plane]))
          << op << " element " << i;
    }
  }
}

TEST(PoolTest, KernelShapeMustMatchTheSpatialRank) {
  auto out = OpTest("MaxPool", 22).Input("x", Grid()).Attr("kernel_shape", std::vector<int64_t>{2}).Output("y").Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("spatial"), std::string::npos) << out.status();
}

}  // namespace
}  // namespace onnxserve

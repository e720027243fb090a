// MatMul and Gemm against plain reference loops on random shapes, including 1-D operands, batch
// broadcasting, transposes, every C broadcast and the half/integer types.
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/common.h"
#include "tests/support/op_test.h"
#include "tests/support/resident_memory.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

template <typename T>
Tensor Random(const Shape& shape, int seed) {
  std::mt19937 rng(seed);
  // Small integers are exact in every type, so integer results are exact too.
  std::uniform_int_distribution<int> small(std::is_unsigned_v<T> ? 0 : -4, 4);
  std::uniform_real_distribution<float> real(-1.f, 1.f);
  Tensor t(kTypeOf<T>, shape);
  for (T& v : t.mutable_values<T>()) {
    v = static_cast<T>(std::is_integral_v<T> ? static_cast<float>(small(rng)) : real(rng));
  }
  return t;
}

// Every test type goes through float exactly (half types, small integers) or is double.
template <typename T>
double AsDouble(T v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return static_cast<double>(static_cast<float>(v));
  }
}

// numpy.matmul: 1-D operands promoted to a row/column then dropped, batch dims broadcast.
template <typename T>
Tensor ReferenceMatMul(const Tensor& a, const Tensor& b) {
  const Shape sa = a.rank() == 1 ? Shape{1, a.dim(0)} : a.shape();
  const Shape sb = b.rank() == 1 ? Shape{b.dim(0), 1} : b.shape();
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  const Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  const Shape batch = BroadcastShapes(ba, bb).value();
  const auto stride_a = BroadcastStrides(ba, batch), stride_b = BroadcastStrides(bb, batch);
  Shape out = batch;
  if (a.rank() > 1) out.push_back(m);
  if (b.rank() > 1) out.push_back(n);
  Tensor y(a.dtype(), out);
  std::vector<int64_t> index(batch.size(), 0);
  for (int64_t i = 0; i < NumElements(batch); ++i) {
    int64_t oa = 0, ob = 0;
    for (int64_t d = static_cast<int64_t>(batch.size()) - 1, rest = i; d >= 0; --d) {
      oa += (rest % batch[d]) * stride_a[d];
      ob += (rest % batch[d]) * stride_b[d];
      rest /= batch[d];
    }
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          sum += AsDouble(a.data<T>()[oa * m * k + r * k + p]) * AsDouble(b.data<T>()[ob * k * n + p * n + c]);
        }
        y.data<T>()[(i * m + r) * n + c] = static_cast<T>(static_cast<float>(sum));
      }
    }
  }
  return y;
}

template <typename T>
void ExpectMatMulMatchesReference(const Shape& sa, const Shape& sb, int opset = 13) {
  const Tensor a = Random<T>(sa, 1), b = Random<T>(sb, 2);
  // B fed at run time, and B an initializer (a 2-D float one is packed at load for PackedGemm).
  for (bool constant_b : {false, true}) {
    OpTest test("MatMul", opset);
    test.Input("a", a);
    constant_b ? test.Constant("b", b) : test.Input("b", b);
    auto result = test.Output("y").Run();
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_TRUE(TensorsClose(ReferenceMatMul<T>(a, b), (*result)[0], 1e-3, 1e-5))
        << ShapeToString(sa) << " x " << ShapeToString(sb) << " constant B " << constant_b;
  }
}

TEST(MatMulTest, MatricesOfRandomShapes) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> dim(1, 70);
  for (int i = 0; i < 10; ++i) {
    const int64_t m = dim(rng), k = dim(rng), n = dim(rng);
    ExpectMatMulMatchesReference<float>({m, k}, {k, n});
  }
}

TEST(MatMulTest, OneDimensionalOperandsArePromotedAndDropped) {
  ExpectMatMulMatchesReference<float>({5}, {5});        // dot product: rank 0
  ExpectMatMulMatchesReference<float>({5}, {3, 5, 4});  // row vector against a batch: [3,4]
  ExpectMatMulMatchesReference<float>({2, 3, 4, 5}, {5});  // batch against a column: [2,3,4]
  ExpectMatMulMatchesReference<float>({6}, {6, 7});
}

TEST(MatMulTest, BatchDimsBroadcast) {
  ExpectMatMulMatchesReference<float>({2, 1, 3, 4}, {5, 4, 6});  // -> [2,5,3,6]
  ExpectMatMulMatchesReference<float>({3, 4}, {2, 4, 6});         // A broadcast over B's batch
  ExpectMatMulMatchesReference<float>({3, 7, 40}, {40, 50});       // one weight: batches fold into rows
  ExpectMatMulMatchesReference<float>({2, 3, 7, 4}, {4, 9});      // a weight matrix: folds into one GEMM
  ExpectMatMulMatchesReference<float>({1, 3, 4}, {1, 1, 4, 2});
}

TEST(MatMulTest, EmptyDimsGiveEmptyOrZeroResults) {
  ExpectMatMulMatchesReference<float>({0, 4}, {4, 3});
  ExpectMatMulMatchesReference<float>({3, 0}, {0, 2});  // K = 0: all zeros
}

TEST(MatMulTest, EveryTypeOfTheSpec) {
  ExpectMatMulMatchesReference<double>({3, 17, 9}, {9, 5});
  ExpectMatMulMatchesReference<Float16>({4, 6}, {2, 6, 3});
  ExpectMatMulMatchesReference<BFloat16>({4, 6}, {6, 3});
  ExpectMatMulMatchesReference<int32_t>({2, 4, 6}, {2, 6, 3}, 9);
  ExpectMatMulMatchesReference<int64_t>({4, 6}, {6}, 9);
  ExpectMatMulMatchesReference<uint32_t>({4, 6}, {6, 3});
  ExpectMatMulMatchesReference<uint64_t>({1, 4, 6}, {3, 6, 3});
}

TEST(MatMulTest, MismatchedInnerDimsAreRejected) {
  auto result = OpTest("MatMul", 13).Input("a", Random<float>({2, 3}, 1)).Input("b", Random<float>({4, 2}, 2))
                    .Output("y").Run();
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("inner dims 3 and 4"), std::string::npos) << result.status();
}

TEST(MatMulTest, IntegersNeedOpset9) {
  auto result = OpTest("MatMul", 8).Input("a", Random<int32_t>({2, 3}, 1)).Input("b", Random<int32_t>({3, 2}, 2))
                    .Output("y").Run();
  EXPECT_FALSE(result.ok());
}

// Y = alpha * A' * B' + beta * C with C broadcast from its trailing dims.
template <typename T>
Tensor ReferenceGemm(const Tensor& a, const Tensor& b, const Tensor* c, bool ta, bool tb, float alpha,
                     float beta) {
  const int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1), n = tb ? b.dim(0) : b.dim(1);
  Tensor y(a.dtype(), {m, n});
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        sum += AsDouble(a.data<T>()[ta ? p * m + i : i * k + p]) * AsDouble(b.data<T>()[tb ? j * k + p : p * n + j]);
      }
      double bias = 0;
      if (c != nullptr) {
        const int64_t cm = c->rank() == 2 ? c->dim(0) : 1, cn = c->rank() >= 1 ? c->dim(c->rank() - 1) : 1;
        bias = AsDouble(c->data<T>()[(cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j)]);
      }
      y.data<T>()[i * n + j] = static_cast<T>(static_cast<float>(alpha * sum + beta * bias));
    }
  }
  return y;
}

struct GemmCase {
  bool ta, tb;
  float alpha, beta;
  Shape c;  // empty with has_c false: no C
  bool has_c = true;
};

template <typename T>
void ExpectGemmMatchesReference(const GemmCase& g, int64_t m, int64_t n, int64_t k, int opset = 13) {
  const Tensor a = Random<T>(g.ta ? Shape{k, m} : Shape{m, k}, 3), b = Random<T>(g.tb ? Shape{n, k} : Shape{k, n}, 4);
  const Tensor c = Random<T>(g.c, 5);
  const Tensor expected = ReferenceGemm<T>(a, b, g.has_c ? &c : nullptr, g.ta, g.tb, g.alpha, g.beta);
  // B fed at run time, and B an initializer (a float one is packed at load, alpha folded in).
  for (bool constant_b : {false, true}) {
    OpTest test("Gemm", opset);
    test.Input("a", a);
    constant_b ? test.Constant("b", b) : test.Input("b", b);
    if (g.has_c) test.Input("c", c);
    test.Attr("transA", int64_t{g.ta}).Attr("transB", int64_t{g.tb}).Attr("alpha", g.alpha).Attr("beta", g.beta);
    auto result = test.Output("y").Run();
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_TRUE(TensorsClose(expected, (*result)[0], 1e-4, 1e-5))
        << "transA " << g.ta << " transB " << g.tb << " C " << ShapeToString(g.c) << " constant B " << constant_b;
  }
}

TEST(GemmTest, TransposesScalesAndEveryBiasBroadcast) {
  const int64_t m = 13, n = 21, k = 37;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      ExpectGemmMatchesReference<float>({ta, tb, 0.5f, 2.f, {m, n}}, m, n, k);
    }
  }
  for (const Shape& c : {Shape{}, Shape{1}, Shape{n}, Shape{1, n}, Shape{m, 1}, Shape{1, 1}}) {
    ExpectGemmMatchesReference<float>({false, true, 1.f, 0.25f, c}, m, n, k);
  }
  ExpectGemmMatchesReference<float>({false, false, 1.f, 1.f, {}, false}, m, n, k);  // Gemm-11+: no C
  ExpectGemmMatchesReference<float>({false, false, 2.f, 0.f, {m, n}}, m, n, k);     // beta 0 ignores C
}

TEST(GemmTest, BigProductsSplitOverThePoolMatchToo) {
  ExpectGemmMatchesReference<float>({false, true, 1.f, 1.f, {300}}, 70, 300, 129);
  ExpectGemmMatchesReference<double>({true, false, 1.f, 1.f, {90, 1}}, 90, 40, 65);
}

TEST(GemmTest, HalfAndIntegerTypes) {
  ExpectGemmMatchesReference<Float16>({false, false, 1.f, 1.f, {5}}, 4, 5, 6);
  ExpectGemmMatchesReference<BFloat16>({true, true, 1.f, 1.f, {4, 5}}, 4, 5, 6);
  ExpectGemmMatchesReference<int32_t>({false, true, 1.f, 1.f, {5}}, 4, 5, 6, 11);
  ExpectGemmMatchesReference<uint64_t>({true, false, 1.f, 1.f, {4, 1}}, 4, 5, 6, 9);
}

TEST(GemmTest, Gemm6BroadcastsCOnlyWhenAsked) {
  const Tensor a = Random<float>({3, 4}, 1), b = Random<float>({4, 5}, 2), c = Random<float>({5}, 3);
  auto refused = OpTest("Gemm", 6).Input("a", a).Input("b", b).Input("c", c).Output("y").Run();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("broadcast=0"), std::string::npos) << refused.status();
  auto result =
      OpTest("Gemm", 6).Input("a", a).Input("b", b).Input("c", c).Attr("broadcast", int64_t{1}).Output("y").Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(TensorsClose(ReferenceGemm<float>(a, b, &c, false, false, 1.f, 1.f), (*result)[0]));
}

TEST(GemmTest, BiasThatDoesNotBroadcastIsRejected) {
  auto result = OpTest("Gemm", 13).Input("a", Random<float>({3, 4}, 1)).Input("b", Random<float>({4, 5}, 2))
                    .Input("c", Random<float>({3}, 3)).Output("y").Run();
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("broadcastable to [3,5]"), std::string::npos) << result.status();
}

// An empty product of many batches multiplies nothing: [2^24, 0, 1] x [2^24, 1, 0] listed 2^24 pairs of
// matrices (256 MiB, outside the run's budget) to multiply none, in MatMul and in MatMulInteger alike.
TEST(MatMulTest, AnEmptyProductOfManyBatchesTakesNoMemory) {
  constexpr int64_t kBatches = int64_t{1} << 24;
  struct Op {
    const char* type;
    int opset;
    DataType input;
  };
  for (const Op& op : {Op{"MatMul", 13, DataType::kFloat}, Op{"MatMulInteger", 10, DataType::kUint8}}) {
    const int64_t growth = testing::ResidentGrowth([&] {
      auto out = OpTest(op.type, op.opset)
                     .Input("a", Tensor(op.input, {kBatches, 0, 1}))
                     .Input("b", Tensor(op.input, {kBatches, 1, 0}))
                     .Output("y")
                     .Run();
      ASSERT_TRUE(out.ok()) << op.type << ": " << out.status();
      EXPECT_EQ((*out)[0].shape(), (Shape{kBatches, 0, 0})) << op.type;
    });
    if (growth < 0) GTEST_SKIP() << "this kernel reports no resident-set high-water mark to reset";
    EXPECT_LT(growth, int64_t{64} << 20) << op.type;
  }
}

}  // namespace
}  // namespace onnxserve

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/core/tensor.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

Tensor Random(Shape shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  Tensor t(DataType::kFloat, std::move(shape));
  for (float& v : t.mutable_values<float>()) v = dist(rng);
  return t;
}

absl::StatusOr<Tensor> Einsum(const std::string& equation, const std::vector<Tensor>& inputs) {
  OpTest test("Einsum", 12);
  for (size_t i = 0; i < inputs.size(); ++i) test.Input(absl::StrCat("x", i), inputs[i]);
  auto out = test.Attr("equation", equation).Output("y").Run();
  if (!out.ok()) return out.status();
  return (*out)[0];
}

// Batched matrix product with the batch dims broadcast, as a plain triple loop computes it.
Tensor BatchMatMulReference(const Tensor& a, const Tensor& b) {
  const int64_t batch = a.dim(0), m = a.dim(1), k = a.dim(2), n = b.dim(2);
  Tensor out(DataType::kFloat, {batch, m, n});
  for (int64_t p = 0; p < batch; ++p) {
    const int64_t pb = b.dim(0) == 1 ? 0 : p;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t l = 0; l < k; ++l) {
          sum += static_cast<double>(a.data<float>()[(p * m + i) * k + l]) * b.data<float>()[(pb * k + l) * n + j];
        }
        out.data<float>()[(p * m + i) * n + j] = static_cast<float>(sum);
      }
    }
  }
  return out;
}

TEST(EinsumTest, BatchMatMulMatchesAReference) {
  const Tensor a = Random({4, 3, 5}, 1), b = Random({4, 5, 2}, 2);
  auto y = Einsum("bij, bjk -> bik", {a, b});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(BatchMatMulReference(a, b), *y, 1e-5, 1e-6));
}

// "..." batch dims broadcast numpy-style: [4, 3, 5] x [1, 5, 2].
TEST(EinsumTest, EllipsisDimsBroadcast) {
  const Tensor a = Random({4, 3, 5}, 3), b = Random({1, 5, 2}, 4);
  auto y = Einsum("...ij,...jk", {a, b});  // implicit output: "...ik"
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(BatchMatMulReference(a, b), *y, 1e-5, 1e-6));
}

TEST(EinsumTest, ImplicitOutputSortsTheLabelsUsedOnce) {
  const Tensor x = Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto transposed = Einsum("ji", {x});  // output "ij": the transpose
  ASSERT_TRUE(transposed.ok()) << transposed.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3, 2}, {1, 4, 2, 5, 3, 6}), *transposed));
}

TEST(EinsumTest, TraceDiagonalAndSums) {
  const Tensor m = Tensor::FromVector<float>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto trace = Einsum("ii", {m});
  auto diagonal = Einsum("ii->i", {m});
  auto rows = Einsum("ij->i", {m});
  auto total = Einsum("ij->", {m});
  ASSERT_TRUE(trace.ok() && diagonal.ok() && rows.ok() && total.ok());
  EXPECT_TRUE(TensorsClose(Tensor::Scalar(15.0f), *trace));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3}, {1, 5, 9}), *diagonal));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3}, {6, 15, 24}), *rows));
  EXPECT_TRUE(TensorsClose(Tensor::Scalar(45.0f), *total));
}

TEST(EinsumTest, InnerAndOuterProductsOfIntegers) {
  const Tensor a = Tensor::FromVector<int64_t>({3}, {1, 2, 3}), b = Tensor::FromVector<int64_t>({2}, {10, -1});
  auto inner = Einsum("i,i", {a, a});
  auto outer = Einsum("i,j->ij", {a, b});
  ASSERT_TRUE(inner.ok() && outer.ok());
  EXPECT_TRUE(TensorsClose(Tensor::Scalar(int64_t{14}), *inner));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({3, 2}, {10, -1, 20, -2, 30, -3}), *outer));
}

TEST(EinsumTest, ThreeOperands) {
  const Tensor a = Tensor::FromVector<float>({2}, {1, 2}), m = Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4});
  auto y = Einsum("i,ij,j->", {a, m, a});  // a^T M a = 1 + 4 + 6 + 16
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Tensor::Scalar(27.0f), *y));
}

TEST(EinsumTest, RejectsMismatchedDimsAndRanks) {
  EXPECT_FALSE(Einsum("ij,jk", {Random({2, 3}, 5), Random({4, 2}, 6)}).ok());
  EXPECT_FALSE(Einsum("ij", {Random({2, 3, 4}, 7)}).ok());
  EXPECT_FALSE(Einsum("ij->k", {Random({2, 3}, 8)}).ok());
}

// Five 8192-element vectors summed as one product are 2^65 terms: the count wrapped to 0, and the sum of a
// product of all-ones vectors came out 0 instead of failing (2^60 would have run for decades).
TEST(EinsumTest, SumsOfMoreTermsThanInt64CountsAreRefused) {
  const Tensor ones = Tensor::FromVector<float>({8192}, std::vector<float>(8192, 1.0f));
  auto y = Einsum("a,b,c,d,e->", {ones, ones, ones, ones, ones});
  EXPECT_EQ(y.status().code(), absl::StatusCode::kResourceExhausted) << y.status();
  auto wide = Einsum("a,b,c,d,e->abcd", {ones, ones, ones, ones, Tensor::FromVector<float>({2}, {1, 1})});
  EXPECT_FALSE(wide.ok());  // 2^52 outputs: past the tensor limits, whatever the sum costs
}

}  // namespace
}  // namespace onnxserve

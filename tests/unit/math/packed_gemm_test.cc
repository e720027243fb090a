// PackedGemm against a plain triple loop in double, over shapes that hit every tile the micro-kernels
// have: full 48-column tiles, the 32- and 16-wide ones, the narrow 1..8-column kernels, rows that leave a
// panel part empty, depths split into several blocks, and a depth of 0. Each case runs with A packed at
// load (convolution weights) and with B packed at load (MatMul/Gemm weights, as stored or transposed).
#include "runtime/math/packed_gemm.h"

#include <cstdlib>
#include <cstring>

#include <cmath>
#include <limits>
#include <new>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/math/isa.h"
#include "runtime/math/scratch.h"
#include "runtime/math/vector_kernels.h"
#include "tests/support/activation_reference.h"
#include "tests/support/op_test.h"
#include "tests/support/sanitizer.h"

namespace onnxserve {
namespace {

using testing::DescribeActivation;
using testing::EveryActivation;
using testing::RandomFloats;
using testing::ReferenceActivation;

struct Case {
  int64_t m, n, k;
  bool bias, z, relu;
  int threads;
  Activation activation = {};  // when not relu
};

// Which operand is packed at load, and how the other one is given.
enum class Packing { kLeft, kRight, kRightTransposed, kRightWithTransposedLeft };

// NaN in every float of `matrix` past the first `row` of each stride.
void PoisonPadding(std::vector<float>& matrix, int64_t stride, int64_t row) {
  for (size_t i = 0; i < matrix.size(); ++i) {
    if (static_cast<int64_t>(i) % stride >= row) matrix[i] = std::numeric_limits<float>::quiet_NaN();
  }
}

// activation(A[m x k] * B[k x n] + bias + z), A and B stored with row strides 3 and 5 floats longer than their
// rows (padding the kernels must not read: NaN), C with a stride 2 longer (padding they must not write).
void CheckAgainstReference(const Case& c, Packing packing) {
  SCOPED_TRACE(::testing::Message() << "m=" << c.m << " n=" << c.n << " k=" << c.k << " bias=" << c.bias
                                  << " z=" << c.z << " relu=" << c.relu << " threads=" << c.threads
                                  << " activation=" << DescribeActivation(c.activation)
                                  << " packing=" << static_cast<int>(packing));
  const bool a_transposed = packing == Packing::kRightWithTransposedLeft;
  const bool b_transposed = packing == Packing::kRightTransposed;
  // Element (i, p) of A and (p, j) of B, wherever the storage order puts them.
  const int64_t lda = (a_transposed ? c.m : c.k) + 3, ldb = (b_transposed ? c.k : c.n) + 5, ldc = c.n + 2;
  std::vector<float> a = RandomFloats((a_transposed ? std::max<int64_t>(c.k, 1) : c.m) * lda, 1);
  std::vector<float> b = RandomFloats((b_transposed ? c.n : std::max<int64_t>(c.k, 1)) * ldb, 2);
  // NaN in A's and B's padding: either may be read where it lies, and any padding let into C shows (and a
  // row read past A's end, ASan's build).
  PoisonPadding(a, lda, a_transposed ? c.m : c.k);
  PoisonPadding(b, ldb, b_transposed ? c.k : c.n);
  auto a_at = [&](int64_t i, int64_t p) { return a_transposed ? a[p * lda + i] : a[i * lda + p]; };
  auto b_at = [&](int64_t p, int64_t j) { return b_transposed ? b[j * ldb + p] : b[p * ldb + j]; };
  const std::vector<float> bias = RandomFloats(c.m, 3), z = RandomFloats(c.m * ldc, 4);
  const float sentinel = 12345.0f;
  std::vector<float> out(static_cast<size_t>(c.m * ldc), sentinel);
  ThreadPool pool(c.threads);
  const Activation activation = c.relu ? Activation{ActivationKind::kRelu} : c.activation;
  GemmEpilogue epilogue{.bias = c.bias ? bias.data() : nullptr, .z = c.z ? z.data() : nullptr, .ldz = ldc,
                        .activation = activation};
  if (packing == Packing::kLeft) {
    PackedGemm(PackedRows(a.data(), c.m, c.k, lda), c.n, b.data(), ldb, out.data(), ldc, epilogue, &pool);
  } else {
    PackedGemm(a.data(), c.m, lda, a_transposed, PackedColumns(b.data(), c.k, c.n, ldb, b_transposed, 1.0f),
               out.data(), ldc, epilogue, &pool);
  }
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = out[i * ldc + j];
      if (j >= c.n) {
        ASSERT_EQ(got, sentinel) << "wrote padding at (" << i << "," << j << ")";
        continue;
      }
      double want = 0;
      for (int64_t p = 0; p < c.k; ++p) want += double{a_at(i, p)} * b_at(p, j);
      if (c.bias) want += bias[i];
      if (c.z) want += z[i * ldc + j];
      // The activations' slopes stay below 1.5: twice the product's tolerance covers them.
      const double tolerance = (AppliedAfterStore(activation) ? 2e-4 : 1e-4) * (1 + std::sqrt(double(c.k)));
      ASSERT_NEAR(got, ReferenceActivation(activation, want), tolerance) << "at (" << i << "," << j << ")";
    }
  }
}

void CheckAgainstReference(const Case& c) {
  for (Packing packing :
       {Packing::kLeft, Packing::kRight, Packing::kRightTransposed, Packing::kRightWithTransposedLeft}) {
    CheckAgainstReference(c, packing);
  }
}

class PackedGemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!PackedGemmSupported()) GTEST_SKIP() << "ISA " << IsaName(ActiveIsa()) << ": PackedGemm has no kernel here";
  }
};

TEST_F(PackedGemmTest, MatchesReferenceOnEveryTileShape) {
  // Depth 37: a stored B this small is read where it lies; 129: it is packed first.
  for (int64_t k : {37, 129}) {
    for (int64_t n : {1, 3, 8, 9, 16, 17, 32, 33, 48, 49, 96, 100, 196}) {
      for (int64_t m : {1, 2, 3, 4, 6, 8, 9, 12, 13}) CheckAgainstReference({m, n, k, false, false, false, 1});
    }
  }
}

TEST_F(PackedGemmTest, ReadsShallowSmallBWhereItLies) {
  // The keyword spotter's pointwise Conv (64 x 64 weights, a 25x5 map: a last tile of 29 columns), and
  // either side of the limits of reading B in place (depth 128, 8192 floats), partial last vectors.
  CheckAgainstReference({64, 125, 64, true, true, true, 1});
  CheckAgainstReference({24, 64, 128, true, false, true, 1});
  CheckAgainstReference({24, 65, 128, true, false, true, 1});
  CheckAgainstReference({9, 77, 105, false, true, false, 2});
}

TEST_F(PackedGemmTest, SplitsDepthIntoBlocksAndAccumulates) {
  for (int64_t k : {255, 256, 257, 600, 1100}) CheckAgainstReference({16, 53, k, true, true, true, 1});
}

TEST_F(PackedGemmTest, ThinProductsReadBWhereItLiesOverEveryDepthBlock) {
  // Squeeze-and-excitation 1x1 Convs on a 1x1 map (W packed, 1 column of B) whose depth takes several
  // blocks, B read where it lies (its rows 1 to 8 columns plus the test's 5 floats of padding apart). 1 to 8 columns (the narrow kernels) and 9 (not thin), depths of
  // several blocks up to the limit (4096) and past it, bias, Z and Relu, one and two threads.
  for (int64_t n : {1, 3, 8, 9}) {
    for (int64_t k : {257, 960, 4096, 4097}) CheckAgainstReference({240, n, k, true, true, true, 1});
  }
  CheckAgainstReference({240, 1, 960, true, false, true, 2});
}

TEST_F(PackedGemmTest, AddsBiasAndZThenAppliesRelu) {
  for (bool bias : {false, true}) {
    for (bool z : {false, true}) {
      for (bool relu : {false, true}) CheckAgainstReference({11, 57, 20, bias, z, relu, 1});
    }
  }
}

TEST_F(PackedGemmTest, AppliesEachActivationOnEveryTileShape) {
  // Wide, 32- and 16-column tiles and the narrow kernel; lone rows, pairs and blocks; two depth blocks.
  for (const Activation& activation : EveryActivation()) {
    for (int64_t n : {1, 9, 33, 49, 100}) {
      for (int64_t m : {1, 6, 13}) CheckAgainstReference({m, n, 300, true, true, false, 2, activation});
    }
  }
}

// The fused activation equals the activation operator's vector kernel run on the unfused product, to the
// bit: a FusedConv or FusedGemm gives what the unfused graph gives on this ISA.
TEST_F(PackedGemmTest, FusedActivationIsBitEqualToTheUnfusedOne) {
  const int64_t m = 13, n = 101, k = 300;
  const std::vector<float> a = RandomFloats(m * k, 7), b = RandomFloats(k * n, 8), bias = RandomFloats(m, 9);
  ThreadPool pool(2);
  for (const Activation& activation : EveryActivation()) {
    SCOPED_TRACE(DescribeActivation(activation));
    for (bool packed_left : {true, false}) {
      std::vector<float> fused(m * n), unfused(m * n);
      auto multiply = [&](const Activation& applied, float* out) {
        const GemmEpilogue epilogue{.bias = packed_left ? bias.data() : nullptr, .activation = applied};
        if (packed_left) {
          PackedGemm(PackedRows(a.data(), m, k, k), n, b.data(), n, out, n, epilogue, &pool);
        } else {
          PackedGemm(a.data(), m, k, false, PackedColumns(b.data(), k, n, n, false, 1.0f), out, n, epilogue, &pool);
        }
      };
      multiply(activation, fused.data());
      multiply({}, unfused.data());
      ApplyActivation(vec::Kernels(), activation, unfused.data(), m * n);
      EXPECT_EQ(std::memcmp(fused.data(), unfused.data(), fused.size() * sizeof(float)), 0)
          << "packed left " << packed_left;
    }
  }
}

TEST_F(PackedGemmTest, AColumnBiasRowRepeatsWithRowStrideZero) {
  // Z with ldz 0 is one row added to every row of C: MatMul + Add's bias per column.
  const int64_t m = 10, n = 50, k = 7;
  const std::vector<float> a = RandomFloats(m * k, 10), b = RandomFloats(k * n, 11), row = RandomFloats(n, 12);
  std::vector<float> out(m * n);
  ThreadPool pool(1);
  PackedGemm(a.data(), m, k, false, PackedColumns(b.data(), k, n, n, false, 1.0f), out.data(), n,
             {.z = row.data(), .ldz = 0, .activation = {}}, &pool);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = row[j];
      for (int64_t p = 0; p < k; ++p) want += double{a[i * k + p]} * b[p * n + j];
      ASSERT_NEAR(out[i * n + j], want, 1e-5) << "at (" << i << "," << j << ")";
    }
  }
}

TEST_F(PackedGemmTest, DepthZeroWritesBiasAndZ) { CheckAgainstReference({9, 21, 0, true, true, false, 1}); }

TEST_F(PackedGemmTest, SplitsColumnsOrRowsOverThreads) {
  CheckAgainstReference({64, 3000, 64, true, false, true, 2});  // many column panels: columns split
  CheckAgainstReference({128, 40, 300, true, true, false, 2});  // one column panel: rows split
  CheckAgainstReference({64, 49, 700, false, false, true, 3});
  // Matrix-vector products of a large weight (an MLP at batch 1 and 3; a 1x1 Conv on a 1x1 map, n = 1; a
  // 128 x 512 weight): split though the arithmetic is little, since streaming the weight is the cost.
  CheckAgainstReference({1, 520, 300, true, false, true, 2});
  CheckAgainstReference({1, 512, 128, true, true, false, 2});
  CheckAgainstReference({3, 500, 290, true, true, false, 2});
  CheckAgainstReference({600, 1, 300, true, true, true, 2});
}

TEST_F(PackedGemmTest, ThreadCountNeverChangesABit) {
  // Every element of C sums its depth in the same order however the pool splits the product: ResNet-50's
  // 14x14 maps (196 columns: 96 + 100 over two threads, three panels with 4 columns left over), its 7x7
  // ones (49: rows split over B packed once for all threads, in two depth blocks), 20 columns (rows split,
  // each thread packing B), a keyword spotter's 25x5 map (125: rows split, each thread reading B in place)
  // with four times its 64 maps, which alone would not split, and a 28x28 map (784: 17 panels), under a
  // bias, a residual and Relu, B given whole or made row by row as im2col's is, and an LSTM step's recurrent
  // matrix-vector product, and a squeeze-and-excitation 1x1 Conv's, which runs panel by panel. A packed
  // W's columns split in whole panels; a packed B's in whole vectors, so a share can start inside a panel
  // (512 columns: 256 + 256, 784 over 3 threads: 256 + 256 + 272), and the last share keeps the columns
  // past the last whole vector (20: no split): cut off alone they would go to the narrow kernel, whose
  // separate sums change the last bits.
  for (const auto& shape : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {256, 196, 300}, {512, 49, 600}, {600, 20, 400}, {256, 125, 64}, {256, 125, 40}, {128, 784, 100},
           {24, 196, 40}, {1, 512, 128}, {240, 1, 960}}) {
    // Named, not bound: clang 14 lambdas cannot capture structured bindings.
    const int64_t m = std::get<0>(shape), n = std::get<1>(shape), k = std::get<2>(shape);
    const std::vector<float> a = RandomFloats(m * k, 7), b = RandomFloats(k * n, 8);
    const std::vector<float> bias = RandomFloats(m, 9), z = RandomFloats(m * n, 10);
    const GemmEpilogue epilogue{.bias = bias.data(), .z = z.data(), .ldz = n, .activation = {ActivationKind::kRelu}};
    const PackedRows packed_a(a.data(), m, k, k);
    const PackedColumns packed_b(b.data(), k, n, n, false, 1.0f);
    auto make_row = [&](int64_t row, int64_t n_begin, int64_t columns, float* out) {
      std::memcpy(out, &b[row * n + n_begin], columns * sizeof(float));
    };
    std::vector<float> one_thread_left, one_thread_made, one_thread_right;
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      std::vector<float> left(m * n), made(m * n), right(m * n);
      PackedGemm(packed_a, n, b.data(), n, left.data(), n, epilogue, &pool);
      PackedGemm(packed_a, n, make_row, made.data(), n, epilogue, &pool);
      PackedGemm(a.data(), m, k, false, packed_b, right.data(), n, epilogue, &pool);
      if (threads == 1) {
        one_thread_left = left;
        one_thread_made = made;
        one_thread_right = right;
        continue;
      }
      EXPECT_EQ(std::memcmp(left.data(), one_thread_left.data(), left.size() * sizeof(float)), 0)
          << m << "x" << n << "x" << k << ", W packed, threads " << threads;
      EXPECT_EQ(std::memcmp(made.data(), one_thread_made.data(), made.size() * sizeof(float)), 0)
          << m << "x" << n << "x" << k << ", W packed, B made row by row, threads " << threads;
      EXPECT_EQ(std::memcmp(right.data(), one_thread_right.data(), right.size() * sizeof(float)), 0)
          << m << "x" << n << "x" << k << ", B packed, threads " << threads;
    }
  }
}

TEST_F(PackedGemmTest, RightOperandIsScaledWhenPacked) {
  // Gemm folds alpha into its packed B: 2 * ([1 2] x [3 4]^T) = 22.
  const std::vector<float> a = {1, 2}, b = {3, 4};
  std::vector<float> out(1);
  ThreadPool pool(1);
  PackedGemm(a.data(), 1, 2, false, PackedColumns(b.data(), 2, 1, 1, false, 2.0f), out.data(), 1, {}, &pool);
  EXPECT_EQ(out[0], 22.0f);
}

TEST_F(PackedGemmTest, ReluKeepsNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Column 0 is wide-tile work, the last column goes through the narrow kernel: both keep NaN.
  for (int64_t n : {1, 49}) {
    std::vector<float> a = {nan, 1.0f}, b(2 * n, 1.0f), out(n);
    ThreadPool pool(1);
    PackedGemm(PackedRows(a.data(), 1, 2, 2), n, b.data(), n, out.data(), n,
               {.activation = {ActivationKind::kRelu}}, &pool);
    for (float v : out) EXPECT_TRUE(std::isnan(v));
  }
}

TEST_F(PackedGemmTest, EqualRowsOfAGiveBitIdenticalRowsOfC) {
  // Channels computed from equal weights must agree to the bit, whatever tile or block they fall in:
  // squeezenet's logits reach 1e10, where a last-bit difference between channels shows through softmax.
  // 17 rows leave a panel of one row (the matrix-vector kernel), 18 and 20 one of two and four (the
  // AVX-512 half-height tile, AVX2's pair and block), 21 one of five (a lone row after a block), 22 one of
  // six (a pair after a block); equal rows of A times a packed B (a batch of equal inputs) likewise.
  const int64_t n = 151, k = 700;
  const std::vector<float> row = RandomFloats(k, 5), b = RandomFloats(k * n, 6);
  for (int64_t m : {17, 18, 20, 21, 22}) {
    std::vector<float> a;
    for (int64_t i = 0; i < m; ++i) a.insert(a.end(), row.begin(), row.end());
    for (int threads : {1, 2}) {
      for (bool packed_left : {true, false}) {
        std::vector<float> out(m * n);
        ThreadPool pool(threads);
        if (packed_left) {
          PackedGemm(PackedRows(a.data(), m, k, k), n, b.data(), n, out.data(), n, {}, &pool);
        } else {
          PackedGemm(a.data(), m, k, false, PackedColumns(b.data(), k, n, n, false, 1.0f), out.data(), n, {}, &pool);
        }
        for (int64_t i = 1; i < m; ++i) {
          ASSERT_EQ(std::memcmp(&out[i * n], &out[0], n * sizeof(float)), 0)
              << "m " << m << ", row " << i << ", threads " << threads << ", packed left " << packed_left;
        }
      }
    }
  }
}

// AddressSanitizer aborts on a request past its limit instead of returning null (scripts/sanitize.sh
// leaves allocator_may_return_null off), so the failing allocation can only be asked for without it.
using testing::kUnderAddressSanitizer;

TEST(ThreadScratchTest, AnAllocationThatFailsThrowsAndKeepsTheBuffer) {
  if (kUnderAddressSanitizer) GTEST_SKIP() << "AddressSanitizer aborts on the failing allocation";
  float* small = ThreadScratch(ScratchSlot::kPackedBlock, 16);
  small[15] = 1.0f;
  EXPECT_THROW(ThreadScratch(ScratchSlot::kPackedBlock, int64_t{1} << 60), std::bad_alloc);
  float* again = ThreadScratch(ScratchSlot::kPackedBlock, 16);
  EXPECT_EQ(again, small);
  EXPECT_EQ(again[15], 1.0f);
}

TEST(IsaTest, NamesRoundTrip) {
  for (Isa isa : {Isa::kBaseline, Isa::kAvx2, Isa::kAvx512}) EXPECT_EQ(ParseIsa(IsaName(isa)), isa);
  EXPECT_EQ(ParseIsa("sse2"), std::nullopt);
}

TEST(IsaTest, EnvironmentLowersButNeverRaisesTheIsa) {
  const char* forced = std::getenv("ONNXSERVE_ISA");
  const std::optional<Isa> parsed = forced == nullptr ? std::nullopt : ParseIsa(forced);
  EXPECT_EQ(ActiveIsa(), parsed ? std::min(*parsed, DetectedIsa()) : DetectedIsa());
}

}  // namespace
}  // namespace onnxserve

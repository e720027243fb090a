// TfIdfVectorizer-9: n-grams with skips counted against a pool, the TF / IDF / TFIDF weightings, 1-D and
// batched 2-D inputs of int32, int64 and strings, and the attribute checks at load. Expected counts are
// worked out by hand from the spec's definition.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "runtime/core/tensor.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;
using Ints = std::vector<int64_t>;
using Strings = std::vector<std::string>;

// A node with the required attributes; tests override what they need.
OpTest Vectorizer(const std::string& mode, int64_t min_n, int64_t max_n, int64_t skip, const Ints& counts,
                  const Ints& indexes) {
  OpTest test("TfIdfVectorizer", 9);
  test.Attr("mode", mode)
      .Attr("min_gram_length", min_n)
      .Attr("max_gram_length", max_n)
      .Attr("max_skip_count", skip)
      .Attr("ngram_counts", counts)
      .Attr("ngram_indexes", indexes);
  return test;
}

absl::StatusOr<Tensor> RunOne(OpTest test, Tensor x) {
  test.Input("X", std::move(x)).Output("Y");
  auto out = test.Run();
  if (!out.ok()) return out.status();
  return (*out)[0];
}

Tensor Floats(Shape shape, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(shape), v); }
Tensor Int64s(const Ints& v) { return Tensor::FromVector<int64_t>({static_cast<int64_t>(v.size())}, v); }

void ExpectError(const absl::Status& status, const std::string& fragment) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find(fragment), std::string::npos) << status;
}

TEST(TfIdfVectorizerTest, TheSpecsBigramExampleMapsThroughNgramIndexes) {
  // pool [94, 17, 17, 36]: no 1-grams, 2-grams (94,17) -> column 1 and (17,36) -> column 0.
  const OpTest test = Vectorizer("TF", 2, 2, 0, {0, 0}, {1, 0}).Attr("pool_int64s", Ints{94, 17, 17, 36});
  auto y = RunOne(test, Int64s({94, 17, 36, 12, 28}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({2}, {1, 1}), *y));

  // Consecutive pairs (17,36) (36,94) (94,17) (17,17) (17,36).
  y = RunOne(test, Tensor::FromVector<int32_t>({6}, {17, 36, 94, 17, 17, 36}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({2}, {2, 1}), *y));
}

TEST(TfIdfVectorizerTest, SkipsReachFurtherApartItems) {
  // The spec's skip example: in [94, 17, 36, 12, 28], 2 skips pair 94 with 12 and 17 with 28.
  const Ints pool = {94, 12, 17, 28, 94, 17};
  auto y = RunOne(Vectorizer("TF", 2, 2, 2, {0, 0}, {0, 1, 2}).Attr("pool_int64s", pool),
                  Int64s({94, 17, 36, 12, 28}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({3}, {1, 1, 1}), *y));

  y = RunOne(Vectorizer("TF", 2, 2, 1, {0, 0}, {0, 1, 2}).Attr("pool_int64s", pool), Int64s({94, 17, 36, 12, 28}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({3}, {0, 0, 1}), *y));

  // (5,5) in [5,5,5]: positions (0,1) and (1,2) without skips, (0,2) too with one; a huge skip count is fine.
  const OpTest bigram = Vectorizer("TF", 2, 2, 0, {0, 1}, {0, 1}).Attr("pool_int64s", Ints{5, 5, 5});
  y = RunOne(bigram, Int64s({5, 5, 5}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({2}, {0, 2}), *y));  // the 1-gram 5 is below min_gram_length
  y = RunOne(OpTest(bigram).Attr("max_skip_count", int64_t{1} << 60), Int64s({5, 5, 5}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({2}, {0, 3}), *y));
}

TEST(TfIdfVectorizerTest, OneGramsCountOnceWhateverTheSkip) {
  auto y = RunOne(Vectorizer("TF", 1, 1, 3, {0}, {0, 1}).Attr("pool_int64s", Ints{5, 7}), Int64s({5, 5, 7, 9}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({2}, {2, 1}), *y));
}

TEST(TfIdfVectorizerTest, StringRowsUnderEachWeighting) {
  // 1-grams a -> 0, b -> 1; 2-gram (a,b) -> 2. Row 0 [a b a]: a 2, b 1, ab 1. Row 1 [c a b]: 1, 1, 1.
  const Strings pool = {"a", "b", "a", "b"};
  const Tensor x = Tensor::FromVector<std::string>({2, 3}, {"a", "b", "a", "c", "a", "b"});
  const std::vector<float> weights = {0.5f, 2, 10};

  auto y = RunOne(Vectorizer("TF", 1, 2, 0, {0, 2}, {0, 1, 2}).Attr("pool_strings", pool).Attr("weights", weights), x);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 3}, {2, 1, 1, 1, 1, 1}), *y));  // TF ignores weights

  y = RunOne(Vectorizer("TFIDF", 1, 2, 0, {0, 2}, {0, 1, 2}).Attr("pool_strings", pool).Attr("weights", weights), x);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 3}, {1, 2, 10, 0.5f, 2, 10}), *y));

  y = RunOne(Vectorizer("IDF", 1, 2, 0, {0, 2}, {0, 1, 2}).Attr("pool_strings", pool).Attr("weights", weights), x);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 3}, {0.5f, 2, 10, 0.5f, 2, 10}), *y));

  y = RunOne(Vectorizer("IDF", 1, 2, 0, {0, 2}, {0, 1, 2}).Attr("pool_strings", pool),
             Tensor::FromVector<std::string>({2, 2}, {"a", "a", "z", "b"}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 3}, {1, 0, 0, 0, 1, 0}), *y));  // no weights: 1 where present
}

TEST(TfIdfVectorizerTest, WeightsScaleOutputColumnsAsOnnxRuntimeDoes) {
  // 1 -> column 1, 2 -> column 0. In [1, 1, 2]: column 1 counts 2, column 0 counts 1; weights[j] scales
  // column j: [1 * 10, 2 * 100].
  auto y = RunOne(Vectorizer("TFIDF", 1, 1, 0, {0}, {1, 0}).Attr("pool_int64s", Ints{1, 2})
                      .Attr("weights", std::vector<float>{10, 100}),
                  Int64s({1, 1, 2}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({2}, {10, 200}), *y));
}

TEST(TfIdfVectorizerTest, OutputWidthIsTheLargestIndexPlusOne) {
  const OpTest test = Vectorizer("TF", 1, 1, 0, {0}, {0, 4}).Attr("pool_int64s", Ints{1, 2});
  auto y = RunOne(test, Int64s({2, 3}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({5}, {0, 0, 0, 0, 1}), *y));

  y = RunOne(test, Tensor::FromVector<int64_t>({0, 3}, {}));  // no rows
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({0, 5}, {}), *y));

  y = RunOne(test, Tensor::FromVector<int32_t>({2, 0}, {}));  // empty rows count nothing
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 5}, std::vector<float>(10, 0)), *y));
}

TEST(TfIdfVectorizerTest, InputMustFitThePool) {
  const OpTest ints = Vectorizer("TF", 1, 1, 0, {0}, {0}).Attr("pool_int64s", Ints{1});
  ExpectError(RunOne(ints, Tensor::FromVector<std::string>({1}, {"1"})).status(), "X must hold int32 or int64");
  ExpectError(RunOne(ints, Tensor::FromVector<int64_t>({1, 1, 1}, {1})).status(), "X must be [C] or [N, C]");
  const OpTest strings = Vectorizer("TF", 1, 1, 0, {0}, {0}).Attr("pool_strings", Strings{"1"});
  ExpectError(RunOne(strings, Int64s({1})).status(), "X must hold strings");
}

TEST(TfIdfVectorizerTest, AttributesAreCheckedAtLoad) {
  const Tensor x = Int64s({1});
  const auto error = [&](OpTest test) { return RunOne(std::move(test), x).status(); };
  const Ints pool = {1, 2, 3, 4};  // with counts {0, 2}: 1-grams 1, 2 and the 2-gram (3, 4)

  ExpectError(error(Vectorizer("BM25", 1, 1, 0, {0, 2}, {0, 1, 2}).Attr("pool_int64s", pool)),
              "mode \"BM25\" is not one of TF, IDF, TFIDF");
  ExpectError(error(Vectorizer("TF", 0, 1, 0, {0, 2}, {0, 1, 2}).Attr("pool_int64s", pool)),
              "need 1 <= min_gram_length <= max_gram_length");
  ExpectError(error(Vectorizer("TF", 2, 1, 0, {0, 2}, {0, 1, 2}).Attr("pool_int64s", pool)),
              "need 1 <= min_gram_length <= max_gram_length");
  ExpectError(error(Vectorizer("TF", 1, 3, 0, {0, 2}, {0, 1, 2}).Attr("pool_int64s", pool)),
              "max_gram_length 3 is longer than the 2-grams");
  ExpectError(error(Vectorizer("TF", 1, 1, -1, {0, 2}, {0, 1, 2}).Attr("pool_int64s", pool)),
              "max_skip_count -1 must be >= 0");
  ExpectError(error(Vectorizer("TF", 1, 1, 0, {2, 0}, {0, 1, 2}).Attr("pool_int64s", pool)),
              "ngram_counts [2, 0] must be non-decreasing starts within the 4 items of pool_int64s");
  ExpectError(error(Vectorizer("TF", 1, 1, 0, {0, 5}, {0, 1, 2}).Attr("pool_int64s", pool)),
              "ngram_counts [0, 5] must be non-decreasing");
  ExpectError(error(Vectorizer("TF", 1, 1, 0, {0, 1}, {0, 1, 2}).Attr("pool_int64s", pool)),
              "pool_int64s items 1..3 are not whole 2-grams");
  ExpectError(error(Vectorizer("TF", 1, 1, 0, {0, 2}, {0, 1}).Attr("pool_int64s", pool)),
              "ngram_indexes has 2 entries but pool_int64s holds 3 n-grams");
  ExpectError(error(Vectorizer("TF", 1, 1, 0, {0, 2}, {0, -1, 2}).Attr("pool_int64s", pool)),
              "ngram_indexes holds -1");
  ExpectError(error(Vectorizer("TF", 1, 1, 0, {0, 2}, {0, 1, 2})),
              "exactly one of pool_int64s and pool_strings must be set, found neither");
  ExpectError(error(Vectorizer("TF", 1, 1, 0, {0, 2}, {0, 1, 2}).Attr("pool_int64s", pool)
                        .Attr("pool_strings", Strings{"a", "b", "c", "d"})),
              "found both");
  ExpectError(error(Vectorizer("TF", 1, 1, 0, {0}, {}).Attr("pool_int64s", Ints{})), "pool_int64s is empty");
  ExpectError(error(Vectorizer("TF", 1, 2, 0, {0, 2}, {0, 1, 2}).Attr("pool_int64s", Ints{1, 1, 3, 4})),
              "pool_int64s repeats an earlier 1-gram at items 1..1");
  ExpectError(error(Vectorizer("TFIDF", 1, 1, 0, {0, 2}, {0, 1, 2}).Attr("pool_int64s", pool)
                        .Attr("weights", std::vector<float>{1, 2})),
              "weights has 2 values but ngram_indexes 3");
  ExpectError(error(Vectorizer("IDF", 1, 1, 0, {0, 2}, {0, 1, 5}).Attr("pool_int64s", pool)
                        .Attr("weights", std::vector<float>{1, 2, 3})),
              "weights has 3 values, one per output column, but ngram_indexes makes 6 columns");
}

}  // namespace
}  // namespace onnxserve

// The ai.onnx.ml map operators (runtime/ops/ml/maps.cc): ZipMap, CastMap, DictVectorizer, with expected
// values worked out by hand from the spec's descriptions.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

const std::string kMl = "ai.onnx.ml";

// A map from `keys` to one scalar tensor per value, as a MapProto decodes.
template <typename K, typename V>
Value MapOf(const std::vector<K>& keys, const std::vector<V>& values) {
  std::vector<Value> elements;
  for (const V& v : values) elements.push_back(Tensor::Scalar(v));
  return Value::Map(Tensor::FromVector<K>({static_cast<int64_t>(keys.size())}, keys), std::move(elements));
}

// The float held by element i of a map.
float MapFloat(const Value& map, size_t i) { return *map.elements().at(i).tensor()->data<float>(); }

TEST(ZipMapTest, StringLabelsMakeOneMapPerRow) {
  const Tensor x = Tensor::FromVector<float>({2, 3}, {0.1f, 0.2f, 0.7f, 0.5f, 0.25f, 0.25f});
  auto out = OpTest("ZipMap", 1, kMl)
                 .Input("x", x)
                 .Attr("classlabels_strings", std::vector<std::string>{"cat", "dog", "bird"})
                 .Output("z")
                 .RunValues();
  ASSERT_TRUE(out.ok()) << out.status();
  const Value& z = (*out)[0];
  ASSERT_TRUE(z.is_sequence());
  ASSERT_EQ(z.elements().size(), 2u);
  // Row 1: {"cat": 0.5, "dog": 0.25, "bird": 0.25}, keys in the attribute's order.
  const Value& row1 = z.elements()[1];
  ASSERT_TRUE(row1.is_map());
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({3}, {"cat", "dog", "bird"}), row1.keys()));
  EXPECT_EQ(MapFloat(row1, 0), 0.5f);
  EXPECT_EQ(MapFloat(row1, 1), 0.25f);
  EXPECT_EQ(MapFloat(row1, 2), 0.25f);
  EXPECT_EQ(MapFloat(z.elements()[0], 2), 0.7f);
}

TEST(ZipMapTest, IntLabelsAndAOneDimensionalInputAreOneMap) {
  auto out = OpTest("ZipMap", 1, kMl)
                 .Input("x", Tensor::FromVector<float>({2}, {0.75f, 0.25f}))
                 .Attr("classlabels_int64s", std::vector<int64_t>{10, 3})
                 .Output("z")
                 .RunValues();
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].elements().size(), 1u);
  const Value& map = (*out)[0].elements()[0];
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({2}, {10, 3}), map.keys()));
  EXPECT_EQ(MapFloat(map, 0), 0.75f);
  EXPECT_EQ(MapFloat(map, 1), 0.25f);
}

TEST(ZipMapTest, LabelsMustMatchTheColumnsAndBeOneKind) {
  const Tensor x = Tensor::FromVector<float>({1, 3}, {1, 2, 3});
  EXPECT_FALSE(OpTest("ZipMap", 1, kMl).Input("x", x).Attr("classlabels_int64s", std::vector<int64_t>{1, 2})
                   .Output("z").RunValues().ok());
  EXPECT_FALSE(OpTest("ZipMap", 1, kMl).Input("x", x).Output("z").RunValues().ok());
  EXPECT_FALSE(OpTest("ZipMap", 1, kMl).Input("x", x).Attr("classlabels_int64s", std::vector<int64_t>{1, 2, 3})
                   .Attr("classlabels_strings", std::vector<std::string>{"a", "b", "c"}).Output("z").RunValues().ok());
  EXPECT_FALSE(OpTest("ZipMap", 1, kMl).Input("x", x).Attr("classlabels_int64s", std::vector<int64_t>{1, 2, 1})
                   .Output("z").RunValues().ok());
}

TEST(ZipMapTest, EntriesPastTheSequenceLimitAreAnErrorNotAnAllocation) {
  // 2^23 + 1 rows of 2 columns: 2^24 + 2 map entries, one past kMaxSequenceLength and then some.
  const int64_t rows = (int64_t{1} << 23) + 1;
  auto out = OpTest("ZipMap", 1, kMl)
                 .Input("x", Tensor(DataType::kFloat, {rows, 2}))
                 .Attr("classlabels_int64s", std::vector<int64_t>{0, 1})
                 .Output("z")
                 .RunValues();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
}

TEST(CastMapTest, DenseOrdersValuesByAscendingKey) {
  // {5: 1.5, 1: -2, 3: 4} -> keys 1, 3, 5 -> [-2, 4, 1.5]
  auto out = OpTest("CastMap", 1, kMl).ValueInput("x", MapOf<int64_t, float>({5, 1, 3}, {1.5f, -2.0f, 4.0f}))
                 .Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 3}, {-2.0f, 4.0f, 1.5f}), (*out)[0]));
}

TEST(CastMapTest, SparsePlacesEachValueAtItsKey) {
  // max_map 5: keys 4 and 1 fill positions 4 and 1, the rest are 0; TO_INT64 truncates 7.9 to 7.
  auto out = OpTest("CastMap", 1, kMl).ValueInput("x", MapOf<int64_t, float>({4, 1}, {7.9f, -3.5f}))
                 .Attr("map_form", std::string("SPARSE")).Attr("max_map", int64_t{5})
                 .Attr("cast_to", std::string("TO_INT64")).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({1, 5}, {0, -3, 0, 0, 7}), (*out)[0]));
  auto outside = OpTest("CastMap", 1, kMl).ValueInput("x", MapOf<int64_t, float>({5}, {1.0f}))
                     .Attr("map_form", std::string("SPARSE")).Attr("max_map", int64_t{5}).Output("y").Run();
  EXPECT_FALSE(outside.ok());
}

TEST(CastMapTest, StringsParseToNumbersAndNumbersPrintToStrings) {
  auto parsed = OpTest("CastMap", 1, kMl).ValueInput("x", MapOf<int64_t, std::string>({2, 0}, {"2.5", "-1"}))
                    .Output("y").Run();
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 2}, {-1.0f, 2.5f}), (*parsed)[0]));
  auto printed = OpTest("CastMap", 1, kMl).ValueInput("x", MapOf<int64_t, float>({0, 1}, {0.25f, 3.0f}))
                     .Attr("cast_to", std::string("TO_STRING")).Output("y").Run();
  ASSERT_TRUE(printed.ok()) << printed.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({1, 2}, {"0.25", "3"}), (*printed)[0]));
  auto not_a_number = OpTest("CastMap", 1, kMl).ValueInput("x", MapOf<int64_t, std::string>({0}, {"abc"}))
                          .Output("y").Run();
  EXPECT_FALSE(not_a_number.ok());
  EXPECT_FALSE(OpTest("CastMap", 1, kMl).ValueInput("x", MapOf<int64_t, float>({0}, {1.0f}))
                   .Attr("cast_to", std::string("TO_DOUBLE")).Output("y").Run().ok());
}

TEST(DictVectorizerTest, TheSpecsExample) {
  // string_vocabulary ["a", "c", "b", "z"], {"a": 4, "c": 8} -> [4, 8, 0, 0]
  auto out = OpTest("DictVectorizer", 1, kMl)
                 .ValueInput("x", MapOf<std::string, float>({"c", "a"}, {8.0f, 4.0f}))
                 .Attr("string_vocabulary", std::vector<std::string>{"a", "c", "b", "z"})
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 4}, {4, 8, 0, 0}), (*out)[0]));
}

TEST(DictVectorizerTest, IntKeysKeepTheValueTypeAndUnknownKeysAreDropped) {
  // int64_vocabulary [7, 2, 9], {2: 0.5, 9: -1.25, 100: 3} -> [0, 0.5, -1.25] in double; 100 is not in it.
  auto out = OpTest("DictVectorizer", 1, kMl)
                 .ValueInput("x", MapOf<int64_t, double>({2, 9, 100}, {0.5, -1.25, 3.0}))
                 .Attr("int64_vocabulary", std::vector<int64_t>{7, 2, 9})
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<double>({1, 3}, {0, 0.5, -1.25}), (*out)[0]));
  auto strings = OpTest("DictVectorizer", 1, kMl)
                     .ValueInput("x", MapOf<int64_t, std::string>({9}, {"nine"}))
                     .Attr("int64_vocabulary", std::vector<int64_t>{7, 9})
                     .Output("y")
                     .Run();
  ASSERT_TRUE(strings.ok()) << strings.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({1, 2}, {"", "nine"}), (*strings)[0]));
}

TEST(DictVectorizerTest, ARepeatedVocabularyEntryFillsEachOfItsPositions) {
  // int64_vocabulary [5, 6, 5], {5: 2, 6: -1} -> [2, -1, 2]
  auto out = OpTest("DictVectorizer", 1, kMl)
                 .ValueInput("x", MapOf<int64_t, float>({5, 6}, {2.0f, -1.0f}))
                 .Attr("int64_vocabulary", std::vector<int64_t>{5, 6, 5})
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 3}, {2, -1, 2}), (*out)[0]));
}

// A vocabulary that repeats a key copies its value to each position: a 4 KiB string value under a key the
// model's vocabulary lists 1024 times is 4 MiB of characters, past a 1 MiB limit (Y's byte size counts only
// its string objects); listed 200 times, 800 KiB, it fits.
TEST(DictVectorizerTest, AStringValueCopiedToManyPositionsMustFitTheLimits) {
  const auto run = [](size_t repeats) {
    return OpTest("DictVectorizer", 1, kMl)
        .ValueInput("x", MapOf<int64_t, std::string>({5}, {std::string(4096, 'x')}))
        .Attr("int64_vocabulary", std::vector<int64_t>(repeats, 5))
        .Output("y")
        .Run()
        .status();
  };
  testing::ScopedSizeLimits limits(1 << 20);
  EXPECT_EQ(run(1024).code(), absl::StatusCode::kResourceExhausted) << run(1024);
  EXPECT_TRUE(run(200).ok()) << run(200);
}

TEST(DictVectorizerTest, KeysMustBeOfTheVocabularysType) {
  auto out = OpTest("DictVectorizer", 1, kMl)
                 .ValueInput("x", MapOf<int64_t, float>({1}, {1.0f}))
                 .Attr("string_vocabulary", std::vector<std::string>{"1"})
                 .Output("y")
                 .Run();
  EXPECT_FALSE(out.ok());
  EXPECT_FALSE(OpTest("DictVectorizer", 1, kMl).ValueInput("x", MapOf<int64_t, float>({1}, {1.0f})).Output("y")
                   .Run().ok());  // no vocabulary
}

}  // namespace
}  // namespace onnxserve

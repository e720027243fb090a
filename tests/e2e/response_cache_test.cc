// The response cache without a server: LRU eviction by bytes, entries larger than the cache, hash collisions
// (a hit compares whole keys), concurrent use, and what a request's key tells apart.
#include "server/response_cache.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/repository.h"

namespace onnxserve::server {
namespace {

CachedAnswer AnswerWith(const std::string& raw) { return {CachedOutput{"y", "UINT8", {int64_t(raw.size())}, raw}}; }

// The bytes an entry of `key` holding AnswerWith(raw) is charged.
size_t Cost(const std::string& key, const std::string& raw) {
  return *ResponseCache::EntryBytes(key, AnswerWith(raw));
}

std::string RawOf(const std::shared_ptr<const CachedAnswer>& answer) {
  return answer == nullptr ? "<miss>" : answer->at(0).raw;
}

TEST(ResponseCacheTest, AStoredAnswerIsFoundUnderItsKeyOnly) {
  ResponseCache cache(1 << 20);
  ASSERT_TRUE(cache.Insert("a", AnswerWith("answer of a")));
  EXPECT_EQ(RawOf(cache.Lookup("a")), "answer of a");
  EXPECT_EQ(cache.Lookup("b"), nullptr);
  EXPECT_EQ(cache.Lookup("a "), nullptr);
  EXPECT_EQ(cache.usage().entries, 1u);
  EXPECT_EQ(cache.usage().bytes, Cost("a", "answer of a"));
}

TEST(ResponseCacheTest, TheLeastRecentlyUsedEntriesGoFirstWhenBytesRunOut) {
  const std::string raw(100, 'x');
  // Room for exactly three entries of this size.
  ResponseCache cache(3 * Cost("k1", raw));
  ASSERT_TRUE(cache.Insert("k1", AnswerWith(raw)));
  ASSERT_TRUE(cache.Insert("k2", AnswerWith(raw)));
  ASSERT_TRUE(cache.Insert("k3", AnswerWith(raw)));
  ASSERT_NE(cache.Lookup("k1"), nullptr);  // k1 is now the most recently used, k2 the least
  ASSERT_TRUE(cache.Insert("k4", AnswerWith(raw)));
  EXPECT_EQ(cache.Lookup("k2"), nullptr);
  EXPECT_NE(cache.Lookup("k1"), nullptr);
  EXPECT_NE(cache.Lookup("k3"), nullptr);
  EXPECT_NE(cache.Lookup("k4"), nullptr);
  EXPECT_EQ(cache.usage().entries, 3u);
  EXPECT_LE(cache.usage().bytes, cache.capacity());

  // One entry the size of two evicts the two least recently used.
  ASSERT_TRUE(cache.Insert("k5", AnswerWith(std::string(100 + Cost("k1", raw), 'y'))));
  EXPECT_EQ(cache.usage().entries, 2u);
  EXPECT_EQ(cache.Lookup("k1"), nullptr);
  EXPECT_EQ(cache.Lookup("k3"), nullptr);
  EXPECT_NE(cache.Lookup("k4"), nullptr);
  EXPECT_LE(cache.usage().bytes, cache.capacity());
}

TEST(ResponseCacheTest, AnEntryLargerThanTheCacheIsNotStoredAndEvictsNothing) {
  const std::string raw(100, 'x');
  ResponseCache cache(2 * Cost("k1", raw));
  ASSERT_TRUE(cache.Insert("k1", AnswerWith(raw)));
  EXPECT_FALSE(cache.Insert("big", AnswerWith(std::string(cache.capacity(), 'b'))));
  EXPECT_EQ(cache.Lookup("big"), nullptr);
  EXPECT_NE(cache.Lookup("k1"), nullptr);
  EXPECT_EQ(cache.usage().entries, 1u);
}

TEST(ResponseCacheTest, AnEntryIsChargedForItsKeyAndEveryPartOfItsAnswer) {
  const size_t empty = *ResponseCache::EntryBytes("", {});
  EXPECT_EQ(*ResponseCache::EntryBytes(std::string(1000, 'k'), {}), empty + 1000);
  const CachedAnswer answer = {CachedOutput{"name", "FP32", {2, 3}, std::string(24, '\0')}};
  EXPECT_GE(*ResponseCache::EntryBytes("", answer), empty + 4 + 4 + 2 * sizeof(int64_t) + 24);
}

uint64_t SameHashForEveryKey(std::string_view) { return 42; }

TEST(ResponseCacheTest, KeysWhoseHashesCollideNeverGetEachOthersAnswer) {
  ResponseCache cache(1 << 20, SameHashForEveryKey);
  ASSERT_TRUE(cache.Insert("request A", AnswerWith("secret of A")));
  EXPECT_EQ(cache.Lookup("request B"), nullptr);
  ASSERT_TRUE(cache.Insert("request B", AnswerWith("secret of B")));
  EXPECT_EQ(RawOf(cache.Lookup("request A")), "secret of A");
  EXPECT_EQ(RawOf(cache.Lookup("request B")), "secret of B");
  EXPECT_EQ(cache.usage().entries, 2u);
}

TEST(ResponseCacheTest, EvictingOneOfCollidingEntriesKeepsTheOther) {
  const std::string raw(10, 'x');
  ResponseCache cache(2 * Cost("k1", raw), SameHashForEveryKey);
  ASSERT_TRUE(cache.Insert("k1", AnswerWith("1111111111")));
  ASSERT_TRUE(cache.Insert("k2", AnswerWith("2222222222")));
  ASSERT_TRUE(cache.Insert("k3", AnswerWith("3333333333")));  // evicts k1
  EXPECT_EQ(cache.Lookup("k1"), nullptr);
  EXPECT_EQ(RawOf(cache.Lookup("k2")), "2222222222");
  EXPECT_EQ(RawOf(cache.Lookup("k3")), "3333333333");
}

TEST(ResponseCacheTest, ASecondInsertOfAKeyKeepsTheFirstAnswer) {
  ResponseCache cache(1 << 20);
  ASSERT_TRUE(cache.Insert("k", AnswerWith("first")));
  ASSERT_TRUE(cache.Insert("k", AnswerWith("second")));
  EXPECT_EQ(RawOf(cache.Lookup("k")), "first");
  EXPECT_EQ(cache.usage().entries, 1u);
}

// Threads insert and look up overlapping keys in a cache too small for all of them; every answer found must
// be the one stored under its key, and the byte bound must hold at the end. (Run under TSan/ASan by
// scripts/sanitize.sh for data races.)
TEST(ResponseCacheTest, ConcurrentUseReturnsOnlyTheAnswerOfEachKey) {
  const std::string probe(64, 'p');
  ResponseCache cache(20 * Cost("key 000", probe));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, &wrong, t] {
      for (int i = 0; i < 2000; ++i) {
        const int k = (i * 7 + t * 13) % 50;
        const std::string key = "key " + std::to_string(k);
        const std::string raw = "value of " + std::to_string(k);
        if (auto found = cache.Lookup(key); found != nullptr) {
          if (found->at(0).raw != raw) ++wrong;
        } else {
          cache.Insert(key, AnswerWith(raw));
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(cache.usage().bytes, cache.capacity());
  EXPECT_GT(cache.usage().entries, 0u);
}

// A version with inputs "a" (FP32) and "b" (INT64), to key requests of.
ModelVersion TwoInputVersion(uint64_t load_id) {
  ModelVersion mv;
  mv.name = "m";
  mv.version_str = "1";
  mv.load_id = load_id;
  mv.inputs = {TensorSpec{"a", DataType::kFloat, {-1}}, TensorSpec{"b", DataType::kInt64, {-1}}};
  return mv;
}

std::vector<Tensor> Inputs(std::vector<float> a, std::vector<int64_t> b) {
  return {Tensor::FromVector<float>({int64_t(a.size())}, a), Tensor::FromVector<int64_t>({int64_t(b.size())}, b)};
}

TEST(CachedRequestKeyTest, EqualRequestsHaveEqualKeys) {
  const ModelVersion mv = TwoInputVersion(1);
  inference::ModelInferRequest wire;
  wire.set_id("ids are not part of the key");
  inference::ModelInferRequest other;
  other.set_id("another id");
  EXPECT_EQ(CachedRequest::KeyOf(mv, Inputs({1, 2}, {3}), wire), CachedRequest::KeyOf(mv, Inputs({1, 2}, {3}), other));
}

TEST(CachedRequestKeyTest, EverythingThatCanChangeTheAnswerChangesTheKey) {
  const ModelVersion mv = TwoInputVersion(1);
  const inference::ModelInferRequest all_outputs;
  const std::string base = CachedRequest::KeyOf(mv, Inputs({1, 2}, {3}), all_outputs);
  // Input bytes, shapes, and bytes moving from one input to the other.
  EXPECT_NE(base, CachedRequest::KeyOf(mv, Inputs({1, 2.5}, {3}), all_outputs));
  EXPECT_NE(base, CachedRequest::KeyOf(mv, Inputs({1, 2}, {3, 0}), all_outputs));
  EXPECT_NE(base, CachedRequest::KeyOf(mv, Inputs({1}, {3}), all_outputs));
  // Same bytes, another shape.
  std::vector<Tensor> reshaped = Inputs({1, 2}, {3});
  reshaped[0] = Tensor::FromVector<float>({1, 2}, {1, 2});
  EXPECT_NE(base, CachedRequest::KeyOf(mv, reshaped, all_outputs));
  // Same bytes, another type.
  std::vector<Tensor> retyped = Inputs({1, 2}, {3});
  retyped[0] = Tensor::FromVector<int32_t>({2}, {0x3f800000, 0x40000000});  // the bit patterns of 1.f, 2.f
  EXPECT_NE(base, CachedRequest::KeyOf(mv, retyped, all_outputs));
  // Another load of the same version number.
  EXPECT_NE(base, CachedRequest::KeyOf(TwoInputVersion(2), Inputs({1, 2}, {3}), all_outputs));
  // Requested outputs and their parameters.
  inference::ModelInferRequest one_output;
  one_output.add_outputs()->set_name("y");
  const std::string y = CachedRequest::KeyOf(mv, Inputs({1, 2}, {3}), one_output);
  EXPECT_NE(base, y);
  inference::ModelInferRequest classified = one_output;
  (*classified.mutable_outputs(0)->mutable_parameters())["classification"].set_int64_param(3);
  EXPECT_NE(y, CachedRequest::KeyOf(mv, Inputs({1, 2}, {3}), classified));
}

TEST(CachedRequestKeyTest, StringElementsCannotRunIntoEachOther) {
  ModelVersion mv;
  mv.name = "m";
  mv.version_str = "1";
  mv.inputs = {TensorSpec{"s", DataType::kString, {-1}}};
  const inference::ModelInferRequest wire;
  auto key = [&](std::vector<std::string> elements) {
    return CachedRequest::KeyOf(mv, {Tensor::FromVector<std::string>({int64_t(elements.size())}, elements)}, wire);
  };
  EXPECT_NE(key({"ab", "c"}), key({"a", "bc"}));
  EXPECT_EQ(key({"ab", "c"}), key({"ab", "c"}));
}

}  // namespace
}  // namespace onnxserve::server

// The response cache without a server: LRU eviction by bytes, entries larger than the cache, hash collisions
// (a hit compares whole keys), concurrent use, what a request's key tells apart, and the CachingServable
// decorator over a servable that counts its runs.
#include "server/serving/response_cache.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/observability/version_stats.h"
#include "server/serving/repository.h"

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

TEST(CachingServableKeyTest, EqualInputsHaveEqualKeys) {
  const ModelVersion mv = TwoInputVersion(1);
  EXPECT_EQ(CachingServable::KeyOf(mv, Inputs({1, 2}, {3})), CachingServable::KeyOf(mv, Inputs({1, 2}, {3})));
}

TEST(CachingServableKeyTest, EverythingThatCanChangeTheAnswerChangesTheKey) {
  const ModelVersion mv = TwoInputVersion(1);
  const std::string base = CachingServable::KeyOf(mv, Inputs({1, 2}, {3}));
  // Input bytes, shapes, and bytes moving from one input to the other.
  EXPECT_NE(base, CachingServable::KeyOf(mv, Inputs({1, 2.5}, {3})));
  EXPECT_NE(base, CachingServable::KeyOf(mv, Inputs({1, 2}, {3, 0})));
  EXPECT_NE(base, CachingServable::KeyOf(mv, Inputs({1}, {3})));
  // Same bytes, another shape.
  std::vector<Tensor> reshaped = Inputs({1, 2}, {3});
  reshaped[0] = Tensor::FromVector<float>({1, 2}, {1, 2});
  EXPECT_NE(base, CachingServable::KeyOf(mv, reshaped));
  // Same bytes, another type.
  std::vector<Tensor> retyped = Inputs({1, 2}, {3});
  retyped[0] = Tensor::FromVector<int32_t>({2}, {0x3f800000, 0x40000000});  // the bit patterns of 1.f, 2.f
  EXPECT_NE(base, CachingServable::KeyOf(mv, retyped));
  // Another load of the same version number.
  EXPECT_NE(base, CachingServable::KeyOf(TwoInputVersion(2), Inputs({1, 2}, {3})));
}

TEST(CachingServableKeyTest, StringElementsCannotRunIntoEachOther) {
  ModelVersion mv;
  mv.name = "m";
  mv.version_str = "1";
  mv.inputs = {TensorSpec{"s", DataType::kString, {-1}}};
  auto key = [&](std::vector<std::string> elements) {
    return CachingServable::KeyOf(mv, {Tensor::FromVector<std::string>({int64_t(elements.size())}, elements)});
  };
  EXPECT_NE(key({"ab", "c"}), key({"a", "bc"}));
  EXPECT_EQ(key({"ab", "c"}), key({"ab", "c"}));
}

// Answers a + 1 (as floats) and b, counting its runs; fails while `fail` is set.
class CountingServable final : public Servable {
 public:
  void Run(ServableRequest request, ServableDone done) override {
    ++runs;
    if (fail) return done({.outputs = absl::UnavailableError("down"), .timing = {}});
    std::vector<float> plus_one;
    for (float v : request.inputs[0].values<float>()) plus_one.push_back(v + 1);
    done({.outputs = std::vector<Tensor>{Tensor::FromVector<float>({int64_t(plus_one.size())}, plus_one),
                                         request.inputs[1]},
          .timing = {}});
  }
  int runs = 0;
  bool fail = false;
};

ModelVersion CachedVersion() {
  ModelVersion mv = TwoInputVersion(7);
  mv.outputs = {TensorSpec{"y", DataType::kFloat, {-1}}, TensorSpec{"z", DataType::kInt64, {-1}}};
  mv.stats = std::make_unique<VersionStats>("m", "1");
  return mv;
}

ServableResponse RunOn(Servable& servable, std::vector<Tensor> inputs) {
  ServableRequest request;
  request.inputs = std::move(inputs);
  return RunAndWait(servable, std::move(request));
}

TEST(CachingServableTest, AnEqualRequestIsAnsweredFromTheCacheWithEveryOutput) {
  const ModelVersion mv = CachedVersion();
  ResponseCache cache(1 << 20);
  auto inner = std::make_shared<CountingServable>();
  CachingServable servable(cache, mv, inner, nullptr);
  const ServableResponse first = RunOn(servable, Inputs({1, 2}, {3}));
  const ServableResponse second = RunOn(servable, Inputs({1, 2}, {3}));
  EXPECT_EQ(inner->runs, 1);
  ASSERT_TRUE(first.outputs.ok() && second.outputs.ok()) << second.outputs.status();
  ASSERT_EQ(second.outputs->size(), 2u);
  EXPECT_EQ((*second.outputs)[0].values<float>(), (std::vector<float>{2, 3}));
  EXPECT_EQ((*second.outputs)[1].values<int64_t>(), (std::vector<int64_t>{3}));
  EXPECT_EQ((*second.outputs)[1].dtype(), DataType::kInt64);
  const inference::ModelStatistics stats = mv.stats->Snapshot();
  EXPECT_EQ(stats.inference_stats().cache_hit().count(), 1u);
  EXPECT_EQ(stats.inference_stats().cache_miss().count(), 1u);
  // Other inputs are another request.
  EXPECT_EQ(RunOn(servable, Inputs({1, 2}, {4})).outputs->at(1).values<int64_t>(), (std::vector<int64_t>{4}));
  EXPECT_EQ(inner->runs, 2);
}

TEST(CachingServableTest, AFailedAnswerIsNotStored) {
  const ModelVersion mv = CachedVersion();
  ResponseCache cache(1 << 20);
  auto inner = std::make_shared<CountingServable>();
  CachingServable servable(cache, mv, inner, nullptr);
  inner->fail = true;
  EXPECT_FALSE(RunOn(servable, Inputs({1}, {1})).outputs.ok());
  inner->fail = false;
  EXPECT_TRUE(RunOn(servable, Inputs({1}, {1})).outputs.ok());
  EXPECT_EQ(inner->runs, 2);
  EXPECT_EQ(cache.usage().entries, 1u);
}

TEST(ResponseCacheTest, EraseWithPrefixDropsOnlyThoseEntries) {
  ResponseCache cache(1 << 20);
  ASSERT_TRUE(cache.Insert("load1:a", AnswerWith("1a")));
  ASSERT_TRUE(cache.Insert("load1:b", AnswerWith("1b")));
  ASSERT_TRUE(cache.Insert("load2:a", AnswerWith("2a")));
  cache.EraseWithPrefix("load1:");
  EXPECT_EQ(RawOf(cache.Lookup("load1:a")), "<miss>");
  EXPECT_EQ(RawOf(cache.Lookup("load1:b")), "<miss>");
  EXPECT_EQ(RawOf(cache.Lookup("load2:a")), "2a");
  EXPECT_EQ(cache.usage().entries, 1u);
  EXPECT_EQ(cache.usage().bytes, Cost("load2:a", "2a"));
}

// An unloaded or replaced version's answers can never be hit again: they leave with its servable instead
// of crowding out the live versions' until evicted.
TEST(CachingServableTest, AVersionsEntriesLeaveWithItsServable) {
  const ModelVersion mv = CachedVersion();
  ModelVersion other = CachedVersion();
  other.load_id = 8;
  ResponseCache cache(1 << 20);
  auto inner = std::make_shared<CountingServable>();
  CachingServable staying(cache, other, inner, nullptr);
  ASSERT_TRUE(RunOn(staying, Inputs({1}, {1})).outputs.ok());
  {
    CachingServable going(cache, mv, inner, nullptr);
    ASSERT_TRUE(RunOn(going, Inputs({1}, {1})).outputs.ok());
    ASSERT_TRUE(RunOn(going, Inputs({2}, {2})).outputs.ok());
    EXPECT_EQ(cache.usage().entries, 3u);
  }
  EXPECT_EQ(cache.usage().entries, 1u);
  EXPECT_EQ(inner->runs, 3);
  ASSERT_TRUE(RunOn(staying, Inputs({1}, {1})).outputs.ok());
  EXPECT_EQ(inner->runs, 3);  // the staying version's answer is still cached
}

}  // namespace
}  // namespace onnxserve::server

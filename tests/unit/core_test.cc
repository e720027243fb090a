// Core types: half-precision conversions, checked sizes, tensor storage and the thread pool.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <new>
#include <stdexcept>
#include <thread>

#include "gtest/gtest.h"
#include "runtime/core/allocator.h"
#include "runtime/core/checked_size.h"
#include "runtime/core/tensor.h"
#include "runtime/core/thread_pool.h"

namespace onnxserve {
namespace {

TEST(Float16Test, RoundTripsExactValuesAndRoundsToNearestEven) {
  for (float v : {0.f, -0.f, 1.f, -2.5f, 65504.f, 6.103515625e-05f /* smallest normal */,
                  5.960464477539063e-08f /* smallest subnormal */}) {
    EXPECT_EQ(static_cast<float>(Float16(v)), v) << v;
  }
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties go to the even mantissa (1).
  EXPECT_EQ(static_cast<float>(Float16(1.f + std::ldexp(1.f, -11))), 1.f);
  EXPECT_EQ(Float16(1e6f).bits, 0x7c00);  // overflow to +inf
  EXPECT_TRUE(std::isnan(static_cast<float>(Float16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(BFloat16Test, KeepsTheHighHalfRoundedToNearestEven) {
  EXPECT_EQ(BFloat16(1.f).bits, 0x3f80);
  EXPECT_EQ(static_cast<float>(BFloat16(-3.f)), -3.f);
  // 1 + 2^-8 is halfway between bfloat16 neighbours 1 and 1 + 2^-7: rounds to even (1).
  EXPECT_EQ(static_cast<float>(BFloat16(1.f + std::ldexp(1.f, -8))), 1.f);
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(TensorTest, StorageIsAlignedAndSharedByCopies) {
  Tensor t(DataType::kFloat, {3, 5});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % kTensorAlignment, 0u);
  EXPECT_EQ(t.NumElements(), 15);
  EXPECT_EQ(t.ByteSize(), 60u);
  Tensor view = t.Reshaped({15});
  EXPECT_EQ(view.raw_data(), t.raw_data());
  Tensor copy = t.Clone();
  EXPECT_NE(copy.raw_data(), t.raw_data());
}

TEST(TensorTest, ZeroElementTensorsHaveValidStorage) {
  Tensor t(DataType::kInt64, {0, 4});
  EXPECT_EQ(t.NumElements(), 0);
  EXPECT_NE(t.raw_data(), nullptr);
}

TEST(TensorTest, StringTensorsOwnTheirElements) {
  Tensor t(DataType::kString, {2});
  t.data<std::string>()[1] = "hello";
  Tensor copy = t.Clone();
  t.data<std::string>()[1] = "changed";
  EXPECT_EQ(copy.data<std::string>()[1], "hello");
  EXPECT_EQ(copy.data<std::string>()[0], "");
}

// Where a buffer of `bytes` was, now back in the cache.
void* ReleasedBuffer(size_t bytes) { return AllocateBuffer(bytes).get(); }

// Each test uses sizes no other test of this binary does, so the cache holds no other buffer that fits.
TEST(AllocatorTest, ReleasedBuffersAreReusedBySize) {
  void* released = ReleasedBuffer(4096 * 3);
  EXPECT_EQ(AllocateBuffer(4096 * 3).get(), released);
}

TEST(AllocatorTest, ARequestALittleSmallerTakesTheBufferReleasedLast) {
  void* released = ReleasedBuffer(4096 * 50);
  EXPECT_EQ(AllocateBuffer(4096 * 40).get(), released);
}

TEST(AllocatorTest, OfTheBuffersThatFitTheOneReleasedLastGoesFirst) {
  auto exact = AllocateBuffer(4096 * 60);
  auto larger = AllocateBuffer(4096 * 61);
  void* exact_data = exact.get();
  void* larger_data = larger.get();
  exact.reset();
  larger.reset();
  auto first = AllocateBuffer(4096 * 60);
  auto second = AllocateBuffer(4096 * 60);
  EXPECT_EQ(first.get(), larger_data);
  EXPECT_EQ(second.get(), exact_data);
}

TEST(AllocatorTest, ABufferMoreThanHalfAgainTheRequestIsNotTaken) {
  void* released = ReleasedBuffer(4096 * 200);
  auto small = AllocateBuffer(4096 * 100);
  EXPECT_NE(small.get(), released);
  auto fits = AllocateBuffer(4096 * 200);
  EXPECT_EQ(fits.get(), released);
}

TEST(ThreadPoolTest, CoversTheRangeExactlyOnceFromManyCallers) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(1000);
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&, c] {
      pool.ParallelFor(250, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[c * 250 + i]++;
      });
    });
  }
  for (auto& t : callers) t.join();
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

constexpr int64_t k2Pow61 = int64_t{1} << 61;
constexpr int64_t k2Pow62 = int64_t{1} << 62;

TEST(CheckedSizeTest, ElementCountRejectsNegativeDimsAndCountsPastTheLimit) {
  EXPECT_EQ(*CheckedElementCount({}), 1);
  EXPECT_EQ(*CheckedElementCount({2, 3, 4}), 24);
  EXPECT_EQ(*CheckedElementCount({0, 5}), 0);
  EXPECT_EQ(CheckedElementCount({2, -1}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckedElementCount({1, k2Pow62}).status().code(), absl::StatusCode::kResourceExhausted);
  // (2^62 + 1) * 4 wraps around to 4 in int64: the count Reshape compared against 4 input floats.
  EXPECT_EQ(CheckedElementCount({k2Pow62 + 1, 4}).status().code(), absl::StatusCode::kResourceExhausted);
  // A zero dim does not make the other dims harmless (their strides would overflow).
  EXPECT_EQ(CheckedElementCount({0, k2Pow62, k2Pow62}).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(*CheckedElementCount({10, 10}, 100), 100);
  EXPECT_EQ(CheckedElementCount({10, 11}, 100).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(CheckedSizeTest, ByteSizeChecksTheElementSizeProductAndTheByteLimit) {
  EXPECT_EQ(*CheckedByteSize(DataType::kFloat, {3, 5}), 60);
  // 2^62 floats are 2^64 bytes, which wraps to 0; 2^61 int64s likewise.
  EXPECT_EQ(CheckedByteSize(DataType::kFloat, {1, k2Pow62}).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CheckedByteSize(DataType::kInt64, {1, k2Pow61}).status().code(), absl::StatusCode::kResourceExhausted);
  const SizeLimits small{.max_elements = 1000, .max_bytes = 100};
  EXPECT_EQ(*CheckedByteSize(DataType::kFloat, {25}, small), 100);
  EXPECT_EQ(CheckedByteSize(DataType::kFloat, {26}, small).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CheckedByteSize(DataType::kString, {1000}, small).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(CheckedSizeTest, DimFromDoubleRejectsWhatCannotBeConverted) {
  EXPECT_EQ(*CheckedDimFromDouble(2.7), 2);
  EXPECT_EQ(CheckedDimFromDouble(1e30).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CheckedDimFromDouble(std::numeric_limits<double>::infinity()).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CheckedDimFromDouble(std::nan("")).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckedDimFromDouble(-1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckedMul(k2Pow62, 4).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(*CheckedMul(-3, 4), -12);
}

TEST(CheckedSizeTest, AddReportsOverflowInBothDirections) {
  EXPECT_EQ(*CheckedAdd(k2Pow62, k2Pow62 - 1), INT64_MAX);
  EXPECT_EQ(CheckedAdd(k2Pow62, k2Pow62).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CheckedAdd(INT64_MIN, -1).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(*CheckedAdd(-3, 4), 1);
}

TEST(CheckedSizeTest, LimitsAreConfigurableAndValidated) {
  const SizeLimits defaults = GetSizeLimits();
  EXPECT_EQ(defaults.max_elements, int64_t{1} << 32);
  EXPECT_EQ(SetSizeLimits({.max_elements = 0, .max_bytes = 1}).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(SetSizeLimits({.max_elements = 16, .max_bytes = 1 << 20}).ok());
  EXPECT_EQ(Tensor::Create(DataType::kFloat, {4, 5}).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(Tensor::Create(DataType::kFloat, {4, 4}).ok());
  ASSERT_TRUE(SetSizeLimits(defaults).ok());
}

TEST(TensorTest, ShapesPastTheLimitsAreErrorsNotWrappedSizes) {
  EXPECT_EQ(Tensor::Create(DataType::kFloat, {1, k2Pow62}).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(Tensor::Create(DataType::kInt64, {1, k2Pow61}).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(Tensor::Create(DataType::kFloat, {-1}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THROW(Tensor(DataType::kFloat, {1, k2Pow62}), std::length_error);
  EXPECT_THROW(Tensor(DataType::kFloat, {-1}), std::invalid_argument);
  // A view with more elements than the storage would read past it.
  const Tensor four(DataType::kFloat, {4});
  EXPECT_THROW(four.Reshaped({k2Pow62 + 1, 4}), std::length_error);
  EXPECT_THROW(four.Reshaped({5}), std::invalid_argument);
  EXPECT_EQ(four.Reshaped({2, 2}).NumElements(), 4);
}

TEST(TensorTest, GetAsInt64SaturatesValuesOutsideInt64) {
  EXPECT_EQ(Tensor::Scalar(1e30f).GetAsInt64(0), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Tensor::Scalar(-1e30).GetAsInt64(0), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(Tensor::Scalar(std::numeric_limits<float>::quiet_NaN()).GetAsInt64(0), 0);
  EXPECT_EQ(Tensor::Scalar(-2.5f).GetAsInt64(0), -2);
}

TEST(ThreadPoolTest, AnExceptionInAWorkerIsRethrownToTheCallerAfterAllChunks) {
  ThreadPool pool(4);
  std::atomic<int64_t> covered{0};
  EXPECT_THROW(pool.ParallelFor(1000, 1, [&](int64_t b, int64_t e) {
    covered += e - b;
    if (b > 0) throw std::bad_alloc();
  }), std::bad_alloc);
  EXPECT_EQ(covered.load(), 1000);  // every chunk ran before ParallelFor returned
  // The pool still works afterwards.
  std::atomic<int64_t> sum{0};
  pool.ParallelFor(100, 1, [&](int64_t b, int64_t e) { sum += e - b; });
  EXPECT_EQ(sum.load(), 100);
}

// Layers split alike find their rows in the cache of the thread that wrote them only if chunk 0 always runs
// on the caller (claimed by whoever came first, a spinning worker often took it).
TEST(ThreadPoolTest, TheFirstChunkAlwaysRunsOnTheCaller) {
  ThreadPool pool(4);
  const std::thread::id caller = std::this_thread::get_id();
  int elsewhere = 0;
  for (int round = 0; round < 500; ++round) {
    std::atomic<bool> first_on_caller{false};
    pool.ParallelFor(4, 1, [&](int64_t b, int64_t) {
      if (b == 0) first_on_caller = std::this_thread::get_id() == caller;
    });
    elsewhere += first_on_caller.load() ? 0 : 1;
  }
  EXPECT_EQ(elsewhere, 0) << "of 500 calls";
}

TEST(ThreadPoolTest, ACallerThatStopsPollingIsWokenByTheLastChunk) {
  // Both chunks start together, so a worker runs one; it then outlasts the caller's 100 us of polling, so
  // the caller sleeps and only the worker finishing can wake it. A lost wake-up hangs here.
  ThreadPool pool(2);
  for (int round = 0; round < 3; ++round) {
    std::atomic<int> started{0};
    std::atomic<int64_t> covered{0};
    const std::thread::id caller = std::this_thread::get_id();
    pool.ParallelFor(2, 1, [&](int64_t b, int64_t e) {
      ++started;
      while (started.load() < 2) std::this_thread::yield();
      if (std::this_thread::get_id() != caller) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      covered += e - b;
    });
    EXPECT_EQ(covered.load(), 2) << "round " << round;
  }
}

}  // namespace
}  // namespace onnxserve

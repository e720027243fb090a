// Core types: half-precision conversions, tensor storage and the thread pool.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <new>
#include <stdexcept>

#include "gtest/gtest.h"
#include "runtime/core/allocator.h"
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

TEST(AllocatorTest, ReleasedBuffersAreReusedBySize) {
  void* first;
  {
    auto a = AllocateBuffer(4096 * 3);
    first = a.get();
  }
  auto b = AllocateBuffer(4096 * 3);
  EXPECT_EQ(b.get(), first);
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

}  // namespace
}  // namespace onnxserve

// The bound on the bytes of requests the server holds (server/protocol/held_requests.h).
#include "server/protocol/held_requests.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace onnxserve::server {
namespace {

TEST(HeldRequestsTest, ARequestThatWouldPassTheBoundIsRefusedUntilAnotherIsReleased) {
  HeldRequests held(100);
  auto first = held.TryHold(60);
  ASSERT_NE(first, nullptr);
  auto second = held.TryHold(40);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(held.held_bytes(), 100);
  EXPECT_EQ(held.TryHold(1), nullptr);
  EXPECT_EQ(held.held_bytes(), 100);  // a refusal holds nothing
  first.reset();
  EXPECT_EQ(held.held_bytes(), 40);
  EXPECT_NE(held.TryHold(60), nullptr);
}

TEST(HeldRequestsTest, ARequestAloneIsHeldWhateverItsSize) {
  HeldRequests held(100);
  auto lone = held.TryHold(1000);
  ASSERT_NE(lone, nullptr);
  EXPECT_EQ(held.TryHold(1), nullptr);
  lone.reset();
  EXPECT_EQ(held.held_bytes(), 0);
}

TEST(HeldRequestsTest, ZeroMeansNoBound) {
  HeldRequests held(0);
  auto a = held.TryHold(int64_t{1} << 40);
  auto b = held.TryHold(int64_t{1} << 40);
  EXPECT_NE(a, nullptr);
  EXPECT_NE(b, nullptr);
}

TEST(HeldRequestsTest, ConcurrentHoldsNeverPassTheBoundAndAllAreReleased) {
  HeldRequests held(10);
  std::atomic<int64_t> most{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        auto hold = held.TryHold(3);
        const int64_t now = held.held_bytes();
        int64_t seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {}
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_LE(most.load(), 9);  // three holds of 3 fit in 10, a fourth does not
  EXPECT_EQ(held.held_bytes(), 0);
}

}  // namespace
}  // namespace onnxserve::server

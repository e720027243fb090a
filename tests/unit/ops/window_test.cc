// The sliding-window arithmetic every windowed operator shares: the textbook sizes, and an error instead of a
// wrapped int64 wherever an attribute can push a sum or product past it.
#include "runtime/ops/window.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace onnxserve {
namespace {

constexpr int64_t k2Pow62 = int64_t{1} << 62;

TEST(WindowTest, DilatedExtentIsTheSpanOfOneWindow) {
  EXPECT_EQ(*DilatedExtent(3, 1), 3);
  EXPECT_EQ(*DilatedExtent(3, 2), 5);
  EXPECT_EQ(*DilatedExtent(1, k2Pow62), 1);  // one tap has no gaps, whatever the dilation
  EXPECT_EQ(DilatedExtent(3, k2Pow62).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(DilatedExtent(0, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DilatedExtent(2, 0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(WindowTest, PaddedSizeAddsBothPads) {
  EXPECT_EQ(*PaddedSize(5, 1, 2), 8);
  EXPECT_EQ(PaddedSize(5, k2Pow62, k2Pow62).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(WindowTest, WindowCountFloorsOrCeils) {
  EXPECT_EQ(*WindowCount(7, 3, 2), 3);        // starts 0, 2, 4
  EXPECT_EQ(*WindowCount(8, 3, 2), 3);        // a partial fourth window is dropped
  EXPECT_EQ(*WindowCount(8, 3, 2, true), 4);  // ...and kept with ceil
  EXPECT_EQ(*WindowCount(3, 3, INT64_MAX), 1);
  EXPECT_EQ(*WindowCount(INT64_MAX, 1, 1), INT64_MAX);
  EXPECT_EQ(*WindowCount(2, 3, 1), 0);  // one short of a window: floor(-1 / 1) + 1, an empty output
  EXPECT_EQ(*WindowCount(2, 3, 2, true), 0);
  EXPECT_EQ(*WindowCount(0, 1, 1), 0);  // an empty map under a 1x1 kernel
  EXPECT_EQ(WindowCount(1, 3, 1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(WindowTest, SamePaddingCoversCeilOfInOverStrideWindows) {
  EXPECT_EQ(*SamePadding(5, 3, 1), 2);  // 5 windows of 3 need 7 positions
  EXPECT_EQ(*SamePadding(5, 3, 2), 2);  // 3 windows start at 0, 2, 4
  EXPECT_EQ(*SamePadding(6, 1, 2), 0);  // 3 windows of 1 fit
  EXPECT_EQ(*SamePadding(4, 3, INT64_MAX), 0);  // one window; ceil(4 / stride) without in + stride - 1
  EXPECT_EQ(SamePadding(k2Pow62, 3, 3).status().code(), absl::StatusCode::kOk);
  EXPECT_EQ(SamePadding(INT64_MAX, k2Pow62, 1).status().code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace onnxserve

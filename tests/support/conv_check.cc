#include "tests/support/conv_check.h"

#include "tests/support/activation_reference.h"

namespace onnxserve::testing {

GuardedOutput::GuardedOutput(int64_t size) : size_(size), floats_(static_cast<size_t>(size + kGuard), kSentinel) {}

::testing::AssertionResult GuardedOutput::NothingWrittenPast() const {
  for (int64_t i = size_; i < size_ + kGuard; ++i) {
    if (floats_[static_cast<size_t>(i)] != kSentinel) return ::testing::AssertionFailure() << "wrote past Y at " << i;
  }
  return ::testing::AssertionSuccess();
}

void ExpectConvOutput(const ConvExpectation& e, const float* y) {
  const ReferenceConvGeometry& g = e.geometry;
  const int64_t taps = g.group_channels * g.kernel_h * g.kernel_w;
  const double tolerance = (AppliedAfterStore(e.activation) ? 2e-5 : 1e-5) * (1 + taps) * e.tolerance_scale;
  for (int64_t n = 0; n < e.batch; ++n) {
    for (int64_t m = 0; m < e.maps; ++m) {
      for (int64_t oh = 0; oh < e.out_h; ++oh) {
        for (int64_t ow = 0; ow < e.out_w; ++ow) {
          const int64_t at = e.layout == MapLayout::kNchw ? ((n * e.maps + m) * e.out_h + oh) * e.out_w + ow
                                                          : ((n * e.out_h + oh) * e.out_w + ow) * e.maps + m;
          const double want = (e.bias != nullptr ? e.bias[m] : 0.0) + (e.z != nullptr ? e.z[at] : 0.0) +
                              ReferenceConvAt(g, e.x, e.w, n, m, oh, ow);
          ASSERT_NEAR(y[at], ReferenceActivation(e.activation, want), tolerance)
              << "at n=" << n << " map=" << m << " (" << oh << "," << ow << ")";
        }
      }
    }
  }
}

}  // namespace onnxserve::testing

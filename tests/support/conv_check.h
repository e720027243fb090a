// The convolution kernels' tests (grouped, oneDNN NCHW and NHWC, Winograd): Y written into a buffer with
// sentinels past it, and checked against the definition at every output.
#pragma once

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/math/activation.h"
#include "tests/support/op_test.h"

namespace onnxserve::testing {

// Y's storage followed by sentinel floats a kernel must not write.
class GuardedOutput {
 public:
  explicit GuardedOutput(int64_t size);
  float* data() { return floats_.data(); }
  const float* data() const { return floats_.data(); }
  // Whether the floats past Y still hold the sentinel.
  ::testing::AssertionResult NothingWrittenPast() const;

 private:
  static constexpr int64_t kGuard = 32;
  static constexpr float kSentinel = 12345.0f;
  int64_t size_;
  std::vector<float> floats_;
};

enum class MapLayout { kNchw, kNhwc };

// What a convolution's Y [batch, maps, out_h, out_w] (or NHWC) holds by the definition: activation(bias +
// Z + conv(X, W)) at each output, X and W as ReferenceConvAt reads them.
struct ConvExpectation {
  ReferenceConvGeometry geometry;
  const float* x;
  const float* w;
  const float* bias = nullptr;  // null: none
  const float* z = nullptr;     // null: none; in Y's layout
  Activation activation;
  int64_t batch, maps, out_h, out_w;
  MapLayout layout = MapLayout::kNchw;
  // The tolerance covers float roundings of each output's products summed in any order (twice that where
  // the activation runs after the store: the activations' slopes stay below 1.5); this scales it, for
  // inputs that carry roundings of their own.
  double tolerance_scale = 1;
};

// Asserts every output of `y` against `e`, naming the first that differs.
void ExpectConvOutput(const ConvExpectation& e, const float* y);

}  // namespace onnxserve::testing

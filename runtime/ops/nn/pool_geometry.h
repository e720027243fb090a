// The windows of a pooling op (MaxPool, AveragePool, LpPool) from its attributes and input shape: shared by
// the NCHW pools (pool.cc) and the channels-last MaxPool (nhwc_conv.cc), which plan alike and differ only
// in where a window's taps lie in memory.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/core/tensor.h"
#include "runtime/registry/kernel.h"

namespace onnxserve {

inline constexpr int kMaxSpatial = 3;
using PoolDims = std::array<int64_t, kMaxSpatial>;

struct PoolAttrs {
  std::string auto_pad = "NOTSET";
  std::vector<int64_t> kernel, strides, dilations, pads;
  bool ceil_mode = false;
};

// has_ceil/has_dilations: whether the resolved version defines ceil_mode/dilations.
absl::StatusOr<PoolAttrs> ReadPoolAttrs(const KernelInfo& info, bool has_ceil, bool has_dilations);

// For one spatial dim and each output position: the first input index of the window and the range of
// kernel taps [lo, hi) that land inside the input; `padded` counts the taps inside input plus pads (the
// count_include_pad divisor).
struct DimWindows {
  std::vector<int64_t> start, lo, hi, padded;
};

// The pooling problem on exactly kMaxSpatial dims (leading unit dims pad lower ranks). An empty output has
// no windows: there is nothing to compute.
struct PoolGeometry {
  int64_t planes = 0;  // N * C
  PoolDims in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, dilation{1, 1, 1};
  std::array<DimWindows, kMaxSpatial> windows;
  Shape out_shape;
  // The windows' bytes, charged to the current run (runtime/core/memory_budget.h) while the geometry lives:
  // a pad a model chose can make a thin output of 2^31 rows, whose windows would take 64 GB.
  std::shared_ptr<const void> windows_charge;
};

// The geometry of pooling `x`, [N, C] followed by as many spatial dims as the kernel has.
absl::StatusOr<PoolGeometry> PlanPool(const PoolAttrs& a, const Shape& x);

}  // namespace onnxserve

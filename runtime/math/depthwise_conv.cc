#include "runtime/math/depthwise_conv.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/math/depthwise_conv_kernels.h"
#include "runtime/math/scratch.h"

namespace onnxserve {
namespace {

// Below this many multiply-adds a depthwise layer runs on the calling thread: a 7x7 map's 960 channels
// (420 K) take some 20 us, several hand-offs' worth.
constexpr int64_t kMinParallelWork = int64_t{1} << 17;

const depthwise::Kernels& KernelsFor(Isa isa) {
  switch (std::min(isa, DetectedIsa())) {
    case Isa::kAvx512:
      return depthwise::kAvx512Kernels;
    case Isa::kAvx2:
      return depthwise::kAvx2Kernels;
    case Isa::kBaseline:
      break;
  }
  return depthwise::kBaselineKernels;
}

int64_t RoundUp(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// The source layout (depthwise_conv_kernels.h) for `shape`; tap_offsets is left to the caller.
depthwise::PlaneGeometry GeometryOf(const DepthwiseConvShape& s) {
  // Rows and phase columns the outputs reach, plus room for the last vector of a row to load whole.
  const int64_t rows = (s.out_h - 1) * s.stride_h + (s.kernel_h - 1) * s.dilation_h + 1;
  const int64_t row_stride = RoundUp(s.out_w, depthwise::kMaxLanes) + (s.kernel_w - 1) * s.dilation_w / s.stride_w;
  return {
      .in_h = s.in_h,
      .in_w = s.in_w,
      .pad_top = s.pad_top,
      .pad_left = s.pad_left,
      .stride_h = s.stride_h,
      .stride_w = s.stride_w,
      .rows = rows,
      .row_stride = row_stride,
      .out_h = s.out_h,
      .out_w = s.out_w,
      .multiplier = s.multiplier,
      .taps = s.kernel_h * s.kernel_w,
      .square3 = s.kernel_h == 3 && s.kernel_w == 3,
      .square5 = s.kernel_h == 5 && s.kernel_w == 5,
      .tap_offsets = nullptr,
  };
}

}  // namespace

int64_t DepthwiseScratchFloats(const DepthwiseConvShape& shape) {
  const depthwise::PlaneGeometry g = GeometryOf(shape);
  // The phases, and room for a row's last copy to write whole vectors (CopyImage).
  int64_t phase = 0, phases = 0, floats = 0;
  if (__builtin_mul_overflow(g.rows, g.row_stride, &phase) || __builtin_mul_overflow(phase, shape.stride_w, &phases) ||
      __builtin_add_overflow(phases, depthwise::kMaxLanes, &floats)) {
    return INT64_MAX;
  }
  return floats;
}

void DepthwiseConv2D(const DepthwiseConvShape& shape, const float* x, const float* w,
                     const DepthwiseConvEpilogue& epilogue, float* y, ThreadPool& pool, Isa isa) {
  const int64_t planes = shape.batch * shape.channels, map_size = shape.out_h * shape.out_w;
  if (planes == 0 || map_size == 0) return;
  depthwise::PlaneGeometry g = GeometryOf(shape);
  std::vector<int64_t> tap_offsets;
  for (int64_t kh = 0; kh < shape.kernel_h; ++kh) {
    for (int64_t kw = 0; kw < shape.kernel_w; ++kw) {
      const int64_t column = kw * shape.dilation_w, phase = column % shape.stride_w;
      tap_offsets.push_back((phase * g.rows + kh * shape.dilation_h) * g.row_stride + column / shape.stride_w);
    }
  }
  g.tap_offsets = tap_offsets.data();
  const depthwise::Kernels& kernels = KernelsFor(isa);
  const int64_t in_size = shape.in_h * shape.in_w, maps = shape.channels * shape.multiplier;
  const int64_t scratch = DepthwiseScratchFloats(shape);
  auto convolve = [&](int64_t begin, int64_t end) {
    float* source = ThreadScratch(ScratchSlot::kDepthwisePlane, scratch);
    std::fill(source, source + scratch, 0.0f);
    for (int64_t i = begin; i < end; ++i) {
      const int64_t n = i / shape.channels, map = i % shape.channels * shape.multiplier;
      const int64_t out = (n * maps + map) * map_size;
      kernels.convolve_plane(g, {
                                    .x = x + i * in_size,
                                    .w = w + map * g.taps,
                                    .bias = epilogue.bias != nullptr ? epilogue.bias + map : nullptr,
                                    .z = epilogue.z != nullptr ? epilogue.z + out : nullptr,
                                    .relu = epilogue.relu,
                                    .y = y + out,
                                    .source = source,
                                });
    }
  };
  if (pool.num_threads() == 1 || planes * shape.multiplier * map_size * g.taps < kMinParallelWork) {
    convolve(0, planes);
  } else {
    pool.ParallelFor(planes, 1, convolve);
  }
}

}  // namespace onnxserve

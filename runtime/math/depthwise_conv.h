// A direct 2-D depthwise convolution of NCHW float images: every input channel convolved with its own
// `multiplier` kernels (Conv with group == C), any kernel size, stride, dilation and padding, with bias,
// a residual Z and Relu applied as each output vector is stored. An im2col + GEMM per channel would
// multiply matrices of one row by K*K columns; this reads each input plane once into a zero-padded copy
// (split by column phase for strides above 1, so every tap is a contiguous load) and runs each output row
// through vector FMAs, one tap at a time.
//
// Kernels exist for AVX-512F, AVX2 + FMA and a baseline SSE2 one (runtime/math/isa.h picks by default).
#pragma once

#include <cstdint>

#include "runtime/core/thread_pool.h"
#include "runtime/math/isa.h"

namespace onnxserve {

struct DepthwiseConvShape {
  int64_t batch = 1;
  int64_t channels = 1;    // input channels (= groups)
  int64_t multiplier = 1;  // output maps per input channel: Y has channels * multiplier maps
  int64_t in_h = 1, in_w = 1;
  int64_t out_h = 1, out_w = 1;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0;  // begin pads; the end pads follow from out_h and out_w
};

// What joins the convolution in Y.
struct DepthwiseConvEpilogue {
  const float* bias = nullptr;  // one per output map, or null
  const float* z = nullptr;     // Y's shape, added element by element, or null
  bool relu = false;            // applied last; NaN passes through
};

// Floats of per-thread scratch DepthwiseConv2D takes for `shape` (a padded copy of one input plane), so
// that callers can prefer another path when huge pads or dilations would make it large; INT64_MAX when
// the count does not fit in int64.
int64_t DepthwiseScratchFloats(const DepthwiseConvShape& shape);

// Y[n, c * multiplier + j] = relu?(sum over taps of W[c * multiplier + j] * X[n, c] shifted + bias + z),
// X [batch, channels, in_h, in_w], W [channels * multiplier, 1, kernel_h, kernel_w], Y [batch, channels *
// multiplier, out_h, out_w]. Splits input channels over `pool`. `isa` (at most DetectedIsa()) picks the
// kernel; tests pass each level the CPU has.
void DepthwiseConv2D(const DepthwiseConvShape& shape, const float* x, const float* w,
                     const DepthwiseConvEpilogue& epilogue, float* y, ThreadPool& pool, Isa isa = ActiveIsa());

}  // namespace onnxserve

// A direct 2-D convolution of NCHW float images for groups of few channels: depthwise convolutions (one
// channel per group, any number of maps per channel) and ResNeXt-like grouped ones (4 to 8 channels and
// maps per group). Any kernel size, stride, dilation and padding, with bias, a residual Z and Relu applied
// as each output vector is stored (other activations on each strip of output rows just written). An
// im2col + GEMM per group would multiply matrices of a few rows, and building and packing the columns
// would cost more than the multiply-adds; this reads each input plane
// once into a zero-padded copy (split by column phase for strides above 1, so every tap is a contiguous
// load) and runs each output row through vector FMAs, one (channel, tap) at a time. Depthwise layers of
// many channels on small maps (MobileNet's 14x14 and 7x7, a keyword spotter's 25x5) instead go a vector's
// lanes of channels at a time, a vector per pixel, so no per-channel row copies or stores remain.
//
// Kernels exist for AVX-512F, AVX2 + FMA and a baseline SSE2 one (runtime/math/isa.h picks by default).
#pragma once

#include <cstdint>

#include "runtime/core/thread_pool.h"
#include "runtime/math/activation.h"
#include "runtime/math/isa.h"

namespace onnxserve {

struct GroupedConvShape {
  int64_t batch = 1;
  int64_t groups = 1;
  int64_t group_channels = 1;  // input channels per group: X has groups * group_channels channels
  int64_t group_maps = 1;      // output maps per group: Y has groups * group_maps maps
  int64_t in_h = 1, in_w = 1;
  int64_t out_h = 1, out_w = 1;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0;  // begin pads; the end pads follow from out_h and out_w
};

// What joins the convolution in Y.
struct GroupedConvEpilogue {
  const float* bias = nullptr;  // one per output map, or null
  const float* z = nullptr;     // Y's shape, added element by element, or null; must not overlap Y
  Activation activation;        // applied last; Relu lets NaN pass through
};

// Floats of per-thread scratch GroupedConv2D takes for `shape` (a padded copy of one group's input
// planes), so that callers can prefer another path when huge pads or dilations would make it large;
// INT64_MAX when the count does not fit in int64.
int64_t GroupedConvScratchFloats(const GroupedConvShape& shape, Isa isa = ActiveIsa());

// Y = activation(conv(X, W) + bias + z) with X [batch, groups * group_channels, in_h, in_w], W [groups *
// group_maps, group_channels, kernel_h, kernel_w] (ONNX's layout), Y [batch, groups * group_maps, out_h,
// out_w]: map m of group g sums channels [g * group_channels, (g + 1) * group_channels) of X. Splits
// (image, group) pairs over `pool`. `isa` (at most DetectedIsa()) picks the kernel and the activation's
// vector kernels; tests pass each level the CPU has.
void GroupedConv2D(const GroupedConvShape& shape, const float* x, const float* w, const GroupedConvEpilogue& epilogue,
                   float* y, ThreadPool& pool, Isa isa = ActiveIsa());

}  // namespace onnxserve

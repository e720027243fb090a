// The per-ISA kernels behind GroupedConv2D and what they share. Like packed_gemm_kernels.h, this header
// holds no inline functions: each ISA's file is compiled for its instruction set, and an inline function
// instantiated there could be the copy the linker keeps for everyone.
#pragma once

#include <cstdint>

#include "runtime/math/activation.h"

namespace onnxserve::grouped {

// The widest vector of any kernel: source rows are long enough that a row's last vector, however many
// lanes, loads whole.
inline constexpr int kMaxLanes = 16;

// One group's input planes and output maps, as the kernels see them. Each input plane's source is the
// zero-padded plane split into stride_w column phases (for stride_w 1, just the padded plane): phase p
// holds, in `rows` rows of `row_stride` floats, padded columns p, p + stride_w, p + 2 * stride_w, ... of
// each padded row. Output element (oh, ow) then reads tap t (over channels, then kernel rows and columns)
// at source[oh * stride_h * row_stride + ow + tap_offsets[t]], so the taps of a run of adjacent outputs
// are contiguous loads whatever the stride and dilation.
//
// Narrow maps (`flat`: strides 1, at most half a vector of columns) lay the padded rows end to end at their
// true width instead of a vector's: output (oh, ow) reads source[f + tap_offsets[t]] with f = oh *
// row_stride + ow, so whole vectors run over f across row ends (the row_stride - out_w columns between are
// computed into `flat_out` and dropped). A 5-wide map then fills every lane instead of 5 of 16.
struct GroupGeometry {
  int64_t in_h, in_w;
  int64_t pad_top, pad_left;
  int64_t stride_h, stride_w;
  int64_t rows, row_stride;     // of each phase; phases are rows * row_stride floats apart
  int64_t plane_floats;         // one input plane's source: stride_w * rows * row_stride
  int64_t channels;             // input planes per group
  int64_t maps;                 // output maps per group
  int64_t out_h, out_w;
  int64_t taps;                 // channels * kernel_h * kernel_w
  bool depthwise3, depthwise5;  // one channel, 3x3 / 5x5: the kernels unroll these
  bool flat;                    // the narrow-map layout above
  const int64_t* tap_offsets;   // taps of them, in W's order
};

// One group's data.
struct GroupData {
  const float* x;     // channels planes of in_h x in_w
  const float* w;     // maps x taps
  const float* bias;  // maps values, or null
  const float* z;     // maps maps of out_h x out_w, or null
  bool relu;          // in the registers, as each vector is stored
  // Applied to each strip of rows once written, with `vec`'s loops, unless AppliedAfterStore says no.
  const vec::VectorKernels* vec;
  Activation activation;
  float* y;           // maps maps of out_h x out_w
  float* source;      // channels * plane_floats floats, zero but where the images go
  float* flat_out;    // with geometry.flat: kFlatBlock-rounded out_h * row_stride floats for one map
};

// Flat maps are computed in blocks of this many floats (4 vectors of the widest kernel).
inline constexpr int kFlatBlock = 4 * kMaxLanes;

struct Kernels {
  // Copies the planes into the source, whose padding is zero, then convolves it into each output map.
  void (*convolve_group)(const GroupGeometry& geometry, const GroupData& data);
};

extern const Kernels kBaselineKernels;  // SSE2: every x86-64 CPU
extern const Kernels kAvx2Kernels;      // needs AVX2 and FMA
extern const Kernels kAvx512Kernels;    // needs AVX-512F

}  // namespace onnxserve::grouped

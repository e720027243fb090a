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
  int64_t row_step;             // dilation 1 down: stride_h (output row r's kernel row k reads row r * step +
                                // k); else 0
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
  const float* next_x;  // strided layers: the planes of the group this thread convolves next; else null
};

// Flat maps are computed in blocks of this many floats (4 vectors of the widest kernel).
inline constexpr int kFlatBlock = 4 * kMaxLanes;

// Depthwise convolutions (one channel, one map per group) of small maps in blocks of a vector's lanes of
// channels: the source holds the padded planes of the block's channels pixel by pixel, a vector per pixel
// (lane l: channel l), so each tap of kBlockPixels output pixels is one multiply-add per pixel, with no
// per-channel copies or row stores. The planes are transposed in, the sums out, a vector's lanes square at a time. A map
// of 25 x 5 would otherwise pay 25 row copies and 25 row stores per channel for 9 multiply-adds a pixel.
// Offsets count floats; a source is (padded pixels + 1) vectors, its last one the trash slot.
struct BlockGeometry {
  int64_t in_size, out_size;     // pixels of an input plane and of an output map
  int64_t taps;                  // kernel_h * kernel_w
  bool depthwise3, depthwise5;   // 3x3 / 5x5: the kernel unrolls these
  const int64_t* input_slots;    // in_size: where each image pixel's vector goes (the trash slot if unread)
  const int64_t* output_reads;   // out_size rounded up to kBlockPixels (the last repeated): tap 0's vector
  const int64_t* tap_offsets;    // taps: from an output's tap 0 to each tap, in W's order
};

// One block of up to kLanes channels of one image.
struct BlockData {
  int64_t channels;   // in the block, 1 to the kernel's lanes
  const float* x;     // the block's first input plane; the others follow, in_size apart
  const float* w;     // the block's first channel's taps; the others follow
  const float* bias;  // one per channel, or null
  const float* z;     // the block's first map of Z, or null
  bool relu;          // in the registers, as each vector is stored
  const vec::VectorKernels* vec;  // non-null when an activation runs on the block's maps once written
  Activation activation;
  float* y;           // the block's first output map
  float* source;      // the padded pixels' vectors, zero but where the image pixels go
  float* scratch;     // (taps + 2 * kMaxLanes) * kMaxLanes floats
};

// Output pixels each step of a channel block computes, one vector of sums each.
inline constexpr int kBlockPixels = 8;

struct Kernels {
  // Copies the planes into the source, whose padding is zero, then convolves it into each output map.
  void (*convolve_group)(const GroupGeometry& geometry, const GroupData& data);
  // Transposes a block's planes into the source, whose padding is zero, convolves, transposes back to Y.
  void (*convolve_channel_block)(const BlockGeometry& geometry, const BlockData& data);
};

extern const Kernels kBaselineKernels;  // SSE2: every x86-64 CPU
extern const Kernels kAvx2Kernels;      // needs AVX2 and FMA
extern const Kernels kAvx512Kernels;    // needs AVX-512F

}  // namespace onnxserve::grouped

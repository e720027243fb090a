#include "runtime/math/grouped_conv.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "runtime/core/run_limits.h"
#include "runtime/math/grouped_conv_kernels.h"
#include "runtime/math/scratch.h"
#include "runtime/math/vector_kernels.h"

namespace onnxserve {
namespace {

// Below this many multiply-adds a layer runs on the calling thread: the keyword spotter's depthwise
// 3x3 on 64 channels of 25x5 (72 K) takes some 4 us on one thread and took 8 on two, the hand-off and
// the planes crossing between cores (280 ns a cache line on a 2-vCPU EPYC VM) costing more than the
// half saved (runtime/math/packed_gemm.cc's kMinParallelWork measures the same).
constexpr int64_t kMinParallelWork = int64_t{1} << 18;

const grouped::Kernels& KernelsFor(Isa isa) {
  switch (std::min(isa, DetectedIsa())) {
    case Isa::kAvx512:
      return grouped::kAvx512Kernels;
    case Isa::kAvx2:
      return grouped::kAvx2Kernels;
    case Isa::kBaseline:
      break;
  }
  return grouped::kBaselineKernels;
}

int64_t RoundUp(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

int Lanes(Isa isa) {
  switch (std::min(isa, DetectedIsa())) {
    case Isa::kAvx512:
      return 16;
    case Isa::kAvx2:
      return 8;
    case Isa::kBaseline:
      break;
  }
  return 4;
}

// Whether `shape` takes the flat layout on `isa`: strides 1 and rows of at most half a vector, where the
// row-by-row kernel would leave half its lanes or more idle.
bool IsFlat(const GroupedConvShape& s, Isa isa) {
  return s.stride_h == 1 && s.stride_w == 1 && 2 * s.out_w <= Lanes(isa);
}

// Rows of `row_stride` the flat layout reads: the map's rows rounded up to whole blocks, plus the taps'
// reach below them. INT64_MAX when that does not fit in int64: a huge dilation on a narrow map (its padded
// row can be 2^61 long while the output stays a few columns wide), which the caller's scratch check
// rejects.
int64_t FlatRows(const GroupedConvShape& s, int64_t row_stride) {
  int64_t map = 0, below = 0, reach = 0;
  if (__builtin_mul_overflow(s.out_h, row_stride, &map) ||
      __builtin_mul_overflow((s.kernel_h - 1) * s.dilation_h, row_stride, &below) ||
      __builtin_add_overflow(RoundUp(map, grouped::kFlatBlock), below, &reach) ||
      __builtin_add_overflow(reach, (s.kernel_w - 1) * s.dilation_w, &reach) ||
      __builtin_add_overflow(reach, row_stride - 1, &reach)) {
    return INT64_MAX;
  }
  return reach / row_stride;
}

// The source layout (grouped_conv_kernels.h) for `shape`; plane_floats and tap_offsets are left to the
// caller.
grouped::GroupGeometry GeometryOf(const GroupedConvShape& s, Isa isa) {
  // Rows and phase columns the outputs reach, plus room for the last vector of a row to load whole.
  int64_t rows = (s.out_h - 1) * s.stride_h + (s.kernel_h - 1) * s.dilation_h + 1;
  int64_t row_stride = RoundUp(s.out_w, grouped::kMaxLanes) + (s.kernel_w - 1) * s.dilation_w / s.stride_w;
  const bool flat = IsFlat(s, isa);
  if (flat) {
    // Rows at their padded width, and enough zero rows below for the last block's loads past the map.
    row_stride = s.out_w + (s.kernel_w - 1) * s.dilation_w;
    rows = std::max(rows, FlatRows(s, row_stride));
  }
  const bool depthwise = s.group_channels == 1;
  return {
      .in_h = s.in_h,
      .in_w = s.in_w,
      .pad_top = s.pad_top,
      .pad_left = s.pad_left,
      .stride_h = s.stride_h,
      .stride_w = s.stride_w,
      .rows = rows,
      .row_stride = row_stride,
      .plane_floats = 0,
      .channels = s.group_channels,
      .maps = s.group_maps,
      .out_h = s.out_h,
      .out_w = s.out_w,
      .taps = s.group_channels * s.kernel_h * s.kernel_w,
      .depthwise3 = depthwise && s.kernel_h == 3 && s.kernel_w == 3,
      .depthwise5 = depthwise && s.kernel_h == 5 && s.kernel_w == 5,
      .row_step = s.dilation_h == 1 ? s.stride_h : 0,
      .flat = flat,
      .tap_offsets = nullptr,
  };
}

// One plane's source, or INT64_MAX when that does not fit in int64.
int64_t PlaneFloats(const GroupedConvShape& shape, const grouped::GroupGeometry& g) {
  int64_t phase = 0, plane = 0;
  if (__builtin_mul_overflow(g.rows, g.row_stride, &phase) || __builtin_mul_overflow(phase, shape.stride_w, &plane)) {
    return INT64_MAX;
  }
  return plane;
}

// Padded pixels of the maps that run in channel blocks (a 20x20 padded map). Larger maps amortize their
// per-channel copies over enough outputs, and their blocks' sources (up to 32 KiB here, for 16 lanes)
// leave L1: blocked, 28x28 maps were no faster on AVX2 (75 against 71 us for 192 channels) and, at
// stride 2, four times slower on AVX-512 (conv_benchmark's BM_DepthwiseConv).
constexpr int64_t kMaxBlockedPixels = 512;

// The padded pixels outputs of `s` reach: rows and columns from the first pad to the last tap read.
struct PaddedReach {
  int64_t rows, columns;
};

PaddedReach ReachOf(const GroupedConvShape& s) {
  return {(s.out_h - 1) * s.stride_h + (s.kernel_h - 1) * s.dilation_h + 1,
          (s.out_w - 1) * s.stride_w + (s.kernel_w - 1) * s.dilation_w + 1};
}

// The padded pixels outputs of `s` read, or INT64_MAX when that does not fit in int64.
int64_t PaddedPixels(const GroupedConvShape& s) {
  const PaddedReach reach = ReachOf(s);
  int64_t pixels = 0;
  return __builtin_mul_overflow(reach.rows, reach.columns, &pixels) ? INT64_MAX : pixels;
}

// Whether `s` runs in channel blocks (grouped_conv_kernels.h, BlockGeometry): depthwise with one map per
// channel, at least a vector's lanes of channels, and small maps. The image is small too: every pixel of
// it is transposed, read or not (a 1x1 kernel of stride 1000 reads one pixel of 1000 x 1000).
bool IsChannelBlocked(const GroupedConvShape& s, Isa isa) {
  return s.group_channels == 1 && s.group_maps == 1 && s.groups >= Lanes(isa) && PaddedPixels(s) <= kMaxBlockedPixels &&
         s.in_h <= kMaxBlockedPixels && s.in_w <= kMaxBlockedPixels && s.in_h * s.in_w <= kMaxBlockedPixels;
}

// A channel block's source: a vector per padded pixel and the trash slot (only for IsChannelBlocked shapes).
int64_t BlockedSourceFloats(const GroupedConvShape& s, Isa isa) { return (PaddedPixels(s) + 1) * Lanes(isa); }

// The weights and a chunk's sums and Z vectors (BlockData::scratch).
int64_t BlockedWorkFloats(const GroupedConvShape& s) {
  static_assert(grouped::kBlockPixels <= grouped::kMaxLanes);
  return (s.kernel_h * s.kernel_w + 2 * grouped::kMaxLanes) * grouped::kMaxLanes;
}

// Depthwise `shape` in blocks of a vector's lanes of channels (IsChannelBlocked).
void ConvolveChannelBlocks(const GroupedConvShape& s, const float* x, const float* w,
                           const GroupedConvEpilogue& epilogue, float* y, ThreadPool& pool, Isa isa) {
  const int64_t lanes = Lanes(isa), in_size = s.in_h * s.in_w, out_size = s.out_h * s.out_w;
  const PaddedReach reach = ReachOf(s);
  // The offset tables (BlockGeometry) on the stack: IsChannelBlocked bounds the image, the outputs (and so
  // their count rounded up to a step) and the taps by kMaxBlockedPixels.
  static_assert(kMaxBlockedPixels % grouped::kBlockPixels == 0);
  std::array<int64_t, kMaxBlockedPixels> input_slots, output_reads, tap_offsets;
  std::fill_n(input_slots.begin(), in_size, reach.rows * reach.columns * lanes);  // the trash slot
  for (int64_t ih = 0; ih < s.in_h && ih + s.pad_top < reach.rows; ++ih) {
    for (int64_t iw = 0; iw < s.in_w && iw + s.pad_left < reach.columns; ++iw) {
      input_slots[ih * s.in_w + iw] = ((ih + s.pad_top) * reach.columns + iw + s.pad_left) * lanes;
    }
  }
  // Row by row, without a division per output: the table is built on every call, and on a 25x5 map those
  // divisions took longer than the rest of the call outside the kernels.
  for (int64_t oh = 0; oh < s.out_h; ++oh) {
    for (int64_t ow = 0; ow < s.out_w; ++ow) {
      output_reads[oh * s.out_w + ow] = (oh * s.stride_h * reach.columns + ow * s.stride_w) * lanes;
    }
  }
  std::fill(output_reads.begin() + out_size, output_reads.begin() + RoundUp(out_size, grouped::kBlockPixels),
            output_reads[out_size - 1]);
  for (int64_t kh = 0; kh < s.kernel_h; ++kh) {
    for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
      tap_offsets[kh * s.kernel_w + kw] = (kh * s.dilation_h * reach.columns + kw * s.dilation_w) * lanes;
    }
  }
  const grouped::BlockGeometry g{
      .in_size = in_size,
      .out_size = out_size,
      .taps = s.kernel_h * s.kernel_w,
      .depthwise3 = s.kernel_h == 3 && s.kernel_w == 3,
      .depthwise5 = s.kernel_h == 5 && s.kernel_w == 5,
      .input_slots = input_slots.data(),
      .output_reads = output_reads.data(),
      .tap_offsets = tap_offsets.data(),
  };
  const grouped::Kernels& kernels = KernelsFor(isa);
  const vec::VectorKernels& vec_kernels = vec::KernelsFor(isa);
  const int64_t blocks = (s.groups + lanes - 1) / lanes, source_floats = BlockedSourceFloats(s, isa);
  auto convolve = [&](int64_t begin, int64_t end) {
    float* source = ThreadScratch(ScratchSlot::kGroupPlanes, source_floats + BlockedWorkFloats(s));
    std::fill(source, source + source_floats, 0.0f);
    for (int64_t i = begin; i < end; ++i) {
      StopIfRunEnded(WorkOf({lanes, out_size, g.taps}));
      const int64_t n = i / blocks, first = i % blocks * lanes, channel = n * s.groups + first;
      kernels.convolve_channel_block(
          g, {
                 .channels = std::min(lanes, s.groups - first),
                 .x = x + channel * in_size,
                 .w = w + first * g.taps,
                 .bias = epilogue.bias != nullptr ? epilogue.bias + first : nullptr,
                 .z = epilogue.z != nullptr ? epilogue.z + channel * out_size : nullptr,
                 .relu = epilogue.activation.kind == ActivationKind::kRelu,
                 .vec = AppliedAfterStore(epilogue.activation) ? &vec_kernels : nullptr,
                 .activation = epilogue.activation,
                 .y = y + channel * out_size,
                 .source = source,
                 .scratch = source + source_floats,
             });
    }
  };
  const int64_t units = s.batch * blocks;
  if (pool.num_threads() == 1 || s.batch * s.groups * out_size * g.taps < kMinParallelWork) {
    convolve(0, units);
  } else {
    pool.ParallelFor(units, 1, convolve);
  }
}

}  // namespace

int64_t GroupedConvScratchFloats(const GroupedConvShape& shape, Isa isa) {
  if (IsChannelBlocked(shape, isa)) return BlockedSourceFloats(shape, isa) + BlockedWorkFloats(shape);
  // The planes, and room for a row's last copy to write whole vectors (CopyImage).
  int64_t planes = 0, floats = 0;
  if (__builtin_mul_overflow(PlaneFloats(shape, GeometryOf(shape, isa)), shape.group_channels, &planes) ||
      __builtin_add_overflow(planes, grouped::kMaxLanes, &floats)) {
    return INT64_MAX;
  }
  return floats;
}

void GroupedConv2D(const GroupedConvShape& shape, const float* x, const float* w, const GroupedConvEpilogue& epilogue,
                   float* y, ThreadPool& pool, Isa isa) {
  const int64_t units = shape.batch * shape.groups, map_size = shape.out_h * shape.out_w;
  if (units == 0 || map_size == 0) return;
  if (IsChannelBlocked(shape, isa)) return ConvolveChannelBlocks(shape, x, w, epilogue, y, pool, isa);
  grouped::GroupGeometry g = GeometryOf(shape, isa);
  g.plane_floats = PlaneFloats(shape, g);
  std::vector<int64_t> tap_offsets;
  for (int64_t c = 0; c < shape.group_channels; ++c) {
    for (int64_t kh = 0; kh < shape.kernel_h; ++kh) {
      for (int64_t kw = 0; kw < shape.kernel_w; ++kw) {
        const int64_t column = kw * shape.dilation_w, phase = column % shape.stride_w;
        tap_offsets.push_back(c * g.plane_floats + (phase * g.rows + kh * shape.dilation_h) * g.row_stride +
                              column / shape.stride_w);
      }
    }
  }
  g.tap_offsets = tap_offsets.data();
  const grouped::Kernels& kernels = KernelsFor(isa);
  const vec::VectorKernels& vec_kernels = vec::KernelsFor(isa);
  const int64_t in_size = shape.in_h * shape.in_w;
  const int64_t channels = shape.groups * shape.group_channels, maps = shape.groups * shape.group_maps;
  const int64_t scratch = GroupedConvScratchFloats(shape, isa);
  auto convolve = [&](int64_t begin, int64_t end) {
    float* source = ThreadScratch(ScratchSlot::kGroupPlanes, scratch);
    std::fill(source, source + scratch, 0.0f);
    float* flat_out =
        g.flat ? ThreadScratch(ScratchSlot::kFlatMap, RoundUp(g.out_h * g.row_stride, grouped::kFlatBlock)) : nullptr;
    for (int64_t i = begin; i < end; ++i) {
      StopIfRunEnded(WorkOf({shape.group_maps, map_size, g.taps}));
      const int64_t n = i / shape.groups, group = i % shape.groups, map = group * shape.group_maps;
      const int64_t out = (n * maps + map) * map_size;
      // Unit i + 1's planes follow unit i's: the groups' channels, then the next image's.
      const float* group_x = x + (n * channels + group * shape.group_channels) * in_size;
      kernels.convolve_group(g, {
                                    .x = group_x,
                                    .w = w + map * g.taps,
                                    .bias = epilogue.bias != nullptr ? epilogue.bias + map : nullptr,
                                    .z = epilogue.z != nullptr ? epilogue.z + out : nullptr,
                                    .relu = epilogue.activation.kind == ActivationKind::kRelu,
                                    .vec = &vec_kernels,
                                    .activation = epilogue.activation,
                                    .y = y + out,
                                    .source = source,
                                    .flat_out = flat_out,
                                    .next_x = i + 1 < end && shape.stride_w > 1
                                                  ? group_x + shape.group_channels * in_size
                                                  : nullptr,
                                });
    }
  };
  if (pool.num_threads() == 1 || units * shape.group_maps * map_size * g.taps < kMinParallelWork) {
    convolve(0, units);
  } else {
    pool.ParallelFor(units, 1, convolve);
  }
}

}  // namespace onnxserve

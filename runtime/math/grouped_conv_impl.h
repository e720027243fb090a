// The grouped convolution written once over a vector type V, which each ISA's file defines in its own
// anonymous namespace and instantiates ConvolveGroup<V> with. Everything here is a template on V, so each
// instantiation is private to the file that made it and no copy compiled for one ISA can stand in for
// another's (see grouped_conv_kernels.h). V provides:
//   using T (the register type); kLanes;
//   Broadcast(float), Zero(), Load(p), Store(p, v), LoadPartial(p, n) (lanes [0, n) from memory, the rest
//   zero, 0 <= n <= kLanes), StorePartial(p, v, n) (lanes [0, n), the rest of memory untouched), MulAdd(a,
//   b, c) = a * b + c, Add(a, b), Max(a, b) (b when either is NaN), Evens(a, b) (lanes 0, 2, 4, ... of a,
//   then of b).
#pragma once

#include <cstdint>

#include "runtime/math/grouped_conv_kernels.h"

namespace onnxserve::grouped {

// dst[j] = src[j * stride] for j in [0, n), reading nothing past src[(n - 1) * stride] and writing zeros
// to dst[n, n + kLanes) for strides 1 and 2.
template <class V>
void GatherColumns(const float* src, int64_t stride, int64_t n, float* dst) {
  constexpr int kLanes = V::kLanes;
  if (stride > 2) {
    for (int64_t j = 0; j < n; ++j) dst[j] = src[j * stride];
    return;
  }
  // Whole vectors while the last float they load (one past the last even one for stride 2) is in range,
  // then the rest, 1 to kLanes columns, through partial loads. Its store is whole: lanes past n hold zeros
  // (masked stores are slow on AMD's cores, masked loads are not).
  int64_t j = 0;
  for (; j + kLanes < n; j += kLanes) {
    V::Store(dst + j, stride == 1 ? V::Load(src + j) : V::Evens(V::Load(src + 2 * j), V::Load(src + 2 * j + kLanes)));
  }
  const int64_t left = n - j, needed = stride * (left - 1) + 1;
  if (left <= 0) return;
  const float* rest = src + stride * j;
  const typename V::T low = V::LoadPartial(rest, needed < kLanes ? needed : kLanes);
  if (stride == 1) return V::Store(dst + j, low);
  const typename V::T high = V::LoadPartial(rest + kLanes, needed > kLanes ? needed - kLanes : 0);
  V::Store(dst + j, V::Evens(low, high));
}

// Copies the image rows and columns the outputs reach into their places in a plane's source
// (GroupGeometry), whose padding the caller has zeroed: the same places for every plane of a layer, so it
// stays zero. Each row's copy may write zeros up to kLanes floats past its end, over padding or over a
// place a later row (in plane, phase, then row order) copies to, so the sources have kMaxLanes floats of
// room at their end.
template <class V>
void CopyImage(const GroupGeometry& g, const float* x, float* source) {
  const int64_t s = g.stride_w, phase_size = g.rows * g.row_stride;
  const int64_t rows = g.in_h < g.rows - g.pad_top ? g.in_h : g.rows - g.pad_top;
  for (int64_t p = 0; p < s; ++p) {
    // Image columns first, first + s, ... land in phase p at columns j0, j0 + 1, ... (padded column
    // iw + pad_left is column (iw + pad_left) / s of phase (iw + pad_left) % s).
    const int64_t first = ((p - g.pad_left) % s + s) % s, j0 = (first + g.pad_left) / s;
    if (first >= g.in_w || j0 >= g.row_stride) continue;
    const int64_t count = (g.in_w - first + s - 1) / s, room = g.row_stride - j0;
    for (int64_t ih = 0; ih < rows; ++ih) {
      GatherColumns<V>(x + ih * g.in_w + first, s, count < room ? count : room,
                       source + p * phase_size + (ih + g.pad_top) * g.row_stride + j0);
    }
  }
}

// One output map being written, and what joins its sums.
template <class V>
struct MapOutput {
  const float* w;  // the map's taps
  typename V::T bias;
  const float* z;  // the map's Z, or null
  bool relu;
  const vec::VectorKernels* vec;  // non-null when an activation runs on each finished strip of rows
  Activation activation;
  float* y;
};

// Adds Z to the sums of output rows [oh, oh + rows) x columns [ow, ow + kVectors * kLanes) (`lanes` of the
// last vector's columns are real), applies Relu and stores them. A partial last vector is stored whole
// (masked stores are slow on AMD's cores) while that stays inside the map: its extra lanes land on the first
// columns of the next rows, which ConvolveMap writes later. Always inlined: a call would take `acc`'s
// address and keep the sums in memory.
template <class V, int kRows, int kVectors>
[[gnu::always_inline]] inline void StoreBlock(const GroupGeometry& g, const MapOutput<V>& out,
                                              typename V::T (&acc)[kRows][kVectors], int64_t oh, int rows,
                                              int64_t ow, int64_t lanes) {
  constexpr int kLanes = V::kLanes;
  const float* y_end = out.y + g.out_h * g.out_w;
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
    if (r >= rows) break;
    const int64_t row = (oh + r) * g.out_w;
#pragma GCC unroll 2
    for (int v = 0; v < kVectors; ++v) {
      const int64_t at = row + ow + v * kLanes, left = v + 1 < kVectors ? kLanes : lanes - v * kLanes;
      const bool full = left >= kLanes;
      if (out.z != nullptr) {
        acc[r][v] = V::Add(acc[r][v], full ? V::Load(out.z + at) : V::LoadPartial(out.z + at, left));
      }
      if (out.relu) acc[r][v] = V::Max(V::Zero(), acc[r][v]);
      if (full || out.y + at + kLanes <= y_end) {
        V::Store(out.y + at, acc[r][v]);
      } else {
        V::StorePartial(out.y + at, acc[r][v], left);
      }
    }
  }
}

// Output rows [oh, oh + rows) x columns [ow, ow + kVectors * kLanes) (rows <= kRows; `lanes` of the last
// vector's columns are real): bias, each tap in kernel order, then StoreBlock. kTaps 0: g.taps, not
// unrolled. kRows x kVectors independent sums hide the FMA latency; rows past the last repeat it, unstored.
template <class V, int kTaps, int kRows, int kVectors>
void ConvolveBlock(const GroupGeometry& g, const float* source, const MapOutput<V>& out, int64_t oh, int rows,
                   int64_t ow, int64_t lanes) {
  using T = typename V::T;
  constexpr int kLanes = V::kLanes;
  const float* src[kRows];
  T acc[kRows][kVectors];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
    src[r] = source + (oh + (r < rows ? r : rows - 1)) * g.stride_h * g.row_stride + ow;
#pragma GCC unroll 2
    for (int v = 0; v < kVectors; ++v) acc[r][v] = out.bias;
  }
  const int64_t taps = kTaps > 0 ? kTaps : g.taps;
#pragma GCC unroll 25
  for (int64_t t = 0; t < taps; ++t) {
    const T weight = V::Broadcast(out.w[t]);
    const int64_t offset = g.tap_offsets[t];
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
      for (int v = 0; v < kVectors; ++v) {
        acc[r][v] = V::MulAdd(weight, V::Load(src[r] + offset + v * kLanes), acc[r][v]);
      }
    }
  }
  StoreBlock<V, kRows, kVectors>(g, out, acc, oh, rows, ow, lanes);
}

// ConvolveBlock for a depthwise kK x kK kernel whose output rows are kStrideH source rows apart
// (g.row_step): each source row's vector is loaded once for every output row of the block that reads it
// (up to kK / kStrideH of them), not once per output row and kernel row. ConvolveBlock loads a vector per
// multiply-add, most of them across two cache lines, and the loads bound it; a block of 4 rows loads half
// as many for 3x3 at stride 1, 0.4 for 5x5, three quarters and 0.55 at stride 2. Each sum still adds its
// taps in W's order (kernel row, then column), as ConvolveBlock does.
template <class V, int kK, int kStrideH, int kRows, int kVectors>
void ConvolveBlockReusingRows(const GroupGeometry& g, const float* source, const MapOutput<V>& out, int64_t oh,
                              int rows, int64_t ow, int64_t lanes) {
  using T = typename V::T;
  constexpr int kLanes = V::kLanes;
  T acc[kRows][kVectors];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < kVectors; ++v) acc[r][v] = out.bias;
  }
  // Rows past the last stored output row's reach feed only unstored rows: they repeat that reach's last.
  const int64_t first_row = oh * kStrideH, last_row = (oh + rows - 1) * kStrideH + kK - 1;
#pragma GCC unroll 11
  for (int i = 0; i < (kRows - 1) * kStrideH + kK; ++i) {
    const float* src = source + (first_row + i < last_row ? first_row + i : last_row) * g.row_stride + ow;
#pragma GCC unroll 5
    for (int kw = 0; kw < kK; ++kw) {
#pragma GCC unroll 2
      for (int v = 0; v < kVectors; ++v) {
        const T in = V::Load(src + g.tap_offsets[kw] + v * kLanes);
#pragma GCC unroll 4
        for (int r = 0; r < kRows; ++r) {
          const int kh = i - r * kStrideH;
          if (kh >= 0 && kh < kK) acc[r][v] = V::MulAdd(V::Broadcast(out.w[kh * kK + kw]), in, acc[r][v]);
        }
      }
    }
  }
  StoreBlock<V, kRows, kVectors>(g, out, acc, oh, rows, ow, lanes);
}

// Whether ConvolveBlockReusingRows pays for a kTaps kernel at kStrideH on V: with AVX-512's 32 registers
// the sums and the weights all stay in them. With 16 (AVX2, SSE2) each multiply-add reloads its weight,
// which eats the image loads saved except for 5x5 at stride 1 (0.4 of them left): in MobileNet on AVX2 that
// one ran 12-16% faster, the 3x3 ones and the 5x5/2 8-18% slower.
template <class V, int kTaps, int kStrideH>
inline constexpr bool kReusesRows = (kTaps == 9 || kTaps == 25) && (V::kLanes >= 16 || (kTaps == 25 && kStrideH == 1));

// ConvolveBlockReusingRows where it applies (kReusesRows, output rows 1 or 2 source rows apart), else
// ConvolveBlock.
template <class V, int kTaps, int kRows, int kVectors>
void ConvolveBlockOf(const GroupGeometry& g, const float* source, const MapOutput<V>& out, int64_t oh, int rows,
                     int64_t ow, int64_t lanes) {
  constexpr int kK = kTaps == 9 ? 3 : 5;
  if constexpr (kReusesRows<V, kTaps, 1>) {
    if (g.row_step == 1) return ConvolveBlockReusingRows<V, kK, 1, kRows, kVectors>(g, source, out, oh, rows, ow, lanes);
  }
  if constexpr (kReusesRows<V, kTaps, 2>) {
    if (g.row_step == 2) return ConvolveBlockReusingRows<V, kK, 2, kRows, kVectors>(g, source, out, oh, rows, ow, lanes);
  }
  ConvolveBlock<V, kTaps, kRows, kVectors>(g, source, out, oh, rows, ow, lanes);
}

// One output map from the filled source, in blocks of 4 rows x 2 vectors (8 independent sums), each block
// of rows from its right end to its left: a partial last vector stored whole then spills only onto
// columns written later. Rows before a finished strip are final (spills reach only later strips): the
// activation that is not applied in the registers runs on them once they make a run of kActivationRun
// floats (8 KiB, still in L1), or at the map's end. Strips alone (4 rows of a 14x14 map: 56 floats) made
// calls so short that they cost as much as a pass over the whole tensor.
template <class V, int kTaps>
void ConvolveMap(const GroupGeometry& g, const float* source, const MapOutput<V>& out) {
  constexpr int kLanes = V::kLanes, kRows = 4;
  constexpr int64_t kActivationRun = 2048;
  const int64_t vectors = (g.out_w + kLanes - 1) / kLanes, last_lanes = g.out_w - (vectors - 1) * kLanes;
  int64_t activated = 0;  // rows [0, activated) have had the activation
  for (int64_t oh = 0; oh < g.out_h; oh += kRows) {
    const int rows = g.out_h - oh < kRows ? static_cast<int>(g.out_h - oh) : kRows;
    int64_t v = vectors;
    if (v % 2 != 0) {
      v -= 1;
      ConvolveBlockOf<V, kTaps, kRows, 1>(g, source, out, oh, rows, v * kLanes, last_lanes);
    } else {
      v -= 2;
      ConvolveBlockOf<V, kTaps, kRows, 2>(g, source, out, oh, rows, v * kLanes, kLanes + last_lanes);
    }
    for (; v > 0; v -= 2) ConvolveBlockOf<V, kTaps, kRows, 2>(g, source, out, oh, rows, (v - 2) * kLanes, 2 * kLanes);
    const int64_t done = oh + rows;
    if (out.vec != nullptr && ((done - activated) * g.out_w >= kActivationRun || done == g.out_h)) {
      ApplyActivation(*out.vec, out.activation, out.y + activated * g.out_w, (done - activated) * g.out_w);
      activated = done;
    }
  }
}

// One narrow output map in the flat layout (grouped_conv_kernels.h): blocks of 4 vectors over f into
// `flat`, then each row's out_w columns to Y with Z and Relu, and the other activations over the map.
template <class V, int kTaps>
void ConvolveFlatMap(const GroupGeometry& g, const float* source, const MapOutput<V>& out, float* flat) {
  using T = typename V::T;
  constexpr int kLanes = V::kLanes, kVectors = 4;
  const int64_t total = g.out_h * g.row_stride, taps = kTaps > 0 ? kTaps : g.taps;
  for (int64_t f = 0; f < total; f += kVectors * kLanes) {
    T acc[kVectors];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) acc[v] = out.bias;
#pragma GCC unroll 25
    for (int64_t t = 0; t < taps; ++t) {
      const T weight = V::Broadcast(out.w[t]);
      const float* src = source + f + g.tap_offsets[t];
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) acc[v] = V::MulAdd(weight, V::Load(src + v * kLanes), acc[v]);
    }
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) V::Store(flat + f + v * kLanes, acc[v]);
  }
  // Rows in order, each stored whole while that stays inside the map: its extra lanes land on the next
  // rows, written after it (masked stores are slow on AMD's cores; the map's last rows use them).
  const float* y_end = out.y + g.out_h * g.out_w;
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    for (int64_t ow = 0; ow < g.out_w; ow += kLanes) {
      const int64_t at = oh * g.out_w + ow;
      const bool whole = out.y + at + kLanes <= y_end;
      const int64_t n = g.out_w - ow < kLanes ? g.out_w - ow : kLanes;
      T v = V::Load(flat + oh * g.row_stride + ow);
      if (out.z != nullptr) v = V::Add(v, whole ? V::Load(out.z + at) : V::LoadPartial(out.z + at, n));
      if (out.relu) v = V::Max(V::Zero(), v);
      if (whole) {
        V::Store(out.y + at, v);
      } else {
        V::StorePartial(out.y + at, v, n);
      }
    }
  }
  if (out.vec != nullptr) ApplyActivation(*out.vec, out.activation, out.y, g.out_h * g.out_w);
}

// The flat layout's copy: each image row to its place (a few floats each), no spill.
inline void CopyImageFlat(const GroupGeometry& g, const float* x, float* source) {
  const int64_t rows = g.in_h < g.rows - g.pad_top ? g.in_h : g.rows - g.pad_top;
  const int64_t columns = g.in_w < g.row_stride - g.pad_left ? g.in_w : g.row_stride - g.pad_left;
  if (columns <= 0) return;
  for (int64_t ih = 0; ih < rows; ++ih) {
    __builtin_memcpy(source + (ih + g.pad_top) * g.row_stride + g.pad_left, x + ih * g.in_w,
                     static_cast<size_t>(columns) * sizeof(float));
  }
}

// Asks for the first kMaxPrefetchBytes of `floats` floats from `x` (the next group's planes) while this
// group convolves from its copy: the copies were bound by the image's misses (MobileNet's 96 x 112 x 112
// layer is the previous layer's 4.8 MB output, past L2), which the prefetchers of the plane-by-plane
// stream did not hide; fetched during the convolution, the 3x3/2 layer took a quarter less time. Stride-1
// copies stream at full speed: prefetching for them gained nothing, and on AVX2 cost a 56x56 layer 20%.
inline void PrefetchPlanes(const float* x, int64_t floats) {
  constexpr int64_t kLineFloats = 64 / sizeof(float), kMaxPrefetchBytes = int64_t{1} << 17;
  const int64_t end = floats < kMaxPrefetchBytes / 4 ? floats : kMaxPrefetchBytes / 4;
  for (int64_t i = 0; i < end; i += kLineFloats) __builtin_prefetch(x + i);
}

template <class V>
void ConvolveGroup(const GroupGeometry& g, const GroupData& d) {
  for (int64_t c = 0; c < g.channels; ++c) {
    const float* x = d.x + c * g.in_h * g.in_w;
    float* source = d.source + c * g.plane_floats;
    if (g.flat) {
      CopyImageFlat(g, x, source);
    } else {
      CopyImage<V>(g, x, source);
    }
  }
  if (d.next_x != nullptr) PrefetchPlanes(d.next_x, g.channels * g.in_h * g.in_w);
  const int64_t map_size = g.out_h * g.out_w;
  for (int64_t m = 0; m < g.maps; ++m) {
    const MapOutput<V> out{
        .w = d.w + m * g.taps,
        .bias = V::Broadcast(d.bias != nullptr ? d.bias[m] : 0.0f),
        .z = d.z != nullptr ? d.z + m * map_size : nullptr,
        .relu = d.relu,
        .vec = AppliedAfterStore(d.activation) ? d.vec : nullptr,
        .activation = d.activation,
        .y = d.y + m * map_size,
    };
    if (g.flat) {
      if (g.depthwise3) {
        ConvolveFlatMap<V, 9>(g, d.source, out, d.flat_out);
      } else {
        ConvolveFlatMap<V, 0>(g, d.source, out, d.flat_out);
      }
    } else if (g.depthwise3) {
      ConvolveMap<V, 9>(g, d.source, out);
    } else if (g.depthwise5) {
      ConvolveMap<V, 25>(g, d.source, out);
    } else {
      ConvolveMap<V, 0>(g, d.source, out);
    }
  }
}

}  // namespace onnxserve::grouped

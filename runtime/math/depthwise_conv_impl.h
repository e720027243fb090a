// The depthwise convolution written once over a vector type V, which each ISA's file defines in its own
// anonymous namespace and instantiates ConvolvePlane<V> with. Everything here is a template on V, so each
// instantiation is private to the file that made it and no copy compiled for one ISA can stand in for
// another's (see depthwise_conv_kernels.h). V provides:
//   using T (the register type); kLanes;
//   Broadcast(float), Zero(), Load(p), Store(p, v), LoadPartial(p, n), StorePartial(p, v, n) (n < kLanes
//   lanes, the rest of memory untouched), MulAdd(a, b, c) = a * b + c, Add(a, b), Max(a, b) (b when either
//   is NaN), LoadEvens(p) (p[0], p[2], ..., p[2 * kLanes - 2], reading p[0, 2 * kLanes)).
#pragma once

#include <cstdint>

#include "runtime/math/depthwise_conv_kernels.h"

namespace onnxserve::depthwise {

// dst[j] = src[j * stride] for j in [0, n), reading nothing past src[(n - 1) * stride].
template <class V>
void GatherColumns(const float* src, int64_t stride, int64_t n, float* dst) {
  constexpr int kLanes = V::kLanes;
  int64_t j = 0;
  if (stride == 1) {
    for (; j + kLanes <= n; j += kLanes) V::Store(dst + j, V::Load(src + j));
  } else if (stride == 2) {
    // LoadEvens reads one float past its last even one: stop while that is still inside the row.
    for (; j + kLanes < n; j += kLanes) V::Store(dst + j, V::LoadEvens(src + 2 * j));
  }
  for (; j < n; ++j) dst[j] = src[j * stride];
}

template <class V>
void Fill(float* dst, int64_t n, float value) {
  constexpr int kLanes = V::kLanes;
  const typename V::T v = V::Broadcast(value);
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) V::Store(dst + j, v);
  for (; j < n; ++j) dst[j] = value;
}

// The zero-padded plane, split into column phases (PlaneGeometry).
template <class V>
void FillSource(const PlaneGeometry& g, const float* x, float* source) {
  const int64_t s = g.stride_w;
  for (int64_t p = 0; p < s; ++p) {
    // Phase columns [begin, end) come from the image: padded column j * s + p is image column
    // j * s + p - pad_left.
    int64_t begin = g.pad_left > p ? (g.pad_left - p + s - 1) / s : 0;
    begin = begin > g.row_stride ? g.row_stride : begin;
    const int64_t image_end = g.pad_left + g.in_w - p;
    int64_t end = image_end > 0 ? (image_end + s - 1) / s : 0;
    end = end < begin ? begin : end > g.row_stride ? g.row_stride : end;
    for (int64_t r = 0; r < g.rows; ++r) {
      float* dst = source + (p * g.rows + r) * g.row_stride;
      const int64_t ih = r - g.pad_top;
      if (ih < 0 || ih >= g.in_h || begin == end) {
        Fill<V>(dst, g.row_stride, 0.0f);
        continue;
      }
      Fill<V>(dst, begin, 0.0f);
      GatherColumns<V>(x + ih * g.in_w + begin * s + p - g.pad_left, s, end - begin, dst + begin);
      Fill<V>(dst + end, g.row_stride - end, 0.0f);
    }
  }
}

// Output elements [ow, ow + kVectors * kLanes) of one row, `lanes` of them stored (all but the last vector
// full): bias, each tap in kernel order, Z, then Relu. kTaps 0: g.taps, not unrolled.
template <class V, int kTaps, int kVectors>
void ConvolveVectors(const PlaneGeometry& g, const float* source_row, const float* w, typename V::T bias,
                     const float* z_row, bool relu, float* y_row, int64_t ow, int64_t lanes) {
  using T = typename V::T;
  constexpr int kLanes = V::kLanes;
  T acc[kVectors];
#pragma GCC unroll 4
  for (int v = 0; v < kVectors; ++v) acc[v] = bias;
  const int64_t taps = kTaps > 0 ? kTaps : g.taps;
  const float* src = source_row + ow;
#pragma GCC unroll 25
  for (int64_t t = 0; t < taps; ++t) {
    const T weight = V::Broadcast(w[t]);
    const float* tap = src + g.tap_offsets[t];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) acc[v] = V::MulAdd(weight, V::Load(tap + v * kLanes), acc[v]);
  }
#pragma GCC unroll 4
  for (int v = 0; v < kVectors; ++v) {
    const int64_t column = ow + v * kLanes, left = lanes - v * kLanes;
    const bool full = left >= kLanes;
    if (z_row != nullptr) {
      acc[v] = V::Add(acc[v], full ? V::Load(z_row + column) : V::LoadPartial(z_row + column, left));
    }
    if (relu) acc[v] = V::Max(V::Zero(), acc[v]);
    if (full) {
      V::Store(y_row + column, acc[v]);
    } else {
      V::StorePartial(y_row + column, acc[v], left);
    }
  }
}

// One output map from the filled source: per row, four vectors at a time (enough independent sums to
// hide the FMA latency), then single vectors, then a partial one.
template <class V, int kTaps>
void ConvolveMap(const PlaneGeometry& g, const float* source, const float* w, float bias, const float* z,
                 bool relu, float* y) {
  constexpr int kLanes = V::kLanes;
  const typename V::T bias_vector = V::Broadcast(bias);
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    const float* source_row = source + oh * g.stride_h * g.row_stride;
    const float* z_row = z != nullptr ? z + oh * g.out_w : nullptr;
    float* y_row = y + oh * g.out_w;
    int64_t ow = 0;
    for (; ow + 4 * kLanes <= g.out_w; ow += 4 * kLanes) {
      ConvolveVectors<V, kTaps, 4>(g, source_row, w, bias_vector, z_row, relu, y_row, ow, 4 * kLanes);
    }
    for (; ow < g.out_w; ow += kLanes) {
      const int64_t lanes = g.out_w - ow < kLanes ? g.out_w - ow : kLanes;
      ConvolveVectors<V, kTaps, 1>(g, source_row, w, bias_vector, z_row, relu, y_row, ow, lanes);
    }
  }
}

template <class V>
void ConvolvePlane(const PlaneGeometry& g, const PlaneData& d) {
  FillSource<V>(g, d.x, d.source);
  const int64_t map_size = g.out_h * g.out_w;
  for (int64_t m = 0; m < g.multiplier; ++m) {
    const float* w = d.w + m * g.taps;
    const float bias = d.bias != nullptr ? d.bias[m] : 0.0f;
    const float* z = d.z != nullptr ? d.z + m * map_size : nullptr;
    float* y = d.y + m * map_size;
    if (g.square3) {
      ConvolveMap<V, 9>(g, d.source, w, bias, z, d.relu, y);
    } else if (g.square5) {
      ConvolveMap<V, 25>(g, d.source, w, bias, z, d.relu, y);
    } else {
      ConvolveMap<V, 0>(g, d.source, w, bias, z, d.relu, y);
    }
  }
}

}  // namespace onnxserve::depthwise

// The channel-blocked depthwise convolution (grouped_conv_kernels.h, BlockGeometry) written once over the
// vector type V of grouped_conv_impl.h, instantiated by each ISA's file in its own anonymous namespace.
// The transposes run on 4 x 4 tiles of SSE vectors, which every ISA's file can compile; a tile is 4
// channels x 4 pixels, so the 5-wide rows of a small map cost no more than any other.
#pragma once

#include <xmmintrin.h>

#include <cstdint>

#include "runtime/math/grouped_conv_kernels.h"

namespace onnxserve::grouped {

// Planes to pixel vectors: for pixels [0, pixels) and channels [0, channels), to(p)[c] = planes[c * plane +
// p]. Channels past the last whole 4 and pixels past the last whole 4 go one float at a time.
template <class V, class To>
void PlanesToPixels(const float* planes, int64_t plane, int64_t pixels, int64_t channels, To to) {
  const int64_t whole_channels = channels / 4 * 4, whole_pixels = pixels / 4 * 4;
  for (int64_t p = 0; p < whole_pixels; p += 4) {
    float* const rows[4] = {to(p), to(p + 1), to(p + 2), to(p + 3)};
    for (int64_t c = 0; c < whole_channels; c += 4) {
      const float* from = planes + c * plane + p;
      __m128 a = _mm_loadu_ps(from), b = _mm_loadu_ps(from + plane);
      __m128 e = _mm_loadu_ps(from + 2 * plane), f = _mm_loadu_ps(from + 3 * plane);
      _MM_TRANSPOSE4_PS(a, b, e, f);
      _mm_storeu_ps(rows[0] + c, a);
      _mm_storeu_ps(rows[1] + c, b);
      _mm_storeu_ps(rows[2] + c, e);
      _mm_storeu_ps(rows[3] + c, f);
    }
    for (int64_t c = whole_channels; c < channels; ++c) {
      for (int i = 0; i < 4; ++i) rows[i][c] = planes[c * plane + p + i];
    }
  }
  for (int64_t p = whole_pixels; p < pixels; ++p) {
    float* row = to(p);
    for (int64_t c = 0; c < channels; ++c) row[c] = planes[c * plane + p];
  }
}

// Pixel vectors back to planes: planes[c * plane + p] = vectors[p * kLanes + c] for pixels [0, pixels) and
// channels [0, channels); nothing else of the planes is written.
template <class V>
void PixelsToPlanes(const float* vectors, int64_t pixels, int64_t channels, float* planes, int64_t plane) {
  constexpr int kLanes = V::kLanes;
  const int64_t whole_channels = channels / 4 * 4, whole_pixels = pixels / 4 * 4;
  for (int64_t p = 0; p < whole_pixels; p += 4) {
    const float* from = vectors + p * kLanes;
    for (int64_t c = 0; c < whole_channels; c += 4) {
      __m128 a = _mm_loadu_ps(from + c), b = _mm_loadu_ps(from + kLanes + c);
      __m128 e = _mm_loadu_ps(from + 2 * kLanes + c), f = _mm_loadu_ps(from + 3 * kLanes + c);
      _MM_TRANSPOSE4_PS(a, b, e, f);
      float* to = planes + c * plane + p;
      _mm_storeu_ps(to, a);
      _mm_storeu_ps(to + plane, b);
      _mm_storeu_ps(to + 2 * plane, e);
      _mm_storeu_ps(to + 3 * plane, f);
    }
    for (int64_t c = whole_channels; c < channels; ++c) {
      for (int i = 0; i < 4; ++i) planes[c * plane + p + i] = from[i * kLanes + c];
    }
  }
  for (int64_t p = whole_pixels; p < pixels; ++p) {
    for (int64_t c = 0; c < channels; ++c) planes[c * plane + p] = vectors[p * kLanes + c];
  }
}

// Output pixels [first, first + kBlockPixels) of every channel of the block: bias, each tap, Z, Relu, then
// the `count` real ones to Y. Pixels past the map repeat its last (output_reads) and are not stored.
template <class V, int kTaps>
void ConvolvePixels(const BlockGeometry& g, const BlockData& d, const float* weights, typename V::T bias,
                    int64_t first, float* sums, float* z_vectors) {
  using T = typename V::T;
  constexpr int kLanes = V::kLanes;
  const int64_t taps = kTaps > 0 ? kTaps : g.taps, count = g.out_size - first < kBlockPixels ? g.out_size - first
                                                                                               : kBlockPixels;
  const float* src[kBlockPixels];
  T acc[kBlockPixels];
#pragma GCC unroll 8
  for (int p = 0; p < kBlockPixels; ++p) {
    src[p] = d.source + g.output_reads[first + p];
    acc[p] = bias;
  }
#pragma GCC unroll 25
  for (int64_t t = 0; t < taps; ++t) {
    const T weight = V::Load(weights + t * kLanes);
    const int64_t offset = g.tap_offsets[t];
#pragma GCC unroll 8
    for (int p = 0; p < kBlockPixels; ++p) acc[p] = V::MulAdd(weight, V::Load(src[p] + offset), acc[p]);
  }
  if (d.z != nullptr) {
    PlanesToPixels<V>(d.z + first, g.out_size, count, d.channels, [&](int64_t p) { return z_vectors + p * kLanes; });
  }
#pragma GCC unroll 8
  for (int p = 0; p < kBlockPixels; ++p) {
    if (d.z != nullptr && p < count) acc[p] = V::Add(acc[p], V::Load(z_vectors + p * kLanes));
    if (d.relu) acc[p] = V::Max(V::Zero(), acc[p]);
    V::Store(sums + p * kLanes, acc[p]);
  }
  PixelsToPlanes<V>(sums, count, d.channels, d.y + first, g.out_size);
}

template <class V, int kTaps>
void ConvolveChannelBlockWith(const BlockGeometry& g, const BlockData& d) {
  constexpr int kLanes = V::kLanes;
  // Each tap's weights as a vector (lane c: channel c; lanes past the block zero).
  float* weights = d.scratch;
  for (int64_t t = 0; t < g.taps; ++t) {
    for (int64_t c = 0; c < kLanes; ++c) weights[t * kLanes + c] = c < d.channels ? d.w[c * g.taps + t] : 0.0f;
  }
  float* sums = weights + g.taps * kLanes;
  float* z_vectors = sums + kBlockPixels * kLanes;
  PlanesToPixels<V>(d.x, g.in_size, g.in_size, d.channels, [&](int64_t p) { return d.source + g.input_slots[p]; });
  const typename V::T bias = d.bias != nullptr ? V::LoadPartial(d.bias, d.channels) : V::Zero();
  for (int64_t first = 0; first < g.out_size; first += kBlockPixels) {
    ConvolvePixels<V, kTaps>(g, d, weights, bias, first, sums, z_vectors);
  }
  if (d.vec != nullptr) ApplyActivation(*d.vec, d.activation, d.y, d.channels * g.out_size);
}

template <class V>
void ConvolveChannelBlock(const BlockGeometry& g, const BlockData& d) {
  if (g.depthwise3) return ConvolveChannelBlockWith<V, 9>(g, d);
  if (g.depthwise5) return ConvolveChannelBlockWith<V, 25>(g, d);
  ConvolveChannelBlockWith<V, 0>(g, d);
}

}  // namespace onnxserve::grouped

// The channel-blocked depthwise convolution (grouped_conv_kernels.h, BlockGeometry) written once over the
// vector type V of grouped_conv_impl.h, instantiated by each ISA's file in its own anonymous namespace.
// The transposes run on tiles of a vector's lanes of channels x as many pixels in the registers
// (V::Transpose: V's rows[i] lane j becomes rows[j] lane i); pixels run across a map's row ends, so the
// 5-wide rows of a small map cost no more than any other.
#pragma once

#include <cstdint>

#include "runtime/math/grouped_conv_kernels.h"

namespace onnxserve::grouped {

// 4 x 4 transposes within each 128-bit part of each four rows, the first stages of V::Transpose for
// vectors of several parts: afterwards part k of rows[4i + j] holds column 4k + j of rows 4i to 4i + 3.
// V provides InterleaveLow/High ([a0 b0 a1 b1], [a2 b2 a3 b3]) and PairsLow/High ([a0 a1 b0 b1],
// [a2 a3 b2 b3]), each in every 128-bit part.
template <class V>
void TransposeQuads(typename V::T (&rows)[V::kLanes]) {
  using T = typename V::T;
  for (int i = 0; i < V::kLanes; i += 4) {
    const T a = V::InterleaveLow(rows[i], rows[i + 1]), b = V::InterleaveHigh(rows[i], rows[i + 1]);
    const T c = V::InterleaveLow(rows[i + 2], rows[i + 3]), d = V::InterleaveHigh(rows[i + 2], rows[i + 3]);
    rows[i] = V::PairsLow(a, c);
    rows[i + 1] = V::PairsHigh(a, c);
    rows[i + 2] = V::PairsLow(b, d);
    rows[i + 3] = V::PairsHigh(b, d);
  }
}

// Channels [0, channels) of `tile`'s rows c are planes[c * plane + p0 + i] for i in [0, n); the rest zero.
template <class V>
void LoadPlaneRows(const float* planes, int64_t plane, int64_t n, int64_t channels, typename V::T (&tile)[V::kLanes]) {
  constexpr int kLanes = V::kLanes;
  if (n == kLanes && channels == kLanes) {
#pragma GCC unroll 16
    for (int c = 0; c < kLanes; ++c) tile[c] = V::Load(planes + c * plane);
    return;
  }
  for (int c = 0; c < kLanes; ++c) tile[c] = c < channels ? V::LoadPartial(planes + c * plane, n) : V::Zero();
}

// Planes to pixel vectors: for pixels [0, pixels), to(p)[c] = planes[c * plane + p] for channels [0,
// channels) and 0 for the lanes past them. A vector's lanes of pixels at a time, through a register
// transpose (V::Transpose).
template <class V, class To>
void PlanesToPixels(const float* planes, int64_t plane, int64_t pixels, int64_t channels, To to) {
  constexpr int kLanes = V::kLanes;
  typename V::T tile[kLanes];
  for (int64_t p = 0; p < pixels; p += kLanes) {
    const int64_t n = pixels - p < kLanes ? pixels - p : kLanes;
    LoadPlaneRows<V>(planes + p, plane, n, channels, tile);
    V::Transpose(tile);
#pragma GCC unroll 16
    for (int i = 0; i < kLanes; ++i) {
      if (i < n) V::Store(to(p + i), tile[i]);
    }
  }
}

// Pixel vectors back to planes: planes[c * plane + p] = vectors[p * kLanes + c] for pixels [0, pixels) and
// channels [0, channels); nothing else of the planes is written.
template <class V>
void PixelsToPlanes(const float* vectors, int64_t pixels, int64_t channels, float* planes, int64_t plane) {
  constexpr int kLanes = V::kLanes;
  typename V::T tile[kLanes];
  for (int64_t p = 0; p < pixels; p += kLanes) {
    const int64_t n = pixels - p < kLanes ? pixels - p : kLanes;
#pragma GCC unroll 16
    for (int i = 0; i < kLanes; ++i) tile[i] = i < n ? V::Load(vectors + (p + i) * kLanes) : V::Zero();
    V::Transpose(tile);
    float* to = planes + p;
    if (n == kLanes) {
#pragma GCC unroll 16
      for (int c = 0; c < kLanes; ++c) {
        if (c < channels) V::Store(to + c * plane, tile[c]);
      }
    } else {
      for (int c = 0; c < channels; ++c) V::StorePartial(to + c * plane, tile[c], n);
    }
  }
}

// Output pixels [first, first + kBlockPixels) of every channel of the block: bias, each tap, Z (`count`
// vectors, `count` the real ones), Relu, into `sums`. Pixels past the map repeat its last (output_reads).
template <class V, int kTaps>
void ConvolvePixels(const BlockGeometry& g, const float* source, const float* weights, typename V::T bias,
                    bool relu, int64_t first, const float* z_vectors, float* sums) {
  using T = typename V::T;
  constexpr int kLanes = V::kLanes;
  const int64_t taps = kTaps > 0 ? kTaps : g.taps, count = g.out_size - first < kBlockPixels ? g.out_size - first
                                                                                               : kBlockPixels;
  const float* src[kBlockPixels];
  T acc[kBlockPixels];
#pragma GCC unroll 8
  for (int p = 0; p < kBlockPixels; ++p) {
    src[p] = source + g.output_reads[first + p];
    acc[p] = bias;
  }
#pragma GCC unroll 25
  for (int64_t t = 0; t < taps; ++t) {
    const T weight = V::Load(weights + t * kLanes);
    const int64_t offset = g.tap_offsets[t];
#pragma GCC unroll 8
    for (int p = 0; p < kBlockPixels; ++p) acc[p] = V::MulAdd(weight, V::Load(src[p] + offset), acc[p]);
  }
#pragma GCC unroll 8
  for (int p = 0; p < kBlockPixels; ++p) {
    if (z_vectors != nullptr && p < count) acc[p] = V::Add(acc[p], V::Load(z_vectors + p * kLanes));
    if (relu) acc[p] = V::Max(V::Zero(), acc[p]);
    V::Store(sums + p * kLanes, acc[p]);
  }
}

template <class V, int kTaps>
void ConvolveChannelBlockWith(const BlockGeometry& g, const BlockData& d) {
  constexpr int kLanes = V::kLanes;
  // Outputs are transposed back a chunk at a time: a whole transpose tile, and whole steps of pixels.
  constexpr int kChunk = kLanes > kBlockPixels ? kLanes : kBlockPixels;
  static_assert(kChunk % kLanes == 0 && kChunk % kBlockPixels == 0 && kChunk <= kMaxLanes);
  // Each tap's weights as a vector (lane c: channel c; lanes past the block zero).
  float* weights = d.scratch;
  PlanesToPixels<V>(d.w, g.taps, g.taps, d.channels, [&](int64_t t) { return weights + t * kLanes; });
  float* sums = weights + g.taps * kLanes;
  float* z_vectors = sums + kChunk * kLanes;
  PlanesToPixels<V>(d.x, g.in_size, g.in_size, d.channels, [&](int64_t p) { return d.source + g.input_slots[p]; });
  const typename V::T bias = d.bias != nullptr ? V::LoadPartial(d.bias, d.channels) : V::Zero();
  for (int64_t first = 0; first < g.out_size; first += kChunk) {
    const int64_t count = g.out_size - first < kChunk ? g.out_size - first : kChunk;
    if (d.z != nullptr) {
      PlanesToPixels<V>(d.z + first, g.out_size, count, d.channels, [&](int64_t p) { return z_vectors + p * kLanes; });
    }
    for (int64_t step = 0; step < count; step += kBlockPixels) {
      ConvolvePixels<V, kTaps>(g, d.source, weights, bias, d.relu, first + step,
                               d.z != nullptr ? z_vectors + step * kLanes : nullptr, sums + step * kLanes);
    }
    PixelsToPlanes<V>(sums, count, d.channels, d.y + first, g.out_size);
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

// 3x3 convolutions at stride 1 by Winograd's minimal filtering, F(2x2, 3x3) (Lavin & Gray, "Fast
// Algorithms for Convolutional Neural Networks", 2016): each 2x2 block of output pixels (a tile) of a map
// is computed from the 4x4 input patch under it with 16 multiplies per (channel, map) pair where the
// direct convolution needs 36. The input patches and the weights are transformed into 16 planes each;
// the products are then 16 GEMMs, [maps x channels] * [channels x tiles], on the packed micro-kernels;
// the inverse transform turns their 16 planes back into 2x2 tiles, adding bias and Z and applying the
// activation.
//
// Why ours: oneDNN's Winograd kernels are AVX-512 only (nhwc_conv.cc runs them there), and on AVX2 its
// direct convolution reaches about 113 GFLOP/s on ResNet's 3x3s (85% of the FMA peak). Why F(2x2, 3x3):
// its transforms add and subtract only (and halve the weights), so results stay within a few roundings
// of the direct convolution's; F(4x4, 3x3) needs fewer multiplies still but was measured 1.5e-4 off
// relative to the value on a 32-channel 3x3, past what the convolution tests allow.
//
// The transformed weights are 16/9 the size of the plain ones and every image streams them whole:
// Winograd pays where the maps have enough pixels to spread that over (kMinWinogradPixels).
//
// A pass (some rows of tiles) goes through three phases, each over another axis: channels (the input
// transform), planes (the GEMMs) and maps (the inverse). Split over threads phase by phase, each thread
// reads only its planes' weights, but half of every phase's input was written by the other core. Where the
// weights are no heavier than the image's X and Y (ResNet's 56x56 maps of 64 channels), passes are made
// small and each runs whole on one thread instead: every thread streams all the weights, from its L2, and
// its rows of X and Y stay where the layers before and after split them; such passes come in an even number,
// of rows that differ by one at most, so that two threads take the same share. Pass sizes follow from the
// shape alone, so the thread count never changes a bit of Y.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "runtime/core/thread_pool.h"
#include "runtime/math/activation.h"
#include "runtime/math/conv_shape.h"
#include "runtime/math/packed_gemm.h"

namespace onnxserve {

// Output pixels per image from which Conv runs a 3x3 at stride 1 through Winograd. In light_resnet50 on
// one AVX2 thread, against oneDNN's direct kernel (weights cold, as in any model of many layers): 56x56
// maps of 64 channels 1.81-1.85 -> 1.33-1.57 ms, 28x28 of 128 1.82 -> 1.18-1.24, 14x14 of 256 1.88 ->
// 1.25-1.33, 7x7 of 512 2.34 -> 2.85 (slower: 16 tiles cannot carry 16 MB of transformed weights).
inline constexpr int64_t kMinWinogradPixels = 14 * 14;

// Whether Conv runs 3x3s through Winograd3x3 here: on AVX2. On AVX-512 the maps that pay go channels-last
// to oneDNN's own Winograd kernel, and on NCHW maps this one lost to oneDNN's direct kernel at two threads
// (56x56 of 64 channels: 701 against 558 us), whose GEMMs there are twice as fast while the transforms
// are not.
bool WinogradConvolutionsWin();

struct WinogradEpilogue {
  const float* bias = nullptr;  // [maps], or null
  const float* z = nullptr;     // Y's shape, added before the activation, or null
  Activation activation;
};

class Winograd3x3 {
 public:
  // Weights [maps, channels, 3, 3]; kept by pointer until the first Run transforms them.
  Winograd3x3(const float* w, int64_t maps, int64_t channels) : w_(w), maps_(maps), channels_(channels) {}

  // Whether Run takes `shape`: one row of its tiles fits a pass's bounded buffers.
  bool Fits(const ConvShape2D& shape) const;

  // Y = activation(conv(X, W) + bias + Z), X and Y NCHW, for a shape at stride 1 and dilation 1 that Fits
  // (the pads after the image are not read: windows past it read zeros). Only where PackedGemmSupported().
  // False, Y partly written, where a result came out infinite or NaN: the transforms' sums of huge or
  // infinite inputs overflow where the direct convolution's need not, so the caller computes Y that way.
  // Splits over `pool`; throws RunStopped when the run ends between its phases.
  [[nodiscard]] bool Run(const ConvShape2D& shape, const float* x, const WinogradEpilogue& epilogue, float* y,
                         ThreadPool& pool) const;

 private:
  const std::vector<PackedRows>& TransformedWeights() const;
  // Whether passes run whole on one thread each, spread over the pool (else each phase is split).
  bool SpreadsPasses(const ConvShape2D& shape) const;
  // Tile rows [first_row, first_row + rows) of one image: transform, multiply, transform back, each phase
  // split over `pool` (null: on the calling thread); false as Run.
  bool RunTileRows(const ConvShape2D& shape, const float* x, int64_t first_row, int64_t rows,
                   const WinogradEpilogue& epilogue, float* y, ThreadPool* pool) const;

  const float* w_;
  const int64_t maps_, channels_;
  mutable std::once_flag transformed_once_;
  mutable std::vector<PackedRows> u_;  // 16 planes of [maps x channels], G g G^T of each (map, channel)
};

}  // namespace onnxserve

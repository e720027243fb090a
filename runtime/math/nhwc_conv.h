// Convolutions in channels-last (NHWC) on oneDNN, for chains of them that the channels-last pass
// (runtime/passes/channels_last.cc) keeps in NHWC from one to the next.
//
// oneDNN 2.6 runs its direct convolutions (brgconv on AVX-512, jit on AVX2) on NHWC maps without packing
// anything per call and without the reorders our NCHW path pays around them: one thread of AVX-512 runs a
// 1x1 of 256 x 56 x 56 -> 64 at 258 GFLOP/s against our packed GEMM's 209, a depthwise 3x3 of
// 144 x 56 x 56 at 104 against our 51 (docs/benchmarks.md). Its blocked layouts (nChw8c, nChw16c) were
// measured too and lost to NHWC on both ISAs once a model's squeeze-excite scales had to broadcast in them.
//
// As dnnl_conv.h explains, oneDNN runs on one thread per call and the parallelism is ours: each image's
// output rows are cut into bands, one primitive each, shared out over the pool and bounded in work so
// StopIfRunEnded is reached between them. A band of rows is dense in NHWC, so bands need no copies, except
// for a large dense 3x3 at stride 1 on AVX-512: oneDNN's Winograd kernel runs it about twice as fast as the
// direct one, in its blocked layout, and the band's window is reordered into that and back.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "runtime/core/thread_pool.h"
#include "runtime/math/activation.h"
#include "runtime/math/conv_shape.h"

namespace onnxserve {

// Whether NhwcConv runs here: oneDNN is built in and the CPU has AVX2 or AVX-512 (else the pass keeps
// every graph in NCHW).
bool NhwcConvAvailable();

// Whether oneDNN's dense (one-group) convolutions in NHWC beat our packed GEMM in NCHW here: on AVX-512
// (brgconv) they do; on AVX2 its jit kernels only tie ours in a ResNet, and only its depthwise ones win.
bool NhwcDenseConvsWin();

// [batch, channels, pixels] <-> [batch, pixels, channels], split over `pool`.
void NchwToNhwc(int64_t batch, int64_t channels, int64_t pixels, const float* x, float* y, ThreadPool& pool);
void NhwcToNchw(int64_t batch, int64_t channels, int64_t pixels, const float* x, float* y, ThreadPool& pool);

// The weights' dims, [maps, channels / groups, kernel_h, kernel_w]: one group, or depthwise (one channel
// and one map per group).
struct NhwcConvWeights {
  int64_t maps = 0, channels = 0, kernel_h = 0, kernel_w = 0;
  bool depthwise = false;
};

// A pointwise convolution (1x1, stride 1, no pads, one group) into a depthwise one, as MobileNet blocks
// expand their maps before filtering them: X' = activation(conv(X, W') + bias'), of the depthwise
// convolution's channels. Computed into each band's window of X' just before the band reads it, X' never
// goes to memory whole: MobileNet's 16 -> 96 maps of 112 x 112 take 4.8 MB, written and read back from
// memory otherwise.
struct NhwcPrologue {
  int64_t channels = 0;  // of X
  Activation activation;
};

class NhwcConv {
 public:
  // The convolution of weights of `dims`, Y = activation(conv(X, W) + bias [+ Z when `has_z`]); null
  // unless NhwcConvAvailable(). With a `prologue` it runs TryRunWithPrologue, else TryRun.
  static std::unique_ptr<NhwcConv> Create(const NhwcConvWeights& dims, bool has_z, const Activation& activation,
                                          std::optional<NhwcPrologue> prologue = std::nullopt);
  virtual ~NhwcConv() = default;

  // Runs one call, X [batch, in_h, in_w, channels] and Y [batch, out_h, out_w, maps], W being the weights of
  // Create's dims as given at load (reordered once per input shape,
  // on its first call); Z, of Y's shape, is read when Create was told it is there, and may be Y itself (each
  // band reads its part of Z before it writes that part of Y). False when it does not run this shape (pads
  // oneDNN refuses, a shape it has only its reference code for, too many shapes already), Y untouched, or
  // when oneDNN's Winograd kernel (never given a Z) overflowed on huge or infinite inputs, Y partly
  // written: the caller runs it another way then. Throws RunStopped when the run ends between bands.
  virtual absl::StatusOr<bool> TryRun(const ConvShape2D& shape, const float* x, const float* w,
                                      const float* bias, const float* z, float* y, ThreadPool& pool) const = 0;

  // As TryRun on X' = the prologue of X [batch, in_h, in_w, prologue channels] with its weights `w_pre`
  // [channels, prologue channels, 1, 1] and `bias_pre` (null: none). Also false where X' of one image is
  // small enough to stay in cache whole (kMinPrologueBytes): computing each band's window of it costs the
  // rows that windows share, for nothing there.
  virtual absl::StatusOr<bool> TryRunWithPrologue(const ConvShape2D& shape, const float* x, const float* w_pre,
                                                  const float* bias_pre, const float* w, const float* bias,
                                                  const float* z, float* y, ThreadPool& pool) const = 0;
};

}  // namespace onnxserve

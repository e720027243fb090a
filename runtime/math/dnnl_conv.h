// 2-D float convolutions of one group with a kernel larger than 1x1 and at least 128 multiply-adds per
// output (ResNet's 3x3s and 7x7/2 stem) on oneDNN's direct JIT convolution, which beats im2col + packed
// GEMM on them on both ISA paths even with the reorders to and from its blocked layout timed
// (benchmarks/conv_libraries_benchmark.cc; the table is in docs/benchmarks.md). 1x1, grouped and
// depthwise convolutions and shallow stems stay on our kernels, which win there.
//
// oneDNN (Debian's libdnnl 2.6) threads with OpenMP, which cannot run on our pool. So every call of it
// runs on one thread (omp_set_num_threads(1) on the thread that calls it: no OpenMP thread is ever
// started, none is left spinning), and the parallelism is ours: the output rows are cut into bands, each
// band one oneDNN primitive over the input rows it reads (with the rows of padding it needs), its own
// reorders in and out, and the bands share out over the pool. Bands are also bounded in work, so
// StopIfRunEnded is reached between them whatever the image size.
//
// Built without oneDNN (dnnl_conv_none.cc), Create returns null and Conv keeps its own kernels.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "runtime/core/thread_pool.h"
#include "runtime/math/activation.h"
#include "runtime/math/conv_shape.h"

namespace onnxserve {

// The weights' dims, [maps, channels, kernel_h, kernel_w].
struct DnnlConvWeights {
  int64_t maps = 0, channels = 0, kernel_h = 0, kernel_w = 0;
};

class DnnlConv {
 public:
  // The convolution of weights of `dims`, or null when oneDNN is not built in, the CPU has no AVX2, W has
  // no maps, or the convolution is not one it runs better: 1x1, or fewer than 128 multiply-adds per output
  // (MobileNet's and the keyword spotter's stems).
  static std::unique_ptr<DnnlConv> Create(const DnnlConvWeights& dims);
  virtual ~DnnlConv() = default;

  // Y = activation(conv(X, W) + bias) (bias may be null) on `pool`'s threads, W being the weights of
  // Create's dims as given at load (reordered once per input shape, on its first call). X is NCHW; the
  // pads after the image are not read (they follow from the output size). False, Y
  // untouched, when it does not run this shape (pads past the kernel, too many shapes already, a row of
  // output too much work for one band); the caller's kernel runs it then. Throws RunStopped when the run
  // ends between bands.
  virtual absl::StatusOr<bool> TryRun(const ConvShape2D& shape, const float* x, const float* w, const float* bias,
                                      const Activation& activation, float* y, ThreadPool& pool) const = 0;
};

}  // namespace onnxserve

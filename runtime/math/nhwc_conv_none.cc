// Built without oneDNN: no NHWC convolution runs, and the pass keeps every graph in NCHW. The layout changes
// still work (their ops' kernels are registered whatever the build), on plain loops.
#include "runtime/math/nhwc_conv.h"

namespace onnxserve {

bool NhwcConvAvailable() { return false; }
bool NhwcDenseConvsWin() { return false; }

void NchwToNhwc(int64_t batch, int64_t channels, int64_t pixels, const float* x, float* y, ThreadPool& pool) {
  pool.ParallelFor(batch * pixels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t n = i / pixels, p = i % pixels;
      for (int64_t c = 0; c < channels; ++c) y[i * channels + c] = x[(n * channels + c) * pixels + p];
    }
  });
}

void NhwcToNchw(int64_t batch, int64_t channels, int64_t pixels, const float* x, float* y, ThreadPool& pool) {
  pool.ParallelFor(batch * pixels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t n = i / pixels, p = i % pixels;
      for (int64_t c = 0; c < channels; ++c) y[(n * channels + c) * pixels + p] = x[i * channels + c];
    }
  });
}

std::unique_ptr<NhwcConv> NhwcConv::Create(const NhwcConvWeights&, bool, const Activation&) { return nullptr; }

}  // namespace onnxserve

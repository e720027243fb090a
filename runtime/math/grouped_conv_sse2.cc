// The grouped convolution in SSE2, which every x86-64 CPU has: four output columns per xmm vector, a
// multiply and an add where the others fuse them.
#include <emmintrin.h>

#include "runtime/math/grouped_conv_blocked_impl.h"
#include "runtime/math/grouped_conv_impl.h"

namespace onnxserve::grouped {
namespace {

struct Sse2 {
  using T = __m128;
  static constexpr int kLanes = 4;

  static T Broadcast(float v) { return _mm_set1_ps(v); }
  static T Zero() { return _mm_setzero_ps(); }
  static T Load(const float* p) { return _mm_loadu_ps(p); }
  static void Store(float* p, T v) { _mm_storeu_ps(p, v); }
  static T LoadPartial(const float* p, int64_t n) {
    alignas(16) float lanes[kLanes] = {};
    for (int64_t i = 0; i < n; ++i) lanes[i] = p[i];
    return _mm_load_ps(lanes);
  }
  static void StorePartial(float* p, T v, int64_t n) {
    alignas(16) float lanes[kLanes];
    _mm_store_ps(lanes, v);
    for (int64_t i = 0; i < n; ++i) p[i] = lanes[i];
  }
  static T MulAdd(T a, T b, T c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
  static T Add(T a, T b) { return _mm_add_ps(a, b); }
  static T Max(T a, T b) { return _mm_max_ps(a, b); }
  static T Evens(T a, T b) { return _mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)); }
  static void Transpose(T (&rows)[kLanes]) { _MM_TRANSPOSE4_PS(rows[0], rows[1], rows[2], rows[3]); }
};

}  // namespace

const Kernels kBaselineKernels = {.convolve_group = ConvolveGroup<Sse2>,
                                  .convolve_channel_block = ConvolveChannelBlock<Sse2>};

}  // namespace onnxserve::grouped

// The grouped convolution in AVX-512F: sixteen output columns per zmm vector.
#include <immintrin.h>

#include "runtime/math/grouped_conv_blocked_impl.h"
#include "runtime/math/grouped_conv_impl.h"

namespace onnxserve::grouped {
namespace {

struct Avx512 {
  using T = __m512;
  static constexpr int kLanes = 16;

  // Lanes [0, n) set, 0 <= n <= 16.
  static __mmask16 Mask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1); }
  static T Broadcast(float v) { return _mm512_set1_ps(v); }
  static T Zero() { return _mm512_setzero_ps(); }
  static T Load(const float* p) { return _mm512_loadu_ps(p); }
  static void Store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static T LoadPartial(const float* p, int64_t n) { return _mm512_maskz_loadu_ps(Mask(n), p); }
  static void StorePartial(float* p, T v, int64_t n) { _mm512_mask_storeu_ps(p, Mask(n), v); }
  static T MulAdd(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T Add(T a, T b) { return _mm512_add_ps(a, b); }
  // The masked form: the unmasked intrinsic trips g++ 12's -Wmaybe-uninitialized (packed_gemm_avx512.cc).
  static T Max(T a, T b) { return _mm512_maskz_max_ps(__mmask16(0xFFFF), a, b); }
  static T Evens(T a, T b) {
    const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    return _mm512_permutex2var_ps(a, evens, b);
  }
};

}  // namespace

const Kernels kAvx512Kernels = {.convolve_group = ConvolveGroup<Avx512>,
                                .convolve_channel_block = ConvolveChannelBlock<Avx512>};

}  // namespace onnxserve::grouped

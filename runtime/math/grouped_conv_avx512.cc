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
  // The shuffles below take the masked forms for the reason Max does.
  static constexpr __mmask16 kAll = 0xFFFF;
  // [a0 b0 a1 b1] and [a2 b2 a3 b3] in each 128-bit quarter.
  static T InterleaveLow(T a, T b) { return _mm512_maskz_unpacklo_ps(kAll, a, b); }
  static T InterleaveHigh(T a, T b) { return _mm512_maskz_unpackhi_ps(kAll, a, b); }
  // The even / odd 64-bit pairs of a and b, interleaved in each 128-bit quarter.
  static T PairsLow(T a, T b) {
    return _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xFF, _mm512_castps_pd(a), _mm512_castps_pd(b)));
  }
  static T PairsHigh(T a, T b) {
    return _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xFF, _mm512_castps_pd(a), _mm512_castps_pd(b)));
  }
  // After TransposeQuads, quarter k of rows[4i + j] holds column 4k + j of rows 4i to 4i + 3; quarters k
  // of rows[j], rows[4 + j], rows[8 + j] and rows[12 + j] form column 4k + j, in two rounds of 128-bit
  // shuffles.
  static void Transpose(T (&rows)[kLanes]) {
    TransposeQuads<Avx512>(rows);
    T columns[kLanes];
    for (int j = 0; j < 4; ++j) {
      // [quarters 0, 1 of rows[j], of rows[4 + j]] and the same of quarters 2, 3; likewise rows 8-15.
      const T low01 = _mm512_maskz_shuffle_f32x4(kAll, rows[j], rows[4 + j], 0x44);
      const T low23 = _mm512_maskz_shuffle_f32x4(kAll, rows[j], rows[4 + j], 0xEE);
      const T high01 = _mm512_maskz_shuffle_f32x4(kAll, rows[8 + j], rows[12 + j], 0x44);
      const T high23 = _mm512_maskz_shuffle_f32x4(kAll, rows[8 + j], rows[12 + j], 0xEE);
      columns[j] = _mm512_maskz_shuffle_f32x4(kAll, low01, high01, 0x88);
      columns[4 + j] = _mm512_maskz_shuffle_f32x4(kAll, low01, high01, 0xDD);
      columns[8 + j] = _mm512_maskz_shuffle_f32x4(kAll, low23, high23, 0x88);
      columns[12 + j] = _mm512_maskz_shuffle_f32x4(kAll, low23, high23, 0xDD);
    }
    for (int i = 0; i < kLanes; ++i) rows[i] = columns[i];
  }
};

}  // namespace

const Kernels kAvx512Kernels = {.convolve_group = ConvolveGroup<Avx512>,
                                .convolve_channel_block = ConvolveChannelBlock<Avx512>};

}  // namespace onnxserve::grouped

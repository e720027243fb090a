// The grouped convolution in AVX2 + FMA: eight output columns per ymm vector.
#include <immintrin.h>

#include "runtime/math/grouped_conv_blocked_impl.h"
#include "runtime/math/grouped_conv_impl.h"

namespace onnxserve::grouped {
namespace {

struct Avx2 {
  using T = __m256;
  static constexpr int kLanes = 8;

  // Lanes [0, n) set, 0 <= n <= 8.
  static __m256i Mask(int64_t n) {
    static const int32_t kTable[2 * kLanes] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kTable + kLanes - n));
  }
  static T Broadcast(float v) { return _mm256_set1_ps(v); }
  static T Zero() { return _mm256_setzero_ps(); }
  static T Load(const float* p) { return _mm256_loadu_ps(p); }
  static void Store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static T LoadPartial(const float* p, int64_t n) { return _mm256_maskload_ps(p, Mask(n)); }
  static void StorePartial(float* p, T v, int64_t n) { _mm256_maskstore_ps(p, Mask(n), v); }
  static T MulAdd(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T Add(T a, T b) { return _mm256_add_ps(a, b); }
  static T Max(T a, T b) { return _mm256_max_ps(a, b); }
  // [a0 b0 a1 b1] and [a2 b2 a3 b3] in each 128-bit half.
  static T InterleaveLow(T a, T b) { return _mm256_unpacklo_ps(a, b); }
  static T InterleaveHigh(T a, T b) { return _mm256_unpackhi_ps(a, b); }
  // The even / odd 64-bit pairs of a and b, interleaved in each 128-bit half.
  static T PairsLow(T a, T b) {
    return _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(a), _mm256_castps_pd(b)));
  }
  static T PairsHigh(T a, T b) {
    return _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(a), _mm256_castps_pd(b)));
  }
  static T Evens(T a, T b) {
    // [a0 a2 b0 b2 | a4 a6 b4 b6], then the middle 64-bit pairs swap places.
    const T evens = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(evens), _MM_SHUFFLE(3, 1, 2, 0)));
  }
  // After TransposeQuads, half k of rows[4i + j] holds column 4k + j of rows 4i to 4i + 3; then rows 0-3's
  // half k and rows 4-7's form column 4k + j.
  static void Transpose(T (&rows)[kLanes]) {
    TransposeQuads<Avx2>(rows);
    T columns[kLanes];
    for (int j = 0; j < 4; ++j) {
      columns[j] = _mm256_permute2f128_ps(rows[j], rows[4 + j], 0x20);
      columns[4 + j] = _mm256_permute2f128_ps(rows[j], rows[4 + j], 0x31);
    }
    for (int i = 0; i < kLanes; ++i) rows[i] = columns[i];
  }
};

}  // namespace

const Kernels kAvx2Kernels = {.convolve_group = ConvolveGroup<Avx2>,
                              .convolve_channel_block = ConvolveChannelBlock<Avx2>};

}  // namespace onnxserve::grouped

// AVX2 + FMA implementation of vector_kernels.h: the vocabulary of vector_kernels_simd.inc on 8-float ymm
// registers. Compiled with -mavx2 -mfma and only reached through Kernels() after the CPU check.
#include <immintrin.h>

#include "runtime/math/vector_kernels.h"

namespace onnxserve::vec {
namespace {

using V = __m256;
using M = __m256;
constexpr int64_t kLanes = 8;

// Lanes [0, r) set, r in [0, 8].
__m256i LaneMask(int64_t r) {
  static const int32_t kTable[2 * kLanes] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kTable + kLanes - r));
}

V Load(const float* p) { return _mm256_loadu_ps(p); }
V LoadPartial(const float* p, int64_t r) { return _mm256_maskload_ps(p, LaneMask(r)); }
void Store(float* p, V v) { _mm256_storeu_ps(p, v); }
void StorePartial(float* p, V v, int64_t r) { _mm256_maskstore_ps(p, LaneMask(r), v); }
M TailMask(int64_t r) { return _mm256_castsi256_ps(LaneMask(r)); }

V Set1(float v) { return _mm256_set1_ps(v); }
V Add(V a, V b) { return _mm256_add_ps(a, b); }
V Sub(V a, V b) { return _mm256_sub_ps(a, b); }
V Mul(V a, V b) { return _mm256_mul_ps(a, b); }
V Div(V a, V b) { return _mm256_div_ps(a, b); }
V Sqrt(V a) { return _mm256_sqrt_ps(a); }
V Fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
V Max(V a, V b) { return _mm256_max_ps(a, b); }
V Min(V a, V b) { return _mm256_min_ps(a, b); }
M Less(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
M Greater(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
V Select(M m, V if_set, V if_clear) { return _mm256_blendv_ps(if_clear, if_set, m); }
V Abs(V a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
V SignBit(V a) { return _mm256_and_ps(_mm256_set1_ps(-0.0f), a); }
V Or(V a, V b) { return _mm256_or_ps(a, b); }
V Round(V a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }

V Pow2(V n) {
  const __m256i biased = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
  return _mm256_castsi256_ps(_mm256_slli_epi32(biased, 23));
}

float ReduceAdd(V v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

float ReduceMax(V v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
}

// shuffle_ps takes lanes 0 and 2 of each 128-bit half of both loads; the 64-bit permute puts the halves
// back in order.
V LoadEvens(const float* p) {
  const V mixed = _mm256_shuffle_ps(Load(p), Load(p + kLanes), _MM_SHUFFLE(2, 0, 2, 0));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(mixed), _MM_SHUFFLE(3, 1, 2, 0)));
}

#include "runtime/math/vector_kernels_simd.inc"

}  // namespace

const VectorKernels kAvx2Kernels = kTable;

}  // namespace onnxserve::vec

// AVX-512F implementation of vector_kernels.h: the vocabulary of vector_kernels_simd.inc on 16-float zmm
// registers and mask registers, mirroring vector_kernels_avx2.cc. Compiled with -mavx512f and only
// reached through Kernels() after the CPU check. Only AVX-512F instructions: bitwise float operations go
// through the integer forms (the float ones need AVX-512DQ).
#include <immintrin.h>

#include "runtime/math/vector_kernels.h"

// g++ 12's AVX-512 intrinsics pass an uninitialized "undefined" vector as the unused merge operand of their
// unmasked forms (max, sqrt, roundscale, extract), which -Wmaybe-uninitialized reports at every use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace onnxserve::vec {
namespace {

using V = __m512;
using M = __mmask16;
constexpr int64_t kLanes = 16;

M TailMask(int64_t r) { return static_cast<M>((1u << r) - 1u); }

V Load(const float* p) { return _mm512_loadu_ps(p); }
V LoadPartial(const float* p, int64_t r) { return _mm512_maskz_loadu_ps(TailMask(r), p); }
void Store(float* p, V v) { _mm512_storeu_ps(p, v); }
void StorePartial(float* p, V v, int64_t r) { _mm512_mask_storeu_ps(p, TailMask(r), v); }

V Set1(float v) { return _mm512_set1_ps(v); }
V Add(V a, V b) { return _mm512_add_ps(a, b); }
V Sub(V a, V b) { return _mm512_sub_ps(a, b); }
V Mul(V a, V b) { return _mm512_mul_ps(a, b); }
V Div(V a, V b) { return _mm512_div_ps(a, b); }
V Sqrt(V a) { return _mm512_sqrt_ps(a); }
V Fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
V Max(V a, V b) { return _mm512_max_ps(a, b); }
V Min(V a, V b) { return _mm512_min_ps(a, b); }
M Less(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
M Greater(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
V Select(M m, V if_set, V if_clear) { return _mm512_mask_blend_ps(m, if_clear, if_set); }

__m512i Bits(V a) { return _mm512_castps_si512(a); }
V Abs(V a) { return _mm512_castsi512_ps(_mm512_and_si512(Bits(a), _mm512_set1_epi32(0x7fffffff))); }
V SignBit(V a) {
  return _mm512_castsi512_ps(_mm512_and_si512(Bits(a), _mm512_set1_epi32(static_cast<int>(0x80000000u))));
}
V Or(V a, V b) { return _mm512_castsi512_ps(_mm512_or_si512(Bits(a), Bits(b))); }
V Round(V a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }

V Pow2(V n) {
  const __m512i biased = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
  return _mm512_castsi512_ps(_mm512_slli_epi32(biased, 23));
}

float ReduceAdd(V v) { return _mm512_reduce_add_ps(v); }
float ReduceMax(V v) { return _mm512_reduce_max_ps(v); }

V LoadEvens(const float* p) {
  const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  return _mm512_permutex2var_ps(Load(p), evens, Load(p + kLanes));
}

#include "runtime/math/vector_kernels_simd.inc"

}  // namespace

const VectorKernels kAvx512Kernels = kTable;

}  // namespace onnxserve::vec

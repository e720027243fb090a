// The portable implementation of vector_kernels.h: the vocabulary of vector_kernels_simd.inc on single
// floats (one lane), so every ISA runs the same algorithms; the compiler may still vectorize the loops
// for the build's baseline (SSE2 on x86-64).
#include "runtime/math/vector_kernels.h"

namespace onnxserve::vec {
namespace {

using V = float;
using M = bool;
constexpr int64_t kLanes = 1;

uint32_t Bits(float v) { return __builtin_bit_cast(uint32_t, v); }
float FromBits(uint32_t b) { return __builtin_bit_cast(float, b); }

// With one lane there is never a partial vector; these exist for the shared code to compile.
V Load(const float* p) { return *p; }
V LoadPartial(const float* p, int64_t) { return *p; }
void Store(float* p, V v) { *p = v; }
void StorePartial(float* p, V v, int64_t) { *p = v; }
M TailMask(int64_t r) { return r > 0; }

V Set1(float v) { return v; }
V Add(V a, V b) { return a + b; }
V Sub(V a, V b) { return a - b; }
V Mul(V a, V b) { return a * b; }
V Div(V a, V b) { return a / b; }
V Sqrt(V a) { return __builtin_sqrtf(a); }
V Fma(V a, V b, V c) { return a * b + c; }
V Max(V a, V b) { return a > b ? a : b; }
V Min(V a, V b) { return a < b ? a : b; }
M Less(V a, V b) { return a < b; }
M Greater(V a, V b) { return a > b; }
V Select(M m, V if_set, V if_clear) { return m ? if_set : if_clear; }
V Abs(V a) { return FromBits(Bits(a) & 0x7fffffffu); }
V SignBit(V a) { return FromBits(Bits(a) & 0x80000000u); }
V Or(V a, V b) { return FromBits(Bits(a) | Bits(b)); }

// Adding and subtracting 1.5 * 2^23 leaves a float with no fraction bits: round to nearest even.
V Round(V a) {
  constexpr float kShifter = 12582912.0f;
  return (a + kShifter) - kShifter;
}

V Pow2(V n) {
  const int32_t e = n == n ? static_cast<int32_t>(n) : 0;  // a NaN's product is NaN whatever this is
  return FromBits(static_cast<uint32_t>(e + 127) << 23);
}

float ReduceAdd(V v) { return v; }
float ReduceMax(V v) { return v; }
V LoadEvens(const float* p) { return *p; }

#include "runtime/math/vector_kernels_simd.inc"

}  // namespace

const VectorKernels kBaselineKernels = kTable;

}  // namespace onnxserve::vec

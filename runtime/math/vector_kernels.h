// Vectorized loops over float arrays for the elementwise, activation, normalization, softmax and pooling
// kernels: one table of function pointers per instruction set (baseline, AVX2 + FMA, AVX-512), the active
// one chosen once from ActiveIsa(). Each ISA's table lives in its own file compiled for that ISA
// (vector_kernels_avx2.cc, vector_kernels_avx512.cc; the portable one in vector_kernels_baseline.cc), and
// those files share their code through vector_kernels_simd.inc. Like packed_gemm_kernels.h, this header has
// no inline functions or templates, so no AVX copy of anything can leak into code that runs on every CPU.
//
// Contracts shared by every entry:
// - Arrays are n floats, any alignment; an output may be the same array as an input (never overlapping
//   it otherwise).
// - Each output element depends only on its own inputs (and the entry's scalars), never on its position
//   or on n: the last partial vector runs through the same vector code (masked) as the others, so equal
//   inputs give bit-equal outputs wherever they sit (light_squeezenet's equal logits rely on it).
// - Max-like operations take `a > b ? a : b` (what maxps computes): a NaN is dropped against a number.
//   Transcendentals propagate NaN and follow the limits of their std:: counterparts (exp(-inf) = 0,
//   tanh(+-inf) = +-1, ...). Results agree with std:: to a few ulp (the unit tests state each bound).
#pragma once

#include <cstdint>

namespace onnxserve {
enum class Isa;  // runtime/math/isa.h, which this header leaves out: it brings in standard templates
}  // namespace onnxserve

namespace onnxserve::vec {

enum class BinaryOp : int { kAdd, kSub, kMul, kDiv, kMax };

struct VectorKernels {
  // y[i] = f(x[i]).
  void (*exp)(const float* x, float* y, int64_t n);
  void (*tanh)(const float* x, float* y, int64_t n);
  void (*sigmoid)(const float* x, float* y, int64_t n);  // 1 / (1 + exp(-x)), accurate to the subnormals
  void (*erf)(const float* x, float* y, int64_t n);
  void (*gelu_erf)(const float* x, float* y, int64_t n);   // x/2 * (1 + erf(x / sqrt(2)))
  void (*gelu_tanh)(const float* x, float* y, int64_t n);  // x/2 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  void (*sqrt)(const float* x, float* y, int64_t n);       // correctly rounded, as std::sqrt
  void (*relu)(const float* x, float* y, int64_t n);       // x < 0 ? 0 : x (NaN and -0 pass)
  void (*hard_swish)(const float* x, float* y, int64_t n);  // x * clamp(x/6 + 1/2, 0, 1)
  void (*leaky_relu)(const float* x, float* y, int64_t n, float alpha);  // x < 0 ? alpha x : x
  // clamp(x, lo, hi) as std::clamp computes it: lo if x < lo, else hi if hi < x, else x (NaN passes).
  void (*clip)(const float* x, float* y, int64_t n, float lo, float hi);
  void (*hard_sigmoid)(const float* x, float* y, int64_t n, float alpha, float beta);  // clamp(alpha x + beta, 0, 1)
  void (*affine)(const float* x, float* y, int64_t n, float a, float b);            // x a + b
  // One row of LayerNormalization: y[i] = (x[i] - center) * factor * scale[i] + bias[i] (bias may be null).
  void (*normalize)(const float* x, float* y, int64_t n, float center, float factor, const float* scale,
                    const float* bias);
  // acc[i] += x[i] * x[i].
  void (*accumulate_squares)(const float* x, float* acc, int64_t n);

  // y[i] = a[i or 0] op b[i or 0]: an operand that does not step repeats its first element (a scalar, or
  // one channel's value in an NCHW broadcast). Add, Sub, Mul and Div give exactly the scalar results.
  void (*binary)(BinaryOp op, const float* a, bool a_steps, const float* b, bool b_steps, float* y, int64_t n);

  // Reductions. max is -inf for n = 0 and ignores NaN; sum and sum_squared_deviations (the sum of
  // (x[i] - center)^2) add float vectors over blocks of 64 vectors and the blocks in double: relative error
  // within ~32 float epsilons of the sum of magnitudes, whatever n.
  float (*max)(const float* x, int64_t n);
  double (*sum)(const float* x, int64_t n);
  double (*sum_squared_deviations)(const float* x, int64_t n, float center);
  // Softmax's middle pass: y[i] = exp(x[i] - shift); returns the sum of the y[i].
  float (*exp_shifted_sum)(const float* x, float* y, int64_t n, float shift);

  // One output row of a pooling window along a padded input row: out[o] = max (or sum) over k < kernel of
  // padded[o * stride + k], for o < out_width. The max starts from -inf; the sum adds taps in k order, so
  // a vector lane and the scalar tail give equal results. padded holds (out_width - 1) * stride + kernel
  // floats.
  void (*window_max)(const float* padded, int64_t out_width, int64_t kernel, int64_t stride, float* out);
  void (*window_sum)(const float* padded, int64_t out_width, int64_t kernel, int64_t stride, float* out);
};

// The active instruction set's table (ActiveIsa()).
const VectorKernels& Kernels();
// The table of `isa`, capped at DetectedIsa(): for kernels that tests run at each level the CPU has.
const VectorKernels& KernelsFor(Isa isa);

extern const VectorKernels kBaselineKernels;  // plain C++, any CPU
extern const VectorKernels kAvx2Kernels;      // needs AVX2 and FMA
extern const VectorKernels kAvx512Kernels;    // needs AVX-512F

}  // namespace onnxserve::vec

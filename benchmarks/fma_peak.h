// The FMA peak of one core on the instruction set the kernels dispatch on (ActiveIsa()), measured once per
// process, and the benchmark counter that reports a kernel's GFLOP/s as a fraction of it: a GFLOP/s figure
// alone says nothing about how much of the machine a kernel leaves unused.
//
// The peak is a loop of independent FMAs: enough accumulators that each FMA's latency (4 cycles on Zen and
// recent Intel cores) is hidden behind the others on both FMA ports, no loads. Each function is compiled
// for its own instruction set with a target attribute and called only after the CPU check, as the
// micro-kernels are.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "benchmark/benchmark.h"
#include "runtime/math/isa.h"

namespace onnxserve::bench {

// Floating-point operations (2 per FMA and lane) of `steps` steps of kChains FMAs on kLanes floats.
template <int kLanes, int kChains>
double FmaFlops(int64_t steps) {
  return 2.0 * kLanes * kChains * static_cast<double>(steps);
}

// 12 ymm accumulators plus the two operands fit AVX2's 16 registers.
__attribute__((target("avx2,fma"))) inline float FmaLoopAvx2(int64_t steps) {
  constexpr int kChains = 12;
  const __m256 x = _mm256_set1_ps(0.999f), y = _mm256_set1_ps(1e-3f);
  __m256 acc[kChains];
  for (__m256& a : acc) a = _mm256_set1_ps(1.0f);
  for (int64_t i = 0; i < steps; ++i) {
#pragma GCC unroll 12
    for (__m256& a : acc) a = _mm256_fmadd_ps(a, x, y);
  }
  __m256 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm256_add_ps(sum, acc[c]);
  return _mm256_cvtss_f32(sum);
}

// 24 zmm accumulators, as many as the 8 x 48 tile keeps.
__attribute__((target("avx512f"))) inline float FmaLoopAvx512(int64_t steps) {
  constexpr int kChains = 24;
  const __m512 x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(1e-3f);
  __m512 acc[kChains];
  for (__m512& a : acc) a = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < steps; ++i) {
#pragma GCC unroll 24
    for (__m512& a : acc) a = _mm512_fmadd_ps(a, x, y);
  }
  __m512 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  return _mm512_cvtss_f32(sum);
}

// FLOP/s of one core on the active ISA: the best of several short runs, since the machine may be shared
// and the peak is what the core does when nothing interrupts it. 0 on the baseline path (no kernels to
// rate).
inline double MeasureFmaPeak() {
  constexpr int64_t kSteps = 1 << 20;
  constexpr int kRuns = 20;
  const Isa isa = ActiveIsa();
  if (isa == Isa::kBaseline) return 0.0;
  double best = 0.0;
  for (int run = 0; run < kRuns; ++run) {
    const auto start = std::chrono::steady_clock::now();
    const float result = isa == Isa::kAvx512 ? FmaLoopAvx512(kSteps) : FmaLoopAvx2(kSteps);
    const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
    benchmark::DoNotOptimize(result);
    const double flops = isa == Isa::kAvx512 ? FmaFlops<16, 24>(kSteps) : FmaFlops<8, 12>(kSteps);
    best = std::max(best, flops / seconds.count());
  }
  return best;
}

inline double FmaPeak() {
  static const double kPeak = MeasureFmaPeak();
  return kPeak;
}

// Sets the GFLOP/s counter of a run that does `flops` per iteration on `threads` threads, and pct_peak:
// that rate as a percentage of `threads` cores' FMA peak on the active ISA (named in the label). Both are
// rates over the benchmark's own time (CPU time unless it uses real time), so the console shows pct_peak
// with the library's "/s" suffix; --benchmark_format=json gives the bare figure.
inline void ReportFlops(benchmark::State& state, double flops, int threads) {
  state.counters["GFLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  const double peak = FmaPeak();
  if (peak > 0.0) {
    state.counters["pct_peak"] =
        benchmark::Counter(100.0 * flops / (peak * threads), benchmark::Counter::kIsIterationInvariantRate);
  }
  state.SetLabel(std::string(IsaName(ActiveIsa())));
}

}  // namespace onnxserve::bench

// The intra-op pool's hand-off: what a ParallelFor costs beyond its chunks' work, the floor under which
// splitting a layer cannot pay (a keyword spotter's layers take 4 to 7 us each). Args: threads, and the
// work each chunk does (steps of a dependent multiply-add chain, about 1.5 ns each here).
#include <cstdint>

#include "benchmark/benchmark.h"
#include "runtime/core/thread_pool.h"

namespace onnxserve {
namespace {

// A dependent chain of multiply-adds: the same time a step on every core, whatever its caches hold.
void Work(int64_t steps) {
  double x = 1.0;
  for (int64_t i = 0; i < steps; ++i) x = x * 0.999999 + 1e-9;
  benchmark::DoNotOptimize(x);
}

void BM_ParallelForRoundTrip(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const int64_t work = state.range(1);
  ThreadPool pool(threads);
  for (auto _ : state) {
    pool.ParallelFor(threads, 1, [&](int64_t begin, int64_t end) { Work((end - begin) * work); });
  }
}
BENCHMARK(BM_ParallelForRoundTrip)
    ->ArgNames({"threads", "steps"})
    ->Args({1, 0})
    ->Args({2, 0})
    ->Args({1, 2000})
    ->Args({2, 2000})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace onnxserve

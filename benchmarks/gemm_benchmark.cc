// The BLAS wrapper and the MatMul/Gemm kernels on the shapes of the acceptance MLP (batch 64,
// 784-512-512-10) and of the transformer's MatMuls, reporting GFLOP/s and pct_peak (benchmarks/fma_peak.h).
// Args: shape, threads.
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "benchmarks/fma_peak.h"
#include "benchmarks/node_runner.h"
#include "onnx/onnx_pb.h"
#include "runtime/core/thread_pool.h"
#include "runtime/ops/blas.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

using bench::RandomFloats;

// Raw sgemm through the wrapper: C[m,n] = A[m,k] * B[n,k]^T (the Gemm transB=1 layout of PyTorch exports).
void BM_SgemmTransB(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  Tensor a = RandomFloats({m, k}), b = RandomFloats({n, k}), c(DataType::kFloat, {m, n});
  ThreadPool pool(static_cast<int>(state.range(3)));
  for (auto _ : state) {
    Gemm<float>(false, true, m, n, k, 1.f, a.data<float>(), k, b.data<float>(), k, 0.f, c.data<float>(), n, &pool);
    benchmark::DoNotOptimize(c.raw_data());
  }
  bench::ReportFlops(state, 2.0 * m * n * k, static_cast<int>(state.range(3)));
}
BENCHMARK(BM_SgemmTransB)
    ->ArgNames({"M", "N", "K", "threads"})
    ->Args({64, 512, 784, 1})
    ->Args({64, 512, 512, 1})
    ->Args({64, 10, 512, 1})
    ->Args({64, 512, 784, 2})
    ->Unit(benchmark::kMicrosecond);

// One Gemm or MatMul node through the registry (bench::RunNode); with `constant_weights` it sees inputs
// 1.. (the weight and bias) as initializers, so a float weight is packed at load.
void RunNode(benchmark::State& state, const char* op, int opset, std::vector<Tensor> inputs, double flops,
             bool trans_b, bool constant_weights, int threads = 1) {
  onnx::NodeProto node;
  node.set_op_type(op);
  for (size_t i = 0; i < inputs.size(); ++i) node.add_input(std::string(1, static_cast<char>('a' + i)));
  if (trans_b) {
    auto* attr = node.add_attribute();
    attr->set_name("transB");
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(1);
  }
  bench::RunNode(state, kOnnx, opset, node, inputs, threads, constant_weights);
  bench::ReportFlops(state, flops, threads);
}

// The MLP's layers as Gemm(transB=1) with a [N] bias: GEMM plus the bias broadcast. constW 1: the
// weight is an initializer (packed at load), 0: a runtime input (OpenBLAS). Batches 1, 2 and 4: the
// small-M products of serving one request at a time. One thread: CPU time, which a shared machine's other
// work does not inflate; two: wall time, since the threads share the product.
void BM_GemmOp(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  RunNode(state, "Gemm", 13, {RandomFloats({m, k}), RandomFloats({n, k}), RandomFloats({n})}, 2.0 * m * n * k,
          true, state.range(3) != 0, static_cast<int>(state.range(4)));
}
BENCHMARK(BM_GemmOp)
    ->ArgNames({"M", "N", "K", "constW", "threads"})
    ->Args({64, 512, 784, 1, 1})
    ->Args({64, 512, 784, 0, 1})
    ->Args({64, 512, 512, 1, 1})
    ->Args({1, 512, 784, 1, 1})
    ->Args({1, 512, 512, 1, 1})
    ->Args({2, 512, 784, 1, 1})
    ->Args({4, 512, 784, 1, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GemmOp)
    ->ArgNames({"M", "N", "K", "constW", "threads"})
    ->Args({64, 512, 784, 1, 2})
    ->Args({1, 512, 784, 1, 2})
    ->Args({1, 512, 512, 1, 2})
    ->Args({4, 512, 784, 1, 2})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// MatMul: a 3-D activation times a 2-D weight initializer (folds into one packed GEMM) and a batched
// attention product of two activations. The transformer of the benchmark set (make_transformer.py:
// sequence 128, hidden 256, feed-forward 1024) projects with [128 x 256] x [256 x 256], widens with
// x [256 x 1024] and narrows with [128 x 1024] x [1024 x 256]; a BERT-base projection is 768 wide.
void BM_MatMul(benchmark::State& state) {
  const int64_t batch = state.range(0), m = state.range(1), n = state.range(2), k = state.range(3);
  const bool weight = state.range(4) != 0;
  Tensor b = weight ? RandomFloats({k, n}) : RandomFloats({batch, k, n});
  RunNode(state, "MatMul", 13, {RandomFloats({batch, m, k}), b}, 2.0 * batch * m * n * k, false, weight);
}
BENCHMARK(BM_MatMul)
    ->ArgNames({"batch", "M", "N", "K", "weight"})
    ->Args({1, 128, 256, 256, 1})
    ->Args({1, 128, 1024, 256, 1})
    ->Args({1, 128, 256, 1024, 1})
    ->Args({8, 128, 768, 768, 1})
    ->Args({12, 128, 128, 64, 0})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace onnxserve

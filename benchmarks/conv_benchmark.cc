// Conv and ConvTranspose kernels through the registry on ResNet-50's layer shapes (batch 1, one thread by
// default), reporting GFLOP/s: the im2col + GEMM path, the 1x1 direct-GEMM path and the 7x7/2 stem.
// Args: C, H(=W), M, kernel, stride, threads.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "onnx/onnx_pb.h"
#include "runtime/core/thread_pool.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

Tensor RandomFloats(const Shape& shape) {
  Tensor t(DataType::kFloat, shape);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : t.mutable_values<float>()) v = dist(rng);
  return t;
}

void AddInts(onnx::NodeProto& node, const char* name, const std::vector<int64_t>& values) {
  auto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) attr->add_ints(v);
}

// Runs one Conv/ConvTranspose node per iteration, as the executor would (kernel created once).
void RunConvNode(benchmark::State& state, const char* op, const Shape& x_shape, const Shape& w_shape,
                 int64_t stride, int64_t pad, int threads, double flops) {
  onnx::NodeProto node;
  node.set_op_type(op);
  for (const char* name : {"x", "w", "b"}) node.add_input(name);
  node.add_output(std::string(1, 'y'));  // a literal trips g++ 12's -Wrestrict false positive
  AddInts(node, "strides", {stride, stride});
  AddInts(node, "pads", {pad, pad, pad, pad});
  const int64_t maps = std::string(op) == "Conv" ? w_shape[0] : w_shape[1];
  std::vector<Tensor> inputs = {RandomFloats(x_shape), RandomFloats(w_shape), RandomFloats({maps})};
  KernelInfo info(node, 22, {}, {});
  auto kernel = KernelRegistry::Global().Find(kOnnx, op, 22)->create(info);
  if (!kernel.ok()) return state.SkipWithError(std::string(kernel.status().message()).c_str());
  ThreadPool pool(threads);
  for (auto _ : state) {
    std::vector<Tensor> outputs(1);
    KernelContext ctx({&inputs[0], &inputs[1], &inputs[2]}, &outputs, {true}, &pool, {});
    absl::Status status = (*kernel)->Compute(ctx);
    if (!status.ok()) return state.SkipWithError(std::string(status.message()).c_str());
    benchmark::DoNotOptimize(outputs[0].raw_data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Conv(benchmark::State& state) {
  const int64_t c = state.range(0), h = state.range(1), m = state.range(2), k = state.range(3);
  const int64_t s = state.range(4);
  const int64_t out = (h + 2 * (k / 2) - k) / s + 1;
  RunConvNode(state, "Conv", {1, c, h, h}, {m, c, k, k}, s, k / 2, static_cast<int>(state.range(5)),
              2.0 * m * c * k * k * out * out);
}
// ResNet-50 at batch 1: the stem, 3x3 convs of each stage, 1x1 expansions/reductions, a strided 1x1.
BENCHMARK(BM_Conv)
    ->ArgNames({"C", "HW", "M", "k", "s", "threads"})
    ->Args({3, 224, 64, 7, 2, 1})
    ->Args({64, 56, 64, 3, 1, 1})
    ->Args({128, 28, 128, 3, 1, 1})
    ->Args({256, 14, 256, 3, 1, 1})
    ->Args({512, 7, 512, 3, 1, 1})
    ->Args({64, 56, 256, 1, 1, 1})
    ->Args({1024, 14, 256, 1, 1, 1})
    ->Args({2048, 7, 512, 1, 1, 1})
    ->Args({256, 56, 512, 1, 2, 1})
    ->Args({64, 56, 64, 3, 1, 2})
    ->Unit(benchmark::kMicrosecond);

void BM_ConvTranspose(benchmark::State& state) {
  const int64_t c = state.range(0), h = state.range(1), m = state.range(2), k = state.range(3);
  const int64_t s = state.range(4);
  RunConvNode(state, "ConvTranspose", {1, c, h, h}, {c, m, k, k}, s, 0, static_cast<int>(state.range(5)),
              2.0 * m * c * k * k * h * h);
}
// A decoder's 2x upsampling steps.
BENCHMARK(BM_ConvTranspose)
    ->ArgNames({"C", "HW", "M", "k", "s", "threads"})
    ->Args({256, 14, 128, 4, 2, 1})
    ->Args({64, 56, 32, 4, 2, 1})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace onnxserve

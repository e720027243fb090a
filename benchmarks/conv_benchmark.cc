// Conv and ConvTranspose kernels through the registry on ResNet-50's layer shapes (batch 1, one thread by
// default), reporting GFLOP/s and pct_peak (benchmarks/fma_peak.h): the im2col + GEMM path, the 1x1
// direct-GEMM path and the 7x7/2 stem; the fused Conv + residual Add + Relu of a bottleneck's last 1x1;
// MobileNet's depthwise layers and the keyword spotter's; MobileNetV3's layers with HardSwish fused or not;
// and the stem's 3x3/2 MaxPool.
// Args: C, H(=W), M, kernel, stride, threads, W constant (1: given at load, as a model's initializer is,
// so Conv packs it once; 0: a runtime input, the OpenBLAS path).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "benchmarks/fma_peak.h"
#include "benchmarks/node_runner.h"
#include "onnx/onnx_pb.h"
#include "runtime/core/thread_pool.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

using bench::AddInts;
using bench::CreateKernel;
using bench::EveryPad;
using bench::RandomFloats;
using bench::RunConvNode;
using bench::RunNode;

void BM_Conv(benchmark::State& state) {
  const int64_t c = state.range(0), h = state.range(1), m = state.range(2), k = state.range(3);
  const int64_t s = state.range(4);
  const int64_t out = (h + 2 * (k / 2) - k) / s + 1;
  RunConvNode(state, "Conv", {1, c, h, h}, {m, c, k, k}, s, EveryPad(k / 2), static_cast<int>(state.range(5)),
              state.range(6) != 0, 2.0 * m * c * k * k * out * out);
}
// ResNet-50 at batch 1: the stem, 3x3 convs of each stage, 1x1 expansions/reductions, a strided 1x1.
BENCHMARK(BM_Conv)
    ->ArgNames({"C", "HW", "M", "k", "s", "threads", "constW"})
    ->Args({3, 224, 64, 7, 2, 1, 1})
    ->Args({64, 56, 64, 3, 1, 1, 1})
    ->Args({64, 56, 64, 3, 1, 1, 0})
    ->Args({128, 28, 128, 3, 1, 1, 1})
    ->Args({256, 14, 256, 3, 1, 1, 1})
    ->Args({512, 7, 512, 3, 1, 1, 1})
    ->Args({512, 7, 512, 3, 1, 1, 0})
    ->Args({64, 56, 256, 1, 1, 1, 1})
    ->Args({1024, 14, 256, 1, 1, 1, 1})
    ->Args({1024, 14, 256, 1, 1, 1, 0})
    ->Args({2048, 7, 512, 1, 1, 1, 1})
    ->Args({256, 56, 512, 1, 2, 1, 1})
    ->Args({64, 56, 64, 3, 1, 2, 1})
    // The 14x14 and 7x7 stages on two threads: 196 columns split 96 + 100, 49 split by rows.
    ->Args({256, 14, 256, 3, 1, 2, 1})
    ->Args({1024, 14, 256, 1, 1, 2, 1})
    ->Args({512, 7, 512, 3, 1, 2, 1})
    // MobileNetV2's pointwise expansions and projections: few input channels, or small maps.
    ->Args({16, 112, 96, 1, 1, 1, 1})
    ->Args({144, 56, 24, 1, 1, 1, 1})
    ->Args({96, 14, 576, 1, 1, 1, 1})
    ->Args({576, 14, 96, 1, 1, 1, 1})
    ->Args({960, 7, 160, 1, 1, 1, 1})
    ->Args({160, 7, 960, 1, 1, 1, 1})
    // MobileNetV3's squeeze-and-excitation 1x1 convs on the pooled 1x1 map: matrix-vector products.
    ->Args({960, 1, 240, 1, 1, 1, 1})
    ->Args({240, 1, 960, 1, 1, 1, 1})
    ->Unit(benchmark::kMicrosecond);

void BM_DepthwiseConv(benchmark::State& state) {
  const int64_t c = state.range(0), h = state.range(1), k = state.range(2), s = state.range(3);
  const int64_t out = (h + 2 * (k / 2) - k) / s + 1;
  RunConvNode(state, "Conv", {1, c, h, h}, {c, 1, k, k}, s, EveryPad(k / 2), static_cast<int>(state.range(4)), true,
              2.0 * c * k * k * out * out, {}, c);
}
// MobileNetV2's depthwise layers at batch 1 (input C x HW x HW), and MobileNetV3's 5x5 ones.
BENCHMARK(BM_DepthwiseConv)
    ->ArgNames({"C", "HW", "k", "s", "threads"})
    ->Args({32, 112, 3, 1, 1})
    ->Args({96, 112, 3, 2, 1})
    ->Args({144, 56, 3, 1, 1})
    ->Args({144, 56, 3, 2, 1})
    ->Args({192, 28, 3, 1, 1})
    ->Args({384, 14, 3, 1, 1})
    ->Args({576, 14, 3, 1, 1})
    ->Args({576, 14, 3, 2, 1})
    ->Args({960, 7, 3, 1, 1})
    ->Args({72, 56, 5, 2, 1})
    ->Args({480, 14, 5, 1, 1})
    ->Args({32, 112, 3, 1, 2})
    ->Args({144, 56, 3, 1, 2})
    ->Args({960, 7, 3, 1, 2})
    // MobileNetV3's 28x28 -> 14x14 downsampling (plane by plane: its 29x29 padded pixels are past the
    // channel blocks' bound), MobileNetV3-Large's last 5x5 ones: 672 channels 14x14 -> 7x7, 960 on 7x7.
    ->Args({192, 28, 3, 2, 1})
    ->Args({672, 14, 5, 2, 1})
    ->Args({960, 7, 5, 1, 1})
    // tools/ort_compare/make_mobilenet.py's 5x5 layers on maps past the channel blocks' bound.
    ->Args({144, 56, 5, 2, 1})
    ->Args({192, 28, 5, 1, 1})
    ->Unit(benchmark::kMicrosecond);

void BM_DepthwiseConvRectangular(benchmark::State& state) {
  const int64_t c = state.range(0), h = state.range(1), w = state.range(2);
  RunConvNode(state, "Conv", {1, c, h, w}, {c, 1, 3, 3}, 1, EveryPad(1), static_cast<int>(state.range(3)), true,
              2.0 * c * 9 * h * w, {}, c);
}
// The keyword-spotting DS-CNN's depthwise 3x3 layers (tools/ort_compare/make_kws.py): 64 channels of 25x5.
BENCHMARK(BM_DepthwiseConvRectangular)
    ->ArgNames({"C", "H", "W", "threads"})
    ->Args({64, 25, 5, 1})
    ->Args({64, 25, 5, 2})
    ->Args({172, 25, 5, 1})
    ->Unit(benchmark::kMicrosecond);

// The keyword-spotting DS-CNN's other convolutions: the 10x4 stride-2 stem on 49 x 10 MFCCs with
// TensorFlow's asymmetric "same" pads (its columns, 40 x 125, are built whole), and the pointwise 64 -> 64
// on the 25x5 map (a B small enough to be read where it lies).
void BM_KeywordSpotterStem(benchmark::State& state) {
  RunConvNode(state, "Conv", {1, 1, 49, 10}, {64, 1, 10, 4}, 2, {4, 1, 5, 2}, 1, true, 2.0 * 64 * 40 * 25 * 5);
}
BENCHMARK(BM_KeywordSpotterStem)->Unit(benchmark::kMicrosecond);

void BM_KeywordSpotterPointwise(benchmark::State& state) {
  RunConvNode(state, "Conv", {1, 64, 25, 5}, {64, 64, 1, 1}, 1, EveryPad(0), 1, true, 2.0 * 64 * 64 * 25 * 5);
}
BENCHMARK(BM_KeywordSpotterPointwise)->Unit(benchmark::kMicrosecond);

void BM_GroupedConv(benchmark::State& state) {
  const int64_t c = state.range(0), h = state.range(1), m = state.range(2), k = state.range(3);
  const int64_t group = state.range(4);
  RunConvNode(state, "Conv", {1, c, h, h}, {m, c / group, k, k}, 1, EveryPad(k / 2), static_cast<int>(state.range(5)),
              true, 2.0 * m * (c / group) * k * k * h * h, {}, group);
}
// ResNeXt-50 32x4d's grouped 3x3s (4 and 8 maps per group) and ShuffleNet's grouped 1x1s (g = 3, 8).
BENCHMARK(BM_GroupedConv)
    ->ArgNames({"C", "HW", "M", "k", "group", "threads"})
    ->Args({128, 56, 128, 3, 32, 1})
    ->Args({256, 28, 256, 3, 32, 1})
    ->Args({240, 28, 240, 1, 3, 1})
    ->Args({384, 14, 384, 1, 8, 1})
    ->Args({128, 56, 128, 3, 32, 2})
    ->Args({384, 14, 384, 1, 8, 2})
    ->Unit(benchmark::kMicrosecond);

void BM_FusedConv(benchmark::State& state) {
  const int64_t c = state.range(0), h = state.range(1), m = state.range(2);
  RunConvNode(state, "FusedConv", {1, c, h, h}, {m, c, 1, 1}, 1, EveryPad(0), static_cast<int>(state.range(3)), true,
              2.0 * m * c * h * h, {1, m, h, h});
}
// Each stage's last 1x1 expansion, which the optimizer fuses with the residual Add and the Relu.
BENCHMARK(BM_FusedConv)
    ->ArgNames({"C", "HW", "M", "threads"})
    ->Args({64, 56, 256, 1})
    ->Args({256, 14, 1024, 1})
    ->Unit(benchmark::kMicrosecond);

// MobileNetV3's pointwise expansions and depthwise layers followed by HardSwish (and one by Sigmoid), at
// batch 1 on one thread: fused = 1 is the FusedConv the optimizer writes, applying the activation as it
// stores each tile; fused = 0 is the plan before that, Conv and then the activation's own kernel.
void BM_ConvActivation(benchmark::State& state) {
  const int64_t c = state.range(0), h = state.range(1), m = state.range(2), k = state.range(3);
  const bool fused = state.range(4) != 0, depthwise = state.range(5) != 0;
  const std::string activation = state.range(6) != 0 ? "Sigmoid" : "HardSwish";
  const int64_t group = depthwise ? c : 1;
  onnx::NodeProto conv;
  conv.set_op_type(fused ? "FusedConv" : "Conv");
  for (const char* name : {"x", "w", "b"}) conv.add_input(name);
  AddInts(conv, "pads", {k / 2, k / 2, k / 2, k / 2});
  auto* group_attr = conv.add_attribute();
  group_attr->set_name("group");
  group_attr->set_type(onnx::AttributeProto::INT);
  group_attr->set_i(group);
  if (fused) {
    auto* attr = conv.add_attribute();
    attr->set_name("activation");
    attr->set_type(onnx::AttributeProto::STRING);
    attr->set_s(activation);
  }
  const std::vector<Tensor> inputs = {RandomFloats({1, c, h, h}), RandomFloats({m, c / group, k, k}),
                                      RandomFloats({m})};
  ir::Graph graph("benchmark");
  auto conv_kernel = CreateKernel(graph, fused ? kInternal : kOnnx, fused ? 1 : 22, conv, inputs, true);
  onnx::NodeProto unary;
  unary.set_op_type(activation);
  unary.add_input(std::string(1, 'x'));
  auto unary_kernel = CreateKernel(graph, kOnnx, 22, unary, {}, false);
  if (!conv_kernel.ok() || !unary_kernel.ok()) return state.SkipWithError("kernel creation failed");
  ThreadPool pool(1);
  std::vector<const Tensor*> input_ptrs = {&inputs[0], &inputs[1], &inputs[2]};
  for (auto _ : state) {
    std::vector<Tensor> y(1), activated(1);
    KernelContext conv_ctx(input_ptrs, &y, {true}, &pool, {});
    absl::Status status = (*conv_kernel)->Compute(conv_ctx);
    if (status.ok() && !fused) {
      KernelContext unary_ctx({&y[0]}, &activated, {true}, &pool, {});
      status = (*unary_kernel)->Compute(unary_ctx);
    }
    if (!status.ok()) return state.SkipWithError(std::string(status.message()).c_str());
    benchmark::DoNotOptimize(y[0].raw_data());
  }
  bench::ReportFlops(state, 2.0 * m * (c / group) * k * k * h * h, 1);
}
BENCHMARK(BM_ConvActivation)
    ->ArgNames({"C", "HW", "M", "k", "fused", "dw", "sigmoid"})
    ->Args({16, 112, 96, 1, 0, 0, 0})
    ->Args({16, 112, 96, 1, 1, 0, 0})
    ->Args({40, 28, 240, 1, 0, 0, 0})
    ->Args({40, 28, 240, 1, 1, 0, 0})
    ->Args({96, 112, 96, 3, 0, 1, 0})
    ->Args({96, 112, 96, 3, 1, 1, 0})
    ->Args({240, 28, 240, 5, 0, 1, 0})
    ->Args({240, 28, 240, 5, 1, 1, 0})
    ->Args({40, 28, 240, 1, 0, 0, 1})
    ->Args({40, 28, 240, 1, 1, 0, 1})
    ->Unit(benchmark::kMicrosecond);

void BM_MaxPool(benchmark::State& state) {
  const int64_t c = state.range(0), h = state.range(1), out = (h + 2 - 3) / 2 + 1;
  onnx::NodeProto node;
  node.set_op_type("MaxPool");
  node.add_input(std::string(1, 'x'));
  AddInts(node, "kernel_shape", {3, 3});
  AddInts(node, "strides", {2, 2});
  AddInts(node, "pads", {1, 1, 1, 1});
  RunNode(state, kOnnx, 22, node, {RandomFloats({1, c, h, h})}, static_cast<int>(state.range(2)));
  state.counters["outputs/s"] =
      benchmark::Counter(1.0 * c * out * out, benchmark::Counter::kIsIterationInvariantRate);
}
// ResNet-50's stem pool: 3x3, stride 2, pad 1 over 64x112x112.
BENCHMARK(BM_MaxPool)->ArgNames({"C", "HW", "threads"})->Args({64, 112, 1})->Unit(benchmark::kMicrosecond);

void BM_ConvTranspose(benchmark::State& state) {
  const int64_t c = state.range(0), h = state.range(1), m = state.range(2), k = state.range(3);
  const int64_t s = state.range(4);
  RunConvNode(state, "ConvTranspose", {1, c, h, h}, {c, m, k, k}, s, EveryPad(0), static_cast<int>(state.range(5)),
              true, 2.0 * m * c * k * k * h * h);
}
// A decoder's 2x upsampling steps.
BENCHMARK(BM_ConvTranspose)
    ->ArgNames({"C", "HW", "M", "k", "s", "threads"})
    ->Args({256, 14, 128, 4, 2, 1})
    ->Args({64, 56, 32, 4, 2, 1})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace onnxserve

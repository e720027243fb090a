// Elementwise kernels through the registry, as the executor runs them: the broadcast-run fast paths (same
// shape, scalar, row) against the generic per-element walk of ForEachBroadcast they replace, unary ops,
// pools, softmax, LayerNormalization and a cast (args: elements or shape, and intra-op threads, which run
// on the active ISA: set ONNXSERVE_ISA to compare). The BM_Primitive rows time each vector primitive of
// runtime/math/vector_kernels.h through every ISA's own table.
#include <array>
#include <memory>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "onnx/onnx_pb.h"
#include "runtime/ir/builder.h"
#include "runtime/core/thread_pool.h"
#include "runtime/math/isa.h"
#include "runtime/math/vector_kernels.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

Tensor RandomFloats(const Shape& shape) {
  Tensor t(DataType::kFloat, shape);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  for (float& v : t.mutable_values<float>()) v = dist(rng);
  return t;
}

// One node's kernel, created the way the loader creates it.
class KernelRunner {
 public:
  KernelRunner(const char* op, int threads, std::vector<Tensor> inputs)
      : inputs_(std::move(inputs)), pool_(threads) {
    node_.set_op_type(op);
    for (size_t i = 0; i < inputs_.size(); ++i) node_.add_input(absl::StrCat("x", i));
    node_.add_output(std::string(1, 'y'));
  }
  void SetTo(DataType to) {
    auto* attr = node_.add_attribute();
    attr->set_name("to");
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(static_cast<int64_t>(to));
  }
  void SetInts(const char* name, const std::vector<int64_t>& values) {
    auto* attr = node_.add_attribute();
    attr->set_name(name);
    attr->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values) attr->add_ints(v);
  }
  bool Create(int opset) {
    const KernelDef* def = KernelRegistry::Global().Find(kOnnx, node_.op_type(), opset);
    if (def == nullptr) return false;
    const ir::Node* node = ir::AddNodeFromProto(graph_, node_, opset);
    info_ = std::make_unique<KernelInfo>(*node, std::vector<const Tensor*>{},
                                         std::vector<std::pair<std::string, const ExecutionPlan*>>{});
    auto kernel = def->create(*info_);
    if (!kernel.ok()) return false;
    kernel_ = std::move(*kernel);
    return true;
  }
  bool Run() {
    std::vector<const Tensor*> in;
    for (const Tensor& t : inputs_) in.push_back(&t);
    std::vector<Tensor> outputs(1);
    KernelContext ctx(std::move(in), &outputs, {true}, &pool_, {});
    return kernel_->Compute(ctx).ok();
  }

 private:
  onnx::NodeProto node_;
  ir::Graph graph_{"benchmark"};
  std::vector<Tensor> inputs_;
  ThreadPool pool_;
  std::unique_ptr<KernelInfo> info_;
  std::unique_ptr<OpKernel> kernel_;
};

void RunKernel(benchmark::State& state, KernelRunner& runner, int opset, int64_t elements) {
  if (!runner.Create(opset)) {
    state.SkipWithError("kernel not registered or failed to initialize");
    return;
  }
  for (auto _ : state) {
    if (!runner.Run()) {
      state.SkipWithError("kernel failed");
      return;
    }
  }
  state.SetItemsProcessed(state.iterations() * elements);
}

void BM_AddSameShape(benchmark::State& state) {
  const int64_t n = state.range(0);
  KernelRunner runner("Add", static_cast<int>(state.range(1)), {RandomFloats({n}), RandomFloats({n})});
  RunKernel(state, runner, 14, n);
}
BENCHMARK(BM_AddSameShape)->Args({1 << 10, 1})->Args({1 << 20, 1})->Args({1 << 20, 2});

void BM_AddScalar(benchmark::State& state) {
  const int64_t n = state.range(0);
  KernelRunner runner("Add", static_cast<int>(state.range(1)), {RandomFloats({n}), RandomFloats({})});
  RunKernel(state, runner, 14, n);
}
BENCHMARK(BM_AddScalar)->Args({1 << 20, 1})->Args({1 << 20, 2});

// A bias row added to every row of a matrix: the shape of most broadcasting in real models.
void BM_AddRow(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  KernelRunner runner("Add", 1, {RandomFloats({rows, cols}), RandomFloats({cols})});
  RunKernel(state, runner, 14, rows * cols);
}
BENCHMARK(BM_AddRow)->Args({1024, 1024})->Args({16384, 64})->Args({64, 16384});

// The baseline the broadcast plan replaces: ForEachBroadcast's per-element offsets and callback.
void BM_AddRowGenericWalk(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const Tensor a = RandomFloats({rows, cols});
  const Tensor b = RandomFloats({cols});
  Tensor out(DataType::kFloat, {rows, cols});
  const std::array<std::vector<int64_t>, 2> strides = {BroadcastStrides(a.shape(), out.shape()),
                                                       BroadcastStrides(b.shape(), out.shape())};
  for (auto _ : state) {
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* po = out.data<float>();
    ForEachBroadcast<2>(out.shape(), strides,
                        [&](int64_t o, const std::array<int64_t, 2>& at) { po[o] = pa[at[0]] + pb[at[1]]; });
    benchmark::DoNotOptimize(po);
  }
  state.SetItemsProcessed(state.iterations() * rows * cols);
}
BENCHMARK(BM_AddRowGenericWalk)->Args({1024, 1024})->Args({16384, 64})->Args({64, 16384});

void BM_Unary(benchmark::State& state, const char* op, int opset) {
  const int64_t n = state.range(0);
  KernelRunner runner(op, static_cast<int>(state.range(1)), {RandomFloats({n})});
  RunKernel(state, runner, opset, n);
}
BENCHMARK_CAPTURE(BM_Unary, Relu, "Relu", 14)->Args({1 << 20, 1})->Args({1 << 20, 2});
BENCHMARK_CAPTURE(BM_Unary, Sigmoid, "Sigmoid", 13)->Args({1 << 20, 1})->Args({1 << 20, 2});
BENCHMARK_CAPTURE(BM_Unary, Gelu, "Gelu", 20)->Args({1 << 20, 1});

BENCHMARK_CAPTURE(BM_Unary, Tanh, "Tanh", 13)->Args({1 << 20, 1});
BENCHMARK_CAPTURE(BM_Unary, Exp, "Exp", 13)->Args({1 << 20, 1});
BENCHMARK_CAPTURE(BM_Unary, Erf, "Erf", 13)->Args({1 << 20, 1});
BENCHMARK_CAPTURE(BM_Unary, HardSwish, "HardSwish", 22)->Args({1 << 20, 1});

// The vector primitives themselves, one ISA's table each (range(1): 0 baseline, 1 avx2, 2 avx512), on
// 4096 floats (L1-resident, so the arithmetic is measured rather than memory).
const vec::VectorKernels* TableFor(benchmark::State& state) {
  const auto isa = static_cast<Isa>(state.range(1));
  if (DetectedIsa() < isa) {
    state.SkipWithError(absl::StrCat("this CPU lacks ", std::string(IsaName(isa))).c_str());
    return nullptr;
  }
  state.SetLabel(std::string(IsaName(isa)));
  return isa == Isa::kAvx512 ? &vec::kAvx512Kernels : isa == Isa::kAvx2 ? &vec::kAvx2Kernels : &vec::kBaselineKernels;
}

template <typename Run>
void BM_Primitive(benchmark::State& state, Run run) {
  const vec::VectorKernels* k = TableFor(state);
  if (k == nullptr) return;
  const int64_t n = state.range(0);
  const Tensor x = RandomFloats({n});
  std::vector<float> y(static_cast<size_t>(n));
  for (auto _ : state) {
    run(*k, x.data<float>(), y.data(), n);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n);
}

#define ONNXSERVE_PRIMITIVE_BENCHMARK(name, ...)                                                            \
  BENCHMARK_CAPTURE(BM_Primitive, name,                                                                     \
                    [](const vec::VectorKernels& k, const float* x, [[maybe_unused]] float* y, int64_t n) { \
                      __VA_ARGS__;                                                                         \
  })->ArgsProduct({{4096}, {0, 1, 2}})

ONNXSERVE_PRIMITIVE_BENCHMARK(exp, k.exp(x, y, n));
ONNXSERVE_PRIMITIVE_BENCHMARK(tanh, k.tanh(x, y, n));
ONNXSERVE_PRIMITIVE_BENCHMARK(sigmoid, k.sigmoid(x, y, n));
ONNXSERVE_PRIMITIVE_BENCHMARK(erf, k.erf(x, y, n));
ONNXSERVE_PRIMITIVE_BENCHMARK(gelu_erf, k.gelu_erf(x, y, n));
ONNXSERVE_PRIMITIVE_BENCHMARK(gelu_tanh, k.gelu_tanh(x, y, n));
ONNXSERVE_PRIMITIVE_BENCHMARK(relu, k.relu(x, y, n));
ONNXSERVE_PRIMITIVE_BENCHMARK(hard_swish, k.hard_swish(x, y, n));
ONNXSERVE_PRIMITIVE_BENCHMARK(affine, k.affine(x, y, n, 0.5f, 1.0f));
ONNXSERVE_PRIMITIVE_BENCHMARK(add_arrays, k.binary(vec::BinaryOp::kAdd, x, true, y, true, y, n));
ONNXSERVE_PRIMITIVE_BENCHMARK(mul_scalar, k.binary(vec::BinaryOp::kMul, x, true, x, false, y, n));
ONNXSERVE_PRIMITIVE_BENCHMARK(max, benchmark::DoNotOptimize(k.max(x, n)));
ONNXSERVE_PRIMITIVE_BENCHMARK(sum, benchmark::DoNotOptimize(k.sum(x, n)));
ONNXSERVE_PRIMITIVE_BENCHMARK(exp_shifted_sum, benchmark::DoNotOptimize(k.exp_shifted_sum(x, y, n, 3.0f)));
// out_width outputs of a 3-wide window at stride 2 (MaxPool 3x3/2's rows).
ONNXSERVE_PRIMITIVE_BENCHMARK(window_max_3s2, k.window_max(x, (n - 3) / 2 + 1, 3, 2, y));
ONNXSERVE_PRIMITIVE_BENCHMARK(window_max_3s1, k.window_max(x, n - 2, 3, 1, y));
#undef ONNXSERVE_PRIMITIVE_BENCHMARK

// Whole pooling, softmax and normalization kernels on model-sized shapes.
void BM_Pool(benchmark::State& state, const char* op, int64_t kernel, int64_t stride, int64_t pad) {
  const int64_t channels = state.range(0), size = state.range(1);
  KernelRunner runner(op, 1, {RandomFloats({1, channels, size, size})});
  runner.SetInts("kernel_shape", {kernel, kernel});
  runner.SetInts("strides", {stride, stride});
  runner.SetInts("pads", {pad, pad, pad, pad});
  RunKernel(state, runner, 19, channels * size * size);
}
BENCHMARK_CAPTURE(BM_Pool, MaxPool3x3s2, "MaxPool", 3, 2, 0)->Args({96, 111})->Args({256, 27});
BENCHMARK_CAPTURE(BM_Pool, MaxPool3x3s1p1, "MaxPool", 3, 1, 1)->Args({192, 28})->Args({480, 14});
BENCHMARK_CAPTURE(BM_Pool, AveragePool3x3s2p1, "AveragePool", 3, 2, 1)->Args({240, 28});
BENCHMARK_CAPTURE(BM_Pool, AveragePool2x2s2, "AveragePool", 2, 2, 0)->Args({128, 56});

void BM_SoftmaxRows(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  KernelRunner runner("Softmax", 1, {RandomFloats({rows, cols})});
  RunKernel(state, runner, 13, rows * cols);
}
BENCHMARK(BM_SoftmaxRows)->Args({128, 128})->Args({1, 1000});

void BM_LayerNormalization(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  KernelRunner runner("LayerNormalization", 1, {RandomFloats({rows, cols}), RandomFloats({cols}), RandomFloats({cols})});
  RunKernel(state, runner, 17, rows * cols);
}
BENCHMARK(BM_LayerNormalization)->Args({128, 768});

void BM_CastFloatToFloat16(benchmark::State& state) {
  const int64_t n = state.range(0);
  KernelRunner runner("Cast", 1, {RandomFloats({n})});
  runner.SetTo(DataType::kFloat16);
  RunKernel(state, runner, 25, n);
}
BENCHMARK(BM_CastFloatToFloat16)->Arg(1 << 20);

}  // namespace
}  // namespace onnxserve

// Elementwise kernels through the registry, as the executor runs them: the broadcast-run fast paths (same
// shape, scalar, row) against the generic per-element walk of ForEachBroadcast they replace, plus a few
// unary ops and a cast. Args: elements (or rows x cols) and intra-op threads.
#include <array>
#include <memory>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "onnx/onnx_pb.h"
#include "runtime/ir/builder.h"
#include "runtime/core/thread_pool.h"
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

void BM_CastFloatToFloat16(benchmark::State& state) {
  const int64_t n = state.range(0);
  KernelRunner runner("Cast", 1, {RandomFloats({n})});
  runner.SetTo(DataType::kFloat16);
  RunKernel(state, runner, 25, n);
}
BENCHMARK(BM_CastFloatToFloat16)->Arg(1 << 20);

}  // namespace
}  // namespace onnxserve

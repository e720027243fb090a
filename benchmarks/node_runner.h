// Running one operator node through the registry as the executor would, for the benchmarks: the kernel
// created once (seeing W and B as initializers when asked, so Conv packs W at load), Compute timed per
// iteration; and a Conv node of given shapes on top of it.
#pragma once
#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "benchmark/benchmark.h"
#include "benchmarks/fma_peak.h"
#include "onnx/onnx_pb.h"
#include "runtime/core/thread_pool.h"
#include "runtime/ir/builder.h"
#include "runtime/registry/registry.h"

namespace onnxserve::bench {

inline Tensor RandomFloats(const Shape& shape) {
  Tensor t(DataType::kFloat, shape);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : t.mutable_values<float>()) v = dist(rng);
  return t;
}

inline void AddInts(onnx::NodeProto& node, const char* name, const std::vector<int64_t>& values) {
  auto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) attr->add_ints(v);
}

// The kernel of `node` (one output, "y"), created as the executor would: once, seeing inputs 1 and 2, W
// and B, as constants when `constant_weights`.
inline absl::StatusOr<std::unique_ptr<OpKernel>> CreateKernel(ir::Graph& graph, std::string_view domain, int opset,
                                                       onnx::NodeProto& node, const std::vector<Tensor>& inputs,
                                                       bool constant_weights) {
  node.add_output(std::string(1, 'y'));  // one-char literals trip g++ 12's -Wrestrict false positive
  std::vector<const Tensor*> constants(inputs.size(), nullptr);
  for (size_t i = 1; constant_weights && i < std::min<size_t>(3, inputs.size()); ++i) constants[i] = &inputs[i];
  KernelInfo info(*ir::AddNodeFromProto(graph, node, opset), constants, {});
  return KernelRegistry::Global().Find(domain, node.op_type(), opset)->create(info);
}

// Runs `node` (inputs named by `inputs`, one output) per iteration through CreateKernel's kernel; the
// caller reports the rate.
inline void RunNode(benchmark::State& state, std::string_view domain, int opset, onnx::NodeProto& node,
             const std::vector<Tensor>& inputs, int threads, bool constant_weights = false) {
  ir::Graph graph("benchmark");
  auto kernel = CreateKernel(graph, domain, opset, node, inputs, constant_weights);
  if (!kernel.ok()) return state.SkipWithError(std::string(kernel.status().message()).c_str());
  ThreadPool pool(threads);
  std::vector<const Tensor*> input_ptrs;
  for (const Tensor& t : inputs) input_ptrs.push_back(&t);
  for (auto _ : state) {
    std::vector<Tensor> outputs(1);
    KernelContext ctx(input_ptrs, &outputs, {true}, &pool, {});
    absl::Status status = (*kernel)->Compute(ctx);
    if (!status.ok()) return state.SkipWithError(std::string(status.message()).c_str());
    benchmark::DoNotOptimize(outputs[0].raw_data());
  }
}

// The same pad on every side of a 2-D image.
inline std::vector<int64_t> EveryPad(int64_t pad) { return {pad, pad, pad, pad}; }

// One Conv/ConvTranspose (or FusedConv with a residual Z of Y's shape and Relu) node with a bias.
inline void RunConvNode(benchmark::State& state, const char* op, const Shape& x_shape, const Shape& w_shape,
                 int64_t stride, const std::vector<int64_t>& pads, int threads, bool constant_weights, double flops,
                 const Shape& residual_shape = {}, int64_t group = 1) {
  onnx::NodeProto node;
  node.set_op_type(op);
  for (const char* name : {"x", "w", "b"}) node.add_input(name);
  AddInts(node, "strides", {stride, stride});
  AddInts(node, "pads", pads);
  auto* group_attr = node.add_attribute();
  group_attr->set_name("group");
  group_attr->set_type(onnx::AttributeProto::INT);
  group_attr->set_i(group);
  const int64_t maps = std::string(op) == "ConvTranspose" ? w_shape[1] : w_shape[0];
  std::vector<Tensor> inputs = {RandomFloats(x_shape), RandomFloats(w_shape), RandomFloats({maps})};
  const bool fused = !residual_shape.empty();
  if (fused) {
    node.add_input(std::string(1, 'z'));
    inputs.push_back(RandomFloats(residual_shape));
    auto* activation = node.add_attribute();
    activation->set_name("activation");
    activation->set_type(onnx::AttributeProto::STRING);
    activation->set_s("Relu");
  }
  RunNode(state, fused ? kInternal : kOnnx, fused ? 1 : 22, node, inputs, threads, constant_weights);
  ReportFlops(state, flops, threads);
}

}  // namespace onnxserve::bench

// Loading models whose graph passes remove or rewrite many nodes. A load cannot be cancelled, so the passes
// must cost about linear time in the model: a model of a million dead nodes is some 20 MB. Each row loads
// a model of `n` nodes of one kind after a float input x [4] (Session::Create with the passes on); the
// Complexity rows fit the growth:
//   dead:       n Neg nodes reading x that nothing reads (dead-node elimination);
//   identities: a chain of n Identities (identity elimination);
//   gelus:      n/5 exact GELUs spelled out in five nodes each, chained (Gelu fusion), after n plain Negs;
//   transposes: a chain of n Transposes of x, each the identity (transpose elimination);
//   fan-out:    n identity Transposes all reading x (transpose elimination takes each off x's readers);
//   matmuls:    n/2 MatMul -> Relu pairs, chained (each Relu fused into its MatMul: gemm fusion).
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "onnx/onnx_pb.h"
#include "runtime/exec/session.h"
#include "runtime/model/model.h"

namespace onnxserve {
namespace {

class ModelWriter {
 public:
  ModelWriter() {
    proto_.set_ir_version(8);
    proto_.add_opset_import()->set_version(13);
    auto* x = proto_.mutable_graph()->add_input();
    x->set_name("x");
    auto* type = x->mutable_type()->mutable_tensor_type();
    type->set_elem_type(onnx::TensorProto::FLOAT);
    type->mutable_shape()->add_dim()->set_dim_value(4);
  }

  void Matrix(const std::string& name, int64_t n) {
    auto* t = proto_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(n);
    t->add_dims(n);
    for (int64_t i = 0; i < n * n; ++i) t->add_float_data(i % (n + 1) == 0 ? 1.f : 0.f);
  }

  void Scalar(const std::string& name, float value) {
    auto* t = proto_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(value);
  }

  // Writes one node and returns its output's name.
  std::string Node(const std::string& op, const std::vector<std::string>& inputs) {
    auto* node = proto_.mutable_graph()->add_node();
    node->set_op_type(op);
    for (const std::string& in : inputs) node->add_input(in);
    const std::string out = absl::StrCat("v", ++count_);
    node->add_output(out);
    return out;
  }

  std::shared_ptr<const Model> Load(const std::string& output) {
    proto_.mutable_graph()->add_output()->set_name(output);
    auto model = Model::FromProto(proto_, "");
    return model.ok() ? *model : nullptr;
  }

 private:
  onnx::ModelProto proto_;
  int count_ = 0;
};

void TimeLoads(benchmark::State& state, const std::shared_ptr<const Model>& model) {
  if (model == nullptr) {
    state.SkipWithError("the model did not load");
    return;
  }
  for (auto _ : state) {
    auto session = Session::Create(model);
    if (!session.ok()) state.SkipWithError(std::string(session.status().message()).c_str());
  }
  state.SetComplexityN(state.range(0));
}

void BM_LoadDeadNodes(benchmark::State& state) {
  ModelWriter writer;
  for (int64_t i = 0; i < state.range(0); ++i) writer.Node("Neg", {"x"});
  TimeLoads(state, writer.Load(writer.Node("Relu", {"x"})));
}

void BM_LoadIdentities(benchmark::State& state) {
  ModelWriter writer;
  std::string last = "x";
  for (int64_t i = 0; i < state.range(0); ++i) last = writer.Node("Identity", {last});
  TimeLoads(state, writer.Load(writer.Node("Relu", {last})));
}

void BM_LoadGelus(benchmark::State& state) {
  ModelWriter writer;
  writer.Scalar("sqrt2", 1.4142135f);
  writer.Scalar("one", 1.0f);
  writer.Scalar("half", 0.5f);
  std::string last = "x";
  for (int64_t i = 0; i < state.range(0); ++i) last = writer.Node("Neg", {last});
  for (int64_t i = 0; i < state.range(0) / 5; ++i) {
    const std::string shifted = writer.Node("Add", {writer.Node("Erf", {writer.Node("Div", {last, "sqrt2"})}), "one"});
    last = writer.Node("Mul", {writer.Node("Mul", {last, shifted}), "half"});
  }
  TimeLoads(state, writer.Load(last));
}

void BM_LoadTransposes(benchmark::State& state) {
  ModelWriter writer;
  std::string last = "x";
  for (int64_t i = 0; i < state.range(0); ++i) last = writer.Node("Transpose", {last});
  TimeLoads(state, writer.Load(writer.Node("Relu", {last})));
}

void BM_LoadFanOut(benchmark::State& state) {
  ModelWriter writer;
  std::string last;
  for (int64_t i = 0; i < state.range(0); ++i) last = writer.Node("Transpose", {"x"});
  TimeLoads(state, writer.Load(writer.Node("Relu", {last})));
}

void BM_LoadMatMuls(benchmark::State& state) {
  ModelWriter writer;
  writer.Matrix("w", 4);
  std::string last = "x";
  for (int64_t i = 0; i < state.range(0) / 2; ++i) last = writer.Node("Relu", {writer.Node("MatMul", {last, "w"})});
  TimeLoads(state, writer.Load(last));
}

BENCHMARK(BM_LoadDeadNodes)->RangeMultiplier(4)->Range(4096, 65536)->Unit(benchmark::kMillisecond)->Complexity();
BENCHMARK(BM_LoadIdentities)->RangeMultiplier(4)->Range(4096, 65536)->Unit(benchmark::kMillisecond)->Complexity();
BENCHMARK(BM_LoadGelus)->RangeMultiplier(4)->Range(4096, 65536)->Unit(benchmark::kMillisecond)->Complexity();
BENCHMARK(BM_LoadTransposes)->RangeMultiplier(4)->Range(4096, 65536)->Unit(benchmark::kMillisecond)->Complexity();
BENCHMARK(BM_LoadFanOut)->RangeMultiplier(4)->Range(4096, 65536)->Unit(benchmark::kMillisecond)->Complexity();
BENCHMARK(BM_LoadMatMuls)->RangeMultiplier(4)->Range(4096, 65536)->Unit(benchmark::kMillisecond)->Complexity();

}  // namespace
}  // namespace onnxserve

#include "tests/support/op_test.h"

#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "runtime/exec/session.h"
#include "runtime/model/tensor_proto.h"

namespace onnxserve::testing {
namespace {

onnx::ValueInfoProto TensorValueInfo(const std::string& name, const Tensor* t) {
  onnx::ValueInfoProto info;
  info.set_name(name);
  auto* tensor_type = info.mutable_type()->mutable_tensor_type();
  if (t != nullptr) {
    tensor_type->set_elem_type(static_cast<int32_t>(t->dtype()));
    auto* shape = tensor_type->mutable_shape();
    for (int64_t d : t->shape()) shape->add_dim()->set_dim_value(d);
  }
  return info;
}

}  // namespace

OpTest::OpTest(std::string op_type, int opset, std::string domain) {
  node_.set_op_type(std::move(op_type));
  node_.set_domain(domain);
  node_.set_name("node");
  opsets_.push_back({domain, opset});
}

OpTest& OpTest::Input(const std::string& name, Tensor value) {
  node_.add_input(name);
  feeds_.push_back({name, std::move(value)});
  return *this;
}

OpTest& OpTest::Constant(const std::string& name, Tensor value) {
  node_.add_input(name);
  constants_.push_back({name, std::move(value)});
  return *this;
}

OpTest& OpTest::OuterInput(const std::string& name, Tensor value) {
  feeds_.push_back({name, std::move(value)});
  return *this;
}

OpTest& OpTest::NoInput() {
  node_.add_input("");
  return *this;
}

OpTest& OpTest::Output(const std::string& name) {
  node_.add_output(name);
  return *this;
}

OpTest& OpTest::NoOutput() {
  node_.add_output("");
  return *this;
}

OpTest& OpTest::Attr(const onnx::AttributeProto& attr) {
  for (auto& existing : *node_.mutable_attribute()) {
    if (existing.name() == attr.name()) {
      existing = attr;
      return *this;
    }
  }
  *node_.add_attribute() = attr;
  return *this;
}

#define ONNXSERVE_OPTEST_ATTR(TYPE, ENUM, SETTER)              \
  OpTest& OpTest::Attr(const std::string& name, TYPE v) {      \
    onnx::AttributeProto attr;                                 \
    attr.set_name(name);                                       \
    attr.set_type(onnx::AttributeProto::ENUM);                 \
    SETTER;                                                    \
    return Attr(attr);                                         \
  }

ONNXSERVE_OPTEST_ATTR(int64_t, INT, attr.set_i(v))
ONNXSERVE_OPTEST_ATTR(float, FLOAT, attr.set_f(v))
ONNXSERVE_OPTEST_ATTR(const std::string&, STRING, attr.set_s(v))
ONNXSERVE_OPTEST_ATTR(const std::vector<int64_t>&, INTS, for (auto x : v) attr.add_ints(x))
ONNXSERVE_OPTEST_ATTR(const std::vector<float>&, FLOATS, for (auto x : v) attr.add_floats(x))
ONNXSERVE_OPTEST_ATTR(const std::vector<std::string>&, STRINGS, for (const auto& x : v) attr.add_strings(x))
ONNXSERVE_OPTEST_ATTR(const Tensor&, TENSOR, *attr.mutable_t() = TensorToProto(v, name))

#undef ONNXSERVE_OPTEST_ATTR

OpTest& OpTest::Opset(const std::string& domain, int version) {
  opsets_.push_back({domain, version});
  return *this;
}

OpTest& OpTest::Threads(int threads) {
  threads_ = threads;
  return *this;
}

onnx::ModelProto OpTest::BuildModel() const {
  onnx::ModelProto model;
  model.set_ir_version(10);
  for (const auto& [domain, version] : opsets_) {
    auto* opset = model.add_opset_import();
    opset->set_domain(domain);
    opset->set_version(version);
  }
  auto* graph = model.mutable_graph();
  graph->set_name(absl::StrCat(node_.op_type(), "_test"));
  *graph->add_node() = node_;
  for (const auto& [name, tensor] : feeds_) *graph->add_input() = TensorValueInfo(name, &tensor);
  for (const auto& [name, tensor] : constants_) *graph->add_initializer() = TensorToProto(tensor, name);
  for (const auto& out : node_.output()) {
    if (!out.empty()) *graph->add_output() = TensorValueInfo(out, nullptr);
  }
  return model;
}

absl::StatusOr<std::vector<Tensor>> OpTest::Run(const RunLimits& limits) const {
  auto model = Model::FromProto(BuildModel(), "");
  if (!model.ok()) return model.status();
  auto session = Session::Create(*std::move(model), {.intra_op_threads = threads_});
  if (!session.ok()) return session.status();
  return (*session)->Run(feeds_, {}, limits);
}

::testing::AssertionResult TensorsClose(const Tensor& expected, const Tensor& actual, double rtol,
                                        double atol) {
  if (expected.dtype() != actual.dtype() || expected.shape() != actual.shape()) {
    return ::testing::AssertionFailure() << "expected " << expected.DebugString() << ", got "
                                         << actual.DebugString();
  }
  if (expected.dtype() == DataType::kString) {
    for (int64_t i = 0; i < expected.NumElements(); ++i) {
      if (expected.data<std::string>()[i] != actual.data<std::string>()[i]) {
        return ::testing::AssertionFailure() << "element " << i << ": expected \""
                                             << expected.data<std::string>()[i] << "\", got \""
                                             << actual.data<std::string>()[i] << "\"";
      }
    }
    return ::testing::AssertionSuccess();
  }
  const bool exact = expected.dtype() != DataType::kFloat && expected.dtype() != DataType::kDouble &&
                     expected.dtype() != DataType::kFloat16 && expected.dtype() != DataType::kBFloat16;
  for (int64_t i = 0; i < expected.NumElements(); ++i) {
    const double e = expected.GetAsDouble(i);
    const double a = actual.GetAsDouble(i);
    if (std::isnan(e) && std::isnan(a)) continue;
    const bool close = exact ? (expected.dtype() == DataType::kInt64 || expected.dtype() == DataType::kUint64
                                    ? expected.GetAsInt64(i) == actual.GetAsInt64(i)
                                    : e == a)
                             : (e == a || std::abs(a - e) <= atol + rtol * std::abs(e));
    if (!close) {
      return ::testing::AssertionFailure() << "element " << i << " of " << expected.DebugString()
                                           << ": expected " << e << ", got " << a;
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult FailsWith(const absl::StatusOr<std::vector<Tensor>>& out, const std::string& text) {
  if (out.ok()) return ::testing::AssertionFailure() << "ran, expected an error saying \"" << text << "\"";
  if (out.status().message().find(text) == std::string::npos) {
    return ::testing::AssertionFailure() << out.status() << " does not say \"" << text << "\"";
  }
  return ::testing::AssertionSuccess();
}

std::vector<float> RandomFloats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace onnxserve::testing

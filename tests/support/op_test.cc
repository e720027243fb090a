#include "tests/support/op_test.h"

#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "runtime/exec/session.h"
#include "runtime/model/tensor_proto.h"

namespace onnxserve::testing {
namespace {

// Outputs are declared as tensors of no particular type; the kernel decides.
onnx::ValueInfoProto OutputInfo(const std::string& name) {
  onnx::ValueInfoProto info;
  info.set_name(name);
  info.mutable_type()->mutable_tensor_type();
  return info;
}

// The type `value` has; tensors with their shape, the tensors inside others with their element type only.
void DeclareTypeOf(const Value& value, onnx::TypeProto& type, bool with_shape) {
  switch (value.kind()) {
    case Value::Kind::kTensor: {
      auto* tensor_type = type.mutable_tensor_type();
      tensor_type->set_elem_type(static_cast<int32_t>(value.tensor()->dtype()));
      if (with_shape) {
        auto* shape = tensor_type->mutable_shape();
        for (int64_t d : value.tensor()->shape()) shape->add_dim()->set_dim_value(d);
      }
      return;
    }
    case Value::Kind::kSequence: {
      auto* elem = type.mutable_sequence_type()->mutable_elem_type();
      if (!value.elements().empty()) {
        DeclareTypeOf(value.elements()[0], *elem, false);
      } else {
        elem->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(value.elem_type()));
      }
      return;
    }
    case Value::Kind::kMap: {
      auto* map_type = type.mutable_map_type();
      map_type->set_key_type(static_cast<int32_t>(value.keys().dtype()));
      auto* elem = map_type->mutable_value_type();
      if (!value.elements().empty()) {
        DeclareTypeOf(value.elements()[0], *elem, false);
      } else {
        elem->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
      }
      return;
    }
    case Value::Kind::kOptional: {
      auto* elem = type.mutable_optional_type()->mutable_elem_type();
      if (value.has_element()) {
        DeclareTypeOf(value.element(), *elem, false);
      } else {
        elem->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
      }
      return;
    }
    default: return;
  }
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

OpTest& OpTest::ValueInput(const std::string& name, Value value) {
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

OpTest& OpTest::MemoryBudget(int64_t bytes) {
  memory_budget_ = bytes;
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
  for (const auto& [name, value] : feeds_) {
    auto* input = graph->add_input();
    input->set_name(name);
    DeclareTypeOf(value, *input->mutable_type(), true);
  }
  for (const auto& [name, tensor] : constants_) *graph->add_initializer() = TensorToProto(tensor, name);
  for (const auto& out : node_.output()) {
    if (!out.empty()) *graph->add_output() = OutputInfo(out);
  }
  return model;
}

absl::StatusOr<std::vector<Value>> OpTest::RunValues(const RunLimits& limits) const {
  auto model = Model::FromProto(BuildModel(), "");
  if (!model.ok()) return model.status();
  auto session =
      Session::Create(*std::move(model), {.intra_op_threads = threads_, .memory_budget_bytes = memory_budget_});
  if (!session.ok()) return session.status();
  return (*session)->RunValues(feeds_, {}, limits);
}

absl::StatusOr<std::vector<Tensor>> OpTest::Run(const RunLimits& limits) const {
  auto values = RunValues(limits);
  if (!values.ok()) return values.status();
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < values->size(); ++i) {
    const Tensor* tensor = (*values)[i].tensor();
    if (tensor == nullptr) return absl::InvalidArgumentError(absl::StrCat("output ", i, " is not a tensor"));
    tensors.push_back(*tensor);
  }
  return tensors;
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

Tensor RandomTensor(const Shape& shape, uint32_t seed) {
  return Tensor::FromVector<float>(shape, RandomFloats(NumElements(shape), seed));
}

int64_t ConvOutputSize(int64_t in, int64_t pad_begin, int64_t pad_end, int64_t kernel, int64_t dilation,
                       int64_t stride) {
  return (in + pad_begin + pad_end - (kernel - 1) * dilation - 1) / stride + 1;
}

double ReferenceConvAt(const ReferenceConvGeometry& g, const float* x, const float* w, int64_t n, int64_t m,
                       int64_t oh, int64_t ow) {
  const int64_t first_channel = m / g.group_maps * g.group_channels;
  const int64_t taps = g.group_channels * g.kernel_h * g.kernel_w;
  double sum = 0.0;
  for (int64_t ci = 0; ci < g.group_channels; ++ci) {
    for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
      for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
        const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
        const int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
        if (ih < 0 || ih >= g.in_h || iw < 0 || iw >= g.in_w) continue;
        sum += double{w[m * taps + (ci * g.kernel_h + kh) * g.kernel_w + kw]} *
               x[((n * g.channels + first_channel + ci) * g.in_h + ih) * g.in_w + iw];
      }
    }
  }
  return sum;
}

}  // namespace onnxserve::testing

#include "runtime/registry/kernel.h"

#include "runtime/core/status_macros.h"
#include "runtime/model/tensor_proto.h"

namespace onnxserve {
namespace {

absl::Status WrongType(const onnx::AttributeProto& attr, const char* want) {
  return absl::InvalidArgumentError(absl::StrCat("attribute \"", attr.name(), "\" should be ", want, ", got ",
                                                 onnx::AttributeProto::AttributeType_Name(attr.type())));
}

}  // namespace

const onnx::AttributeProto* KernelInfo::FindAttr(std::string_view name) const {
  for (const auto& attr : node_.attribute()) {
    if (attr.name() == name) return &attr;
  }
  return nullptr;
}

#define ONNXSERVE_ATTR_GETTER(T, ENUM, EXPR)                                   \
  template <>                                                                  \
  absl::StatusOr<T> KernelInfo::Attr<T>(std::string_view name) const {         \
    const onnx::AttributeProto* attr = FindAttr(name);                         \
    if (attr == nullptr) {                                                     \
      return absl::InvalidArgumentError(                                       \
          absl::StrCat("required attribute \"", std::string(name), "\" is missing"));       \
    }                                                                          \
    if (attr->type() != onnx::AttributeProto::ENUM) return WrongType(*attr, #ENUM); \
    return EXPR;                                                               \
  }

ONNXSERVE_ATTR_GETTER(int64_t, INT, attr->i())
ONNXSERVE_ATTR_GETTER(float, FLOAT, attr->f())
ONNXSERVE_ATTR_GETTER(std::string, STRING, attr->s())
ONNXSERVE_ATTR_GETTER(std::vector<int64_t>, INTS, std::vector<int64_t>(attr->ints().begin(), attr->ints().end()))
ONNXSERVE_ATTR_GETTER(std::vector<float>, FLOATS, std::vector<float>(attr->floats().begin(), attr->floats().end()))
ONNXSERVE_ATTR_GETTER(std::vector<std::string>, STRINGS,
                      std::vector<std::string>(attr->strings().begin(), attr->strings().end()))
ONNXSERVE_ATTR_GETTER(Tensor, TENSOR, TensorFromProto(attr->t()))

#undef ONNXSERVE_ATTR_GETTER

const ExecutionPlan* KernelInfo::Subgraph(std::string_view attr) const {
  for (const auto& [name, plan] : subgraphs_) {
    if (name == attr) return plan;
  }
  return nullptr;
}

absl::Status RequireInputs(const KernelContext& ctx, int count) {
  for (int i = 0; i < count; ++i) {
    if (ctx.Input(i) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("required input ", i, " is missing"));
    }
  }
  return absl::OkStatus();
}

}  // namespace onnxserve

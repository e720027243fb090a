#include "runtime/registry/kernel.h"

#include "runtime/core/status_macros.h"

namespace onnxserve {
namespace {

absl::Status WrongType(const ir::Attribute& attr, const char* want) {
  return absl::InvalidArgumentError(absl::StrCat("attribute \"", attr.name, "\" should be ", want, ", got ",
                                                 ir::AttributeTypeName(attr.type)));
}

}  // namespace

#define ONNXSERVE_ATTR_GETTER(T, ENUM, NAME, EXPR)                                            \
  template <>                                                                                \
  absl::StatusOr<T> KernelInfo::Attr<T>(std::string_view name) const {                       \
    const ir::Attribute* attr = FindAttr(name);                                              \
    if (attr == nullptr) {                                                                   \
      return absl::InvalidArgumentError(                                                     \
          absl::StrCat("required attribute \"", std::string(name), "\" is missing"));         \
    }                                                                                        \
    if (attr->type != ir::AttributeType::ENUM) return WrongType(*attr, NAME);                \
    return EXPR;                                                                             \
  }

ONNXSERVE_ATTR_GETTER(int64_t, kInt, "INT", attr->i)
ONNXSERVE_ATTR_GETTER(float, kFloat, "FLOAT", attr->f)
ONNXSERVE_ATTR_GETTER(std::string, kString, "STRING", attr->s)
ONNXSERVE_ATTR_GETTER(std::vector<int64_t>, kInts, "INTS", attr->ints)
ONNXSERVE_ATTR_GETTER(std::vector<float>, kFloats, "FLOATS", attr->floats)
ONNXSERVE_ATTR_GETTER(std::vector<std::string>, kStrings, "STRINGS", attr->strings)

#undef ONNXSERVE_ATTR_GETTER

template <>
absl::StatusOr<Tensor> KernelInfo::Attr<Tensor>(std::string_view name) const {
  const ir::Attribute* attr = FindAttr(name);
  if (attr == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("required attribute \"", std::string(name), "\" is missing"));
  }
  if (attr->type != ir::AttributeType::kTensor) return WrongType(*attr, "TENSOR");
  if (!attr->t_status.ok()) return attr->t_status;
  return attr->t;
}

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

#include <optional>

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/sequence/sequence.h"

namespace onnxserve {

absl::StatusOr<const Value*> SequenceInput(const KernelContext& ctx, int i) {
  const Value* value = ctx.InputValue(i);
  if (value == nullptr) return absl::InvalidArgumentError(absl::StrCat("required input ", i, " is missing"));
  if (!value->is_sequence()) {
    return absl::InvalidArgumentError(absl::StrCat("input ", i, " is ", value->DebugString(), ", expected a sequence"));
  }
  return value;
}

absl::StatusOr<std::optional<int64_t>> PositionInput(const KernelContext& ctx, int i) {
  ASSIGN_OR_RETURN(const Tensor* position, ctx.TensorInput(i));
  if (position == nullptr) return std::nullopt;
  const bool integral = position->dtype() == DataType::kInt32 || position->dtype() == DataType::kInt64;
  // The spec says a scalar; the ONNX tests themselves give a 1-element 1-D tensor, as ONNX Runtime takes.
  if (!integral || position->rank() > 1 || position->NumElements() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("position must be an int32 or int64 scalar, got ", position->DebugString()));
  }
  return position->GetAsInt64(0);
}

DataType SequenceElementType(const Value& sequence) {
  if (sequence.elem_type() != DataType::kUndefined) return sequence.elem_type();
  const auto& elements = sequence.elements();
  if (!elements.empty() && elements[0].is_tensor()) return elements[0].tensor()->dtype();
  return DataType::kUndefined;
}

absl::Status CheckSequenceLength(int64_t length) {
  if (length <= kMaxSequenceLength) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat("a sequence of ", length, " values is past the limit of ", kMaxSequenceLength));
}

absl::Status CheckJoins(DataType elem_type, const Tensor& tensor, const char* what) {
  if (elem_type == DataType::kUndefined || elem_type == tensor.dtype()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, " ", tensor.DebugString(), " cannot join a sequence of ",
                                                 DataTypeName(elem_type), " tensors"));
}

}  // namespace onnxserve

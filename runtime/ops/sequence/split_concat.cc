// Between tensors and sequences: SplitToSequence cuts a tensor along an axis into a sequence (-11; -24
// widens the types), ConcatFromSequence joins a sequence's tensors along an axis, or stacks them along a new
// one (new_axis = 1).
#include <algorithm>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"
#include "runtime/ops/common.h"
#include "runtime/ops/concat.h"
#include "runtime/ops/sequence/sequence.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// The pieces' lengths along an axis of size `dim`: `split` as a scalar gives pieces of that length (the
// last one shorter when it does not divide), as a 1-D tensor the lengths themselves, which must add up to
// the axis. Without it every piece has length 1.
absl::StatusOr<std::vector<int64_t>> PieceLengths(const Tensor* split, int64_t dim) {
  if (split == nullptr) {
    RETURN_IF_ERROR(CheckSequenceLength(dim));
    return std::vector<int64_t>(dim, 1);
  }
  if (split->dtype() != DataType::kInt32 && split->dtype() != DataType::kInt64) {
    return absl::InvalidArgumentError(absl::StrCat("split must be int32 or int64, got ", split->DebugString()));
  }
  if (split->rank() == 0) {
    const int64_t piece = split->GetAsInt64(0);
    if (piece <= 0) return absl::InvalidArgumentError(absl::StrCat("split ", piece, " must be positive"));
    RETURN_IF_ERROR(CheckSequenceLength(dim / piece));
    std::vector<int64_t> lengths;
    for (int64_t left = dim; left > 0; left -= piece) lengths.push_back(std::min(left, piece));
    return lengths;
  }
  if (split->rank() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("split must be a scalar or 1-D, got ", split->DebugString()));
  }
  RETURN_IF_ERROR(CheckSequenceLength(split->NumElements()));
  std::vector<int64_t> lengths = Int64Values(*split);
  // Each length within [0, dim], so that their sum cannot overflow into a match.
  const bool out_of_range = std::any_of(lengths.begin(), lengths.end(), [&](int64_t l) { return l < 0 || l > dim; });
  if (out_of_range || std::accumulate(lengths.begin(), lengths.end(), int64_t{0}) != dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("split ", ShapeToString(lengths), " does not cut an axis of size ", dim));
  }
  return lengths;
}

class SplitToSequence final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis", 0));
    ASSIGN_OR_RETURN(const int64_t keepdims, info.Attr<int64_t>("keepdims", 1));
    keepdims_ = keepdims != 0;
    return absl::OkStatus();
  }
  Value::Kind OutputKind(int) const override { return Value::Kind::kSequence; }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& in = *ctx.Input(0);
    if (in.rank() == 0) return absl::InvalidArgumentError("cannot split a scalar");
    ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(axis_, in.rank()));
    const Tensor* split = ctx.Input(1);
    ASSIGN_OR_RETURN(const std::vector<int64_t> lengths, PieceLengths(split, in.dim(axis)));
    // keepdims only applies to the default split, whose pieces have length 1 along the axis.
    const bool squeeze = split == nullptr && !keepdims_;
    const std::vector<int64_t> strides = StridesOf(in.shape());
    std::vector<Value> pieces;
    int64_t start = 0;
    for (int64_t length : lengths) {
      Shape shape = in.shape();
      shape[axis] = length;
      Tensor piece(in.dtype(), shape);
      CopyStrided(in, start * strides[axis], strides, piece, ctx.pool());
      if (squeeze) {
        shape.erase(shape.begin() + axis);
        piece = piece.Reshaped(shape);
      }
      pieces.push_back(std::move(piece));
      start += length;
    }
    return ctx.SetOutputValue(0, Value::Sequence(in.dtype(), std::move(pieces)));
  }

 private:
  int64_t axis_ = 0;
  bool keepdims_ = true;
};

class ConcatFromSequence final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis"));
    ASSIGN_OR_RETURN(const int64_t new_axis, info.Attr<int64_t>("new_axis", 0));
    new_axis_ = new_axis != 0;
    return absl::OkStatus();
  }
  bool TakesValues() const override { return true; }
  Value::Kind OutputKind(int) const override { return Value::Kind::kTensor; }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const Value* sequence, SequenceInput(ctx, 0));
    const auto& elements = sequence->elements();
    if (elements.empty()) return absl::InvalidArgumentError("cannot concatenate an empty sequence");
    std::vector<Tensor> parts;
    for (size_t i = 0; i < elements.size(); ++i) {
      if (!elements[i].is_tensor()) {
        return absl::InvalidArgumentError(absl::StrCat("element ", i, " is ", elements[i].DebugString()));
      }
      parts.push_back(*elements[i].tensor());
    }
    int64_t axis = axis_;
    if (new_axis_) {
      // Stacking: each part gains a dim of 1 at the new axis, in [-rank - 1, rank].
      const int64_t rank = parts[0].rank();
      ASSIGN_OR_RETURN(axis, NormalizeAxis(axis_, rank + 1));
      for (Tensor& part : parts) {
        if (part.rank() != rank) break;  // ConcatAlongAxis names the mismatch
        Shape shape = part.shape();
        shape.insert(shape.begin() + axis, 1);
        part = part.Reshaped(shape);
      }
    }
    std::vector<const Tensor*> inputs;
    for (const Tensor& part : parts) inputs.push_back(&part);
    ASSIGN_OR_RETURN(Tensor out, ConcatAlongAxis(inputs, axis, ctx.pool()));
    ctx.SetOutput(0, std::move(out));
    return absl::OkStatus();
  }

 private:
  int64_t axis_ = 0;
  bool new_axis_ = false;
};

REGISTER_KERNEL(kOnnx, "SplitToSequence", 11, 23, kAllTypes, SplitToSequence);
REGISTER_KERNEL(kOnnx, "SplitToSequence", 24, kLatest, kAllTypes, SplitToSequence);
REGISTER_KERNEL(kOnnx, "ConcatFromSequence", 11, kLatest, kAnyType, ConcatFromSequence);

}  // namespace
}  // namespace onnxserve

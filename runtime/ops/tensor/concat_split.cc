// Concat joins tensors along an axis; Split cuts one into pieces along an axis.
#include <algorithm>
#include <numeric>

#include "runtime/ops/common.h"
#include "runtime/ops/concat.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// Copies every outer row of each input (a block of dim(axis) * inner elements) into its place in the
// matching output row.
template <typename T>
void ConcatRows(const std::vector<const Tensor*>& inputs, const std::vector<int64_t>& blocks, int64_t outer,
                Tensor& out, ThreadPool& pool) {
  const int64_t out_block = std::accumulate(blocks.begin(), blocks.end(), int64_t{0});
  T* dst = out.data<T>();
  const int64_t min_rows = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, out_block));
  pool.ParallelFor(outer, min_rows, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      T* at = dst + row * out_block;
      for (size_t i = 0; i < inputs.size(); ++i) {
        const T* src = inputs[i]->data<T>() + row * blocks[i];
        at = std::copy(src, src + blocks[i], at);
      }
    }
  });
}

// Inputs agree on type, rank and every dim but the axis.
absl::Status CheckMatches(const Tensor& first, const Tensor& in, int64_t axis, size_t index) {
  bool ok = in.dtype() == first.dtype() && in.rank() == first.rank();
  for (int64_t d = 0; ok && d < in.rank(); ++d) ok = d == axis || in.dim(d) == first.dim(d);
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("input ", index, " ", in.DebugString(), " does not match input 0 ",
                                                 first.DebugString(), " outside axis ", axis));
}

}  // namespace

absl::StatusOr<Tensor> ConcatAlongAxis(const std::vector<const Tensor*>& inputs, int64_t axis_attr, ThreadPool& pool) {
  const Tensor& first = *inputs[0];
  ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(axis_attr, first.rank()));
  if (first.rank() == 0) return absl::InvalidArgumentError("cannot concatenate scalars");
  Shape shape = first.shape();
  shape[axis] = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    RETURN_IF_ERROR(CheckMatches(first, *inputs[i], axis, i));
    shape[axis] += inputs[i]->dim(axis);
  }
  const int64_t outer = NumElements(absl::MakeConstSpan(shape).subspan(0, axis));
  const int64_t inner = NumElements(absl::MakeConstSpan(shape).subspan(axis + 1));
  std::vector<int64_t> blocks;
  for (const Tensor* in : inputs) blocks.push_back(in->dim(axis) * inner);
  RETURN_IF_ERROR(CheckJoinedStrings(inputs));
  ASSIGN_OR_RETURN(Tensor out, Tensor::Create(first.dtype(), std::move(shape)));
  DispatchByWidth(out.dtype(), [&](auto zero) { ConcatRows<decltype(zero)>(inputs, blocks, outer, out, pool); });
  return out;
}

namespace {

// Concat-1 defaults axis to 1; -4 requires it; -11 accepts negative axes.
class Concat final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    if (info.opset() < 4) {
      ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis", 1));
    } else {
      ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis"));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, ctx.num_inputs()));
    if (ctx.num_inputs() == 0) return absl::InvalidArgumentError("Concat needs at least one input");
    std::vector<const Tensor*> inputs;
    for (int i = 0; i < ctx.num_inputs(); ++i) inputs.push_back(ctx.Input(i));
    ASSIGN_OR_RETURN(Tensor out, ConcatAlongAxis(inputs, axis_, ctx.pool()));
    ctx.SetOutput(0, std::move(out));
    return absl::OkStatus();
  }

 private:
  int64_t axis_ = 1;
};

// Split lengths come from: Split-1 the `split` attribute or second input; -2/-11 the attribute; -13 the
// second input; -18 the second input or `num_outputs` (ceil-sized pieces, the last smaller). Without
// either the axis is split evenly across the outputs.
class Split final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis", 0));
    num_outputs_ = info.num_outputs();
    split_from_input_ = info.opset() == 1 || info.opset() >= 13;
    if (info.opset() < 13) {
      has_split_attr_ = info.HasAttr("split");
      ASSIGN_OR_RETURN(split_attr_, info.Attr<std::vector<int64_t>>("split", {}));
    }
    if (info.opset() >= 18 && info.HasAttr("num_outputs")) {
      ASSIGN_OR_RETURN(const int64_t n, info.Attr<int64_t>("num_outputs"));
      if (n != num_outputs_) {
        return absl::InvalidArgumentError(
            absl::StrCat("num_outputs ", n, " does not match the node's ", num_outputs_, " outputs"));
      }
      ceil_pieces_ = true;
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& in = *ctx.Input(0);
    ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(axis_, in.rank()));
    if (in.rank() == 0) return absl::InvalidArgumentError("cannot split a scalar");
    ASSIGN_OR_RETURN(const std::vector<int64_t> lengths, Lengths(ctx, in.dim(axis)));
    const std::vector<int64_t> strides = StridesOf(in.shape());
    int64_t start = 0;
    for (int i = 0; i < num_outputs_; ++i) {
      Shape shape = in.shape();
      shape[axis] = lengths[i];
      if (ctx.OutputWanted(i)) {
        Tensor& out = ctx.Output(i, in.dtype(), std::move(shape));
        CopyStrided(in, start * strides[axis], strides, out, ctx.pool());
      }
      start += lengths[i];
    }
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<std::vector<int64_t>> Lengths(const KernelContext& ctx, int64_t dim) const {
    std::vector<int64_t> lengths;
    if (split_from_input_ && ctx.Input(1) != nullptr) {
      lengths = Int64Values(*ctx.Input(1));
    } else if (has_split_attr_) {
      lengths = split_attr_;
    } else if (ceil_pieces_) {
      const int64_t piece = (dim + num_outputs_ - 1) / num_outputs_;
      for (int64_t i = 0, left = dim; i < num_outputs_; ++i, left -= piece) {
        lengths.push_back(std::clamp<int64_t>(left, 0, piece));
      }
    } else {
      if (dim % num_outputs_ != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("axis of size ", dim, " cannot be split evenly into ", num_outputs_, " outputs"));
      }
      lengths.assign(num_outputs_, dim / num_outputs_);
    }
    // Each length within [0, dim], so that their sum cannot overflow into a match.
    const bool out_of_range = std::any_of(lengths.begin(), lengths.end(), [&](int64_t l) { return l < 0 || l > dim; });
    if (static_cast<int>(lengths.size()) != num_outputs_ || out_of_range ||
        std::accumulate(lengths.begin(), lengths.end(), int64_t{0}) != dim) {
      return absl::InvalidArgumentError(absl::StrCat("split ", ShapeToString(lengths), " does not cut an axis of size ",
                                                     dim, " into ", num_outputs_, " outputs"));
    }
    return lengths;
  }

  int64_t axis_ = 0;
  int num_outputs_ = 1;
  bool split_from_input_ = false;
  bool has_split_attr_ = false;
  std::vector<int64_t> split_attr_;
  bool ceil_pieces_ = false;
};

// Later versions widen the type lists (Concat-4 makes axis required, -11 allows negative axes).
REGISTER_KERNEL(kOnnx, "Concat", 1, 3, kAllTypes, Concat);
REGISTER_KERNEL(kOnnx, "Concat", 4, 10, kAllTypes, Concat);
REGISTER_KERNEL(kOnnx, "Concat", 11, 12, kAllTypes, Concat);
REGISTER_KERNEL(kOnnx, "Concat", 13, kLatest, kAllTypes, Concat);

REGISTER_KERNEL(kOnnx, "Split", 1, 1, kAllTypes, Split);
REGISTER_KERNEL(kOnnx, "Split", 2, 10, kAllTypes, Split);
REGISTER_KERNEL(kOnnx, "Split", 11, 12, kAllTypes, Split);
REGISTER_KERNEL(kOnnx, "Split", 13, 17, kAllTypes, Split);
REGISTER_KERNEL(kOnnx, "Split", 18, kLatest, kAllTypes, Split);

}  // namespace
}  // namespace onnxserve

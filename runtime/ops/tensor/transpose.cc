// Transpose and the block rearrangements DepthToSpace and SpaceToDepth, which are transposes of a 6-D view
// of their NCHW input.
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

Shape PermutedShape(const Shape& shape, const std::vector<int64_t>& perm) {
  Shape out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = shape[perm[i]];
  return out;
}

// Writes `in`, viewed with `view_shape` (as many elements), transposed by `perm` into a new output 0 of
// `out_shape` (which may regroup the permuted dims).
void TransposeToOutput(KernelContext& ctx, const Tensor& in, const Shape& view_shape,
                       const std::vector<int64_t>& perm, Shape out_shape) {
  const std::vector<int64_t> view_strides = StridesOf(view_shape);
  std::vector<int64_t> strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) strides[i] = view_strides[perm[i]];
  Tensor& out = ctx.Output(0, in.dtype(), std::move(out_shape));
  Tensor permuted_view = out.Reshaped(PermutedShape(view_shape, perm));
  CopyStrided(in, 0, strides, permuted_view, ctx.pool());
}

// Without `perm` the dims are reversed. An identity perm passes the input through.
class Transpose final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    has_perm_ = info.HasAttr("perm");
    ASSIGN_OR_RETURN(perm_, info.Attr<std::vector<int64_t>>("perm", {}));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& in = *ctx.Input(0);
    ASSIGN_OR_RETURN(const std::vector<int64_t> perm, PermFor(in.rank()));
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
    if (identity) {
      ctx.SetOutput(0, in);
      return absl::OkStatus();
    }
    TransposeToOutput(ctx, in, in.shape(), perm, PermutedShape(in.shape(), perm));
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<std::vector<int64_t>> PermFor(int64_t rank) const {
    std::vector<int64_t> perm(rank);
    if (!has_perm_) {
      for (int64_t i = 0; i < rank; ++i) perm[i] = rank - 1 - i;
      return perm;
    }
    std::vector<bool> seen(rank, false);
    bool valid = static_cast<int64_t>(perm_.size()) == rank;
    for (size_t i = 0; valid && i < perm_.size(); ++i) {
      perm[i] = perm_[i] < 0 ? perm_[i] + rank : perm_[i];
      valid = perm[i] >= 0 && perm[i] < rank && !seen[perm[i]];
      if (valid) seen[perm[i]] = true;
    }
    if (!valid) {
      return absl::InvalidArgumentError(
          absl::StrCat("perm ", ShapeToString(perm_), " is not a permutation of the ", rank, " input dims"));
    }
    return perm;
  }

  bool has_perm_ = false;
  std::vector<int64_t> perm_;
};

absl::StatusOr<int64_t> ParseBlocksize(const KernelInfo& info) {
  ASSIGN_OR_RETURN(const int64_t blocksize, info.Attr<int64_t>("blocksize"));
  if (blocksize <= 0) return absl::InvalidArgumentError(absl::StrCat("blocksize ", blocksize, " must be > 0"));
  return blocksize;
}

absl::Status RequireRank4(const Tensor& in) {
  if (in.rank() == 4) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("expected a 4-D NCHW input, got ", in.DebugString()));
}

// DepthToSpace-1 always uses DCR (depth, column, row) order; -11 adds mode CRD.
class DepthToSpace final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(b_, ParseBlocksize(info));
    ASSIGN_OR_RETURN(const std::string mode, info.Attr<std::string>("mode", "DCR"));
    if (mode != "DCR" && mode != "CRD") {
      return absl::InvalidArgumentError(absl::StrCat("mode \"", mode, "\" should be DCR or CRD"));
    }
    crd_ = mode == "CRD";
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& in = *ctx.Input(0);
    RETURN_IF_ERROR(RequireRank4(in));
    const int64_t n = in.dim(0), c = in.dim(1), h = in.dim(2), w = in.dim(3);
    // b^2 divides c, asked without squaring b: a blocksize of 2^32 squares to 0 in int64.
    if (c % b_ != 0 || (c / b_) % b_ != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("channels ", c, " are not a multiple of blocksize^2 (blocksize ", b_, ")"));
    }
    const int64_t depth = c / b_ / b_;
    const Shape out_shape = {n, depth, h * b_, w * b_};
    if (crd_) {
      TransposeToOutput(ctx, in, {n, depth, b_, b_, h, w}, {0, 1, 4, 2, 5, 3}, out_shape);
    } else {
      TransposeToOutput(ctx, in, {n, b_, b_, depth, h, w}, {0, 3, 4, 1, 5, 2}, out_shape);
    }
    return absl::OkStatus();
  }

 private:
  int64_t b_ = 1;
  bool crd_ = false;
};

class SpaceToDepth final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(b_, ParseBlocksize(info));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& in = *ctx.Input(0);
    RETURN_IF_ERROR(RequireRank4(in));
    const int64_t n = in.dim(0), c = in.dim(1), h = in.dim(2), w = in.dim(3);
    if (h % b_ != 0 || w % b_ != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("height ", h, " and width ", w, " must be multiples of blocksize ", b_));
    }
    // With h = w = 0 any blocksize divides them, and c * b^2 may overflow.
    ASSIGN_OR_RETURN(const int64_t cb, CheckedMul(c, b_));
    ASSIGN_OR_RETURN(const int64_t depth, CheckedMul(cb, b_));
    TransposeToOutput(ctx, in, {n, c, h / b_, b_, w / b_, b_}, {0, 3, 5, 1, 2, 4}, {n, depth, h / b_, w / b_});
    return absl::OkStatus();
  }

 private:
  int64_t b_ = 1;
};

REGISTER_KERNEL(kOnnx, "Transpose", 1, 12, kAllTypes, Transpose);
REGISTER_KERNEL(kOnnx, "Transpose", 13, 20, kAllTypes, Transpose);
REGISTER_KERNEL(kOnnx, "Transpose", 21, 22, kAllTypes, Transpose);
REGISTER_KERNEL(kOnnx, "Transpose", 23, 23, kAllTypes, Transpose);
REGISTER_KERNEL(kOnnx, "Transpose", 24, 24, kAllTypes, Transpose);
REGISTER_KERNEL(kOnnx, "Transpose", 25, kLatest, kAllTypes, Transpose);

REGISTER_KERNEL(kOnnx, "DepthToSpace", 1, 10, kAllTypes, DepthToSpace);
REGISTER_KERNEL(kOnnx, "DepthToSpace", 11, 12, kAllTypes, DepthToSpace);
REGISTER_KERNEL(kOnnx, "DepthToSpace", 13, kLatest, kAllTypes, DepthToSpace);

REGISTER_KERNEL(kOnnx, "SpaceToDepth", 1, 12, kAllTypes, SpaceToDepth);
REGISTER_KERNEL(kOnnx, "SpaceToDepth", 13, kLatest, kAllTypes, SpaceToDepth);

}  // namespace
}  // namespace onnxserve

// Shape operators: Reshape, Flatten, Squeeze and Unsqueeze only relabel dimensions, so their outputs share the
// input's storage; Shape and Size read the shape; Expand broadcasts into a new tensor.
#include <algorithm>
#include <iterator>
#include <optional>

#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// The output shape of Reshape: 0 copies the input dim at that index (unless allow_zero), one -1 is inferred.
absl::StatusOr<Shape> ReshapeTarget(const Shape& in, const std::vector<int64_t>& requested, bool allow_zero) {
  Shape out(requested.begin(), requested.end());
  int64_t inferred = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (inferred >= 0) return absl::InvalidArgumentError("shape may hold -1 at most once");
      inferred = static_cast<int64_t>(i);
      continue;
    }
    if (out[i] == 0 && !allow_zero) {
      if (i >= in.size()) {
        return absl::InvalidArgumentError(absl::StrCat("shape ", ShapeToString(requested), " copies dim ", i,
                                                       " of input ", ShapeToString(in), " which has none"));
      }
      out[i] = in[i];
    }
    if (out[i] < 0) return absl::InvalidArgumentError(absl::StrCat("invalid shape ", ShapeToString(requested)));
  }
  // Checked: a product that wraps around to the input's count would make a view larger than the storage.
  Shape known_dims = out;
  if (inferred >= 0) known_dims[inferred] = 1;
  ASSIGN_OR_RETURN(const int64_t known, CheckedElementCount(known_dims));
  const int64_t total = NumElements(in);
  if (inferred >= 0) {
    if (known == 0 || total % known != 0) {
      return absl::InvalidArgumentError(absl::StrCat("cannot infer the -1 of shape ", ShapeToString(requested),
                                                     " for input ", ShapeToString(in)));
    }
    out[inferred] = total / known;
  } else if (known != total) {
    return absl::InvalidArgumentError(absl::StrCat("cannot reshape ", ShapeToString(in), " (", total,
                                                   " elements) to ", ShapeToString(out)));
  }
  return out;
}

// Reshape-1 takes the shape as an attribute; -5 as an input; -14 adds allowzero.
class Reshape final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    shape_from_input_ = info.opset() >= 5;
    if (!shape_from_input_) {
      ASSIGN_OR_RETURN(shape_attr_, info.Attr<std::vector<int64_t>>("shape"));
    }
    ASSIGN_OR_RETURN(const int64_t allow_zero, info.Attr<int64_t>("allowzero", 0));
    allow_zero_ = info.opset() >= 14 && allow_zero != 0;
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, shape_from_input_ ? 2 : 1));
    const Tensor& data = *ctx.Input(0);
    const std::vector<int64_t> requested = shape_from_input_ ? Int64Values(*ctx.Input(1)) : shape_attr_;
    ASSIGN_OR_RETURN(Shape shape, ReshapeTarget(data.shape(), requested, allow_zero_));
    ctx.SetOutput(0, data.Reshaped(std::move(shape)));
    return absl::OkStatus();
  }

 private:
  bool shape_from_input_ = true;
  std::vector<int64_t> shape_attr_;
  bool allow_zero_ = false;
};

// Shape-15 adds start/end, which slice the dims with Python's clamping rules.
class ShapeOp final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(start_, info.Attr<int64_t>("start", 0));
    has_end_ = info.HasAttr("end");
    ASSIGN_OR_RETURN(end_, info.Attr<int64_t>("end", 0));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Shape& dims = ctx.Input(0)->shape();
    const int64_t rank = static_cast<int64_t>(dims.size());
    auto clamp = [rank](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + rank : i, 0, rank); };
    const int64_t start = clamp(start_);
    const int64_t end = std::max(start, has_end_ ? clamp(end_) : rank);
    Tensor& out = ctx.Output(0, DataType::kInt64, {end - start});
    std::copy(dims.begin() + start, dims.begin() + end, out.data<int64_t>());
    return absl::OkStatus();
  }

 private:
  int64_t start_ = 0;
  int64_t end_ = 0;
  bool has_end_ = false;
};

class Size final : public OpKernel {
 public:
  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    ctx.SetOutput(0, Tensor::Scalar<int64_t>(ctx.Input(0)->NumElements()));
    return absl::OkStatus();
  }
};

// Flatten-1/-9 take axis in [0, rank]; -11 also accepts negative axes.
class Flatten final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis", 1));
    if (info.opset() < 11 && axis_ < 0) {
      return absl::InvalidArgumentError(absl::StrCat("axis ", axis_, " must be >= 0 before opset 11"));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& in = *ctx.Input(0);
    const int64_t axis = axis_ < 0 ? axis_ + in.rank() : axis_;
    if (axis < 0 || axis > in.rank()) {
      return absl::InvalidArgumentError(
          absl::StrCat("axis ", axis_, " is out of range for rank ", in.rank(), ": expected [-r, r]"));
    }
    const int64_t outer = NumElements(absl::MakeConstSpan(in.shape()).subspan(0, axis));
    const int64_t inner = NumElements(absl::MakeConstSpan(in.shape()).subspan(axis));
    ctx.SetOutput(0, in.Reshaped({outer, inner}));
    return absl::OkStatus();
  }

 private:
  int64_t axis_ = 1;
};

// Axes for Squeeze and Unsqueeze: an attribute before opset 13, the second input since.
class AxesSource {
 public:
  absl::Status Init(const KernelInfo& info) {
    from_input_ = info.opset() >= 13;
    if (!from_input_) {
      has_attr_ = info.HasAttr("axes");
      ASSIGN_OR_RETURN(attr_, info.Attr<std::vector<int64_t>>("axes", {}));
    }
    return absl::OkStatus();
  }
  // The axes as given, or nullopt when they are omitted.
  std::optional<std::vector<int64_t>> Get(const KernelContext& ctx) const {
    if (!from_input_) return has_attr_ ? std::optional(attr_) : std::nullopt;
    const Tensor* axes = ctx.Input(1);
    return axes == nullptr ? std::nullopt : std::optional(Int64Values(*axes));
  }

 private:
  bool from_input_ = true;
  bool has_attr_ = false;
  std::vector<int64_t> attr_;
};

// Marks `axes` (normalized against `rank`) in a mask, rejecting duplicates.
absl::StatusOr<std::vector<bool>> AxisMask(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<bool> mask(rank, false);
  for (int64_t axis : axes) {
    ASSIGN_OR_RETURN(const int64_t a, NormalizeAxis(axis, rank));
    if (a >= rank) return absl::InvalidArgumentError(absl::StrCat("axis ", axis, " is out of range for rank 0"));
    if (mask[a]) return absl::InvalidArgumentError(absl::StrCat("axis ", axis, " is repeated"));
    mask[a] = true;
  }
  return mask;
}

class Squeeze final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) { return axes_.Init(info); }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& in = *ctx.Input(0);
    const std::optional<std::vector<int64_t>> axes = axes_.Get(ctx);
    Shape shape;
    if (!axes.has_value()) {
      std::copy_if(in.shape().begin(), in.shape().end(), std::back_inserter(shape), [](int64_t d) { return d != 1; });
    } else {
      ASSIGN_OR_RETURN(const std::vector<bool> mask, AxisMask(*axes, in.rank()));
      for (int64_t d = 0; d < in.rank(); ++d) {
        if (!mask[d]) {
          shape.push_back(in.dim(d));
        } else if (in.dim(d) != 1) {
          return absl::InvalidArgumentError(
              absl::StrCat("cannot squeeze axis ", d, " of shape ", ShapeToString(in.shape()), ": size is not 1"));
        }
      }
    }
    ctx.SetOutput(0, in.Reshaped(std::move(shape)));
    return absl::OkStatus();
  }

 private:
  AxesSource axes_;
};

// Unsqueeze-1 takes axes in [0, output rank); -11 also negative ones; -13 takes them as an input.
class Unsqueeze final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) { return axes_.Init(info); }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& in = *ctx.Input(0);
    const std::optional<std::vector<int64_t>> axes = axes_.Get(ctx);
    if (!axes.has_value()) return absl::InvalidArgumentError("axes are required");
    const int64_t rank = in.rank() + static_cast<int64_t>(axes->size());
    ASSIGN_OR_RETURN(const std::vector<bool> mask, AxisMask(*axes, rank));
    Shape shape(rank, 1);
    for (int64_t d = 0, next = 0; d < rank; ++d) {
      if (!mask[d]) shape[d] = in.dim(next++);
    }
    ctx.SetOutput(0, in.Reshaped(std::move(shape)));
    return absl::OkStatus();
  }

 private:
  AxesSource axes_;
};

// Expand broadcasts both ways: the output shape is the broadcast of the input's and the requested shape.
class Expand final : public OpKernel {
 public:
  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& in = *ctx.Input(0);
    const Shape requested = Int64Values(*ctx.Input(1));
    // A negative dim would broadcast into the output shape and size its buffer from a negative count.
    for (int64_t d : requested) {
      if (d < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("Expand: shape ", ShapeToString(requested), " has a negative dimension"));
      }
    }
    ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(in.shape(), requested));
    if (shape == in.shape()) {
      ctx.SetOutput(0, in);
      return absl::OkStatus();
    }
    const std::vector<int64_t> strides = BroadcastStrides(in.shape(), shape);
    ASSIGN_OR_RETURN(Tensor* out, ctx.CheckedOutput(0, in.dtype(), std::move(shape)));
    RETURN_IF_ERROR(CheckBroadcastStrings({&in}, out->NumElements()));
    CopyStrided(in, 0, strides, *out, ctx.pool());
    return absl::OkStatus();
  }
};

// Ranges follow Changelog.md; later versions only widen the type lists (and Reshape-14 adds allowzero).
REGISTER_KERNEL(kOnnx, "Reshape", 1, 4, kAllTypes, Reshape);
REGISTER_KERNEL(kOnnx, "Reshape", 5, 12, kAllTypes, Reshape);
REGISTER_KERNEL(kOnnx, "Reshape", 13, 13, kAllTypes, Reshape);
REGISTER_KERNEL(kOnnx, "Reshape", 14, 18, kAllTypes, Reshape);
REGISTER_KERNEL(kOnnx, "Reshape", 19, 20, kAllTypes, Reshape);
REGISTER_KERNEL(kOnnx, "Reshape", 21, 22, kAllTypes, Reshape);
REGISTER_KERNEL(kOnnx, "Reshape", 23, 23, kAllTypes, Reshape);
REGISTER_KERNEL(kOnnx, "Reshape", 24, 24, kAllTypes, Reshape);
REGISTER_KERNEL(kOnnx, "Reshape", 25, kLatest, kAllTypes, Reshape);

REGISTER_KERNEL(kOnnx, "Shape", 1, 12, kAllTypes, ShapeOp);
REGISTER_KERNEL(kOnnx, "Shape", 13, 14, kAllTypes, ShapeOp);
REGISTER_KERNEL(kOnnx, "Shape", 15, 18, kAllTypes, ShapeOp);
REGISTER_KERNEL(kOnnx, "Shape", 19, 20, kAllTypes, ShapeOp);
REGISTER_KERNEL(kOnnx, "Shape", 21, 22, kAllTypes, ShapeOp);
REGISTER_KERNEL(kOnnx, "Shape", 23, 23, kAllTypes, ShapeOp);
REGISTER_KERNEL(kOnnx, "Shape", 24, 24, kAllTypes, ShapeOp);
REGISTER_KERNEL(kOnnx, "Shape", 25, kLatest, kAllTypes, ShapeOp);

REGISTER_KERNEL(kOnnx, "Size", 1, 12, kAllTypes, Size);
REGISTER_KERNEL(kOnnx, "Size", 13, 18, kAllTypes, Size);
REGISTER_KERNEL(kOnnx, "Size", 19, 20, kAllTypes, Size);
REGISTER_KERNEL(kOnnx, "Size", 21, 22, kAllTypes, Size);
REGISTER_KERNEL(kOnnx, "Size", 23, 23, kAllTypes, Size);
REGISTER_KERNEL(kOnnx, "Size", 24, 24, kAllTypes, Size);
REGISTER_KERNEL(kOnnx, "Size", 25, kLatest, kAllTypes, Size);

REGISTER_KERNEL(kOnnx, "Flatten", 1, 8, kAllTypes, Flatten);
REGISTER_KERNEL(kOnnx, "Flatten", 9, 10, kAllTypes, Flatten);
REGISTER_KERNEL(kOnnx, "Flatten", 11, 12, kAllTypes, Flatten);
REGISTER_KERNEL(kOnnx, "Flatten", 13, 20, kAllTypes, Flatten);
REGISTER_KERNEL(kOnnx, "Flatten", 21, 22, kAllTypes, Flatten);
REGISTER_KERNEL(kOnnx, "Flatten", 23, 23, kAllTypes, Flatten);
REGISTER_KERNEL(kOnnx, "Flatten", 24, 24, kAllTypes, Flatten);
REGISTER_KERNEL(kOnnx, "Flatten", 25, kLatest, kAllTypes, Flatten);

REGISTER_KERNEL(kOnnx, "Squeeze", 1, 10, kAllTypes, Squeeze);
REGISTER_KERNEL(kOnnx, "Squeeze", 11, 12, kAllTypes, Squeeze);
REGISTER_KERNEL(kOnnx, "Squeeze", 13, 20, kAllTypes, Squeeze);
REGISTER_KERNEL(kOnnx, "Squeeze", 21, 22, kAllTypes, Squeeze);
REGISTER_KERNEL(kOnnx, "Squeeze", 23, 23, kAllTypes, Squeeze);
REGISTER_KERNEL(kOnnx, "Squeeze", 24, 24, kAllTypes, Squeeze);
REGISTER_KERNEL(kOnnx, "Squeeze", 25, kLatest, kAllTypes, Squeeze);

REGISTER_KERNEL(kOnnx, "Unsqueeze", 1, 10, kAllTypes, Unsqueeze);
REGISTER_KERNEL(kOnnx, "Unsqueeze", 11, 12, kAllTypes, Unsqueeze);
REGISTER_KERNEL(kOnnx, "Unsqueeze", 13, 20, kAllTypes, Unsqueeze);
REGISTER_KERNEL(kOnnx, "Unsqueeze", 21, 22, kAllTypes, Unsqueeze);
REGISTER_KERNEL(kOnnx, "Unsqueeze", 23, 23, kAllTypes, Unsqueeze);
REGISTER_KERNEL(kOnnx, "Unsqueeze", 24, 24, kAllTypes, Unsqueeze);
REGISTER_KERNEL(kOnnx, "Unsqueeze", 25, kLatest, kAllTypes, Unsqueeze);

REGISTER_KERNEL(kOnnx, "Expand", 8, 12, kAllTypes, Expand);
REGISTER_KERNEL(kOnnx, "Expand", 13, kLatest, kAllTypes, Expand);

}  // namespace
}  // namespace onnxserve

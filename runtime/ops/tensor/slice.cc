// Slice (strided windows, negative steps included) and Tile (repetition): both are one strided copy.
#include <algorithm>

#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// One sliced axis, as the spec clamps it: first index, step and element count.
struct AxisWindow {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
};

AxisWindow ClampWindow(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (dim == 0) return AxisWindow{0, step, 0};
  // A step as long as the axis takes one element at most, as any longer one does; clamped, the count and the
  // stride below cannot overflow for steps from data as large as INT64_MAX or INT64_MIN.
  step = std::clamp(step, -dim, dim);
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  AxisWindow w;
  w.step = step;
  if (step > 0) {
    w.start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    w.count = end > w.start ? (end - w.start + step - 1) / step : 0;
  } else {
    w.start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    w.count = w.start > end ? (w.start - end - step - 1) / -step : 0;
  }
  return w;
}

// Slice-1 takes starts/ends/axes as attributes; -10 takes them and steps as inputs; -11 allows negative
// axes and indices; -13 widens types.
class Slice final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    from_inputs_ = info.opset() >= 10;
    if (!from_inputs_) {
      ASSIGN_OR_RETURN(starts_, info.Attr<std::vector<int64_t>>("starts"));
      ASSIGN_OR_RETURN(ends_, info.Attr<std::vector<int64_t>>("ends"));
      has_axes_ = info.HasAttr("axes");
      ASSIGN_OR_RETURN(axes_, info.Attr<std::vector<int64_t>>("axes", {}));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, from_inputs_ ? 3 : 1));
    const Tensor& in = *ctx.Input(0);
    const std::vector<int64_t> starts = from_inputs_ ? Int64Values(*ctx.Input(1)) : starts_;
    const std::vector<int64_t> ends = from_inputs_ ? Int64Values(*ctx.Input(2)) : ends_;
    std::vector<int64_t> axes = axes_;
    if (from_inputs_ && ctx.Input(3) != nullptr) {
      axes = Int64Values(*ctx.Input(3));
    } else if (from_inputs_ || !has_axes_) {
      axes.resize(starts.size());
      for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
    }
    std::vector<int64_t> steps(starts.size(), 1);
    if (from_inputs_ && ctx.Input(4) != nullptr) steps = Int64Values(*ctx.Input(4));
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
      return absl::InvalidArgumentError(absl::StrCat("starts, ends, axes and steps have different lengths (",
                                                     starts.size(), ", ", ends.size(), ", ", axes.size(), ", ",
                                                     steps.size(), ")"));
    }

    Shape shape = in.shape();
    std::vector<int64_t> strides = StridesOf(in.shape());
    std::vector<bool> sliced(in.rank(), false);
    int64_t offset = 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(axes[i], in.rank()));
      if (axis >= in.rank() || sliced[axis]) {
        return absl::InvalidArgumentError(absl::StrCat("axes ", ShapeToString(axes), " are invalid for rank ",
                                                       in.rank()));
      }
      if (steps[i] == 0) return absl::InvalidArgumentError("steps must not be 0");
      sliced[axis] = true;
      const AxisWindow w = ClampWindow(in.dim(axis), starts[i], ends[i], steps[i]);
      shape[axis] = w.count;
      offset += w.start * strides[axis];
      strides[axis] *= w.step;
    }
    Tensor& out = ctx.Output(0, in.dtype(), std::move(shape));
    CopyStrided(in, offset, strides, out, ctx.pool());
    return absl::OkStatus();
  }

 private:
  bool from_inputs_ = true;
  std::vector<int64_t> starts_, ends_, axes_;
  bool has_axes_ = false;
};

// Tile-1 repeats along one axis (`tiles` times along `axis`, both scalar inputs); -6 takes one repeat
// count per dim. The output is the input viewed as [r0, d0, r1, d1, ...] with stride 0 on each r.
class Tile final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    per_axis_ = info.opset() < 6;
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, per_axis_ ? 3 : 2));
    const Tensor& in = *ctx.Input(0);
    ASSIGN_OR_RETURN(const std::vector<int64_t> repeats, Repeats(ctx, in.rank()));
    const std::vector<int64_t> in_strides = StridesOf(in.shape());
    Shape shape(in.rank());
    Shape view_shape;
    std::vector<int64_t> view_strides;
    for (int64_t d = 0; d < in.rank(); ++d) {
      ASSIGN_OR_RETURN(shape[d], CheckedMul(in.dim(d), repeats[d]));
      view_shape.insert(view_shape.end(), {repeats[d], in.dim(d)});
      view_strides.insert(view_strides.end(), {0, in_strides[d]});
    }
    ASSIGN_OR_RETURN(Tensor* out, ctx.CheckedOutput(0, in.dtype(), std::move(shape)));
    RETURN_IF_ERROR(CheckBroadcastStrings({&in}, out->NumElements()));
    Tensor view = out->Reshaped(std::move(view_shape));
    CopyStrided(in, 0, view_strides, view, ctx.pool());
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<std::vector<int64_t>> Repeats(const KernelContext& ctx, int64_t rank) const {
    std::vector<int64_t> repeats;
    if (per_axis_) {
      if (ctx.Input(1)->NumElements() != 1 || ctx.Input(2)->NumElements() != 1) {
        return absl::InvalidArgumentError(absl::StrCat("tiles ", ctx.Input(1)->DebugString(), " and axis ",
                                                       ctx.Input(2)->DebugString(), " must hold one value each"));
      }
      ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(ctx.Input(2)->GetAsInt64(0), rank));
      if (rank == 0) return absl::InvalidArgumentError("a scalar input has no axis to tile along");
      repeats.assign(rank, 1);
      repeats[axis] = ctx.Input(1)->GetAsInt64(0);
    } else {
      repeats = Int64Values(*ctx.Input(1));
    }
    const bool negative = std::any_of(repeats.begin(), repeats.end(), [](int64_t r) { return r < 0; });
    if (static_cast<int64_t>(repeats.size()) != rank || negative) {
      return absl::InvalidArgumentError(absl::StrCat("repeats ", ShapeToString(repeats),
                                                     " should hold one count >= 0 per input dim (", rank, ")"));
    }
    return repeats;
  }

  bool per_axis_ = false;
};

REGISTER_KERNEL(kOnnx, "Slice", 1, 9, kAllTypes, Slice);
REGISTER_KERNEL(kOnnx, "Slice", 10, 10, kAllTypes, Slice);
REGISTER_KERNEL(kOnnx, "Slice", 11, 12, kAllTypes, Slice);
REGISTER_KERNEL(kOnnx, "Slice", 13, kLatest, kAllTypes, Slice);

REGISTER_KERNEL(kOnnx, "Tile", 1, 5, kAllTypes, Tile);
REGISTER_KERNEL(kOnnx, "Tile", 6, 12, kAllTypes, Tile);
REGISTER_KERNEL(kOnnx, "Tile", 13, kLatest, kAllTypes, Tile);

}  // namespace
}  // namespace onnxserve

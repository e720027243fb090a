// OneHot and NonZero: ops that turn indices into positions and positions into indices.
#include <algorithm>
#include <vector>

#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// OneHot: out = indices.shape with a new axis of size depth inserted at `axis`; out[.., d, ..] is on_value
// where indices[..] == d, else off_value (values = [off_value, on_value]). Indices outside the valid range
// ([0, depth) in OneHot-9, [-depth, depth) from -11) give an all-off row.
class OneHot final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis", -1));
    allow_negative_ = info.opset() >= 11;
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 3));
    const Tensor& indices = *ctx.Input(0);
    const Tensor& depth_tensor = *ctx.Input(1);
    const Tensor& values = *ctx.Input(2);
    if (depth_tensor.NumElements() != 1 || depth_tensor.rank() > 1) {
      return absl::InvalidArgumentError(absl::StrCat("depth must be a scalar or hold one value, got shape ",
                                                     ShapeToString(depth_tensor.shape())));
    }
    if (values.NumElements() != 2 || values.rank() != 1) {
      return absl::InvalidArgumentError(absl::StrCat("values must be [off_value, on_value], got shape ",
                                                     ShapeToString(values.shape())));
    }
    if (indices.dtype() == DataType::kString) return absl::InvalidArgumentError("indices must be numeric");
    const int64_t depth = depth_tensor.GetAsInt64(0);
    if (depth < 1) return absl::InvalidArgumentError(absl::StrCat("depth must be >= 1, got ", depth));
    const int64_t rank = indices.rank();
    if (axis_ < -rank - 1 || axis_ > rank) {
      return absl::InvalidArgumentError(
          absl::StrCat("axis ", axis_, " is out of range [", -rank - 1, ", ", rank, "]"));
    }
    const int64_t axis = axis_ < 0 ? axis_ + rank + 1 : axis_;

    Shape out_shape = indices.shape();
    out_shape.insert(out_shape.begin() + axis, depth);
    ASSIGN_OR_RETURN(Tensor* out_tensor, ctx.CheckedOutput(0, values.dtype(), out_shape));
    Tensor& out = *out_tensor;
    RETURN_IF_ERROR(CheckStringCopies({&values}, out.NumElements()));
    const int64_t inner = NumElements(absl::MakeConstSpan(indices.shape()).subspan(axis));
    DispatchByWidth(values.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T off = values.data<T>()[0];
      const T on = values.data<T>()[1];
      T* dst = out.data<T>();
      std::fill(dst, dst + out.NumElements(), off);
      for (int64_t i = 0; i < indices.NumElements(); ++i) {
        int64_t d = indices.GetAsInt64(i);
        if (d < 0 && allow_negative_) d += depth;
        if (d < 0 || d >= depth) continue;
        // indices element i = (outer, k) sits at out (outer, d, k).
        dst[((i / inner) * depth + d) * inner + i % inner] = on;
      }
    });
    return absl::OkStatus();
  }

 private:
  int64_t axis_ = -1;
  bool allow_negative_ = true;
};

// NonZero: the coordinates of the non-zero elements, as int64 [rank, count] in row-major order. A scalar
// is treated as a one-element vector (as numpy does), giving [1, count].
class NonZero final : public OpKernel {
 public:
  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    const Shape shape = x.rank() == 0 ? Shape{1} : x.shape();
    // Counted first, then written straight into the output: kept in a vector, the positions were 16 times a
    // bool input outside the run's budget (8 bytes each, and twice that while the vector grew).
    int64_t count = 0;
    const bool supported = DispatchNumeric(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* data = x.data<T>();
      for (int64_t i = 0; i < x.NumElements(); ++i) count += ToCompute(data[i]) != ComputeType<T>{} ? 1 : 0;
    });
    if (!supported) {
      return absl::InvalidArgumentError(absl::StrCat("NonZero needs a numeric or bool input, got ",
                                                     DataTypeName(x.dtype())));
    }
    const int64_t rank = static_cast<int64_t>(shape.size());
    Tensor& out = ctx.Output(0, DataType::kInt64, {rank, count});
    int64_t* coords = out.data<int64_t>();
    DispatchNumeric(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* data = x.data<T>();
      for (int64_t i = 0, j = 0; i < x.NumElements(); ++i) {
        if (ToCompute(data[i]) == ComputeType<T>{}) continue;
        int64_t rest = i;
        for (int64_t d = rank - 1; d >= 0; --d) {
          coords[d * count + j] = rest % shape[d];
          rest /= shape[d];
        }
        ++j;
      }
    });
    return absl::OkStatus();
  }
};

// OneHot-11 accepts negative indices and axes.
REGISTER_KERNEL(kOnnx, "OneHot", 9, 10, kNumericTypes, OneHot);
REGISTER_KERNEL(kOnnx, "OneHot", 11, kLatest, kNumericTypes, OneHot);
// NonZero-13 adds bfloat16.
REGISTER_KERNEL(kOnnx, "NonZero", 9, 12, kAnyType, NonZero);
REGISTER_KERNEL(kOnnx, "NonZero", 13, kLatest, kAnyType, NonZero);

}  // namespace
}  // namespace onnxserve

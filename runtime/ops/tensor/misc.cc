// Small single-tensor ops without a larger family: Compress (9, 11), ReverseSequence (10), Det (11, 22),
// MaxUnpool (9, 11, 22) and the window generators HannWindow, HammingWindow, BlackmanWindow (17).
#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/run_limits.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

absl::Status UnsupportedType(const Tensor& t, const char* what) {
  return absl::UnimplementedError(absl::StrCat(what, " ", t.DebugString(), ": element type is not supported"));
}

// Compress: keeps the slices along `axis` (or the elements of the flattened input without one) whose
// condition is true, like numpy.compress. A condition shorter than the axis drops the rest; a longer one
// may only be false beyond it.
class Compress final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    if (info.HasAttr("axis")) {
      ASSIGN_OR_RETURN(const int64_t axis, info.Attr<int64_t>("axis"));
      axis_ = axis;
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& input = *ctx.Input(0);
    const Tensor& condition = *ctx.Input(1);
    if (condition.dtype() != DataType::kBool || condition.rank() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("input \"condition\" ", condition.DebugString(), ": expected a 1-D bool tensor"));
    }
    Shape shape = {input.NumElements()};  // the flattened view without an axis
    int64_t axis = 0;
    if (axis_) {
      ASSIGN_OR_RETURN(axis, NormalizeAxis(*axis_, input.rank()));
      if (input.rank() == 0) return absl::InvalidArgumentError("input: expected rank >= 1 with an axis");
      shape = input.shape();
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> kept, KeptIndices(condition, shape[axis]));
    const int64_t outer = NumElements(absl::MakeConstSpan(shape).subspan(0, axis));
    const int64_t n = shape[axis];
    const int64_t inner = NumElements(absl::MakeConstSpan(shape).subspan(axis + 1));
    shape[axis] = static_cast<int64_t>(kept.size());
    Tensor& out = ctx.Output(0, input.dtype(), shape);
    const bool ok = DispatchByWidth(input.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* in = static_cast<const T*>(input.raw_data());
      T* o = static_cast<T*>(out.raw_data());
      for (int64_t b = 0; b < outer; ++b) {
        for (int64_t k : kept) o = std::copy_n(in + (b * n + k) * inner, inner, o);
      }
    });
    return ok ? absl::OkStatus() : UnsupportedType(input, "input");
  }

 private:
  static absl::StatusOr<std::vector<int64_t>> KeptIndices(const Tensor& condition, int64_t size) {
    std::vector<int64_t> kept;
    const bool* c = condition.data<bool>();
    for (int64_t i = 0; i < condition.NumElements(); ++i) {
      if (!c[i]) continue;
      if (i >= size) {
        return absl::InvalidArgumentError(absl::StrCat("input \"condition\": true at index ", i,
                                                       ", beyond the ", size, " slices of the input"));
      }
      kept.push_back(i);
    }
    return kept;
  }

  std::optional<int64_t> axis_;
};

// ReverseSequence-10: for each batch entry b, reverses the first sequence_lens[b] steps along the time axis
// and copies the rest; batch and time are axes 0 and 1 in either order.
class ReverseSequence final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(batch_axis_, info.Attr<int64_t>("batch_axis", 1));
    ASSIGN_OR_RETURN(time_axis_, info.Attr<int64_t>("time_axis", 0));
    if (!((batch_axis_ == 0 && time_axis_ == 1) || (batch_axis_ == 1 && time_axis_ == 0))) {
      return absl::InvalidArgumentError(absl::StrCat("batch_axis ", batch_axis_, " and time_axis ", time_axis_,
                                                     ": expected 0 and 1 in either order"));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& input = *ctx.Input(0);
    const Tensor& lens = *ctx.Input(1);
    if (input.rank() < 2) return absl::InvalidArgumentError(absl::StrCat("input ", input.DebugString(), ": expected rank >= 2"));
    const int64_t batch = input.dim(batch_axis_), time = input.dim(time_axis_);
    if (lens.dtype() != DataType::kInt64 || lens.shape() != Shape{batch}) {
      return absl::InvalidArgumentError(absl::StrCat("input \"sequence_lens\" ", lens.DebugString(),
                                                     ": expected int64[", batch, "]"));
    }
    const int64_t* len = lens.data<int64_t>();
    for (int64_t b = 0; b < batch; ++b) {
      if (len[b] < 0 || len[b] > time) {
        return absl::InvalidArgumentError(absl::StrCat("input \"sequence_lens\": ", len[b], " at ", b,
                                                       " is out of range [0, ", time, "]"));
      }
    }
    const int64_t block = input.NumElements() == 0 ? 0 : input.NumElements() / (batch * time);
    // Element (b, t, :) starts at b * batch_stride + t * time_stride.
    const int64_t batch_stride = (batch_axis_ == 0 ? time : 1) * block;
    const int64_t time_stride = (time_axis_ == 0 ? batch : 1) * block;
    Tensor& out = ctx.Output(0, input.dtype(), input.shape());
    const bool ok = DispatchByWidth(input.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* in = static_cast<const T*>(input.raw_data());
      T* o = static_cast<T*>(out.raw_data());
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t t = 0; t < time; ++t) {
          const int64_t from = t < len[b] ? len[b] - 1 - t : t;
          std::copy_n(in + b * batch_stride + from * time_stride, block, o + b * batch_stride + t * time_stride);
        }
      }
    });
    return ok ? absl::OkStatus() : UnsupportedType(input, "input");
  }

 private:
  int64_t batch_axis_ = 1;
  int64_t time_axis_ = 0;
};

// The determinant of one m x m row-major matrix by LU decomposition with partial pivoting, in double.
// `a` is scratch space of m * m values.
double Determinant(std::vector<double>& a, int64_t m) {
  double det = 1;
  for (int64_t k = 0; k < m; ++k) {
    StopIfRunEnded((m - k) * (m - k));  // m^3 / 3 in all: seconds for a 16 MB matrix
    int64_t pivot = k;
    for (int64_t r = k + 1; r < m; ++r) {
      if (std::abs(a[r * m + k]) > std::abs(a[pivot * m + k])) pivot = r;
    }
    if (a[pivot * m + k] == 0) return 0;
    if (pivot != k) {
      std::swap_ranges(a.begin() + k * m, a.begin() + (k + 1) * m, a.begin() + pivot * m);
      det = -det;
    }
    const double diag = a[k * m + k];
    det *= diag;
    for (int64_t r = k + 1; r < m; ++r) {
      const double f = a[r * m + k] / diag;
      for (int64_t c = k + 1; c < m; ++c) a[r * m + c] -= f * a[k * m + c];
    }
  }
  return det;
}

// Det: determinants of the [*, M, M] input's matrices, shape [*].
class Det final : public OpKernel {
 public:
  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    if (x.rank() < 2 || x.dim(x.rank() - 1) != x.dim(x.rank() - 2)) {
      return absl::InvalidArgumentError(absl::StrCat("input ", x.DebugString(), ": expected shape [*, M, M]"));
    }
    const int64_t m = x.dim(x.rank() - 1);
    Tensor& y = ctx.Output(0, x.dtype(), Shape(x.shape().begin(), x.shape().end() - 2));
    bool ok = false;
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        ok = true;
        const T* in = x.data<T>();
        T* out = y.data<T>();
        ctx.pool().ParallelFor(y.NumElements(), std::max<int64_t>(1, 4096 / std::max<int64_t>(m * m * m, 1)),
                               [&](int64_t begin, int64_t end) {
                                 std::vector<double> a(static_cast<size_t>(m * m));
                                 for (int64_t i = begin; i < end; ++i) {
                                   for (int64_t k = 0; k < m * m; ++k) a[k] = static_cast<double>(ToCompute(in[i * m * m + k]));
                                   out[i] = FromCompute<T>(static_cast<ComputeType<T>>(Determinant(a, m)));
                                 }
                               });
      }
    });
    return ok ? absl::OkStatus() : UnsupportedType(x, "input");
  }
};

// MaxUnpool: scatters X into zeros at the flat indices I (as MaxPool returned them) of the inferred shape,
// (in - 1) * stride + kernel - pad_begin - pad_end per spatial dim. An output_shape input (which must
// hold the inferred shape) pads that result with zeros at the end of each dim, as the ONNX reference does.
class MaxUnpool final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(kernel_, info.Attr<std::vector<int64_t>>("kernel_shape"));
    const size_t rank = kernel_.size();
    ASSIGN_OR_RETURN(strides_, info.Attr<std::vector<int64_t>>("strides", std::vector<int64_t>(rank, 1)));
    ASSIGN_OR_RETURN(pads_, info.Attr<std::vector<int64_t>>("pads", std::vector<int64_t>(2 * rank, 0)));
    if (strides_.size() != rank || pads_.size() != 2 * rank) {
      return absl::InvalidArgumentError(absl::StrCat("kernel_shape has ", rank, " dims: expected as many strides (got ",
                                                     strides_.size(), ") and twice as many pads (got ",
                                                     pads_.size(), ")"));
    }
    const auto positive = [](int64_t v) { return v >= 1; };
    if (!std::all_of(kernel_.begin(), kernel_.end(), positive) ||
        !std::all_of(strides_.begin(), strides_.end(), positive) ||
        !std::all_of(pads_.begin(), pads_.end(), [](int64_t p) { return p >= 0; })) {
      return absl::InvalidArgumentError(absl::StrCat("kernel_shape ", ShapeToString(kernel_), " and strides ",
                                                     ShapeToString(strides_), " must be >= 1, pads ",
                                                     ShapeToString(pads_), " >= 0"));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& x = *ctx.Input(0);
    const Tensor& indices = *ctx.Input(1);
    if (x.rank() != static_cast<int64_t>(kernel_.size()) + 2) {
      return absl::InvalidArgumentError(absl::StrCat("input \"X\" ", x.DebugString(), ": expected rank ",
                                                     kernel_.size() + 2, " for a ", kernel_.size(), "-D kernel"));
    }
    if (indices.dtype() != DataType::kInt64 || indices.shape() != x.shape()) {
      return absl::InvalidArgumentError(absl::StrCat("input \"I\" ", indices.DebugString(), ": expected int64",
                                                     ShapeToString(x.shape())));
    }
    ASSIGN_OR_RETURN(const Shape inferred, InferredShape(x));
    ASSIGN_OR_RETURN(const Shape shape, OutputShape(inferred, ctx.Input(2)));
    ASSIGN_OR_RETURN(Tensor* y_tensor, ctx.CheckedOutput(0, x.dtype(), shape));
    Tensor& y = *y_tensor;
    bool ok = false;
    absl::Status status = absl::OkStatus();
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        ok = true;
        status = Scatter(x.data<T>(), indices.data<int64_t>(), x.NumElements(), inferred, y);
      }
    });
    if (!ok) return UnsupportedType(x, "input \"X\"");
    return status;
  }

 private:
  // A dim the pads leave negative is an error: an even number of them multiplied to a positive count of
  // positions that an output_shape of smaller (but "at least as large") dims did not hold.
  absl::StatusOr<Shape> InferredShape(const Tensor& x) const {
    Shape shape = {x.dim(0), x.dim(1)};
    const size_t rank = kernel_.size();
    for (size_t i = 0; i < rank; ++i) {
      ASSIGN_OR_RETURN(const int64_t strided, CheckedMul(x.dim(i + 2) - 1, strides_[i]));
      ASSIGN_OR_RETURN(int64_t dim, CheckedAdd(strided, kernel_[i]));
      ASSIGN_OR_RETURN(dim, CheckedAdd(dim, -pads_[i]));
      ASSIGN_OR_RETURN(dim, CheckedAdd(dim, -pads_[i + rank]));
      if (dim < 0) {
        return absl::InvalidArgumentError(absl::StrCat("input \"X\" ", x.DebugString(), " unpools to ", dim,
                                                       " positions on spatial axis ", i, " with kernel ", kernel_[i],
                                                       ", stride ", strides_[i], " and pads ", pads_[i], ", ",
                                                       pads_[i + rank]));
      }
      shape.push_back(dim);
    }
    return shape;
  }

  static absl::StatusOr<Shape> OutputShape(const Shape& inferred, const Tensor* output_shape) {
    if (output_shape == nullptr) return inferred;
    Shape shape = Int64Values(*output_shape);
    bool ok = output_shape->rank() == 1 && shape.size() == inferred.size();
    for (size_t d = 0; ok && d < shape.size(); ++d) ok = d < 2 ? shape[d] == inferred[d] : shape[d] >= inferred[d];
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat("input \"output_shape\" ", output_shape->DebugString(), " ",
                                                     ShapeToString(shape), ": expected the same N and C as ",
                                                     ShapeToString(inferred), " and spatial dims at least as large"));
    }
    return shape;
  }

  // y = 0, then y[position of flat index I[i] in `inferred`] = x[i].
  template <typename T>
  static absl::Status Scatter(const T* x, const int64_t* at, int64_t count, const Shape& inferred, Tensor& y) {
    T* out = y.data<T>();
    std::fill(out, out + y.NumElements(), FromCompute<T>(0));
    const int64_t limit = NumElements(inferred);
    const std::vector<int64_t> strides = StridesOf(y.shape());
    for (int64_t i = 0; i < count; ++i) {
      if (at[i] < 0 || at[i] >= limit) {
        return absl::InvalidArgumentError(absl::StrCat("input \"I\": index ", at[i], " at ", i,
                                                       " is out of range for the unpooled shape ",
                                                       ShapeToString(inferred)));
      }
      int64_t offset = 0;
      for (int64_t d = static_cast<int64_t>(inferred.size()) - 1, rest = at[i]; d >= 0; --d) {
        offset += (rest % inferred[d]) * strides[d];
        rest /= inferred[d];
      }
      out[offset] = x[i];
    }
    return absl::OkStatus();
  }

  std::vector<int64_t> kernel_;
  std::vector<int64_t> strides_;
  std::vector<int64_t> pads_;
};

// Window functions of ONNX-17: w[n] = sum_k a_k cos(2 pi k n / L), with L = size (periodic) or size - 1
// (symmetric), computed in double and converted to output_datatype.
struct WindowCoefficients {
  double a0, a1, a2;
};
inline constexpr WindowCoefficients kHann = {0.5, -0.5, 0};
inline constexpr WindowCoefficients kHamming = {25.0 / 46.0, -21.0 / 46.0, 0};
inline constexpr WindowCoefficients kBlackman = {0.42, -0.5, 0.08};

template <const WindowCoefficients& kCoefficients>
class Window final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const int64_t type, info.Attr<int64_t>("output_datatype", 1));
    ASSIGN_OR_RETURN(output_type_, DataTypeFromOnnx(static_cast<int32_t>(type)));
    if (output_type_ == DataType::kBool || output_type_ == DataType::kString) {
      return absl::InvalidArgumentError(absl::StrCat("output_datatype ", DataTypeName(output_type_),
                                                     ": expected a numeric type"));
    }
    ASSIGN_OR_RETURN(const int64_t periodic, info.Attr<int64_t>("periodic", 1));
    periodic_ = periodic != 0;
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& size_input = *ctx.Input(0);
    if ((size_input.dtype() != DataType::kInt32 && size_input.dtype() != DataType::kInt64) ||
        size_input.NumElements() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("input \"size\" ", size_input.DebugString(), ": expected an int32 or int64 scalar"));
    }
    const int64_t size = size_input.GetAsInt64(0);
    if (size < 0) return absl::InvalidArgumentError(absl::StrCat("input \"size\": ", size, ", expected >= 0"));
    ASSIGN_OR_RETURN(Tensor* out_tensor, ctx.CheckedOutput(0, output_type_, {size}));
    Tensor& out = *out_tensor;
    // A symmetric window of one point has no period; it is [1] as in numpy and torch.
    const double length = static_cast<double>(periodic_ ? size : std::max<int64_t>(size - 1, 1));
    DispatchNumeric(output_type_, [&](auto tag) {
      using T = decltype(tag);
      T* o = out.data<T>();
      for (int64_t n = 0; n < size; ++n) {
        const double phase = 2 * std::numbers::pi * static_cast<double>(n) / length;
        const double w = size == 1 && !periodic_ ? 1.0
                                                 : kCoefficients.a0 + kCoefficients.a1 * std::cos(phase) +
                                                       kCoefficients.a2 * std::cos(2 * phase);
        o[n] = static_cast<T>(static_cast<ComputeType<T>>(w));
      }
    });
    return absl::OkStatus();
  }

 private:
  DataType output_type_ = DataType::kFloat;
  bool periodic_ = true;
};

// Compress-11 allows negative axes; ReverseSequence-10 and the windows have one version each.
REGISTER_KERNEL(kOnnx, "Compress", 9, 10, kAllTypes, Compress);
REGISTER_KERNEL(kOnnx, "Compress", 11, kLatest, kAllTypes, Compress);
REGISTER_KERNEL(kOnnx, "ReverseSequence", 10, kLatest, kAllTypes, ReverseSequence);
// Det-22 and MaxUnpool-22 add bfloat16; MaxUnpool-11 only documents the default strides.
REGISTER_KERNEL(kOnnx, "Det", 11, 21, kFloatTypes, Det);
REGISTER_KERNEL(kOnnx, "Det", 22, kLatest, kFloatTypes, Det);
REGISTER_KERNEL(kOnnx, "MaxUnpool", 9, 10, kFloatTypes, MaxUnpool);
REGISTER_KERNEL(kOnnx, "MaxUnpool", 11, 21, kFloatTypes, MaxUnpool);
REGISTER_KERNEL(kOnnx, "MaxUnpool", 22, kLatest, kFloatTypes, MaxUnpool);
constexpr DataType kSizeTypes[] = {DataType::kInt32, DataType::kInt64};
REGISTER_KERNEL(kOnnx, "HannWindow", 17, kLatest, kSizeTypes, Window<kHann>);
REGISTER_KERNEL(kOnnx, "HammingWindow", 17, kLatest, kSizeTypes, Window<kHamming>);
REGISTER_KERNEL(kOnnx, "BlackmanWindow", 17, kLatest, kSizeTypes, Window<kBlackman>);

}  // namespace
}  // namespace onnxserve

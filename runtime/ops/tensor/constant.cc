// Operators that generate values: Constant, ConstantOfShape, Range, EyeLike, and Trilu (which keeps one
// triangle of its input and zeroes the rest).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

inline constexpr DataType kNumericAndBoolTypes[] = {
    DataType::kFloat, DataType::kDouble, DataType::kFloat16, DataType::kBFloat16, DataType::kInt8,
    DataType::kInt16, DataType::kInt32, DataType::kInt64, DataType::kUint8, DataType::kUint16,
    DataType::kUint32, DataType::kUint64, DataType::kBool};

// The value of Constant's one attribute. Constant-1/-9 only know `value`; -11 adds sparse_value; -12 the
// value_* shorthands.
absl::StatusOr<Tensor> ConstantValue(const KernelInfo& info, const std::string& name) {
  if (name == "value") return info.Attr<Tensor>(name);
  if (name == "sparse_value") return absl::UnimplementedError("Constant with a sparse_value is not supported");
  if (name == "value_float") {
    ASSIGN_OR_RETURN(const float v, info.Attr<float>(name));
    return Tensor::Scalar(v);
  }
  if (name == "value_floats") {
    ASSIGN_OR_RETURN(const std::vector<float> v, info.Attr<std::vector<float>>(name));
    return Tensor::FromVector<float>({static_cast<int64_t>(v.size())}, v);
  }
  if (name == "value_int") {
    ASSIGN_OR_RETURN(const int64_t v, info.Attr<int64_t>(name));
    return Tensor::Scalar(v);
  }
  if (name == "value_ints") {
    ASSIGN_OR_RETURN(const std::vector<int64_t> v, info.Attr<std::vector<int64_t>>(name));
    return Tensor::FromVector<int64_t>({static_cast<int64_t>(v.size())}, v);
  }
  if (name == "value_string") {
    ASSIGN_OR_RETURN(std::string v, info.Attr<std::string>(name));
    return Tensor::Scalar(std::move(v));
  }
  if (name == "value_strings") {
    ASSIGN_OR_RETURN(const std::vector<std::string> v, info.Attr<std::vector<std::string>>(name));
    return Tensor::FromVector<std::string>({static_cast<int64_t>(v.size())}, v);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown attribute \"", name, "\""));
}

// The value is decoded once at load; every run hands out the same storage (nothing writes to outputs
// that alias other values).
class Constant final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    const auto& attributes = info.node().attributes();
    if (attributes.size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat("expected exactly one value attribute, got ",
                                                     attributes.size()));
    }
    ASSIGN_OR_RETURN(value_, ConstantValue(info, attributes[0].name));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ctx.SetOutput(0, value_);
    return absl::OkStatus();
  }

 private:
  Tensor value_;
};

// Fills every element of `out` with element 0 of `value` (same dtype).
void FillWith(const Tensor& value, Tensor& out) {
  DispatchByWidth(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    std::fill_n(out.data<T>(), out.NumElements(), value.data<T>()[0]);
  });
}

// ConstantOfShape: `value` (one element, default float 0) repeated over the shape given as input.
class ConstantOfShape final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(value_, info.Attr<Tensor>("value", Tensor::Scalar(0.0f)));
    if (value_.NumElements() != 1) {
      return absl::InvalidArgumentError(absl::StrCat("value should hold one element, got ", value_.DebugString()));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    // Negative dims and sizes past the limits are errors here, before anything is allocated.
    ASSIGN_OR_RETURN(Tensor* out, ctx.CheckedOutput(0, value_.dtype(), Int64Values(*ctx.Input(0))));
    RETURN_IF_ERROR(CheckStringCopies({&value_}, out->NumElements()));
    FillWith(value_, *out);
    return absl::OkStatus();
  }

 private:
  Tensor value_;
};

// max(ceil((limit - start) / delta), 0), exact for integers, checked against the element limit. Integers
// are computed in 128 bits: limit - start overflows int64 for extreme inputs, and INT64_MIN % -1 traps.
template <typename S>
absl::StatusOr<int64_t> RangeCount(S start, S limit, S delta) {
  if constexpr (std::is_integral_v<S>) {
    const __int128 diff = static_cast<__int128>(limit) - static_cast<__int128>(start);
    const __int128 step = static_cast<__int128>(delta);
    const bool round_up = diff % step != 0 && (diff < 0) == (step < 0);
    const __int128 count = std::max<__int128>(0, diff / step + (round_up ? 1 : 0));
    const int64_t max_elements = GetSizeLimits().max_elements;
    if (count > max_elements) {
      return absl::ResourceExhaustedError(absl::StrCat("range of ", static_cast<double>(count),
                                                       " elements is more than ", max_elements,
                                                       " (the limit per tensor)"));
    }
    return static_cast<int64_t>(count);
  } else {
    const double count = std::ceil(static_cast<double>((limit - start) / delta));
    if (count < 0) return 0;
    return CheckedDimFromDouble(count);  // NaN (from an infinite or NaN input) is an error here
  }
}

// Range: start, start + delta, ... below limit. The spec's function body adds delta step by step in the
// compute type, so this does too. Range-27 adds stash_type: float16/bfloat16 accumulate in float unless
// stash_type names the input type, then each step rounds to it.
class Range final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const int64_t stash_type, info.Attr<int64_t>("stash_type", 1));
    round_each_step_ = info.opset() >= 27 && stash_type != static_cast<int64_t>(DataType::kFloat);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 3));
    const Tensor& start = *ctx.Input(0);
    for (int i = 0; i < 3; ++i) {
      const Tensor& t = *ctx.Input(i);
      if (t.NumElements() != 1 || t.dtype() != start.dtype()) {
        return absl::InvalidArgumentError(absl::StrCat("start, limit and delta should be scalars of one type, got ",
                                                       start.DebugString(), " and ", t.DebugString()));
      }
    }
    absl::Status status = absl::OkStatus();
    const bool supported = start.dtype() != DataType::kBool && DispatchNumeric(start.dtype(), [&](auto zero) {
      status = Fill<decltype(zero)>(ctx);
    });
    if (!supported) {
      return absl::InvalidArgumentError(absl::StrCat("Range does not support ", DataTypeName(start.dtype())));
    }
    return status;
  }

 private:
  template <typename T>
  absl::Status Fill(KernelContext& ctx) const {
    using S = ComputeType<T>;
    const S start = ToCompute(ctx.Input(0)->data<T>()[0]);
    const S limit = ToCompute(ctx.Input(1)->data<T>()[0]);
    const S delta = ToCompute(ctx.Input(2)->data<T>()[0]);
    if (delta == S{0}) return absl::InvalidArgumentError("delta must not be 0");
    ASSIGN_OR_RETURN(const int64_t count, RangeCount(start, limit, delta));
    ASSIGN_OR_RETURN(Tensor* out_tensor, ctx.CheckedOutput(0, kTypeOf<T>, {count}));
    T* out = out_tensor->template data<T>();
    const bool round = round_each_step_ && !std::is_same_v<S, T>;
    S value = start;
    for (int64_t i = 0; i < count; ++i) {
      out[i] = FromCompute<T>(value);
      // Not past the last element: the value after it may overflow the type (Range(INT64_MAX, .., INT64_MIN)).
      if (i + 1 == count) break;
      value = round ? ToCompute(FromCompute<T>(value + delta)) : static_cast<S>(value + delta);
    }
    return absl::OkStatus();
  }

  bool round_each_step_ = false;
};

// EyeLike: a 2-D tensor of the input's shape with ones on diagonal k; dtype defaults to the input's.
// EyeLike-22 only widens the type lists.
class EyeLike final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(k_, info.Attr<int64_t>("k", 0));
    if (info.HasAttr("dtype")) {
      ASSIGN_OR_RETURN(const int64_t dtype, info.Attr<int64_t>("dtype"));
      ASSIGN_OR_RETURN(dtype_, DataTypeFromOnnx(static_cast<int32_t>(dtype)));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& in = *ctx.Input(0);
    if (in.rank() != 2) return absl::InvalidArgumentError(absl::StrCat("expected a 2-D input, got ", in.DebugString()));
    const DataType type = dtype_ == DataType::kUndefined ? in.dtype() : dtype_;
    Tensor& out = ctx.Output(0, type, in.shape());
    std::memset(out.raw_data(), 0, out.ByteSize());
    const int64_t rows = in.dim(0), cols = in.dim(1);
    // A diagonal past the matrix has no element; clamped, no negation or sum below overflows.
    const int64_t k = std::clamp(k_, -rows, cols);
    const bool supported = DispatchNumeric(type, [&](auto zero) {
      using T = decltype(zero);
      T* data = out.data<T>();
      for (int64_t i = std::max<int64_t>(0, -k); i < rows && i + k < cols; ++i) {
        data[i * cols + i + k] = static_cast<T>(1.0f);
      }
    });
    if (!supported) return absl::InvalidArgumentError(absl::StrCat("EyeLike does not support ", DataTypeName(type)));
    return absl::OkStatus();
  }

 private:
  int64_t k_ = 0;
  DataType dtype_ = DataType::kUndefined;
};

// Trilu keeps the upper (j - i >= k) or lower (j - i <= k) triangle of each trailing matrix.
class Trilu final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const int64_t upper, info.Attr<int64_t>("upper", 1));
    upper_ = upper != 0;
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& in = *ctx.Input(0);
    if (in.rank() < 2) return absl::InvalidArgumentError(absl::StrCat("expected rank >= 2, got ", in.DebugString()));
    const Tensor* k_input = ctx.Input(1);
    if (k_input != nullptr && k_input->NumElements() != 1) {
      return absl::InvalidArgumentError(absl::StrCat("k must be a scalar, got ", k_input->DebugString()));
    }
    const int64_t k = k_input != nullptr ? k_input->GetAsInt64(0) : 0;
    Tensor& out = ctx.Output(0, in.dtype(), in.shape());
    DispatchByWidth(in.dtype(), [&](auto zero) { Keep<decltype(zero)>(in, k, out, ctx.pool()); });
    return absl::OkStatus();
  }

 private:
  template <typename T>
  void Keep(const Tensor& in, int64_t k, Tensor& out, ThreadPool& pool) const {
    const int64_t rows = in.dim(in.rank() - 2), cols = in.dim(in.rank() - 1);
    // Past the matrix every row keeps all or none of its columns; clamped, i + k + 1 cannot overflow.
    const int64_t diagonal = std::clamp(k, -rows, cols);
    const T* src = in.data<T>();
    T* dst = out.data<T>();
    pool.ParallelFor(in.NumElements() / std::max<int64_t>(1, cols), std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols)),
                     [&](int64_t begin, int64_t end) {
                       for (int64_t r = begin; r < end; ++r) {
                         // Columns [first, last) are kept in this row.
                         const int64_t i = r % rows;
                         const int64_t first = upper_ ? std::clamp<int64_t>(i + diagonal, 0, cols) : 0;
                         const int64_t last = upper_ ? cols : std::clamp<int64_t>(i + diagonal + 1, 0, cols);
                         const T* in_row = src + r * cols;
                         T* out_row = dst + r * cols;
                         std::fill(out_row, out_row + first, T{});
                         std::copy(in_row + first, in_row + last, out_row + first);
                         std::fill(out_row + last, out_row + cols, T{});
                       }
                     });
  }

  bool upper_ = true;
};

// Constant-1..-9 differ in types only; -11 adds sparse_value, -12 the value_* attributes; later versions
// widen types.
REGISTER_KERNEL(kOnnx, "Constant", 1, 8, kAnyType, Constant);
REGISTER_KERNEL(kOnnx, "Constant", 9, 10, kAnyType, Constant);
REGISTER_KERNEL(kOnnx, "Constant", 11, 11, kAnyType, Constant);
REGISTER_KERNEL(kOnnx, "Constant", 12, 12, kAnyType, Constant);
REGISTER_KERNEL(kOnnx, "Constant", 13, 18, kAnyType, Constant);
REGISTER_KERNEL(kOnnx, "Constant", 19, 20, kAnyType, Constant);
REGISTER_KERNEL(kOnnx, "Constant", 21, 22, kAnyType, Constant);
REGISTER_KERNEL(kOnnx, "Constant", 23, 23, kAnyType, Constant);
REGISTER_KERNEL(kOnnx, "Constant", 24, 24, kAnyType, Constant);
REGISTER_KERNEL(kOnnx, "Constant", 25, kLatest, kAnyType, Constant);

// The shape input is int64; the output type comes from `value`.
REGISTER_KERNEL(kOnnx, "ConstantOfShape", 9, 19, kAnyType, ConstantOfShape);
REGISTER_KERNEL(kOnnx, "ConstantOfShape", 20, 20, kAnyType, ConstantOfShape);
REGISTER_KERNEL(kOnnx, "ConstantOfShape", 21, 22, kAnyType, ConstantOfShape);
REGISTER_KERNEL(kOnnx, "ConstantOfShape", 23, 23, kAnyType, ConstantOfShape);
REGISTER_KERNEL(kOnnx, "ConstantOfShape", 24, 24, kAnyType, ConstantOfShape);
REGISTER_KERNEL(kOnnx, "ConstantOfShape", 25, kLatest, kAnyType, ConstantOfShape);

REGISTER_KERNEL(kOnnx, "Range", 11, 26, kNumericTypes, Range);
REGISTER_KERNEL(kOnnx, "Range", 27, kLatest, kNumericTypes, Range);

REGISTER_KERNEL(kOnnx, "EyeLike", 9, 21, kNumericAndBoolTypes, EyeLike);
REGISTER_KERNEL(kOnnx, "EyeLike", 22, kLatest, kNumericAndBoolTypes, EyeLike);

REGISTER_KERNEL(kOnnx, "Trilu", 14, kLatest, kAllTypes, Trilu);

}  // namespace
}  // namespace onnxserve

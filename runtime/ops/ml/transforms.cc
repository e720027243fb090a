// Row and feature transforms of ai.onnx.ml: Normalizer (scikit-learn's Normalizer), Imputer (SimpleImputer)
// and FeatureVectorizer (the concatenation a ColumnTransformer or FeatureUnion ends with).
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/core/checked_size.h"
#include "runtime/ops/common.h"
#include "runtime/ops/ml/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// Y (float, X's shape [N, C] or [C]) = each row divided by its max (MAX), sum of magnitudes (L1) or
// Euclidean norm (L2, so signs stay); a row whose divisor is zero is copied unchanged.
class Normalizer final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const std::string norm, info.Attr<std::string>("norm", "MAX"));
    if (norm == "MAX") {
      norm_ = Norm::kMax;
    } else if (norm == "L1") {
      norm_ = Norm::kL1;
    } else if (norm == "L2") {
      norm_ = Norm::kL2;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("norm \"", norm, "\" is not one of MAX, L1, L2"));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    ASSIGN_OR_RETURN(const RowShape shape, RowsOf(x));
    ASSIGN_OR_RETURN(Tensor * y, ctx.CheckedOutput(0, DataType::kFloat, x.shape()));
    float* out = y->data<float>();
    return ForEachRowAsDoubles(x, ctx.pool(), shape.features,
                               [&](int64_t r, absl::Span<const double> row, std::vector<double>&) {
                                 const double divisor = Divisor(row);
                                 float* o = out + r * shape.features;
                                 for (size_t f = 0; f < row.size(); ++f) {
                                   o[f] = static_cast<float>(divisor == 0 ? row[f] : row[f] / divisor);
                                 }
                               });
  }

 private:
  enum class Norm { kMax, kL1, kL2 };

  double Divisor(absl::Span<const double> row) const {
    if (row.empty()) return 0;
    double d = norm_ == Norm::kMax ? row[0] : 0;
    for (double v : row) {
      switch (norm_) {
        case Norm::kMax: d = std::max(d, v); break;
        case Norm::kL1: d += std::fabs(v); break;
        case Norm::kL2: d += v * v; break;
      }
    }
    return norm_ == Norm::kL2 ? std::sqrt(d) : d;
  }

  Norm norm_ = Norm::kMax;
};

// Y = X with every element equal to the replaced value (NaN matches NaN) set to the imputed value of its
// feature (the last axis), or to the one imputed value. Floating X uses imputed_value_floats and
// replaced_value_float, integer X imputed_value_int64s and replaced_value_int64.
class Imputer final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(floats_, info.Attr<std::vector<float>>("imputed_value_floats", {}));
    ASSIGN_OR_RETURN(ints_, info.Attr<std::vector<int64_t>>("imputed_value_int64s", {}));
    if (floats_.empty() == ints_.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("exactly one of imputed_value_floats and imputed_value_int64s must be set, found ",
                       floats_.empty() ? "neither" : "both"));
    }
    ASSIGN_OR_RETURN(replaced_float_, info.Attr<float>("replaced_value_float", 0.0f));
    ASSIGN_OR_RETURN(replaced_int_, info.Attr<int64_t>("replaced_value_int64", 0));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    const bool floating = x.dtype() == DataType::kFloat || x.dtype() == DataType::kDouble;
    const size_t count = floating ? floats_.size() : ints_.size();
    const char* name = floating ? "imputed_value_floats" : "imputed_value_int64s";
    const int64_t features = x.rank() == 0 ? 1 : x.dim(x.rank() - 1);
    if (count == 0) {
      return absl::InvalidArgumentError(absl::StrCat("X is ", x.DebugString(), " but ", name, " is not set"));
    }
    if (count != 1 && static_cast<int64_t>(count) != features) {
      return absl::InvalidArgumentError(absl::StrCat(name, " has ", count, " values for ", features,
                                                     " features of X ", x.DebugString(), ": expected 1 or ",
                                                     features));
    }
    Tensor& y = ctx.Output(0, x.dtype(), x.shape());
    absl::Status status = absl::OkStatus();
    RETURN_IF_ERROR(DispatchMlNumeric(x, [&](auto tag) { status = Impute<decltype(tag)>(x, y, features); }));
    return status;
  }

 private:
  template <typename T>
  absl::Status Impute(const Tensor& x, Tensor& y, int64_t features) const {
    std::vector<T> imputed;
    T replaced{};
    bool replaceable = true;  // false: X cannot hold the replaced value, so nothing matches it
    if constexpr (std::is_floating_point_v<T>) {
      imputed.assign(floats_.begin(), floats_.end());
      replaced = static_cast<T>(replaced_float_);
    } else {
      for (int64_t v : ints_) {
        if (!Fits<T>(v)) {
          return absl::InvalidArgumentError(
              absl::StrCat("imputed_value_int64s holds ", v, ", which X ", x.DebugString(), " cannot hold"));
        }
        imputed.push_back(static_cast<T>(v));
      }
      replaceable = Fits<T>(replaced_int_);
      replaced = static_cast<T>(replaced_int_);
    }
    const T* in = x.data<T>();
    T* out = y.data<T>();
    const bool one = imputed.size() == 1;
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      out[i] = replaceable && Matches(in[i], replaced) ? imputed[one ? 0 : i % features] : in[i];
    }
    return absl::OkStatus();
  }

  template <typename T>
  static bool Fits(int64_t v) {
    return v >= std::numeric_limits<T>::min() && v <= std::numeric_limits<T>::max();
  }

  template <typename T>
  static bool Matches(T v, T replaced) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(replaced)) return std::isnan(v);
    }
    return v == replaced;
  }

  std::vector<float> floats_;
  std::vector<int64_t> ints_;
  float replaced_float_ = 0;
  int64_t replaced_int_ = 0;
};

// Y [N, sum(inputdimensions)] float: the inputs ([N, ...], or [C] as one row) side by side, input i's
// features in inputdimensions[i] columns, as ONNX Runtime fills them: a shorter input is padded with zeros,
// a longer one cut.
class FeatureVectorizer final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(widths_, info.Attr<std::vector<int64_t>>("inputdimensions"));
    if (widths_.empty()) return absl::InvalidArgumentError("inputdimensions is empty: expected one per input");
    for (int64_t w : widths_) {
      if (w < 0) return absl::InvalidArgumentError(absl::StrCat("inputdimensions holds ", w));
      offsets_.push_back(total_);
      // Each width is a column count of the output, which CheckedOutput bounds; the sum is checked here.
      if (w > std::numeric_limits<int64_t>::max() - total_) {
        return absl::InvalidArgumentError("inputdimensions add up past int64");
      }
      total_ += w;
    }
    if (static_cast<int>(widths_.size()) != info.num_inputs()) {
      return absl::InvalidArgumentError(absl::StrCat("inputdimensions has ", widths_.size(), " values for ",
                                                     info.num_inputs(), " inputs: expected one per input"));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const int n = static_cast<int>(widths_.size());
    RETURN_IF_ERROR(RequireInputs(ctx, n));
    const Tensor& first = *ctx.Input(0);
    if (first.rank() == 0) return absl::InvalidArgumentError(absl::StrCat("input 0 is a scalar: ", first.DebugString()));
    const int64_t rows = first.rank() == 1 ? 1 : first.dim(0);
    ASSIGN_OR_RETURN(Tensor * y, ctx.CheckedOutput(0, DataType::kFloat, {rows, total_}));
    float* out = y->data<float>();
    std::fill(out, out + y->NumElements(), 0.0f);
    for (int i = 0; i < n; ++i) {
      const Tensor& x = *ctx.Input(i);
      const int64_t x_rows = x.rank() <= 1 ? 1 : x.dim(0);
      if (x.rank() == 0 || x_rows != rows) {
        return absl::InvalidArgumentError(absl::StrCat("input ", i, " ", x.DebugString(), " does not have the ",
                                                       rows, " rows of input 0"));
      }
      const int64_t width = rows == 0 ? 0 : x.NumElements() / rows;
      const int64_t copied = std::min(width, widths_[i]);
      RETURN_IF_ERROR(DispatchMlNumeric(x, [&](auto tag) {
        using T = decltype(tag);
        const T* in = x.data<T>();
        for (int64_t r = 0; r < rows; ++r) {
          float* o = out + r * total_ + offsets_[i];
          for (int64_t c = 0; c < copied; ++c) o[c] = static_cast<float>(in[r * width + c]);
        }
      }));
    }
    return absl::OkStatus();
  }

 private:
  std::vector<int64_t> widths_, offsets_;
  int64_t total_ = 0;
};

}  // namespace

REGISTER_KERNEL(kMl, "Normalizer", 1, kLatest, kMlNumericTypes, Normalizer);
REGISTER_KERNEL(kMl, "Imputer", 1, kLatest, kMlNumericTypes, Imputer);
REGISTER_KERNEL(kMl, "FeatureVectorizer", 1, kLatest, kMlNumericTypes, FeatureVectorizer);

}  // namespace onnxserve

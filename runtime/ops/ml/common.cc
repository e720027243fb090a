#include "runtime/ops/ml/common.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/common.h"

namespace onnxserve {
namespace {

// The standard normal quantile: Acklam's rational approximation (relative error 1.2e-9), then one Halley
// step on erfc, which brings it to double precision.
double NormalQuantile(double p) {
  if (std::isnan(p)) return p;
  if (p <= 0) return -std::numeric_limits<double>::infinity();
  if (p >= 1) return std::numeric_limits<double>::infinity();
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                 1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01,  -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  auto tail = [&](double q) {
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  };
  double x;
  if (p < kLow) {
    x = tail(std::sqrt(-2 * std::log(p)));
  } else if (p > 1 - kLow) {
    x = -tail(std::sqrt(-2 * std::log1p(-p)));
  } else {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  const double e = 0.5 * std::erfc(-x / std::numbers::sqrt2) - p;
  const double u = e * std::sqrt(2 * std::numbers::pi) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

void Softmax(absl::Span<double> scores, bool keep_zeros) {
  const double max = *std::max_element(scores.begin(), scores.end());
  double sum = 0;
  for (double& s : scores) {
    s = keep_zeros && s == 0 ? 0 : std::exp(s - max);
    sum += s;
  }
  if (sum == 0) return;  // SOFTMAX_ZERO of an all-zero row stays zero
  for (double& s : scores) s /= sum;
}

}  // namespace

absl::StatusOr<PostTransform> ParsePostTransform(const std::string& name) {
  static constexpr std::string_view kNames[] = {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"};
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (name == kNames[i]) return static_cast<PostTransform>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "post_transform \"", name, "\" is not one of NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT"));
}

absl::StatusOr<PostTransform> PostTransformAttr(const KernelInfo& info) {
  ASSIGN_OR_RETURN(const std::string name, info.Attr<std::string>("post_transform", "NONE"));
  return ParsePostTransform(name);
}

absl::StatusOr<PostTransform> PostTransformFromIndex(int64_t index) {
  if (index < 0 || index > static_cast<int64_t>(PostTransform::kProbit)) {
    return absl::InvalidArgumentError(absl::StrCat("post_transform ", index, " is not in [0, 4]"));
  }
  return static_cast<PostTransform>(index);
}

void ApplyPostTransform(PostTransform transform, absl::Span<double> scores) {
  if (scores.empty()) return;
  switch (transform) {
    case PostTransform::kNone: return;
    case PostTransform::kSoftmax: return Softmax(scores, false);
    case PostTransform::kSoftmaxZero: return Softmax(scores, true);
    case PostTransform::kLogistic:
      for (double& s : scores) s = 1 / (1 + std::exp(-s));
      return;
    case PostTransform::kProbit:
      for (double& s : scores) s = NormalQuantile(s);
      return;
  }
}

absl::StatusOr<std::vector<double>> FloatingValues(const Tensor& t, const std::string& what) {
  std::vector<double> values;
  values.reserve(static_cast<size_t>(t.NumElements()));
  RETURN_IF_ERROR(DispatchFloating(t, what.c_str(), [&](auto tag) {
    using T = decltype(tag);
    for (const T& v : t.values<T>()) values.push_back(static_cast<double>(ToCompute(v)));
  }));
  return values;
}

absl::StatusOr<std::vector<double>> DoublesAttr(const KernelInfo& info, const std::string& name) {
  const std::string as_tensor = name + "_as_tensor";
  if (info.HasAttr(as_tensor)) {
    ASSIGN_OR_RETURN(const Tensor t, info.Attr<Tensor>(as_tensor));
    return FloatingValues(t, as_tensor);
  }
  return FloatListAttr(info, name);
}

absl::StatusOr<std::vector<double>> FloatListAttr(const KernelInfo& info, const std::string& name) {
  ASSIGN_OR_RETURN(const std::vector<float> floats, info.Attr<std::vector<float>>(name, {}));
  return std::vector<double>(floats.begin(), floats.end());
}

absl::Status CheckAttrSize(const std::string& name, size_t size, size_t expected, const std::string& why) {
  if (size == expected) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(name, " has ", size, " values, expected ", expected, " (", why, ")"));
}

absl::StatusOr<RowShape> RowsOf(const Tensor& x) {
  if (x.rank() == 1) return RowShape{1, x.dim(0)};
  if (x.rank() == 2) return RowShape{x.dim(0), x.dim(1)};
  return absl::InvalidArgumentError(absl::StrCat("X must be [N, F] or [F], got ", x.DebugString()));
}

absl::StatusOr<VectorSet> VectorSet::Make(std::vector<double> values, int64_t count, const std::string& name,
                                          const std::string& count_from) {
  const int64_t n = static_cast<int64_t>(values.size());
  if (count < 1 || n == 0 || n % count != 0) {
    return absl::InvalidArgumentError(absl::StrCat(name, " has ", n, " values for ", count,
                                                   " vectors: expected a non-zero multiple (", count_from, ")"));
  }
  return VectorSet{std::move(values), count, n / count};
}

absl::StatusOr<RowShape> VectorSet::RowsOf(const Tensor& x) const {
  ASSIGN_OR_RETURN(const RowShape shape, onnxserve::RowsOf(x));
  if (shape.features == features) return shape;
  return absl::InvalidArgumentError(
      absl::StrCat("X ", x.DebugString(), " has ", shape.features, " features, the model ", features));
}

absl::StatusOr<ClassLabels> ClassLabels::FromAttrs(const KernelInfo& info, const std::string& ints_name) {
  ClassLabels labels;
  const bool has_strings = info.HasAttr("classlabels_strings"), has_ints = info.HasAttr(ints_name);
  if (has_strings == has_ints) {
    return absl::InvalidArgumentError(
        absl::StrCat("exactly one of classlabels_strings and ", ints_name, " must be set, found ",
                     has_strings ? "both" : "neither"));
  }
  labels.strings_used_ = has_strings;
  if (has_strings) {
    ASSIGN_OR_RETURN(labels.strings_, info.Attr<std::vector<std::string>>("classlabels_strings"));
    for (const std::string& s : labels.strings_) {
      labels.longest_string_ = std::max(labels.longest_string_, static_cast<int64_t>(s.size()));
    }
  } else {
    ASSIGN_OR_RETURN(labels.ints_, info.Attr<std::vector<int64_t>>(ints_name));
  }
  if (labels.size() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(has_strings ? "classlabels_strings" : ints_name, " is empty: a classifier needs classes"));
  }
  return labels;
}

absl::StatusOr<Tensor*> ClassLabels::Output(KernelContext& ctx, int64_t rows) const {
  RETURN_IF_ERROR(CheckStringCopies(longest_string_, rows));
  return ctx.CheckedOutput(0, type(), {rows});
}

void ClassLabels::Write(Tensor& y, int64_t row, int64_t index) const {
  if (strings_used_) {
    y.data<std::string>()[row] = strings_[index];
  } else {
    y.data<int64_t>()[row] = ints_[index];
  }
}

absl::StatusOr<float*> OptionalScores(KernelContext& ctx, int index, int64_t rows, int64_t columns) {
  if (!ctx.OutputWanted(index)) return nullptr;
  ASSIGN_OR_RETURN(Tensor * z, ctx.CheckedOutput(index, DataType::kFloat, {rows, columns}));
  return z->data<float>();
}

void WriteScores(absl::Span<double> scores, PostTransform transform, float* z) {
  if (z == nullptr) return;
  ApplyPostTransform(transform, scores);
  for (size_t i = 0; i < scores.size(); ++i) z[i] = static_cast<float>(scores[i]);
}

void WriteBinaryScores(double s, PostTransform transform, float* z) {
  if (z == nullptr) return;
  double both[2] = {-s, s};
  WriteScores(absl::MakeSpan(both), transform, z);
}

}  // namespace onnxserve

// Linear models of ai.onnx.ml: LinearRegressor (scikit-learn's LinearRegression, Ridge, Lasso ...) and
// LinearClassifier (LogisticRegression, LinearSVC, SGDClassifier ...). Both hold their weights as one row of
// `coefficients` per output column, scores = X * coefficients^T + intercepts, computed in double.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/ops/common.h"
#include "runtime/ops/ml/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// Rows of weights over the features plus one intercept per row (zeros when absent).
struct LinearWeights {
  VectorSet rows;
  std::vector<double> intercepts;

  // Splits coefficients into `count` rows (`count_from` says what sets it); intercepts: none or one per row.
  static absl::StatusOr<LinearWeights> FromAttrs(const KernelInfo& info, int64_t count, const std::string& count_from) {
    ASSIGN_OR_RETURN(auto coefficients, FloatListAttr(info, "coefficients"));
    ASSIGN_OR_RETURN(auto intercepts, FloatListAttr(info, "intercepts"));
    ASSIGN_OR_RETURN(VectorSet rows, VectorSet::Make(std::move(coefficients), count, "coefficients", count_from));
    if (intercepts.empty()) intercepts.assign(static_cast<size_t>(count), 0.0);
    RETURN_IF_ERROR(CheckAttrSize("intercepts", intercepts.size(), static_cast<size_t>(count), count_from));
    return LinearWeights{std::move(rows), std::move(intercepts)};
  }

  // scores[k] = row k . x + intercept k.
  void Score(absl::Span<const double> x, double* scores) const {
    for (int64_t k = 0; k < rows.count; ++k) {
      const double* w = rows[k];
      double sum = intercepts[k];
      for (int64_t f = 0; f < rows.features; ++f) sum += w[f] * x[f];
      scores[k] = sum;
    }
  }
};

// Y [N, targets] float: one row of coefficients per target.
class LinearRegressor final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const int64_t targets, info.Attr<int64_t>("targets", 1));
    ASSIGN_OR_RETURN(weights_, LinearWeights::FromAttrs(info, targets, "one row of coefficients per target"));
    ASSIGN_OR_RETURN(transform_, PostTransformAttr(info));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    ASSIGN_OR_RETURN(const RowShape shape, weights_.rows.RowsOf(x));
    const int64_t targets = weights_.rows.count;
    ASSIGN_OR_RETURN(Tensor * y, ctx.CheckedOutput(0, DataType::kFloat, {shape.rows, targets}));
    float* out = y->data<float>();
    return ForEachRowAsDoubles(x, ctx.pool(), weights_.rows.values.size(),
                               [&](int64_t r, absl::Span<const double> row, std::vector<double>& scores) {
                                 scores.resize(static_cast<size_t>(targets));
                                 weights_.Score(row, scores.data());
                                 WriteScores(absl::MakeSpan(scores), transform_, out + r * targets);
                               });
  }

 private:
  LinearWeights weights_;
  PostTransform transform_ = PostTransform::kNone;
};

// Y [N] labels, Z [N, classes] float scores. One row of coefficients per class, or one row for two classes
// (its score s favours the second: Y is the second label when s > 0, Z is [-s, s] before post_transform).
// The number of rows is the number of intercepts, or of classes when there are none. multi_class (OvR or
// multinomial) changes nothing here: the converter picks post_transform to match.
class LinearClassifier final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(labels_, ClassLabels::FromAttrs(info, "classlabels_ints"));
    ASSIGN_OR_RETURN(const auto intercepts, info.Attr<std::vector<float>>("intercepts", {}));
    const int64_t rows = intercepts.empty() ? labels_.size() : static_cast<int64_t>(intercepts.size());
    ASSIGN_OR_RETURN(weights_, LinearWeights::FromAttrs(info, rows, "one row of coefficients per intercept or class"));
    if (rows != labels_.size() && !(rows == 1 && labels_.size() == 2)) {
      return absl::InvalidArgumentError(absl::StrCat("intercepts has ", rows, " values for ", labels_.size(),
                                                     " class labels: expected one per class (or one for two)"));
    }
    ASSIGN_OR_RETURN(transform_, PostTransformAttr(info));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    ASSIGN_OR_RETURN(const RowShape shape, weights_.rows.RowsOf(x));
    ASSIGN_OR_RETURN(Tensor * y, labels_.Output(ctx, shape.rows));
    const int64_t columns = labels_.size();
    ASSIGN_OR_RETURN(float* z, OptionalScores(ctx, 1, shape.rows, columns));
    return ForEachRowAsDoubles(x, ctx.pool(), weights_.rows.values.size(),
                               [&](int64_t r, absl::Span<const double> row, std::vector<double>& scores) {
                                 scores.resize(static_cast<size_t>(weights_.rows.count));
                                 weights_.Score(row, scores.data());
                                 if (weights_.rows.count == 1) {
                                   labels_.Write(*y, r, scores[0] > 0 ? 1 : 0);
                                   WriteBinaryScores(scores[0], transform_, ScoreRow(z, r, columns));
                                 } else {
                                   labels_.Write(*y, r, ArgMax(scores));
                                   WriteScores(absl::MakeSpan(scores), transform_, ScoreRow(z, r, columns));
                                 }
                               });
  }

 private:
  ClassLabels labels_;
  LinearWeights weights_;
  PostTransform transform_ = PostTransform::kNone;
};

}  // namespace

REGISTER_KERNEL(kMl, "LinearRegressor", 1, kLatest, kMlNumericTypes, LinearRegressor);
REGISTER_KERNEL(kMl, "LinearClassifier", 1, kLatest, kMlNumericTypes, LinearClassifier);

}  // namespace onnxserve

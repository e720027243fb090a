// Support vector machines of ai.onnx.ml in libsvm's layout, as scikit-learn's SVC, NuSVC, SVR, NuSVR and
// OneClassSVM hold them: SVMRegressor (one decision value) and SVMClassifier (one-vs-one decision values
// per class pair, votes, and Platt probabilities coupled pairwise). Without support vectors both are linear
// models (liblinear's layout: one row of coefficients per class). Everything is computed in double.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/core/checked_size.h"
#include "runtime/core/run_limits.h"
#include "runtime/ops/common.h"
#include "runtime/ops/ml/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// K(a, b) for kernel_type and kernel_params [gamma, coef0, degree], libsvm's formulas.
class SvmKernel {
 public:
  static absl::StatusOr<SvmKernel> FromAttrs(const KernelInfo& info) {
    SvmKernel k;
    ASSIGN_OR_RETURN(const std::string type, info.Attr<std::string>("kernel_type", "LINEAR"));
    static constexpr std::string_view kNames[] = {"LINEAR", "POLY", "RBF", "SIGMOID"};
    const auto it = std::find(std::begin(kNames), std::end(kNames), type);
    if (it == std::end(kNames)) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel_type \"", type, "\" is not one of LINEAR, POLY, RBF, SIGMOID"));
    }
    k.type_ = static_cast<Type>(it - std::begin(kNames));
    ASSIGN_OR_RETURN(const auto params, FloatListAttr(info, "kernel_params"));
    if (params.size() == 3) {
      k.gamma_ = params[0], k.coef0_ = params[1], k.degree_ = params[2];
    } else if (!params.empty() || k.type_ != Type::kLinear) {
      return absl::InvalidArgumentError(absl::StrCat("kernel_params has ", params.size(),
                                                     " values, expected 3 (gamma, coef0, degree) for kernel_type ",
                                                     type));
    }
    return k;
  }

  static SvmKernel Linear() { return SvmKernel(); }

  double operator()(const double* a, const double* b, int64_t n) const {
    if (type_ == Type::kRbf) {
      double distance = 0;
      for (int64_t i = 0; i < n; ++i) distance += (a[i] - b[i]) * (a[i] - b[i]);
      return std::exp(-gamma_ * distance);
    }
    double dot = 0;
    for (int64_t i = 0; i < n; ++i) dot += a[i] * b[i];
    switch (type_) {
      case Type::kPoly: return std::pow(gamma_ * dot + coef0_, degree_);
      case Type::kSigmoid: return std::tanh(gamma_ * dot + coef0_);
      default: return dot;
    }
  }

 private:
  enum class Type { kLinear, kPoly, kRbf, kSigmoid };
  Type type_ = Type::kLinear;
  double gamma_ = 0, coef0_ = 0, degree_ = 0;
};

// out[v] = K(x, vector v) for every vector of `vectors`.
void ApplyKernel(const SvmKernel& kernel, const VectorSet& vectors, absl::Span<const double> x, double* out) {
  for (int64_t v = 0; v < vectors.count; ++v) out[v] = kernel(x.data(), vectors[v], vectors.features);
}

// SVMRegressor: Y [N, 1] float = sum_i coefficients[i] K(x, sv_i) + rho[0] with n_supports support vectors,
// or K(x, coefficients) + rho[0] without; a one_class model writes 1 where that is positive, else -1.
class SVMRegressor final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(kernel_, SvmKernel::FromAttrs(info));
    ASSIGN_OR_RETURN(const int64_t supports, info.Attr<int64_t>("n_supports", 0));
    ASSIGN_OR_RETURN(auto coefficients, FloatListAttr(info, "coefficients"));
    ASSIGN_OR_RETURN(auto support_vectors, FloatListAttr(info, "support_vectors"));
    ASSIGN_OR_RETURN(const auto rho, FloatListAttr(info, "rho"));
    ASSIGN_OR_RETURN(const int64_t one_class, info.Attr<int64_t>("one_class", 0));
    ASSIGN_OR_RETURN(transform_, PostTransformAttr(info));
    RETURN_IF_ERROR(CheckAttrSize("rho", rho.size(), 1, "one decision value"));
    rho_ = rho[0];
    one_class_ = one_class != 0;
    if (supports < 0) return absl::InvalidArgumentError(absl::StrCat("n_supports is ", supports));
    if (supports == 0) {
      if (!support_vectors.empty()) {
        return absl::InvalidArgumentError("support_vectors is set but n_supports is 0");
      }
      ASSIGN_OR_RETURN(vectors_, VectorSet::Make(std::move(coefficients), 1, "coefficients", "a linear model"));
      coefficients_ = {1.0};
      return absl::OkStatus();
    }
    RETURN_IF_ERROR(CheckAttrSize("coefficients", coefficients.size(), static_cast<size_t>(supports),
                                  "one per support vector, n_supports"));
    ASSIGN_OR_RETURN(vectors_, VectorSet::Make(std::move(support_vectors), supports, "support_vectors", "n_supports"));
    coefficients_ = std::move(coefficients);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    ASSIGN_OR_RETURN(const RowShape shape, vectors_.RowsOf(x));
    ASSIGN_OR_RETURN(Tensor * y, ctx.CheckedOutput(0, DataType::kFloat, {shape.rows, 1}));
    float* out = y->data<float>();
    return ForEachRowAsDoubles(x, ctx.pool(), static_cast<int64_t>(vectors_.values.size()),
                               [&](int64_t r, absl::Span<const double> row, std::vector<double>& kernels) {
                                 kernels.resize(static_cast<size_t>(vectors_.count));
                                 ApplyKernel(kernel_, vectors_, row, kernels.data());
                                 double score = rho_;
                                 for (int64_t v = 0; v < vectors_.count; ++v) score += coefficients_[v] * kernels[v];
                                 if (one_class_) score = score > 0 ? 1 : -1;
                                 WriteScores(absl::MakeSpan(&score, 1), transform_, out + r);
                               });
  }

 private:
  SvmKernel kernel_;
  VectorSet vectors_;                   // the support vectors, or the linear model's one row
  std::vector<double> coefficients_;  // one per vector
  double rho_ = 0;
  bool one_class_ = false;
  PostTransform transform_ = PostTransform::kNone;
};

// libsvm's sigmoid_predict: P(first class of the pair) from its decision value f, 1 / (1 + exp(A f + B)),
// written so that neither branch overflows.
double PlattProbability(double f, double a, double b) {
  const double fapb = f * a + b;
  return fapb >= 0 ? std::exp(-fapb) / (1 + std::exp(-fapb)) : 1 / (1 + std::exp(fapb));
}

// libsvm's multiclass_probability (Wu, Lin and Weng 2004, method 2): the class probabilities p (k of them)
// most consistent with the pairwise ones r[i * k + j] = P(i | i or j), by the same fixed-point iteration and
// stopping rule, so that the result agrees with scikit-learn's predict_proba. `work` holds k * k + k values.
void CouplePairwise(int64_t k, const double* r, double* p, double* work) {
  double* q = work;
  double* qp = work + k * k;
  StopIfRunEnded(WorkOf({k, k}));
  for (int64_t t = 0; t < k; ++t) {
    p[t] = 1.0 / static_cast<double>(k);
    q[t * k + t] = 0;
    for (int64_t j = 0; j < t; ++j) {
      q[t * k + t] += r[j * k + t] * r[j * k + t];
      q[t * k + j] = q[j * k + t];
    }
    for (int64_t j = t + 1; j < k; ++j) {
      q[t * k + t] += r[j * k + t] * r[j * k + t];
      q[t * k + j] = -r[j * k + t] * r[t * k + j];
    }
  }
  const int64_t max_iterations = std::max<int64_t>(100, k);
  const double eps = 0.005 / static_cast<double>(k);
  for (int64_t iteration = 0; iteration < max_iterations; ++iteration) {
    StopIfRunEnded(WorkOf({2, k, k}));  // k iterations of k^2 for k classes: k^3 for one row
    double pqp = 0;
    for (int64_t t = 0; t < k; ++t) {
      qp[t] = 0;
      for (int64_t j = 0; j < k; ++j) qp[t] += q[t * k + j] * p[j];
      pqp += p[t] * qp[t];
    }
    double max_error = 0;
    for (int64_t t = 0; t < k; ++t) max_error = std::max(max_error, std::fabs(qp[t] - pqp));
    if (max_error < eps) break;
    for (int64_t t = 0; t < k; ++t) {
      const double diff = (-qp[t] + pqp) / q[t * k + t];
      p[t] += diff;
      pqp = (pqp + diff * (diff * q[t * k + t] + 2 * qp[t])) / (1 + diff) / (1 + diff);
      for (int64_t j = 0; j < k; ++j) {
        qp[j] = (qp[j] + diff * q[t * k + j]) / (1 + diff);
        p[j] /= (1 + diff);
      }
    }
  }
}

// The one-vs-one machines of a libsvm classifier with C classes: vectors_per_class[c] support vectors of
// class c, stored class after class; coefficients [C - 1, V] where the machine (i, j), i < j, weighs class
// i's vectors with row j - 1 and class j's with row i; one rho per machine, added. A positive decision value
// votes for i.
struct OneVsOne {
  VectorSet supports;
  std::vector<double> coefficients;
  std::vector<double> rho;
  std::vector<int64_t> start, count;  // of each class's vectors
  std::vector<double> prob_a, prob_b;  // one per machine, or empty
  int64_t classes = 0;

  int64_t machines() const { return classes * (classes - 1) / 2; }

  // Decision values of the machines in libsvm's order (0,1), (0,2), ..., (1,2), ... from the kernel values
  // of a row with every support vector; votes[c] counts the machines class c wins.
  void Decide(const double* kernels, double* decisions, double* votes) const {
    const int64_t v = supports.count;
    std::fill(votes, votes + classes, 0.0);
    int64_t m = 0;
    for (int64_t i = 0; i < classes; ++i) {
      for (int64_t j = i + 1; j < classes; ++j, ++m) {
        double sum = rho[m];
        for (int64_t s = start[i]; s < start[i] + count[i]; ++s) sum += coefficients[(j - 1) * v + s] * kernels[s];
        for (int64_t s = start[j]; s < start[j] + count[j]; ++s) sum += coefficients[i * v + s] * kernels[s];
        decisions[m] = sum;
        ++votes[sum > 0 ? i : j];
      }
    }
  }

  // Class probabilities from the decision values, as libsvm's svm_predict_probability: each machine's Platt
  // probability clipped to [1e-7, 1 - 1e-7], then coupled. `work` holds 2 * C * C + C values.
  void Probabilities(const double* decisions, double* p, double* work) const {
    const int64_t k = classes;
    double* pairwise = work;
    constexpr double kMinProbability = 1e-7;
    int64_t m = 0;
    for (int64_t i = 0; i < k; ++i) {
      for (int64_t j = i + 1; j < k; ++j, ++m) {
        const double pij = std::clamp(PlattProbability(decisions[m], prob_a[m], prob_b[m]), kMinProbability,
                                      1 - kMinProbability);
        pairwise[i * k + j] = pij;
        pairwise[j * k + i] = 1 - pij;
      }
    }
    CouplePairwise(k, pairwise, p, work + k * k);
  }
};

// SVMClassifier: Y [N] labels, Z [N, ...] float. With vectors_per_class, libsvm's one-vs-one machines: Y is
// the class with most votes (the first on a tie, as libsvm); Z holds the class probabilities when prob_a and
// prob_b are given, else the machines' decision values ([N, C(C-1)/2]; for two classes ONNX Runtime's
// [-d, d]). Without, a linear model: score[c] = K(x, coefficients row c) + rho, Y its argmax, Z the scores.
class SVMClassifier final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(labels_, ClassLabels::FromAttrs(info, "classlabels_ints"));
    ASSIGN_OR_RETURN(transform_, PostTransformAttr(info));
    ASSIGN_OR_RETURN(const auto per_class, info.Attr<std::vector<int64_t>>("vectors_per_class", {}));
    ASSIGN_OR_RETURN(auto coefficients, FloatListAttr(info, "coefficients"));
    ASSIGN_OR_RETURN(auto support_vectors, FloatListAttr(info, "support_vectors"));
    ASSIGN_OR_RETURN(auto rho, FloatListAttr(info, "rho"));
    ASSIGN_OR_RETURN(auto prob_a, FloatListAttr(info, "prob_a"));
    ASSIGN_OR_RETURN(auto prob_b, FloatListAttr(info, "prob_b"));
    if (per_class.empty()) {
      if (!support_vectors.empty() || !prob_a.empty() || !prob_b.empty()) {
        return absl::InvalidArgumentError(
            "support_vectors, prob_a and prob_b need vectors_per_class (a model without it is linear)");
      }
      ASSIGN_OR_RETURN(rows_, VectorSet::Make(std::move(coefficients), labels_.size(), "coefficients",
                                            "one row per class label"));
      if (rho.size() != 1) {
        RETURN_IF_ERROR(CheckAttrSize("rho", rho.size(), static_cast<size_t>(labels_.size()),
                                      "one per class label, or one for all"));
      }
      rho_ = std::move(rho);
      return absl::OkStatus();
    }
    ovo_.emplace();
    return InitOneVsOne(info, per_class, std::move(coefficients), std::move(support_vectors), std::move(rho),
                        std::move(prob_a), std::move(prob_b));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    const VectorSet& vectors = ovo_ ? ovo_->supports : rows_;
    ASSIGN_OR_RETURN(const RowShape shape, vectors.RowsOf(x));
    ASSIGN_OR_RETURN(Tensor * y, labels_.Output(ctx, shape.rows));
    const int64_t columns = ScoreColumns();
    ASSIGN_OR_RETURN(float* z, OptionalScores(ctx, 1, shape.rows, columns));
    // A row meets every support vector, and one-vs-one machines weigh each (classes - 1) times.
    const int64_t cost = static_cast<int64_t>(vectors.values.size() + (ovo_ ? ovo_->coefficients.size() : 0));
    if (!ovo_) {
      return ForEachRowAsDoubles(x, ctx.pool(), cost,
                                 [&](int64_t r, absl::Span<const double> row, std::vector<double>& scores) {
                                   scores.resize(static_cast<size_t>(rows_.count));
                                   ApplyKernel(SvmKernel::Linear(), rows_, row, scores.data());
                                   for (int64_t c = 0; c < rows_.count; ++c) scores[c] += rho_[rho_.size() == 1 ? 0 : c];
                                   labels_.Write(*y, r, ArgMax(scores));
                                   WriteScores(absl::MakeSpan(scores), transform_, ScoreRow(z, r, columns));
                                 });
    }
    return ForEachRowAsDoubles(x, ctx.pool(), cost,
                               [&](int64_t r, absl::Span<const double> row, std::vector<double>& scratch) {
                                 ScoreOneVsOne(row, scratch, *y, r, ScoreRow(z, r, columns));
                               });
  }

 private:
  absl::Status InitOneVsOne(const KernelInfo& info, const std::vector<int64_t>& per_class,
                            std::vector<double> coefficients, std::vector<double> support_vectors,
                            std::vector<double> rho, std::vector<double> prob_a, std::vector<double> prob_b) {
    OneVsOne& ovo = *ovo_;
    ovo.classes = labels_.size();
    if (ovo.classes < 2) return absl::InvalidArgumentError("a one-vs-one classifier needs at least two classes");
    RETURN_IF_ERROR(CheckAttrSize("vectors_per_class", per_class.size(), static_cast<size_t>(ovo.classes),
                                  "one per class label"));
    int64_t total = 0;
    for (int64_t n : per_class) {
      // Each count is bounded by the support vectors' values, so the running total cannot overflow.
      if (n < 0 || n > static_cast<int64_t>(support_vectors.size()) - total) {
        return absl::InvalidArgumentError(absl::StrCat("vectors_per_class holds ", n, ": the counts must be >= 0 ",
                                                       "and their sum at most the ", support_vectors.size(),
                                                       " values of support_vectors"));
      }
      ovo.start.push_back(total);
      ovo.count.push_back(n);
      total += n;
    }
    ASSIGN_OR_RETURN(ovo.supports, VectorSet::Make(std::move(support_vectors), total, "support_vectors",
                                                 "the sum of vectors_per_class"));
    ASSIGN_OR_RETURN(const int64_t weights, CheckedMul(ovo.classes - 1, total));
    RETURN_IF_ERROR(CheckAttrSize("coefficients", coefficients.size(), static_cast<size_t>(weights),
                                  "(classes - 1) x support vectors"));
    const size_t machines = static_cast<size_t>(ovo.machines());
    RETURN_IF_ERROR(CheckAttrSize("rho", rho.size(), machines, "one per pair of classes"));
    if (!prob_a.empty() || !prob_b.empty()) {
      RETURN_IF_ERROR(CheckAttrSize("prob_a", prob_a.size(), machines, "one per pair of classes"));
      RETURN_IF_ERROR(CheckAttrSize("prob_b", prob_b.size(), machines, "one per pair of classes"));
    }
    ovo.coefficients = std::move(coefficients);
    ovo.rho = std::move(rho);
    ovo.prob_a = std::move(prob_a);
    ovo.prob_b = std::move(prob_b);
    ASSIGN_OR_RETURN(kernel_, SvmKernel::FromAttrs(info));
    return absl::OkStatus();
  }

  int64_t ScoreColumns() const {
    if (!ovo_ || !ovo_->prob_a.empty() || ovo_->classes == 2) return labels_.size();
    return ovo_->machines();
  }

  void ScoreOneVsOne(absl::Span<const double> row, std::vector<double>& scratch, Tensor& y, int64_t r,
                     float* z) const {
    const OneVsOne& ovo = *ovo_;
    const int64_t k = ovo.classes, v = ovo.supports.count, m = ovo.machines();
    scratch.resize(static_cast<size_t>(v + m + k + k + 2 * k * k + k));
    double* kernels = scratch.data();
    double* decisions = kernels + v;
    double* votes = decisions + m;
    double* probabilities = votes + k;
    ApplyKernel(kernel_, ovo.supports, row, kernels);
    ovo.Decide(kernels, decisions, votes);
    labels_.Write(y, r, ArgMax(absl::MakeConstSpan(votes, k)));
    if (z == nullptr) return;
    if (!ovo.prob_a.empty()) {
      ovo.Probabilities(decisions, probabilities, probabilities + k);
      WriteScores(absl::MakeSpan(probabilities, k), transform_, z);
    } else if (k == 2) {
      WriteBinaryScores(decisions[0], transform_, z);
    } else {
      WriteScores(absl::MakeSpan(decisions, m), transform_, z);
    }
  }

  ClassLabels labels_;
  PostTransform transform_ = PostTransform::kNone;
  SvmKernel kernel_;
  std::optional<OneVsOne> ovo_;  // libsvm's machines, or
  VectorSet rows_;                 // a linear model's rows
  std::vector<double> rho_;      // and its intercepts (one, or one per class)
};

}  // namespace

REGISTER_KERNEL(kMl, "SVMRegressor", 1, kLatest, kMlNumericTypes, SVMRegressor);
REGISTER_KERNEL(kMl, "SVMClassifier", 1, kLatest, kMlNumericTypes, SVMClassifier);

}  // namespace onnxserve

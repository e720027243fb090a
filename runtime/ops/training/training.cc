// ai.onnx.preview.training optimizers: Adagrad, Momentum (standard and Nesterov) and Adam. Each takes the
// learning rate R and update count T, then n tensors X_1..X_n, their gradients G_1..G_n and one or two
// groups of state tensors, and returns the new X_1..X_n followed by the new states. The update is applied
// to each (X_i, G_i, state_i) independently and element-wise; the pseudo code of Operators.md is quoted
// in each Update().
#include <cmath>
#include <string>

#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// Scalars shared by all tensors of one call.
struct StepScalars {
  double r = 0;    // learning rate
  int64_t t = 0;   // update count
};

absl::StatusOr<StepScalars> ReadStepScalars(const KernelContext& ctx) {
  RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const Tensor& r = *ctx.Input(0);
  const Tensor& t = *ctx.Input(1);
  if (r.NumElements() != 1 || (r.dtype() != DataType::kFloat && r.dtype() != DataType::kDouble)) {
    return absl::InvalidArgumentError(absl::StrCat("input \"R\" must be a float or double scalar, got ",
                                                   r.DebugString()));
  }
  if (t.NumElements() != 1 || t.dtype() != DataType::kInt64) {
    return absl::InvalidArgumentError(absl::StrCat("input \"T\" must be an int64 scalar, got ", t.DebugString()));
  }
  return StepScalars{r.GetAsDouble(0), *t.data<int64_t>()};
}

// Runs Optimizer::Update on every optimized tensor. Inputs after R and T form `groups` groups of n tensors
// (X, G, then the states); outputs are the new X and the new states, groups-1 groups of n.
template <typename Optimizer>
absl::Status RunOptimizer(const Optimizer& opt, KernelContext& ctx, int groups) {
  ASSIGN_OR_RETURN(StepScalars step, ReadStepScalars(ctx));
  const int variadic = ctx.num_inputs() - 2;
  if (variadic <= 0 || variadic % groups != 0) {
    return absl::InvalidArgumentError(absl::StrCat("expected R, T and ", groups,
                                                   " groups of tensors of equal length, got ", ctx.num_inputs(),
                                                   " inputs"));
  }
  const int n = variadic / groups;
  for (int i = 0; i < n; ++i) {
    std::vector<const Tensor*> in(static_cast<size_t>(groups));
    for (int g = 0; g < groups; ++g) {
      in[g] = ctx.Input(2 + g * n + i);
      if (in[g] == nullptr) return absl::InvalidArgumentError(absl::StrCat("input ", 2 + g * n + i, " is missing"));
      if (in[g]->shape() != in[0]->shape() || in[g]->dtype() != in[0]->dtype()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input ", 2 + g * n + i, " must be given with the type and shape of optimized tensor ", i, " (",
            in[0]->DebugString(), ")"));
      }
    }
    const DataType type = in[0]->dtype();
    if (type != DataType::kFloat && type != DataType::kDouble) {
      return absl::InvalidArgumentError(
          absl::StrCat("optimized tensor ", i, " must be float or double, got ", in[0]->DebugString()));
    }
    // Outputs the node does not ask for are computed into scratch tensors (they are tiny next to X).
    std::vector<Tensor> scratch(static_cast<size_t>(groups - 1));
    std::vector<Tensor*> out(static_cast<size_t>(groups - 1));
    for (int g = 0; g + 1 < groups; ++g) {
      const int index = g * n + i;
      out[g] = ctx.OutputWanted(index) ? &ctx.Output(index, type, in[0]->shape())
                                       : &(scratch[g] = Tensor(type, in[0]->shape()));
    }
    DispatchNumeric(type, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<T>) opt.template Update<T>(step, in, out);
    });
  }
  return absl::OkStatus();
}

// Inputs X, G, H; outputs X_new, H_new.
class Adagrad final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(float decay, info.Attr<float>("decay_factor", 0.0f));
    ASSIGN_OR_RETURN(float epsilon, info.Attr<float>("epsilon", 0.0f));
    ASSIGN_OR_RETURN(float norm, info.Attr<float>("norm_coefficient", 0.0f));
    decay_factor_ = decay;
    epsilon_ = epsilon;
    norm_coefficient_ = norm;
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override { return RunOptimizer(*this, ctx, 3); }

  template <typename T>
  void Update(const StepScalars& step, const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out) const {
    // r = R / (1 + T * decay_factor); G_regularized = norm_coefficient * X + G;
    // H_new = H + G_regularized^2; X_new = X - r * G_regularized / (Sqrt(H_new) + epsilon)
    const T r = static_cast<T>(step.r / (1 + static_cast<double>(step.t) * decay_factor_));
    const T norm = static_cast<T>(norm_coefficient_), eps = static_cast<T>(epsilon_);
    const T *x = in[0]->data<T>(), *g = in[1]->data<T>(), *h = in[2]->data<T>();
    T *x_new = out[0]->data<T>(), *h_new = out[1]->data<T>();
    for (int64_t k = 0; k < in[0]->NumElements(); ++k) {
      const T g_reg = norm * x[k] + g[k];
      h_new[k] = h[k] + g_reg * g_reg;
      x_new[k] = x[k] - r * g_reg / (std::sqrt(h_new[k]) + eps);
    }
  }

 private:
  double decay_factor_ = 0, epsilon_ = 0, norm_coefficient_ = 0;
};

// Inputs X, G, V; outputs X_new, V_new.
class Momentum final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(float alpha, info.Attr<float>("alpha"));
    ASSIGN_OR_RETURN(float beta, info.Attr<float>("beta"));
    ASSIGN_OR_RETURN(float norm, info.Attr<float>("norm_coefficient"));
    // Held as a StatusOr: a moved-out std::string here trips a -Wmaybe-uninitialized false positive in g++ 12.
    const absl::StatusOr<std::string> mode = info.Attr<std::string>("mode");
    RETURN_IF_ERROR(mode.status());
    if (*mode != "standard" && *mode != "nesterov") {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute \"mode\" must be \"standard\" or \"nesterov\", got \"", *mode, "\""));
    }
    alpha_ = alpha;
    beta_ = beta;
    norm_coefficient_ = norm;
    nesterov_ = *mode == "nesterov";
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override { return RunOptimizer(*this, ctx, 3); }

  template <typename T>
  void Update(const StepScalars& step, const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out) const {
    // G_regularized = norm_coefficient * X + G; beta_adjusted = T > 0 ? beta : 1;
    // V_new = alpha * V + beta_adjusted * G_regularized;
    // standard: X_new = X - R * V_new; nesterov: X_new = X - R * (G_regularized + alpha * V_new)
    const T r = static_cast<T>(step.r), alpha = static_cast<T>(alpha_), norm = static_cast<T>(norm_coefficient_);
    const T beta = step.t > 0 ? static_cast<T>(beta_) : T{1};
    const T *x = in[0]->data<T>(), *g = in[1]->data<T>(), *v = in[2]->data<T>();
    T *x_new = out[0]->data<T>(), *v_new = out[1]->data<T>();
    for (int64_t k = 0; k < in[0]->NumElements(); ++k) {
      const T g_reg = norm * x[k] + g[k];
      v_new[k] = alpha * v[k] + beta * g_reg;
      x_new[k] = x[k] - r * (nesterov_ ? g_reg + alpha * v_new[k] : v_new[k]);
    }
  }

 private:
  double alpha_ = 0, beta_ = 0, norm_coefficient_ = 0;
  bool nesterov_ = false;
};

// Inputs X, G, V, H; outputs X_new, V_new, H_new.
class Adam final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(float alpha, info.Attr<float>("alpha", 0.9f));
    ASSIGN_OR_RETURN(float beta, info.Attr<float>("beta", 0.999f));
    ASSIGN_OR_RETURN(float epsilon, info.Attr<float>("epsilon", 0.0f));
    ASSIGN_OR_RETURN(float norm, info.Attr<float>("norm_coefficient", 0.0f));
    ASSIGN_OR_RETURN(float norm_post, info.Attr<float>("norm_coefficient_post", 0.0f));
    alpha_ = alpha;
    beta_ = beta;
    epsilon_ = epsilon;
    norm_coefficient_ = norm;
    norm_coefficient_post_ = norm_post;
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override { return RunOptimizer(*this, ctx, 4); }

  template <typename T>
  void Update(const StepScalars& step, const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out) const {
    // G_regularized = norm_coefficient * X + G; V_new = alpha * V + (1 - alpha) * G_regularized;
    // H_new = beta * H + (1 - beta) * G_regularized^2; H_sqrt = Sqrt(H_new) + epsilon;
    // R_adjusted = T > 0 ? R * Sqrt(1 - beta^T) / (1 - alpha^T) : R;
    // X_final = (1 - norm_coefficient_post) * (X - R_adjusted * V_new / H_sqrt)
    const double t = static_cast<double>(step.t);
    const T r = static_cast<T>(step.t > 0 ? step.r * std::sqrt(1 - std::pow(beta_, t)) / (1 - std::pow(alpha_, t))
                                          : step.r);
    const T alpha = static_cast<T>(alpha_), beta = static_cast<T>(beta_), eps = static_cast<T>(epsilon_);
    const T norm = static_cast<T>(norm_coefficient_), keep = static_cast<T>(1 - norm_coefficient_post_);
    const T *x = in[0]->data<T>(), *g = in[1]->data<T>(), *v = in[2]->data<T>(), *h = in[3]->data<T>();
    T *x_new = out[0]->data<T>(), *v_new = out[1]->data<T>(), *h_new = out[2]->data<T>();
    for (int64_t k = 0; k < in[0]->NumElements(); ++k) {
      const T g_reg = norm * x[k] + g[k];
      v_new[k] = alpha * v[k] + (1 - alpha) * g_reg;
      h_new[k] = beta * h[k] + (1 - beta) * g_reg * g_reg;
      x_new[k] = keep * (x[k] - r * v_new[k] / (std::sqrt(h_new[k]) + eps));
    }
  }

 private:
  double alpha_ = 0.9, beta_ = 0.999, epsilon_ = 0, norm_coefficient_ = 0, norm_coefficient_post_ = 0;
};

REGISTER_KERNEL(kTraining, "Adagrad", 1, kLatest, kFloatTypes, Adagrad);
REGISTER_KERNEL(kTraining, "Momentum", 1, kLatest, kFloatTypes, Momentum);
REGISTER_KERNEL(kTraining, "Adam", 1, kLatest, kFloatTypes, Adam);

}  // namespace
}  // namespace onnxserve

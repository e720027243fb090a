// LinearAttention (opset 27): the recurrent attention of linear-attention LLMs (RetNet, GLA, DeltaNet, Gated
// DeltaNet), for prefill (T > 1) and decoding (T = 1). Each KV head carries a d_k x d_v state S through the
// tokens; per token, with q, k, v the head's slices and e = exp(decay):
//   linear       S = S + k v^T                     gated        S = diag(e) S + k v^T
//   delta        S = S + beta k (v - S^T k)^T       gated_delta  S' = diag(e) S;  S = S' + beta k (v - S'^T k)^T
// and every query head of the KV head's group reads o = scale * S^T q. The recurrence is run token by token,
// as the spec defines it: a chunked form would only pay off for long prefills on wide machines. Each
// (batch, KV head) is one task on the pool. float16/bfloat16 compute in float.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/core/run_limits.h"
#include "runtime/ops/blas.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

enum Input { kQuery = 0, kKey, kValue, kPastState, kDecay, kBeta };
enum Output { kOutput = 0, kPresentState };
enum class Rule { kLinear, kGated, kDelta, kGatedDelta };

bool IsGated(Rule r) { return r == Rule::kGated || r == Rule::kGatedDelta; }
bool IsDelta(Rule r) { return r == Rule::kDelta || r == Rule::kGatedDelta; }

absl::StatusOr<Rule> ParseRule(const std::string& name) {
  if (name == "linear") return Rule::kLinear;
  if (name == "gated") return Rule::kGated;
  if (name == "delta") return Rule::kDelta;
  if (name == "gated_delta") return Rule::kGatedDelta;
  return absl::InvalidArgumentError(absl::StrCat(
      "attribute update_rule: expected \"linear\", \"gated\", \"delta\" or \"gated_delta\", got \"", name, "\""));
}

// The sizes of one call, with the packed last axes split into heads.
struct Dims {
  int64_t batch = 0, tokens = 0, q_heads = 0, kv_heads = 0, d_k = 0, d_v = 0;
  int64_t decay_width = 0;  // per token and KV head: d_k (per key dimension) or 1 (per head)
  int64_t beta_heads = 0;   // per token: kv_heads, or 1 shared by all heads
};

absl::Status CheckFloat(const Tensor& t, const char* what) {
  if (t.dtype() == DataType::kFloat || IsHalfType(t.dtype())) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, " must be float, float16 or bfloat16, got ", t.DebugString()));
}

absl::Status CheckPacked(const Tensor& t, const char* what, const Dims& d, int64_t width) {
  RETURN_IF_ERROR(CheckFloat(t, what));
  if (t.rank() == 3 && t.dim(0) == d.batch && t.dim(1) == d.tokens && t.dim(2) == width) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, " must be [", d.batch, ", ", d.tokens, ", ", width,
                                                 "], got ", t.DebugString()));
}

class LinearAttention final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(q_heads_, info.Attr<int64_t>("q_num_heads"));
    ASSIGN_OR_RETURN(kv_heads_, info.Attr<int64_t>("kv_num_heads"));
    if (kv_heads_ <= 0 || q_heads_ <= 0 || q_heads_ % kv_heads_ != 0) {
      return absl::InvalidArgumentError(absl::StrCat("q_num_heads (", q_heads_,
                                                     ") must be a positive multiple of kv_num_heads (", kv_heads_,
                                                     ")"));
    }
    ASSIGN_OR_RETURN(scale_, info.Attr<float>("scale", 0.0f));
    ASSIGN_OR_RETURN(const std::string rule, info.Attr<std::string>("update_rule", "gated_delta"));
    ASSIGN_OR_RETURN(rule_, ParseRule(rule));
    if (IsGated(rule_) && !info.HasInput(kDecay)) {
      return absl::InvalidArgumentError(absl::StrCat("update_rule \"", rule, "\" needs the decay input"));
    }
    if (IsDelta(rule_) && !info.HasInput(kBeta)) {
      return absl::InvalidArgumentError(absl::StrCat("update_rule \"", rule, "\" needs the beta input"));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 3));
    ASSIGN_OR_RETURN(const Dims d, CheckShapes(ctx));
    const Tensor& query = *ctx.Input(kQuery);
    const Tensor* past = ctx.Input(kPastState);
    // Optional inputs left out, and decay/beta where the rule ignores them, are undefined: null data.
    auto in_float = [&](int i, bool used) {
      const Tensor* t = ctx.Input(i);
      return used && t != nullptr ? InPrecision<float>(*t) : Tensor();
    };
    const Tensor q = in_float(kQuery, true), k = in_float(kKey, true), v = in_float(kValue, true);
    const Tensor s0 = in_float(kPastState, true), decay = in_float(kDecay, IsGated(rule_)),
                 beta = in_float(kBeta, IsDelta(rule_));
    const float scale = scale_ != 0.0f ? scale_ : 1.0f / std::sqrt(static_cast<float>(d.d_k));

    const Shape out_shape = {d.batch, d.tokens, d.q_heads * d.d_v};
    const Shape state_shape = {d.batch, d.kv_heads, d.d_k, d.d_v};
    Tensor& y = ctx.Output(kOutput, query.dtype(), out_shape);
    const DataType state_type = past != nullptr ? past->dtype() : query.dtype();
    Tensor* present = ctx.OutputWanted(kPresentState) ? &ctx.Output(kPresentState, state_type, state_shape) : nullptr;
    Tensor out = FloatTarget(&y, out_shape);
    Tensor state = FloatTarget(present, state_shape);
    ctx.pool().ParallelFor(d.batch * d.kv_heads, 1, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        RunHead(d, task / d.kv_heads, task % d.kv_heads, scale, q.data<float>(), k.data<float>(),
                v.data<float>(), s0.data<float>(), decay.data<float>(), beta.data<float>(), out.data<float>(),
                state.data<float>());
      }
    });
    if (IsHalfType(y.dtype())) NarrowFromFloat(out, y);
    if (present != nullptr && IsHalfType(present->dtype())) NarrowFromFloat(state, *present);
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<Dims> CheckShapes(const KernelContext& ctx) const {
    const Tensor& query = *ctx.Input(kQuery);
    const Tensor& key = *ctx.Input(kKey);
    const Tensor& value = *ctx.Input(kValue);
    RETURN_IF_ERROR(CheckFloat(query, "query"));
    if (query.rank() != 3 || query.dim(2) % q_heads_ != 0) {
      return absl::InvalidArgumentError(absl::StrCat("query must be [B, T, q_num_heads * d_k] with q_num_heads ",
                                                     q_heads_, ", got ", query.DebugString()));
    }
    Dims d{.batch = query.dim(0), .tokens = query.dim(1), .q_heads = q_heads_, .kv_heads = kv_heads_,
           .d_k = query.dim(2) / q_heads_};
    RETURN_IF_ERROR(CheckPacked(key, "key", d, kv_heads_ * d.d_k));
    if (value.rank() != 3 || value.dim(2) % kv_heads_ != 0) {
      return absl::InvalidArgumentError(absl::StrCat("value must be [B, T, kv_num_heads * d_v] with kv_num_heads ",
                                                     kv_heads_, ", got ", value.DebugString()));
    }
    d.d_v = value.dim(2) / kv_heads_;
    RETURN_IF_ERROR(CheckPacked(value, "value", d, kv_heads_ * d.d_v));
    if (const Tensor* past = ctx.Input(kPastState)) {
      RETURN_IF_ERROR(CheckFloat(*past, "past_state"));
      if (past->shape() != Shape{d.batch, kv_heads_, d.d_k, d.d_v}) {
        return absl::InvalidArgumentError(absl::StrCat("past_state must be [", d.batch, ", ", kv_heads_, ", ",
                                                       d.d_k, ", ", d.d_v, "], got ", past->DebugString()));
      }
    }
    if (IsGated(rule_)) {
      const Tensor& decay = *ctx.Input(kDecay);
      d.decay_width = decay.rank() == 3 && decay.dim(2) == kv_heads_ ? 1 : d.d_k;
      RETURN_IF_ERROR(CheckPacked(decay, "decay", d, kv_heads_ * d.decay_width));
    }
    if (IsDelta(rule_)) {
      const Tensor& beta = *ctx.Input(kBeta);
      d.beta_heads = beta.rank() == 3 && beta.dim(2) == 1 ? 1 : kv_heads_;
      RETURN_IF_ERROR(CheckPacked(beta, "beta", d, d.beta_heads));
    }
    return d;
  }

  // Runs the recurrence of KV head `h` of batch entry `b` over every token, writing its query heads' outputs
  // and its final state.
  void RunHead(const Dims& d, int64_t b, int64_t h, float scale, const float* q, const float* k, const float* v,
               const float* past, const float* decay, const float* beta, float* out, float* present) const {
    const int64_t dk = d.d_k, dv = d.d_v, group = d.q_heads / d.kv_heads;
    float* s = present + (b * d.kv_heads + h) * dk * dv;
    if (past != nullptr) {
      std::copy_n(past + (b * d.kv_heads + h) * dk * dv, dk * dv, s);
    } else {
      std::fill_n(s, dk * dv, 0.0f);
    }
    std::vector<float> delta(dv);
    for (int64_t t = 0; t < d.tokens; ++t) {
      const int64_t token = b * d.tokens + t;
      const float* kt = k + (token * d.kv_heads + h) * dk;
      const float* vt = v + (token * d.kv_heads + h) * dv;
      if (IsGated(rule_)) {
        const float* g = decay + (token * d.kv_heads + h) * d.decay_width;
        for (int64_t i = 0; i < dk; ++i) {
          const float e = std::exp(g[d.decay_width == 1 ? 0 : i]);
          for (int64_t j = 0; j < dv; ++j) s[i * dv + j] *= e;
        }
      }
      // The row added to S along k: v, or beta (v - S^T k) for the delta rules.
      std::copy_n(vt, dv, delta.begin());
      if (IsDelta(rule_)) {
        const float bt = beta[token * d.beta_heads + (d.beta_heads == 1 ? 0 : h)];
        for (int64_t j = 0; j < dv; ++j) {
          float recalled = 0;
          for (int64_t i = 0; i < dk; ++i) recalled += s[i * dv + j] * kt[i];
          delta[j] = bt * (vt[j] - recalled);
        }
      }
      for (int64_t i = 0; i < dk; ++i) {
        for (int64_t j = 0; j < dv; ++j) s[i * dv + j] += kt[i] * delta[j];
      }
      for (int64_t qh = h * group; qh < (h + 1) * group; ++qh) {
        const float* qt = q + (token * d.q_heads + qh) * dk;
        float* o = out + (token * d.q_heads + qh) * dv;
        std::fill_n(o, dv, 0.0f);
        for (int64_t i = 0; i < dk; ++i) {
          for (int64_t j = 0; j < dv; ++j) o[j] += qt[i] * s[i * dv + j];
        }
        for (int64_t j = 0; j < dv; ++j) o[j] *= scale;
      }
      // A token's work is the state's size times its update, recall and query reads: with a wide state from
      // the request, a long prefill is minutes of it.
      StopIfRunEnded(WorkOf({dk, dv, group + 3}));
    }
  }

  // Where to compute a result in float: `dst` itself when it is float, else a float scratch tensor.
  static Tensor FloatTarget(Tensor* dst, const Shape& shape) {
    return dst != nullptr && dst->dtype() == DataType::kFloat ? *dst : Tensor(DataType::kFloat, shape);
  }

  int64_t q_heads_ = 0, kv_heads_ = 0;
  float scale_ = 0;
  Rule rule_ = Rule::kGatedDelta;
};

constexpr DataType kLinearAttentionTypes[] = {DataType::kFloat, DataType::kFloat16, DataType::kBFloat16};

}  // namespace

REGISTER_KERNEL(kOnnx, "LinearAttention", 27, kLatest, kLinearAttentionTypes, LinearAttention);

}  // namespace onnxserve

// FlexAttention (ai.onnx.preview, experimental): PyTorch's flex_attention as an op. Attention over rank-4
// [B, H, L, E] inputs whose scores and probabilities pass through optional subgraphs, so masks, biases and
// soft-caps are written as graphs instead of baked-in attributes:
//   scores = scale * Q K^T -> score_mod -> softmax (last axis) -> prob_mod -> Y = probs V
// The modifiers see the whole [B, Hq, L, S] tensor in the softmax precision (float, or double for double
// inputs). GEMMs run per (batch, query head) on the pool; a query head reads K/V head h / (Hq / Hkv).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/ops/blas.h"
#include "runtime/ops/common.h"
#include "runtime/ops/subgraph.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

template <typename P>
void SoftmaxRows(Tensor& x, ThreadPool& pool) {
  const int64_t cols = x.dim(x.rank() - 1);
  const int64_t rows = cols == 0 ? 0 : x.NumElements() / cols;
  ForEachRow(pool, rows, cols, [&](int64_t r) {
    P* row = x.data<P>() + r * cols;
    const P max = *std::max_element(row, row + cols);
    P sum = 0;
    for (int64_t j = 0; j < cols; ++j) sum += row[j] = std::exp(row[j] - max);
    for (int64_t j = 0; j < cols; ++j) row[j] /= sum;
  });
}

class FlexAttention final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    if (info.HasAttr("scale")) {
      ASSIGN_OR_RETURN(const float scale, info.Attr<float>("scale"));
      scale_ = scale;
    }
    if (info.HasAttr("softmax_precision")) {
      ASSIGN_OR_RETURN(const int64_t precision, info.Attr<int64_t>("softmax_precision"));
      ASSIGN_OR_RETURN(const DataType type, DataTypeFromOnnx(static_cast<int32_t>(precision)));
      if (type != DataType::kFloat && type != DataType::kDouble) {
        return absl::UnimplementedError(absl::StrCat("softmax_precision ", DataTypeName(type),
                                                     ": onnxserve computes FlexAttention in float or double"));
      }
      precision_ = type;
    }
    for (const auto& [attr, plan] : {std::pair{"score_mod", &score_mod_}, std::pair{"prob_mod", &prob_mod_}}) {
      *plan = info.Subgraph(attr);
      if (*plan == nullptr) continue;
      const ir::Graph& graph = (*plan)->graph();
      if (graph.inputs().size() != 1 || graph.outputs().size() != 1) {
        return absl::InvalidArgumentError(absl::StrCat("graph attribute ", attr, " must have one input and one ",
                                                       "output, has ", graph.inputs().size(), " and ",
                                                       graph.outputs().size()));
      }
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 3));
    const Tensor& q = *ctx.Input(0);
    const Tensor& k = *ctx.Input(1);
    const Tensor& v = *ctx.Input(2);
    RETURN_IF_ERROR(CheckShapes(q, k, v));
    const DataType precision = precision_.value_or(q.dtype() == DataType::kDouble ? DataType::kDouble
                                                                                  : DataType::kFloat);
    return precision == DataType::kDouble ? Attend<double>(ctx, q, k, v) : Attend<float>(ctx, q, k, v);
  }

 private:
  static absl::Status CheckShapes(const Tensor& q, const Tensor& k, const Tensor& v) {
    for (const Tensor* t : {&q, &k, &v}) {
      if (t->dtype() != q.dtype()) {
        return absl::InvalidArgumentError(absl::StrCat("Q, K and V must have one element type, got ",
                                                       q.DebugString(), ", ", k.DebugString(), ", ",
                                                       v.DebugString()));
      }
    }
    RETURN_IF_ERROR(DispatchFloating(q, "Q", [](auto) {}));
    if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4 || k.dim(0) != q.dim(0) || v.dim(0) != q.dim(0) ||
        k.dim(3) != q.dim(3) || v.dim(1) != k.dim(1) || v.dim(2) != k.dim(2) || k.dim(1) <= 0 ||
        q.dim(1) % k.dim(1) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Q, K and V must be [B, Hq, L, E], [B, Hkv, S, E] and [B, Hkv, S, Ev] with Hq a multiple of Hkv, got ",
          q.DebugString(), ", ", k.DebugString(), ", ", v.DebugString()));
    }
    return absl::OkStatus();
  }

  template <typename P>
  absl::Status Attend(KernelContext& ctx, const Tensor& q_in, const Tensor& k_in, const Tensor& v_in) const {
    const Tensor q = InPrecision<P>(q_in), k = InPrecision<P>(k_in), v = InPrecision<P>(v_in);
    const int64_t batch = q.dim(0), q_heads = q.dim(1), q_len = q.dim(2), e = q.dim(3);
    const int64_t kv_heads = k.dim(1), kv_len = k.dim(2), ev = v.dim(3), group = q_heads / kv_heads;
    const P scale = static_cast<P>(scale_.value_or(1.0 / std::sqrt(static_cast<double>(e))));
    auto kv_head = [&](int64_t task) { return task / q_heads * kv_heads + task % q_heads / group; };

    Tensor scores(kTypeOf<P>, {batch, q_heads, q_len, kv_len});
    ctx.pool().ParallelFor(batch * q_heads, 1, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        Gemm<P>(false, true, q_len, kv_len, e, scale, q.data<P>() + task * q_len * e, e,
                k.data<P>() + kv_head(task) * kv_len * e, e, P{0}, scores.data<P>() + task * q_len * kv_len,
                kv_len, nullptr);
      }
    });
    ASSIGN_OR_RETURN(scores, Modify(ctx, score_mod_, "score_mod", std::move(scores)));
    SoftmaxRows<P>(scores, ctx.pool());
    ASSIGN_OR_RETURN(const Tensor probs, Modify(ctx, prob_mod_, "prob_mod", std::move(scores)));

    Tensor y(kTypeOf<P>, {batch, q_heads, q_len, ev});
    ctx.pool().ParallelFor(batch * q_heads, 1, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        Gemm<P>(false, false, q_len, ev, kv_len, P{1}, probs.data<P>() + task * q_len * kv_len, kv_len,
                v.data<P>() + kv_head(task) * kv_len * ev, ev, P{0}, y.data<P>() + task * q_len * ev, ev, nullptr);
      }
    });
    Tensor& out = ctx.Output(0, q_in.dtype(), y.shape());
    DispatchFloating(out, "Y", [&](auto tag) {
      using T = decltype(tag);
      T* o = out.data<T>();
      const P* from = y.data<P>();
      for (int64_t i = 0; i < y.NumElements(); ++i) o[i] = FromCompute<T>(static_cast<ComputeType<T>>(from[i]));
    }).IgnoreError();  // Y has Q's type, checked floating-point
    return absl::OkStatus();
  }

  // x passed through the modifier `plan` (x itself without one), which must keep its shape and type.
  static absl::StatusOr<Tensor> Modify(const KernelContext& ctx, const ExecutionPlan* plan, const char* what,
                                       Tensor x) {
    if (plan == nullptr) return x;
    std::vector<NamedValue> feeds = OuterFeeds(ctx, *plan);
    const Value in(std::move(x));
    feeds.push_back({plan->graph().inputs()[0].name, &in});
    ASSIGN_OR_RETURN(std::vector<Value> out, plan->Run(feeds, ctx.pool(), ctx.limits()));
    const Tensor* y = out[0].tensor();
    if (y == nullptr || y->dtype() != in.tensor()->dtype() || y->shape() != in.tensor()->shape()) {
      return absl::InvalidArgumentError(absl::StrCat(what, " must return its input's type and shape ",
                                                     in.DebugString(), ", returned ", out[0].DebugString()));
    }
    return *y;
  }

  std::optional<float> scale_;
  std::optional<DataType> precision_;
  const ExecutionPlan* score_mod_ = nullptr;
  const ExecutionPlan* prob_mod_ = nullptr;
};

}  // namespace

REGISTER_KERNEL(kPreview, "FlexAttention", 1, kLatest, kFloatTypes, FlexAttention);

}  // namespace onnxserve

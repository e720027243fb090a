// Attention (scaled dot-product attention with GQA, masks, causal alignment, KV cache and softcap).
//
// Each (batch, query head) pair is one task on the intra-op pool: scores = scale * Q_h K_h^T (one GEMM),
// then softcap, bias (mask, causal frontier, padding), a row softmax and Y_h = P V_h (a second GEMM).
// float16/bfloat16 inputs compute in float, double in double.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/core/checked_size.h"
#include "runtime/ops/blas.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

enum Input { kQ = 0, kK, kV, kMask, kPastKey, kPastValue, kNonpadKvSeqlen };
enum Output { kY = 0, kPresentKey, kPresentValue, kQkOutput };

// The sizes of one call, after 3-D inputs are split into heads.
struct Dims {
  bool three_d = false;
  int64_t batch = 0, q_heads = 0, kv_heads = 0;
  int64_t q_len = 0, kv_len = 0, past_len = 0;
  int64_t head_size = 0, v_head_size = 0;
  int64_t total_len() const { return past_len + kv_len; }
};

// A [batch, heads, rows, cols] tensor seen through strides: 4-D inputs are [B, H, S, D], 3-D inputs are
// [B, S, H * D] (a head is a column block, so its rows are H * D apart). Columns are contiguous.
template <typename C>
struct HeadView {
  const C* data;
  int64_t batch_stride, head_stride, row_stride;
  const C* At(int64_t b, int64_t h) const { return data + b * batch_stride + h * head_stride; }
};

template <typename C>
HeadView<C> ViewHeads(const Tensor& t, bool three_d, int64_t heads, int64_t rows, int64_t cols) {
  if (three_d) return {t.data<C>(), rows * heads * cols, cols, heads * cols};
  return {t.data<C>(), heads * rows * cols, rows * cols, cols};
}

absl::StatusOr<Dims> ResolveDims(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* past_key,
                                 int64_t q_heads_attr, int64_t kv_heads_attr) {
  if (q.rank() != k.rank() || q.rank() != v.rank() || (q.rank() != 3 && q.rank() != 4)) {
    return absl::InvalidArgumentError(absl::StrCat("Q, K and V must all be 3-D or all 4-D, got ",
                                                   q.DebugString(), ", ", k.DebugString(), ", ",
                                                   v.DebugString()));
  }
  Dims d;
  d.three_d = q.rank() == 3;
  d.batch = q.dim(0);
  if (d.three_d) {
    if (q_heads_attr <= 0 || kv_heads_attr <= 0) {
      return absl::InvalidArgumentError("3-D Q, K and V need the q_num_heads and kv_num_heads attributes");
    }
    d.q_heads = q_heads_attr;
    d.kv_heads = kv_heads_attr;
    d.q_len = q.dim(1);
    d.kv_len = k.dim(1);
    if (q.dim(2) % d.q_heads != 0 || k.dim(2) % d.kv_heads != 0 || v.dim(2) % d.kv_heads != 0) {
      return absl::InvalidArgumentError(absl::StrCat("hidden sizes of Q ", q.dim(2), ", K ", k.dim(2), ", V ",
                                                     v.dim(2), " must divide by the head counts ", d.q_heads,
                                                     " and ", d.kv_heads));
    }
    d.head_size = q.dim(2) / d.q_heads;
    d.v_head_size = v.dim(2) / d.kv_heads;
  } else {
    d.q_heads = q.dim(1);
    d.kv_heads = k.dim(1);
    d.q_len = q.dim(2);
    d.kv_len = k.dim(2);
    d.head_size = q.dim(3);
    d.v_head_size = v.dim(3);
  }
  const int64_t k_head_size = d.three_d ? k.dim(2) / d.kv_heads : k.dim(3);
  if (k_head_size != d.head_size || k.dim(0) != d.batch || v.dim(0) != d.batch ||
      v.dim(d.three_d ? 1 : 2) != d.kv_len || (!d.three_d && v.dim(1) != d.kv_heads)) {
    return absl::InvalidArgumentError(
        absl::StrCat("K ", k.DebugString(), " and V ", v.DebugString(), " do not match Q ", q.DebugString()));
  }
  if (d.kv_heads <= 0 || d.q_heads % d.kv_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("q_num_heads ", d.q_heads, " must be a multiple of kv_num_heads ", d.kv_heads));
  }
  if (past_key != nullptr) {
    if (past_key->rank() != 4 || past_key->dim(0) != d.batch || past_key->dim(1) != d.kv_heads ||
        past_key->dim(3) != d.head_size) {
      return absl::InvalidArgumentError(absl::StrCat("past_key must be [", d.batch, ",", d.kv_heads,
                                                     ",past_len,", d.head_size, "], got ",
                                                     past_key->DebugString()));
    }
    d.past_len = past_key->dim(2);
  }
  return d;
}

// [B, H, past + S, cols]: the past cache followed by this step's rows (the present cache, in compute type).
template <typename C>
Tensor ConcatCache(const Tensor* past, const Tensor& x, const Dims& d, int64_t cols) {
  const int64_t past_len = past == nullptr ? 0 : past->dim(2);
  const int64_t total = past_len + d.kv_len;
  Tensor out(kTypeOf<C>, {d.batch, d.kv_heads, total, cols});
  const HeadView<C> xv = ViewHeads<C>(x, d.three_d, d.kv_heads, d.kv_len, cols);
  C* dst = out.data<C>();
  for (int64_t b = 0; b < d.batch; ++b) {
    for (int64_t h = 0; h < d.kv_heads; ++h) {
      if (past_len > 0) {
        const C* src = past->data<C>() + (b * d.kv_heads + h) * past_len * cols;
        dst = std::copy(src, src + past_len * cols, dst);
      }
      const C* rows = xv.At(b, h);
      for (int64_t s = 0; s < d.kv_len; ++s)
        dst = std::copy(rows + s * xv.row_stride, rows + s * xv.row_stride + cols, dst);
    }
  }
  return out;
}

// The attention mask as an additive bias in compute type: bool true -> 0, false -> -inf; numbers as is.
template <typename C>
Tensor MaskBias(const Tensor& mask) {
  Tensor bias(kTypeOf<C>, mask.shape());
  C* out = bias.data<C>();
  DispatchNumeric(mask.dtype(), [&](auto tag) {
    using M = decltype(tag);
    const M* in = mask.data<M>();
    for (int64_t i = 0; i < mask.NumElements(); ++i) {
      if constexpr (std::is_same_v<M, bool>) {
        out[i] = in[i] ? C{0} : -std::numeric_limits<C>::infinity();
      } else {
        out[i] = static_cast<C>(static_cast<double>(ToCompute(in[i])));
      }
    }
  });
  return bias;
}

class Attention final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(is_causal_, info.Attr<int64_t>("is_causal", 0));
    ASSIGN_OR_RETURN(q_heads_, info.Attr<int64_t>("q_num_heads", 0));
    ASSIGN_OR_RETURN(kv_heads_, info.Attr<int64_t>("kv_num_heads", 0));
    ASSIGN_OR_RETURN(qk_mode_, info.Attr<int64_t>("qk_matmul_output_mode", 0));
    ASSIGN_OR_RETURN(softcap_, info.Attr<float>("softcap", 0.0f));
    has_scale_ = info.HasAttr("scale");
    ASSIGN_OR_RETURN(scale_, info.Attr<float>("scale", 1.0f));
    if (qk_mode_ < 0 || qk_mode_ > 3) {
      return absl::InvalidArgumentError(absl::StrCat("qk_matmul_output_mode must be 0..3, got ", qk_mode_));
    }
    if (info.HasInput(kPastKey) != info.HasInput(kPastValue)) {
      return absl::InvalidArgumentError("past_key and past_value must be given together");
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 3));
    const Tensor* past_key = ctx.Input(kPastKey);
    ASSIGN_OR_RETURN(const Dims d, ResolveDims(*ctx.Input(kQ), *ctx.Input(kK), *ctx.Input(kV), past_key,
                                               q_heads_, kv_heads_));
    if (ctx.Input(kQ)->dtype() == DataType::kDouble) return Run<double>(ctx, d);
    return Run<float>(ctx, d);
  }

 private:
  // Everything one head's task reads, in compute type C.
  template <typename C>
  struct Plan {
    Dims d;
    HeadView<C> q, k, v;
    const C* mask = nullptr;             // additive bias, nullptr when no attn_mask
    std::vector<int64_t> mask_strides;   // over [B, Hq, Sq, mask_len]
    int64_t mask_len = 0;                // keys beyond it are masked out
    std::vector<int64_t> causal_offset;  // per batch: query i sees key j iff j <= i + offset
    std::vector<int64_t> nonpad;         // per batch: keys at or beyond are padding; empty when absent
    C scale;
    C* y;
    int64_t y_row_stride, y_head_stride, y_batch_stride;
    C* qk = nullptr;  // [B, Hq, Sq, T] when wanted
  };

  template <typename C>
  absl::Status Run(KernelContext& ctx, const Dims& d) const;

  template <typename C>
  void AttendHead(const Plan<C>& p, int64_t b, int64_t h, C* scores) const;

  template <typename C>
  void AddBias(const Plan<C>& p, int64_t b, int64_t h, C* scores) const;

  int64_t is_causal_ = 0, q_heads_ = 0, kv_heads_ = 0, qk_mode_ = 0;
  float softcap_ = 0.0f, scale_ = 1.0f;
  bool has_scale_ = false;
};

// Row-wise softmax over [rows, cols]; a row with no visible key (all -inf) becomes a zero row, not NaN.
template <typename C>
void SoftmaxRows(C* scores, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) {
    C* row = scores + i * cols;
    C max = -std::numeric_limits<C>::infinity();
    for (int64_t j = 0; j < cols; ++j) max = std::max(max, row[j]);
    if (max == -std::numeric_limits<C>::infinity()) {
      std::fill(row, row + cols, C{0});
      continue;
    }
    C sum = 0;
    for (int64_t j = 0; j < cols; ++j) {
      row[j] = std::exp(row[j] - max);
      sum += row[j];
    }
    const C inv = C{1} / sum;
    for (int64_t j = 0; j < cols; ++j) row[j] *= inv;
  }
}

template <typename C>
void Attention::AddBias(const Plan<C>& p, int64_t b, int64_t h, C* scores) const {
  const Dims& d = p.d;
  const int64_t total = d.total_len();
  constexpr C kMasked = -std::numeric_limits<C>::infinity();
  for (int64_t i = 0; i < d.q_len; ++i) {
    C* row = scores + i * total;
    // Keys at or beyond `visible` are masked: the causal frontier, padding, and a short attn_mask.
    int64_t visible = total;
    if (is_causal_) visible = std::min(visible, std::max<int64_t>(0, i + p.causal_offset[b] + 1));
    if (!p.nonpad.empty()) visible = std::min(visible, std::max<int64_t>(0, p.nonpad[b]));
    if (p.mask != nullptr) {
      visible = std::min(visible, p.mask_len);
      const C* m = p.mask + b * p.mask_strides[0] + h * p.mask_strides[1] + i * p.mask_strides[2];
      const int64_t step = p.mask_strides[3];
      // A -inf bias replaces the score, so a NaN or inf score at a masked key cannot poison the row.
      for (int64_t j = 0; j < visible; ++j) row[j] = m[j * step] == kMasked ? kMasked : row[j] + m[j * step];
    }
    std::fill(row + visible, row + total, kMasked);
  }
}

template <typename C>
void Attention::AttendHead(const Plan<C>& p, int64_t b, int64_t h, C* scores) const {
  const Dims& d = p.d;
  const int64_t total = d.total_len();
  const int64_t kv_head = h / (d.q_heads / d.kv_heads);  // GQA: consecutive query heads share a KV head
  Gemm<C>(false, true, d.q_len, total, d.head_size, p.scale, p.q.At(b, h), p.q.row_stride, p.k.At(b, kv_head),
          p.k.row_stride, C{0}, scores, total, nullptr);
  C* qk = p.qk == nullptr ? nullptr : p.qk + (b * d.q_heads + h) * d.q_len * total;
  const int64_t count = d.q_len * total;
  auto emit = [&](int64_t mode) {
    if (qk != nullptr && qk_mode_ == mode) std::copy(scores, scores + count, qk);
  };
  emit(0);
  if (softcap_ > 0) {
    const C cap = softcap_;
    for (int64_t i = 0; i < count; ++i) scores[i] = cap * std::tanh(scores[i] / cap);
  }
  emit(1);
  AddBias(p, b, h, scores);
  emit(2);
  SoftmaxRows(scores, d.q_len, total);
  emit(3);
  Gemm<C>(false, false, d.q_len, d.v_head_size, total, C{1}, scores, total, p.v.At(b, kv_head),
          p.v.row_stride, C{0}, p.y + b * p.y_batch_stride + h * p.y_head_stride, p.y_row_stride, nullptr);
}

// `t` in compute type C: float16/bfloat16 widen into a float copy; an omitted input stays undefined.
template <typename C>
absl::StatusOr<Tensor> InComputeType(const Tensor* t, const char* name) {
  if (t == nullptr) return Tensor();
  Tensor c = IsHalfType(t->dtype()) ? WidenToFloat(t) : *t;
  if (c.dtype() != kTypeOf<C>) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must have Q's floating-point type, got ", t->DebugString()));
  }
  return c;
}

// Sets output `index` to `value` (compute type), narrowing it when the output type is a half type.
void EmitOutput(KernelContext& ctx, int index, DataType type, const Tensor& value) {
  if (type == value.dtype()) {
    ctx.SetOutput(index, value);
    return;
  }
  NarrowFromFloat(value, ctx.Output(index, type, value.shape()));
}

template <typename C>
absl::Status Attention::Run(KernelContext& ctx, const Dims& d) const {
  const DataType out_type = ctx.Input(kQ)->dtype();
  ASSIGN_OR_RETURN(const Tensor q, InComputeType<C>(ctx.Input(kQ), "Q"));
  ASSIGN_OR_RETURN(const Tensor k, InComputeType<C>(ctx.Input(kK), "K"));
  ASSIGN_OR_RETURN(const Tensor v, InComputeType<C>(ctx.Input(kV), "V"));
  ASSIGN_OR_RETURN(const Tensor past_k, InComputeType<C>(ctx.Input(kPastKey), "past_key"));
  ASSIGN_OR_RETURN(const Tensor past_v, InComputeType<C>(ctx.Input(kPastValue), "past_value"));
  const bool has_past = past_k.defined();
  if (has_past && (past_v.rank() != 4 || past_v.dim(0) != d.batch || past_v.dim(1) != d.kv_heads ||
                   past_v.dim(2) != d.past_len || past_v.dim(3) != d.v_head_size)) {
    return absl::InvalidArgumentError(absl::StrCat("past_value must be [", d.batch, ",", d.kv_heads, ",",
                                                   d.past_len, ",", d.v_head_size, "], got ",
                                                   past_v.DebugString()));
  }
  const int64_t total = d.total_len();
  const bool scored = total != 0 && d.head_size != 0;  // else every row is masked or its dot products empty
  // A head's scores are q_len x total, two lengths from the request: bounded like a tensor before any is taken.
  if (scored) RETURN_IF_ERROR(CheckedByteSize(kTypeOf<C>, {d.q_len, total}).status());

  Plan<C> p;
  p.d = d;
  p.q = ViewHeads<C>(q, d.three_d, d.q_heads, d.q_len, d.head_size);
  // The present caches are [B, Hkv, total, D]; without past and without a present output, K and V are
  // read in place.
  Tensor present_k, present_v;
  if (has_past || ctx.OutputWanted(kPresentKey))
    present_k = ConcatCache<C>(has_past ? &past_k : nullptr, k, d, d.head_size);
  if (has_past || ctx.OutputWanted(kPresentValue))
    present_v = ConcatCache<C>(has_past ? &past_v : nullptr, v, d, d.v_head_size);
  p.k = present_k.defined() ? ViewHeads<C>(present_k, false, d.kv_heads, total, d.head_size)
                            : ViewHeads<C>(k, d.three_d, d.kv_heads, d.kv_len, d.head_size);
  p.v = present_v.defined() ? ViewHeads<C>(present_v, false, d.kv_heads, total, d.v_head_size)
                            : ViewHeads<C>(v, d.three_d, d.kv_heads, d.kv_len, d.v_head_size);

  Tensor mask_bias;
  if (const Tensor* mask = ctx.Input(kMask)) {
    const Shape target = {d.batch, d.q_heads, d.q_len, mask->rank() == 0 ? 1 : mask->shape().back()};
    bool broadcastable = mask->rank() >= 1 && mask->rank() <= 4 && target[3] <= total;
    for (int64_t i = 0; broadcastable && i < mask->rank(); ++i) {
      const int64_t dim = mask->dim(mask->rank() - 1 - i);
      broadcastable = dim == 1 || dim == target[3 - i];
    }
    if (!broadcastable) {
      return absl::InvalidArgumentError(absl::StrCat("attn_mask ", mask->DebugString(),
                                                     " must broadcast to [", d.batch, ",", d.q_heads, ",",
                                                     d.q_len, ",<=", total, "]"));
    }
    mask_bias = MaskBias<C>(*mask);
    p.mask = mask_bias.data<C>();
    p.mask_len = target[3];
    p.mask_strides = BroadcastStrides(mask->shape(), target);
  }
  if (const Tensor* nonpad = ctx.Input(kNonpadKvSeqlen)) {
    if (nonpad->NumElements() != d.batch) {
      return absl::InvalidArgumentError(absl::StrCat("nonpad_kv_seqlen must hold one length per batch (",
                                                     d.batch, "), got ", nonpad->DebugString()));
    }
    p.nonpad = Int64Values(*nonpad);
  }
  // Causal alignment is bottom-right: the past cache, or else the external cache's valid length, precedes Q.
  p.causal_offset.assign(d.batch, d.past_len);
  if (!has_past && !p.nonpad.empty()) {
    // A negative length masks every key whatever the offset; taken as 0, INT64_MIN cannot overflow here.
    for (int64_t b = 0; b < d.batch; ++b) p.causal_offset[b] = std::max<int64_t>(p.nonpad[b], 0) - d.q_len;
  }
  p.scale = has_scale_ ? C(scale_) : C{1} / std::sqrt(C(d.head_size));

  const Shape y_shape = d.three_d ? Shape{d.batch, d.q_len, d.q_heads * d.v_head_size}
                                  : Shape{d.batch, d.q_heads, d.q_len, d.v_head_size};
  Tensor y(kTypeOf<C>, y_shape);
  const HeadView<C> y_view = ViewHeads<C>(y, d.three_d, d.q_heads, d.q_len, d.v_head_size);
  p.y = y.data<C>();
  p.y_batch_stride = y_view.batch_stride;
  p.y_head_stride = y_view.head_stride;
  p.y_row_stride = y_view.row_stride;
  Tensor qk;
  if (ctx.OutputWanted(kQkOutput)) {
    qk = Tensor(kTypeOf<C>, {d.batch, d.q_heads, d.q_len, total});
    p.qk = qk.data<C>();
  }

  if (!scored) {
    // No key (or an empty dot product): every row is fully masked, so Y is zero; scores are zero too.
    std::fill(p.y, p.y + y.NumElements(), C{0});
    if (p.qk != nullptr) std::fill(p.qk, p.qk + qk.NumElements(), C{0});
  } else {
    ctx.pool().ParallelFor(d.batch * d.q_heads, 1, [&](int64_t begin, int64_t end) {
      Tensor scores(kTypeOf<C>, {d.q_len, total});  // one per thread, charged to the run's budget
      for (int64_t t = begin; t < end; ++t) AttendHead(p, t / d.q_heads, t % d.q_heads, scores.data<C>());
    });
  }

  EmitOutput(ctx, kY, out_type, y);
  if (ctx.OutputWanted(kPresentKey)) EmitOutput(ctx, kPresentKey, ctx.Input(kK)->dtype(), present_k);
  if (ctx.OutputWanted(kPresentValue)) EmitOutput(ctx, kPresentValue, ctx.Input(kV)->dtype(), present_v);
  if (qk.defined()) EmitOutput(ctx, kQkOutput, out_type, qk);
  return absl::OkStatus();
}

// Attention-23 introduces the op; -24 adds nonpad_kv_seqlen (external KV cache) and bottom-right causal
// alignment for it.
REGISTER_KERNEL(kOnnx, "Attention", 23, 23, kFloatTypes, Attention);
REGISTER_KERNEL(kOnnx, "Attention", 24, kLatest, kFloatTypes, Attention);

}  // namespace
}  // namespace onnxserve

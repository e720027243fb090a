// RotaryEmbedding (RoPE): rotates pairs of each head's first rotary_embedding_dim features by the angle of
// the token's position, read from the cos/sin caches. Pairs are (x[i], x[i + dim/2]) or, interleaved,
// (x[2i], x[2i + 1]); features past rotary_embedding_dim pass through.
#include <algorithm>

#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// Where token (b, s) of head h starts: 4-D X is [B, H, S, D], 3-D X is [B, S, H * D].
struct TokenLayout {
  int64_t batch, seq, heads, head_size;
  bool three_d;
  int64_t Offset(int64_t b, int64_t s, int64_t h) const {
    return three_d ? ((b * seq + s) * heads + h) * head_size : ((b * heads + h) * seq + s) * head_size;
  }
};

class RotaryEmbedding final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(interleaved_, info.Attr<int64_t>("interleaved", 0));
    ASSIGN_OR_RETURN(num_heads_, info.Attr<int64_t>("num_heads", 0));
    ASSIGN_OR_RETURN(rotary_dim_, info.Attr<int64_t>("rotary_embedding_dim", 0));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 3));
    const Tensor& x = *ctx.Input(0);
    ASSIGN_OR_RETURN(const TokenLayout layout, Layout(x));
    const int64_t rotary_dim = rotary_dim_ > 0 ? rotary_dim_ : layout.head_size;
    if (rotary_dim % 2 != 0 || rotary_dim > layout.head_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rotary_embedding_dim ", rotary_dim, " must be even and at most the head size ", layout.head_size));
    }
    const Tensor& cos = *ctx.Input(1);
    const Tensor& sin = *ctx.Input(2);
    const Tensor* position_ids = ctx.Input(3);
    if (cos.dtype() != x.dtype() || sin.dtype() != x.dtype()) {  // they are read as X's element type
      return absl::InvalidArgumentError(absl::StrCat("cos_cache ", cos.DebugString(), " and sin_cache ",
                                                     sin.DebugString(), " must have X's type, ",
                                                     DataTypeName(x.dtype())));
    }
    RETURN_IF_ERROR(CheckCaches(cos, sin, position_ids, layout, rotary_dim / 2));
    std::vector<int64_t> rows;  // the cache row of each token (b, s)
    if (position_ids != nullptr) {
      rows = Int64Values(*position_ids);
      for (int64_t& row : rows) {
        ASSIGN_OR_RETURN(row, ResolveIndex(row, cos.dim(0), false));
      }
    }
    Tensor& y = ctx.Output(0, x.dtype(), x.shape());
    bool supported = false;
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        supported = true;
        Rotate<T>(x, cos, sin, rows, layout, rotary_dim, y, ctx.pool());
      }
    });
    if (!supported)
      return absl::InvalidArgumentError(absl::StrCat("X must be a float tensor, got ", x.DebugString()));
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<TokenLayout> Layout(const Tensor& x) const {
    if (x.rank() == 4) return TokenLayout{x.dim(0), x.dim(2), x.dim(1), x.dim(3), false};
    if (x.rank() == 3 && num_heads_ > 0 && x.dim(2) % num_heads_ == 0) {
      return TokenLayout{x.dim(0), x.dim(1), num_heads_, x.dim(2) / num_heads_, true};
    }
    return absl::InvalidArgumentError(absl::StrCat("X must be [B,H,S,D], or [B,S,H*D] with num_heads set (",
                                                   num_heads_, "), got ", x.DebugString()));
  }

  static absl::Status CheckCaches(const Tensor& cos, const Tensor& sin, const Tensor* position_ids,
                                  const TokenLayout& layout, int64_t half) {
    const Shape expected = position_ids != nullptr ? Shape{cos.rank() == 2 ? cos.dim(0) : -1, half}
                                                   : Shape{layout.batch, layout.seq, half};
    if (cos.shape() != expected || sin.shape() != expected) {
      return absl::InvalidArgumentError(absl::StrCat("cos_cache ", cos.DebugString(), " and sin_cache ",
                                                     sin.DebugString(), " must be ",
                                                     ShapeToString(expected)));
    }
    if (position_ids != nullptr && position_ids->NumElements() != layout.batch * layout.seq) {
      return absl::InvalidArgumentError(absl::StrCat("position_ids must be [", layout.batch, ",", layout.seq,
                                                     "], got ", position_ids->DebugString()));
    }
    return absl::OkStatus();
  }

  template <typename T>
  void Rotate(const Tensor& x, const Tensor& cos, const Tensor& sin, const std::vector<int64_t>& rows,
              const TokenLayout& layout, int64_t rotary_dim, Tensor& y, ThreadPool& pool) const {
    const int64_t half = rotary_dim / 2;
    // Element i of a pair's first and second member: interleaved pairs are adjacent, else half apart.
    const int64_t first_step = interleaved_ ? 2 : 1;
    const int64_t second_offset = interleaved_ ? 1 : half;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    pool.ParallelFor(layout.batch * layout.seq, 1, [&](int64_t begin, int64_t end) {
      for (int64_t token = begin; token < end; ++token) {
        const int64_t b = token / layout.seq, s = token % layout.seq;
        const int64_t row = rows.empty() ? token : rows[token];
        const T* c = cos.data<T>() + row * half;
        const T* sn = sin.data<T>() + row * half;
        for (int64_t h = 0; h < layout.heads; ++h) {
          const int64_t offset = layout.Offset(b, s, h);
          const T* xi = in + offset;
          T* yi = out + offset;
          for (int64_t i = 0; i < half; ++i) {
            const int64_t a = i * first_step, bb = a + second_offset;
            const auto x1 = ToCompute(xi[a]), x2 = ToCompute(xi[bb]);
            const auto ci = ToCompute(c[i]), si = ToCompute(sn[i]);
            yi[a] = FromCompute<T>(ci * x1 - si * x2);
            yi[bb] = FromCompute<T>(si * x1 + ci * x2);
          }
          std::copy(xi + rotary_dim, xi + layout.head_size, yi + rotary_dim);
        }
      }
    });
  }

  int64_t interleaved_ = 0, num_heads_ = 0, rotary_dim_ = 0;
};

// RotaryEmbedding-23 is the only version.
REGISTER_KERNEL(kOnnx, "RotaryEmbedding", 23, kLatest, kFloatTypes, RotaryEmbedding);

}  // namespace
}  // namespace onnxserve

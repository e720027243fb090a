// FusedAttention (ai.onnxserve, made by runtime/passes/attention_fusion.cc): what exporters spell as
//   Y = MatMul(Softmax(MatMul(Q, K) * scale [+ mask], axis=-1), V)
// in one node. Q is [..., S, D]; K is [..., D, T], or [..., T, D] with k_transposed = 1 (the Transpose the
// pass absorbed); V is [..., T, Dv]; the optional additive mask broadcasts to [..., S, T]; batch dims of
// all four broadcast as MatMul's and Add's do, and a mask of many rows (keys) broadcasts one query row
// (key) up as Add would. Q, K and V must be at least 2-D (what attention is).
//
// Each task is one (batch, head) matrix and a block of query rows: the block's scores are computed into a
// scratch of kBlockRows x T that stays in cache, scaled in the GEMM, masked, normalized row by row and
// multiplied by V, so the [..., S, T] score tensor never exists. The products run on the packed GEMM, K and
// V packed once per task, where the CPU runs it (else on OpenBLAS). float16/bfloat16 compute in float.
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <vector>

#include "runtime/core/checked_size.h"
#include "runtime/math/packed_gemm.h"
#include "runtime/math/vector_kernels.h"
#include "runtime/ops/blas.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

enum Input { kQ = 0, kK, kV, kMask };

// Query rows per task: a block's scores (kBlockRows x T floats) stay in L2 for T up to a few thousand.
constexpr int64_t kBlockRows = 32;

// Where one operand's matrices sit: the element offset of matrix `batch_index` of the output's batch.
struct BatchWalk {
  std::vector<int64_t> strides;  // over the output's batch dims, in elements (0 along broadcast dims)
  int64_t Offset(const Shape& batch, int64_t index) const {
    int64_t offset = 0;
    for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
      offset += (index % batch[d]) * strides[d];
      index /= batch[d];
    }
    return offset;
  }
};

Shape BatchDims(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

// The strides of `shape`'s batch dims (matrices of `matrix` elements) broadcast into `batch`.
BatchWalk WalkOf(const Shape& shape, const Shape& batch, int64_t matrix) {
  BatchWalk walk{BroadcastStrides(BatchDims(shape), batch)};
  for (int64_t& s : walk.strides) s *= matrix;
  return walk;
}

// Everything a task reads, resolved once per call.
template <typename C>
struct Problem {
  int64_t s = 0, t = 0, d = 0, dv = 0;
  Shape batch;
  const C *q = nullptr, *k = nullptr, *v = nullptr, *mask = nullptr;
  BatchWalk q_walk, k_walk, v_walk, mask_walk;
  int64_t mask_row_stride = 0;  // 0 when the mask repeats one row
  bool mask_steps = false;      // whether the mask varies along T
  bool k_transposed = false;
  C scale = 1;
  C* y = nullptr;
};

// Softmax of each of `rows` rows of n scores, in place.
void SoftmaxRows(float* scores, int64_t rows, int64_t n) {
  const vec::VectorKernels& k = vec::Kernels();
  for (int64_t i = 0; i < rows; ++i) {
    float* row = scores + i * n;
    const float sum = k.exp_shifted_sum(row, row, n, k.max(row, n));
    const float inv = 1.0f / sum;
    k.binary(vec::BinaryOp::kMul, row, true, &inv, false, row, n);
  }
}

void SoftmaxRows(double* scores, int64_t rows, int64_t n) {
  for (int64_t i = 0; i < rows; ++i) {
    double* row = scores + i * n;
    const double max = *std::max_element(row, row + n);
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += row[j] = std::exp(row[j] - max);
    for (int64_t j = 0; j < n; ++j) row[j] /= sum;
  }
}

void AddRow(const float* mask, bool steps, float* row, int64_t n) {
  vec::Kernels().binary(vec::BinaryOp::kAdd, row, true, mask, steps, row, n);
}

void AddRow(const double* mask, bool steps, double* row, int64_t n) {
  for (int64_t j = 0; j < n; ++j) row[j] += mask[steps ? j : 0];
}

// K (scaled) and V of one output matrix packed for the packed GEMM, when the CPU runs it (float only): a
// task packs them once for all its query blocks.
template <typename C>
struct PackedHead {
  std::optional<PackedColumns> k, v;
  PackedHead(const Problem<C>& p, const C* k_data, const C* v_data) {
    if constexpr (std::is_same_v<C, float>) {
      if (!PackedGemmSupported() || p.d == 0) return;  // an empty depth: OpenBLAS's path zeroes the scores
      k.emplace(k_data, p.d, p.t, p.k_transposed ? p.d : p.t, p.k_transposed, p.scale);
      v.emplace(v_data, p.t, p.dv, p.dv, false, 1.0f);
    }
  }
};

// Query rows [row, row + rows) of output matrix `b`, with `scores` a scratch of rows x T.
template <typename C>
void AttendBlock(const Problem<C>& p, int64_t b, const PackedHead<C>& packed, int64_t row, int64_t rows,
                 C* scores) {
  const C* q = p.q + p.q_walk.Offset(p.batch, b) + row * p.d;
  const C* mask = p.mask == nullptr ? nullptr : p.mask + p.mask_walk.Offset(p.batch, b) + row * p.mask_row_stride;
  C* y = p.y + (b * p.s + row) * p.dv;
  if constexpr (std::is_same_v<C, float>) {
    if (packed.k) {
      GemmEpilogue epilogue;
      if (mask != nullptr && p.mask_steps) {  // the mask joins the scores as they leave the registers
        epilogue.z = mask;
        epilogue.ldz = p.mask_row_stride;
        mask = nullptr;
      }
      PackedGemm(q, rows, p.d, false, *packed.k, scores, p.t, epilogue, nullptr);
    }
  }
  if (!packed.k) {
    const C* k = p.k + p.k_walk.Offset(p.batch, b);
    Gemm<C>(false, p.k_transposed, rows, p.t, p.d, p.scale, q, p.d, k, p.k_transposed ? p.d : p.t, C{0}, scores,
            p.t, nullptr);
  }
  if (mask != nullptr) {
    for (int64_t i = 0; i < rows; ++i) AddRow(mask + i * p.mask_row_stride, p.mask_steps, scores + i * p.t, p.t);
  }
  SoftmaxRows(scores, rows, p.t);
  if constexpr (std::is_same_v<C, float>) {
    if (packed.v) return PackedGemm(scores, rows, p.t, false, *packed.v, y, p.dv, {}, nullptr);
  }
  Gemm<C>(false, false, rows, p.dv, p.t, C{1}, scores, p.t, p.v + p.v_walk.Offset(p.batch, b), p.dv, C{0}, y, p.dv,
          nullptr);
}

// Query blocks [first, last) of output matrix `b`.
template <typename C>
void AttendBlocks(const Problem<C>& p, int64_t b, int64_t first, int64_t last, C* scores) {
  const PackedHead<C> packed(p, p.k + p.k_walk.Offset(p.batch, b), p.v + p.v_walk.Offset(p.batch, b));
  for (int64_t block = first; block < last; ++block) {
    const int64_t row = block * kBlockRows;
    AttendBlock(p, b, packed, row, std::min(kBlockRows, p.s - row), scores);
  }
}

// `t` with its dim `axis_from_end` (of size 1) repeated `count` times.
template <typename C>
absl::StatusOr<Tensor> Repeated(const Tensor& t, int64_t axis_from_end, int64_t count) {
  Shape shape = t.shape();
  shape[shape.size() - axis_from_end] = count;
  ASSIGN_OR_RETURN(Tensor out, Tensor::Create(kTypeOf<C>, shape));
  const std::array<std::vector<int64_t>, 1> strides = {BroadcastStrides(t.shape(), shape)};
  const C* in = t.data<C>();
  C* o = out.template data<C>();
  ForEachBroadcast(shape, strides, [&](int64_t i, const std::array<int64_t, 1>& at) { o[i] = in[at[0]]; });
  return out;
}

absl::Status ShapeError(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, bool k_transposed) {
  return absl::InvalidArgumentError(absl::StrCat(
      "FusedAttention: Q ", q.DebugString(), ", K ", k.DebugString(), k_transposed ? " (transposed)" : "", ", V ",
      v.DebugString(), mask != nullptr ? absl::StrCat(", mask ", mask->DebugString()) : "",
      " do not make [..., S, D] x [..., D, T] -> softmax (+ mask [..., 1|S, 1|T]) x [..., T, Dv]"));
}

class FusedAttention final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(scale_, info.Attr<float>("scale", 1.0f));
    ASSIGN_OR_RETURN(const int64_t k_transposed, info.Attr<int64_t>("k_transposed", 0));
    k_transposed_ = k_transposed != 0;
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 3));
    const DataType type = ctx.Input(kQ)->dtype();
    for (int i : {kK, kV, kMask}) {
      if (ctx.Input(i) != nullptr && ctx.Input(i)->dtype() != type) {
        return absl::InvalidArgumentError(absl::StrCat("FusedAttention: input ", i, " is ",
                                                       ctx.Input(i)->DebugString(), ", Q is ",
                                                       ctx.Input(kQ)->DebugString()));
      }
    }
    if (type == DataType::kDouble) return Run<double>(ctx);
    if (type != DataType::kFloat && !IsHalfType(type)) {
      return absl::InvalidArgumentError(absl::StrCat("FusedAttention: Q must be floating-point, got ",
                                                     ctx.Input(kQ)->DebugString()));
    }
    return Run<float>(ctx);
  }

 private:
  template <typename C>
  absl::Status Run(KernelContext& ctx) const;

  float scale_ = 1.0f;
  bool k_transposed_ = false;
};

template <typename C>
absl::Status FusedAttention::Run(KernelContext& ctx) const {
  const DataType out_type = ctx.Input(kQ)->dtype();
  Tensor q = InPrecision<C>(*ctx.Input(kQ));
  Tensor k = InPrecision<C>(*ctx.Input(kK));
  const Tensor v = InPrecision<C>(*ctx.Input(kV));
  const Tensor mask = ctx.Input(kMask) != nullptr ? InPrecision<C>(*ctx.Input(kMask)) : Tensor();
  if (q.rank() < 2 || k.rank() < 2 || v.rank() < 2) {
    return ShapeError(*ctx.Input(kQ), *ctx.Input(kK), *ctx.Input(kV), ctx.Input(kMask), k_transposed_);
  }
  const int64_t k_keys_axis = k_transposed_ ? 2 : 1;  // counted from the end
  Problem<C> p;
  p.s = q.dim(q.rank() - 2);
  p.d = q.dim(q.rank() - 1);
  p.t = k.dim(k.rank() - k_keys_axis);
  p.dv = v.dim(v.rank() - 1);
  // A mask of rank < 2 is a row (or a scalar) that Add broadcasts over the scores.
  Shape mask_shape(std::max<int64_t>(0, 2 - mask.rank()), 1);
  if (mask.defined()) mask_shape.insert(mask_shape.end(), mask.shape().begin(), mask.shape().end());
  const int64_t mask_rows = mask_shape[mask_shape.size() - 2], mask_cols = mask_shape.back();
  // A mask wider than the scores broadcasts them up: one query row (or one key) stands for many.
  if (mask.defined() && p.s == 1 && mask_rows > 1) {
    ASSIGN_OR_RETURN(q, Repeated<C>(q, 2, mask_rows));
    p.s = mask_rows;
  }
  if (mask.defined() && p.t == 1 && mask_cols > 1) {
    ASSIGN_OR_RETURN(k, Repeated<C>(k, k_keys_axis, mask_cols));
    p.t = mask_cols;
  }
  const int64_t k_depth = k.dim(k.rank() - (k_transposed_ ? 1 : 2));
  bool fits = k_depth == p.d && v.dim(v.rank() - 2) == p.t;
  absl::StatusOr<Shape> batch = BroadcastShapes(BatchDims(q.shape()), BatchDims(k.shape()));
  if (batch.ok()) batch = BroadcastShapes(*batch, BatchDims(v.shape()));
  if (mask.defined()) {
    fits = fits && (mask_rows == 1 || mask_rows == p.s) && (mask_cols == 1 || mask_cols == p.t);
    if (batch.ok()) batch = BroadcastShapes(*batch, BatchDims(mask_shape));
    if (batch.ok()) p.mask_walk = WalkOf(mask_shape, *batch, mask_rows * mask_cols);
    p.mask_row_stride = mask_rows == 1 ? 0 : mask_cols;
    p.mask_steps = mask_cols != 1;
    p.mask = mask.data<C>();
  }
  if (!fits || !batch.ok()) {
    return ShapeError(*ctx.Input(kQ), *ctx.Input(kK), *ctx.Input(kV), ctx.Input(kMask), k_transposed_);
  }
  p.batch = *std::move(batch);
  p.q_walk = WalkOf(q.shape(), p.batch, p.s * p.d);
  p.k_walk = WalkOf(k.shape(), p.batch, p.d * p.t);
  p.v_walk = WalkOf(v.shape(), p.batch, p.t * p.dv);
  p.q = q.data<C>();
  p.k = k.data<C>();
  p.v = v.data<C>();
  p.scale = static_cast<C>(scale_);
  p.k_transposed = k_transposed_;

  Shape y_shape = p.batch;
  y_shape.insert(y_shape.end(), {p.s, p.dv});
  ASSIGN_OR_RETURN(Tensor y, Tensor::Create(kTypeOf<C>, y_shape));
  p.y = y.template data<C>();
  const int64_t matrices = NumElements(p.batch);
  const int64_t blocks = (p.s + kBlockRows - 1) / kBlockRows;
  if (p.t == 0) {
    std::fill(p.y, p.y + y.NumElements(), C{0});  // softmax over no key, times no row of V
  } else if (matrices > 0 && blocks > 0 && p.dv > 0) {
    // Each task takes a run of one matrix's blocks, packing K and V once for them; a matrix splits only
    // as far as needed to give every thread two tasks.
    const int64_t threads = std::max(1, ctx.pool().num_threads());
    const int64_t groups = std::clamp<int64_t>((2 * threads + matrices - 1) / matrices, 1, blocks);
    const int64_t per_group = (blocks + groups - 1) / groups;
    ctx.pool().ParallelFor(matrices * groups, 1, [&](int64_t begin, int64_t end) {
      std::vector<C> scores(static_cast<size_t>(std::min(kBlockRows, p.s) * p.t));
      for (int64_t task = begin; task < end; ++task) {
        const int64_t first = (task % groups) * per_group;
        AttendBlocks(p, task / groups, first, std::min(blocks, first + per_group), scores.data());
      }
    });
  }
  if (out_type == y.dtype()) {
    ctx.SetOutput(0, std::move(y));
  } else {
    NarrowFromFloat(y, ctx.Output(0, out_type, y.shape()));
  }
  return absl::OkStatus();
}

REGISTER_KERNEL(kInternal, "FusedAttention", 1, kLatest, kFloatTypes, FusedAttention);

}  // namespace
}  // namespace onnxserve

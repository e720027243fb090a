// FusedAttention (ai.onnxserve, made by runtime/passes/attention_fusion.cc): what exporters spell as
//   Y = MatMul(Softmax(MatMul(Q, K) * scale [+ mask], axis=-1), V)
// in one node. Q is [..., S, D], K [..., D, T], V [..., T, Dv], each read through the Transpose the pass
// absorbed (q_perm, k_perm, v_perm), so that exporters' head splits and K^T cost no copy; Y is written
// through y_perm (the head merge); the optional additive mask broadcasts to [..., S, T]; batch dims of
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

// An input as the fused graph read it, through the Transpose the pass absorbed (perm empty: as stored): its
// dims and its strides in elements.
template <typename C>
struct View {
  const C* data = nullptr;
  Shape dims;
  std::vector<int64_t> strides;
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  int64_t DimFromEnd(int64_t i) const { return dims[dims.size() - i]; }
  int64_t StrideFromEnd(int64_t i) const { return strides[strides.size() - i]; }
};

bool IsPermutation(const std::vector<int64_t>& perm, int64_t rank) {
  if (static_cast<int64_t>(perm.size()) != rank) return false;
  std::vector<bool> seen(perm.size(), false);
  for (int64_t axis : perm) {
    if (axis < 0 || axis >= rank || seen[axis]) return false;
    seen[axis] = true;
  }
  return true;
}

// `t` transposed by `perm`, or nullopt when perm is not a permutation of t's dims.
template <typename C>
std::optional<View<C>> ViewOf(const Tensor& t, const std::vector<int64_t>& perm) {
  View<C> v{t.data<C>(), t.shape(), StridesOf(t.shape())};
  if (perm.empty()) return v;
  if (!IsPermutation(perm, t.rank())) return std::nullopt;
  const std::vector<int64_t> stored = v.strides;
  for (size_t i = 0; i < perm.size(); ++i) {
    v.dims[i] = t.dim(perm[i]);
    v.strides[i] = stored[perm[i]];
  }
  return v;
}

// The row stride of a view's [rows, cols] matrices as BLAS wants it (at least cols): a single row's stride
// is never used, so any value will do.
template <typename C>
int64_t LeadingStride(const View<C>& v, int64_t row_axis_from_end, int64_t cols) {
  const int64_t rows = v.DimFromEnd(row_axis_from_end);
  return rows <= 1 ? std::max<int64_t>(cols, 1) : v.StrideFromEnd(row_axis_from_end);
}

// Where one operand's matrices sit: the element offset of matrix `index` of the output's batch.
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

// The view's batch dims broadcast into `batch` (right-aligned; size-1 dims repeat).
template <typename C>
BatchWalk WalkOf(const View<C>& v, const Shape& batch) {
  BatchWalk walk{std::vector<int64_t>(batch.size(), 0)};
  const int64_t own = v.rank() - 2, offset = static_cast<int64_t>(batch.size()) - own;
  for (int64_t i = 0; i < own; ++i) walk.strides[offset + i] = v.dims[i] == 1 ? 0 : v.strides[i];
  return walk;
}

// Everything a task reads, resolved once per call.
template <typename C>
struct Problem {
  int64_t s = 0, t = 0, d = 0, dv = 0;
  Shape batch;
  const C *q = nullptr, *k = nullptr, *v = nullptr, *mask = nullptr;
  int64_t ldq = 0, ldk = 0, ldv = 0, ldy = 0;  // row strides of the matrices as stored
  BatchWalk q_walk, k_walk, v_walk, y_walk, mask_walk;
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
      k.emplace(k_data, p.d, p.t, p.ldk, p.k_transposed, p.scale);
      v.emplace(v_data, p.t, p.dv, p.ldv, false, 1.0f);
    }
  }
};

// Query rows [row, row + rows) of output matrix `b`, with `scores` a scratch of rows x T.
template <typename C>
void AttendBlock(const Problem<C>& p, int64_t b, const PackedHead<C>& packed, int64_t row, int64_t rows,
                 C* scores) {
  const C* q = p.q + p.q_walk.Offset(p.batch, b) + row * p.ldq;
  const C* mask = p.mask == nullptr ? nullptr : p.mask + p.mask_walk.Offset(p.batch, b) + row * p.mask_row_stride;
  C* y = p.y + p.y_walk.Offset(p.batch, b) + row * p.ldy;
  if constexpr (std::is_same_v<C, float>) {
    if (packed.k) {
      GemmEpilogue epilogue;
      if (mask != nullptr && p.mask_steps) {  // the mask joins the scores as they leave the registers
        epilogue.z = mask;
        epilogue.ldz = p.mask_row_stride;
        mask = nullptr;
      }
      PackedGemm(q, rows, p.ldq, false, *packed.k, scores, p.t, epilogue, nullptr);
    }
  }
  if (!packed.k) {
    const C* k = p.k + p.k_walk.Offset(p.batch, b);
    Gemm<C>(false, p.k_transposed, rows, p.t, p.d, p.scale, q, p.ldq, k, p.ldk, C{0}, scores, p.t, nullptr);
  }
  if (mask != nullptr) {
    for (int64_t i = 0; i < rows; ++i) AddRow(mask + i * p.mask_row_stride, p.mask_steps, scores + i * p.t, p.t);
  }
  SoftmaxRows(scores, rows, p.t);
  if constexpr (std::is_same_v<C, float>) {
    if (packed.v) return PackedGemm(scores, rows, p.t, false, *packed.v, y, p.ldy, {}, nullptr);
  }
  Gemm<C>(false, false, rows, p.dv, p.t, C{1}, scores, p.t, p.v + p.v_walk.Offset(p.batch, b), p.ldv, C{0}, y, p.ldy,
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

// A contiguous copy of `v` broadcast to `dims` (a size-1 dim repeated), kept alive in `storage`.
template <typename C>
absl::StatusOr<View<C>> Materialized(const View<C>& v, const Shape& dims, Tensor& storage) {
  ASSIGN_OR_RETURN(storage, Tensor::Create(kTypeOf<C>, dims));
  std::array<std::vector<int64_t>, 1> strides = {v.strides};
  for (size_t i = 0; i < dims.size(); ++i) {
    if (v.dims[i] != dims[i]) strides[0][i] = 0;
  }
  C* out = storage.template data<C>();
  ForEachBroadcast(dims, strides, [&](int64_t i, const std::array<int64_t, 1>& at) { out[i] = v.data[at[0]]; });
  return View<C>{out, dims, StridesOf(dims)};
}

absl::Status ShapeError(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask) {
  return absl::InvalidArgumentError(absl::StrCat(
      "FusedAttention: Q ", q.DebugString(), ", K ", k.DebugString(), ", V ", v.DebugString(),
      mask != nullptr ? absl::StrCat(", mask ", mask->DebugString()) : "",
      " (through their perms) do not make [..., S, D] x [..., D, T] -> softmax (+ mask [..., 1|S, 1|T]) x "
      "[..., T, Dv] with D and Dv contiguous"));
}

// The unfused graph materializes the [..., S, T] scores, so the tensor limits refuse a model whose scores
// are too large; fused, only a block of them exists, but a request must fail the same way (and the block's
// scratch, kBlockRows x T, is then bounded by the limits too).
absl::Status CheckScoresFitTheLimits(DataType type, const Shape& batch, int64_t s, int64_t t) {
  Shape scores = batch;
  scores.insert(scores.end(), {s, t});
  absl::StatusOr<int64_t> bytes = CheckedByteSize(type, scores);
  if (!bytes.ok()) return absl::Status(bytes.status().code(), absl::StrCat("FusedAttention scores: ", bytes.status().message()));
  return absl::OkStatus();
}

class FusedAttention final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(scale_, info.Attr<float>("scale", 1.0f));
    for (int i = 0; i < 4; ++i) {
      ASSIGN_OR_RETURN(perms_[i], info.Attr<std::vector<int64_t>>(kPermNames[i], {}));
    }
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
  // q_perm, k_perm, v_perm: the Transposes of Q, K, V that the pass absorbed; y_perm: the Transpose of Y.
  static constexpr const char* kPermNames[4] = {"q_perm", "k_perm", "v_perm", "y_perm"};
  std::array<std::vector<int64_t>, 4> perms_;
};

template <typename C>
absl::Status FusedAttention::Run(KernelContext& ctx) const {
  const DataType out_type = ctx.Input(kQ)->dtype();
  const Tensor q_in = InPrecision<C>(*ctx.Input(kQ));
  const Tensor k_in = InPrecision<C>(*ctx.Input(kK));
  const Tensor v_in = InPrecision<C>(*ctx.Input(kV));
  const Tensor mask = ctx.Input(kMask) != nullptr ? InPrecision<C>(*ctx.Input(kMask)) : Tensor();
  auto shape_error = [&] { return ShapeError(*ctx.Input(kQ), *ctx.Input(kK), *ctx.Input(kV), ctx.Input(kMask)); };
  std::optional<View<C>> q = ViewOf<C>(q_in, perms_[0]), k = ViewOf<C>(k_in, perms_[1]), v = ViewOf<C>(v_in, perms_[2]);
  if (!q || !k || !v || q->rank() < 2 || k->rank() < 2 || v->rank() < 2) return shape_error();
  Problem<C> p;
  p.s = q->DimFromEnd(2);
  p.d = q->DimFromEnd(1);
  p.t = k->DimFromEnd(1);
  p.dv = v->DimFromEnd(1);
  // A mask of rank < 2 is a row (or a scalar) that Add broadcasts over the scores.
  Shape mask_shape(std::max<int64_t>(0, 2 - mask.rank()), 1);
  if (mask.defined()) mask_shape.insert(mask_shape.end(), mask.shape().begin(), mask.shape().end());
  const int64_t mask_rows = mask_shape[mask_shape.size() - 2], mask_cols = mask_shape.back();
  // A mask wider than the scores broadcasts them up: one query row (or one key) stands for many.
  Tensor q_rows, k_cols;
  if (mask.defined() && p.s == 1 && mask_rows > 1) {
    Shape dims = q->dims;
    dims[dims.size() - 2] = p.s = mask_rows;
    ASSIGN_OR_RETURN(q, Materialized(*q, dims, q_rows));
  }
  if (mask.defined() && p.t == 1 && mask_cols > 1) {
    Shape dims = k->dims;
    dims.back() = p.t = mask_cols;
    ASSIGN_OR_RETURN(k, Materialized(*k, dims, k_cols));
  }
  // D and Dv must be contiguous in Q and V; in K either T (K as [..., D, T]) or D (K^T stored). A dim of
  // one element is contiguous wherever it sits.
  const bool k_keys_contiguous = p.t <= 1 || k->StrideFromEnd(1) == 1;
  p.k_transposed = !k_keys_contiguous && (p.d <= 1 || k->StrideFromEnd(2) == 1);
  const bool fits = k->DimFromEnd(2) == p.d && v->DimFromEnd(2) == p.t && (p.d <= 1 || q->StrideFromEnd(1) == 1) &&
                    (p.dv <= 1 || v->StrideFromEnd(1) == 1) && (k_keys_contiguous || p.k_transposed);
  if (!fits) return shape_error();
  p.ldq = LeadingStride(*q, 2, p.d);
  p.ldk = p.k_transposed ? LeadingStride(*k, 1, p.d) : LeadingStride(*k, 2, p.t);
  p.ldv = LeadingStride(*v, 2, p.dv);
  absl::StatusOr<Shape> batch = BroadcastShapes(BatchDims(q->dims), BatchDims(k->dims));
  if (batch.ok()) batch = BroadcastShapes(*batch, BatchDims(v->dims));
  bool mask_fits = true;
  if (mask.defined()) {
    mask_fits = (mask_rows == 1 || mask_rows == p.s) && (mask_cols == 1 || mask_cols == p.t);
    if (batch.ok()) batch = BroadcastShapes(*batch, BatchDims(mask_shape));
    if (batch.ok()) {
      p.mask_walk = WalkOf(View<C>{nullptr, mask_shape, StridesOf(mask_shape)}, *batch);
    }
    p.mask_row_stride = mask_rows == 1 ? 0 : mask_cols;
    p.mask_steps = mask_cols != 1;
    p.mask = mask.data<C>();
  }
  if (!mask_fits || !batch.ok()) return shape_error();
  p.batch = *std::move(batch);
  RETURN_IF_ERROR(CheckScoresFitTheLimits(out_type, p.batch, p.s, p.t));
  p.q_walk = WalkOf(*q, p.batch);
  p.k_walk = WalkOf(*k, p.batch);
  p.v_walk = WalkOf(*v, p.batch);
  p.q = q->data;
  p.k = k->data;
  p.v = v->data;
  p.scale = static_cast<C>(scale_);

  Shape y_dims = p.batch;  // Y as the graph's last MatMul computed it
  y_dims.insert(y_dims.end(), {p.s, p.dv});
  const std::vector<int64_t>& y_perm = perms_[3];
  Shape y_shape = y_dims;  // as stored: through y_perm
  std::vector<int64_t> y_strides = StridesOf(y_dims);
  if (!y_perm.empty()) {
    if (!IsPermutation(y_perm, static_cast<int64_t>(y_dims.size()))) return shape_error();
    for (size_t i = 0; i < y_perm.size(); ++i) y_shape[i] = y_dims[y_perm[i]];
    const std::vector<int64_t> stored_strides = StridesOf(y_shape);
    for (size_t i = 0; i < y_perm.size(); ++i) y_strides[y_perm[i]] = stored_strides[i];
    if (p.dv > 1 && y_strides.back() != 1) return shape_error();
  }
  ASSIGN_OR_RETURN(Tensor y, Tensor::Create(kTypeOf<C>, y_shape));
  const View<C> y_view{nullptr, y_dims, y_strides};
  p.y = y.template data<C>();
  p.y_walk = WalkOf(y_view, p.batch);
  p.ldy = LeadingStride(y_view, 2, p.dv);
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

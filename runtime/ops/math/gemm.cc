// MatMul and Gemm over OpenBLAS (float, double; float16/bfloat16 through float) or a plain loop (integers).
// A constant 2-D float weight (B) is packed at load for PackedGemm where the CPU has its kernels.
// FusedGemm (domain ai.onnxserve, written by the graph optimizer: MatMul + Add of a bias, Gemm or MatMul
// followed by an activation) is Gemm with an `activation` (runtime/ops/fused_activation.h), and, without
// transA, an A of any rank >= 1 whose leading dimensions fold into rows, as MatMul's do with a 2-D B.
#include <optional>

#include "absl/strings/str_cat.h"
#include "runtime/math/packed_gemm.h"
#include "runtime/ops/blas.h"
#include "runtime/ops/common.h"
#include "runtime/ops/fused_activation.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// The spec's type lists, version by version.
constexpr DataType kFloat16FloatDouble[] = {DataType::kFloat16, DataType::kFloat, DataType::kDouble};
constexpr DataType kGemm9Types[] = {DataType::kFloat16, DataType::kFloat,  DataType::kDouble, DataType::kUint32,
                                    DataType::kUint64,  DataType::kInt32, DataType::kInt64};
constexpr DataType kGemm13Types[] = {DataType::kFloat16, DataType::kFloat,  DataType::kDouble,
                                     DataType::kUint32,  DataType::kUint64, DataType::kInt32,
                                     DataType::kInt64,   DataType::kBFloat16};

absl::Status CheckSameType(const Tensor& a, const Tensor& b, const char* b_name) {
  if (a.dtype() == b.dtype()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("input ", b_name, " is ", DataTypeName(b.dtype()),
                                                 ", expected ", DataTypeName(a.dtype()), " like A"));
}

// Calls fn(T{}) for the types the GEMM runs natively; float16/bfloat16 are widened by the callers.
template <typename Fn>
absl::Status DispatchGemmType(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kFloat: return fn(float{});
    case DataType::kDouble: return fn(double{});
    case DataType::kInt32: return fn(int32_t{});
    case DataType::kInt64: return fn(int64_t{});
    case DataType::kUint32: return fn(uint32_t{});
    case DataType::kUint64: return fn(uint64_t{});
    default:
      return absl::InvalidArgumentError(absl::StrCat("unsupported element type ", DataTypeName(type)));
  }
}

// ---- MatMul: numpy.matmul semantics --------------------------------------------------------------------

template <typename T>
void RunMatMul(const MatMulPlan& p, const T* a, const T* b, T* y, ThreadPool& pool) {
  const int64_t batches = NumElements(p.batch);
  // An empty Y has nothing to compute, however many batches its shape says: [2^28, 0, 1] x [2^28, 1, 0]
  // would otherwise list 2^28 pairs of matrices (4 GiB) to multiply none.
  if (batches * p.m * p.n == 0) return;
  // One B for every batch (a weight matrix): A's batches are then contiguous in output order, so the batch
  // folds into M and the whole product is one big GEMM.
  if (p.b_matrices == 1) {
    Gemm<T>(false, false, batches * p.m, p.n, p.k, T{1}, a, p.k, b, p.n, T{0}, y, p.n, &pool);
    return;
  }
  const int64_t a_size = p.m * p.k, b_size = p.k * p.n, y_size = p.m * p.n;
  const std::vector<std::pair<int64_t, int64_t>> offsets = MatrixPairs(p);
  auto multiply = [&](int64_t i, ThreadPool* gemm_pool) {
    Gemm<T>(false, false, p.m, p.n, p.k, T{1}, a + offsets[i].first * a_size, p.k,
            b + offsets[i].second * b_size, p.n, T{0}, y + i * y_size, p.n, gemm_pool);
  };
  // Many products: one per thread at a time. Few: each uses the whole pool.
  if (batches >= pool.num_threads()) {
    pool.ParallelFor(batches, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) multiply(i, nullptr);
    });
  } else {
    for (int64_t i = 0; i < batches; ++i) multiply(i, &pool);
  }
}

// B packed at load: a float constant B of rank 2 (a weight matrix), when PackedGemm runs on this CPU.
struct PackedWeight {
  static std::optional<PackedWeight> Of(const Tensor* b, bool transposed, float scale) {
    if (b == nullptr || b->dtype() != DataType::kFloat || b->rank() != 2 || !PackedGemmSupported()) {
      return std::nullopt;
    }
    const int64_t depth = transposed ? b->dim(1) : b->dim(0), columns = transposed ? b->dim(0) : b->dim(1);
    return PackedWeight{PackedColumns(b->data<float>(), depth, columns, b->dim(1), transposed, scale),
                        b->raw_data()};
  }
  // Whether `b`, the input at run time, is the tensor this was packed from.
  bool Packs(const Tensor& b) const { return b.raw_data() == source; }

  PackedColumns columns;
  const void* source;
};

class MatMul final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    packed_b_ = PackedWeight::Of(info.ConstantInput(1), false, 1.0f);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& a = *ctx.Input(0);
    const Tensor& b = *ctx.Input(1);
    RETURN_IF_ERROR(CheckSameType(a, b, "B"));
    ASSIGN_OR_RETURN(MatMulPlan plan, PlanMatMul(a.shape(), b.shape()));
    Tensor& y = ctx.Output(0, a.dtype(), plan.output);
    if (IsHalfType(a.dtype())) {
      Tensor y_float(DataType::kFloat, plan.output);
      RunMatMul<float>(plan, WidenToFloat(&a).data<float>(), WidenToFloat(&b).data<float>(),
                       y_float.data<float>(), ctx.pool());
      NarrowFromFloat(y_float, y);
      return absl::OkStatus();
    }
    if (packed_b_ && packed_b_->Packs(b) && plan.b_matrices == 1) {
      // One weight matrix for every batch: the batches fold into the rows of one product.
      const int64_t rows = NumElements(plan.batch) * plan.m;
      PackedGemm(a.data<float>(), rows, plan.k, false, packed_b_->columns, y.data<float>(), plan.n, {}, &ctx.pool());
      return absl::OkStatus();
    }
    return DispatchGemmType(a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      RunMatMul<T>(plan, a.data<T>(), b.data<T>(), y.data<T>(), ctx.pool());
      return absl::OkStatus();
    });
  }

 private:
  std::optional<PackedWeight> packed_b_;
};

// MatMul-1: float types; -9 adds 32/64-bit integers; -13 adds bfloat16. Same semantics throughout.
REGISTER_KERNEL(kOnnx, "MatMul", 1, 8, kFloat16FloatDouble, MatMul);
REGISTER_KERNEL(kOnnx, "MatMul", 9, 12, kGemm9Types, MatMul);
REGISTER_KERNEL(kOnnx, "MatMul", 13, kLatest, kGemm13Types, MatMul);

// ---- Gemm: Y = alpha * A' * B' + beta * C --------------------------------------------------------------

// Y = beta * C with C unidirectionally broadcast to Y's [m, n].
template <typename T>
void FillWithScaledBias(const Tensor& c, T beta, int64_t m, int64_t n, T* y) {
  const int64_t cm = c.rank() == 2 ? c.dim(0) : 1;
  const int64_t cn = c.rank() >= 1 ? c.dim(c.rank() - 1) : 1;
  const int64_t row_stride = cm == 1 ? 0 : cn;
  const T* src = c.data<T>();
  for (int64_t i = 0; i < m; ++i) {
    const T* row = src + i * row_stride;
    T* out = y + i * n;
    if (cn == 1) {
      std::fill(out, out + n, beta * row[0]);
    } else {
      for (int64_t j = 0; j < n; ++j) out[j] = beta * row[j];
    }
  }
}

// Whether C is one row of n values (a bias per column): PackedGemm then adds it as Z with a row stride of 0,
// with no pass to broadcast it into Y first.
bool IsBiasRow(const Tensor& c, int64_t n) {
  return c.NumElements() == n && c.rank() >= 1 && c.rank() <= 2 && c.dim(c.rank() - 1) == n;
}

// kFused: FusedGemm.
template <bool kFused>
class GemmKernel final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    if constexpr (kFused) {
      ASSIGN_OR_RETURN(activation_, FusedActivation(info));
    }
    ASSIGN_OR_RETURN(alpha_, info.Attr<float>("alpha", 1.f));
    ASSIGN_OR_RETURN(beta_, info.Attr<float>("beta", 1.f));
    ASSIGN_OR_RETURN(int64_t trans_a, info.Attr<int64_t>("transA", 0));
    ASSIGN_OR_RETURN(int64_t trans_b, info.Attr<int64_t>("transB", 0));
    trans_a_ = trans_a != 0;
    trans_b_ = trans_b != 0;
    // Gemm-1..6 broadcast C only when asked; -7 on (and FusedGemm) always broadcast unidirectionally.
    ASSIGN_OR_RETURN(int64_t broadcast, info.Attr<int64_t>("broadcast", 0));
    broadcast_c_ = kFused || info.opset() >= 7 || broadcast != 0;
    packed_b_ = PackedWeight::Of(info.ConstantInput(1), trans_b_, alpha_);  // alpha folds into the packing
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& a = *ctx.Input(0);
    const Tensor& b = *ctx.Input(1);
    const Tensor* c = ctx.Input(2);
    RETURN_IF_ERROR(CheckSameType(a, b, "B"));
    if (c != nullptr) RETURN_IF_ERROR(CheckSameType(a, *c, "C"));
    const bool folds_rows = kFused && !trans_a_;
    if (!(a.rank() == 2 || (folds_rows && a.rank() >= 1)) || b.rank() != 2) {
      return absl::InvalidArgumentError(absl::StrCat("A ", ShapeToString(a.shape()), " and B ",
                                                     ShapeToString(b.shape()), ": expected 2-D matrices",
                                                     folds_rows ? " (A: rank >= 1)" : ""));
    }
    RETURN_IF_ERROR(CheckActivationType(a.dtype()));
    const int64_t k = a.dim(trans_a_ ? 0 : a.rank() - 1);
    int64_t m = trans_a_ ? a.dim(1) : 1;
    for (int64_t d = 0; !trans_a_ && d + 1 < a.rank(); ++d) m *= a.dim(d);
    const int64_t n = trans_b_ ? b.dim(0) : b.dim(1);
    if ((trans_b_ ? b.dim(1) : b.dim(0)) != k) {
      return absl::InvalidArgumentError(absl::StrCat("A' is [", m, ",", k, "] but B' ", ShapeToString(b.shape()),
                                                     trans_b_ ? " transposed" : "", " does not have ", k,
                                                     " rows"));
    }
    if (c != nullptr) RETURN_IF_ERROR(CheckBias(*c, m, n));
    Tensor& y = ctx.Output(0, a.dtype(), OutputShape(a, m, n));
    if (IsHalfType(a.dtype())) {
      Tensor y_float(DataType::kFloat, y.shape());
      const Tensor c_float = WidenToFloat(c);
      Run<float>(WidenToFloat(&a), WidenToFloat(&b), c ? &c_float : nullptr, y_float, ctx.pool());
      NarrowFromFloat(y_float, y);
      return absl::OkStatus();
    }
    return DispatchGemmType(a.dtype(), [&](auto tag) {
      Run<decltype(tag)>(a, b, c, y, ctx.pool());
      return absl::OkStatus();
    });
  }

 private:
  absl::Status CheckBias(const Tensor& c, int64_t m, int64_t n) const {
    const bool exact = c.rank() == 2 && c.dim(0) == m && c.dim(1) == n;
    const bool broadcastable = c.rank() <= 2 && (c.rank() < 2 || c.dim(0) == 1 || c.dim(0) == m) &&
                               (c.rank() < 1 || c.dim(c.rank() - 1) == 1 || c.dim(c.rank() - 1) == n);
    if (exact || (broadcast_c_ && broadcastable)) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("C ", ShapeToString(c.shape()), ": expected ",
                                                   broadcast_c_ ? "a shape broadcastable to " : "",
                                                   ShapeToString(Shape{m, n}),
                                                   broadcast_c_ ? "" : " (broadcast=0)"));
  }

  // The vector kernels behind the activations are float (half types are computed in float); Relu also
  // runs on double.
  absl::Status CheckActivationType(DataType type) const {
    if (activation_.kind == ActivationKind::kNone || type == DataType::kFloat || IsHalfType(type) ||
        (type == DataType::kDouble && activation_.kind == ActivationKind::kRelu)) {
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(
        absl::StrCat("A is ", DataTypeName(type), ": the fused activation takes float (or Relu, double)"));
  }

  // [m, n]; FusedGemm without transA: A's leading dimensions, then n (MatMul's shape with a 2-D B).
  Shape OutputShape(const Tensor& a, int64_t m, int64_t n) const {
    if (!kFused || trans_a_) return {m, n};
    Shape shape(a.shape().begin(), a.shape().end() - 1);
    shape.push_back(n);
    return shape;
  }

  template <typename T>
  void Run(const Tensor& a, const Tensor& b, const Tensor* c, Tensor& y, ThreadPool& pool) const {
    const int64_t n = b.dim(trans_b_ ? 0 : 1), m = n == 0 ? 0 : y.NumElements() / n;
    const int64_t k = a.dim(trans_a_ ? 0 : a.rank() - 1), lda = a.dim(a.rank() - 1);
    const bool with_bias = c != nullptr && beta_ != 0.f;
    if constexpr (std::is_same_v<T, float>) {
      if (packed_b_ && packed_b_->Packs(b)) {
        // A bias row joins as Z with row stride 0; another C is first scaled into Y, which is then Z.
        const bool bias_row = with_bias && beta_ == 1.f && IsBiasRow(*c, n);
        if (with_bias && !bias_row) FillWithScaledBias<T>(*c, static_cast<T>(beta_), m, n, y.data<T>());
        const GemmEpilogue epilogue{.z = bias_row ? c->data<float>() : with_bias ? y.data<float>() : nullptr,
                                    .ldz = bias_row ? 0 : n,
                                    .activation = activation_};
        return PackedGemm(a.data<float>(), m, lda, trans_a_, packed_b_->columns, y.data<float>(), n, epilogue,
                          &pool);
      }
    }
    if (with_bias) FillWithScaledBias<T>(*c, static_cast<T>(beta_), m, n, y.data<T>());
    Gemm<T>(trans_a_, trans_b_, m, n, k, static_cast<T>(alpha_), a.data<T>(), lda, b.data<T>(), b.dim(1),
            with_bias ? T{1} : T{0}, y.data<T>(), n, &pool);
    if constexpr (std::is_same_v<T, float>) {
      ActivateRows(activation_, y.data<float>(), m, n, n, pool);
    } else if constexpr (std::is_same_v<T, double>) {
      if (activation_.kind != ActivationKind::kRelu) return;  // CheckActivationType allows no other
      T* out = y.data<T>();
      for (int64_t i = 0; i < m * n; ++i) out[i] = out[i] < T{0} ? T{0} : out[i];
    }
  }

  float alpha_ = 1.f;
  float beta_ = 1.f;
  bool trans_a_ = false;
  bool trans_b_ = false;
  bool broadcast_c_ = true;
  Activation activation_;  // FusedGemm's; none for Gemm
  std::optional<PackedWeight> packed_b_;
};

using GemmOp = GemmKernel<false>;
using FusedGemm = GemmKernel<true>;

// Gemm-1/-6: `broadcast` attribute; -7: unidirectional broadcast of C; -9: integer types; -11: C optional;
// -13: bfloat16.
REGISTER_KERNEL(kOnnx, "Gemm", 1, 5, kFloat16FloatDouble, GemmOp);
REGISTER_KERNEL(kOnnx, "Gemm", 6, 6, kFloat16FloatDouble, GemmOp);
REGISTER_KERNEL(kOnnx, "Gemm", 7, 8, kFloat16FloatDouble, GemmOp);
REGISTER_KERNEL(kOnnx, "Gemm", 9, 10, kGemm9Types, GemmOp);
REGISTER_KERNEL(kOnnx, "Gemm", 11, 12, kGemm9Types, GemmOp);
REGISTER_KERNEL(kOnnx, "Gemm", 13, kLatest, kGemm13Types, GemmOp);
REGISTER_KERNEL(kInternal, "FusedGemm", 1, kLatest, kGemm13Types, FusedGemm);

}  // namespace
}  // namespace onnxserve

// Reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceLogSum,
// ReduceLogSumExp, ReduceSumSquare.
//
// Each op is a small accumulator policy (Init/Add/Merge/Finish) run by one kernel. The kernel coalesces
// adjacent dims that are all reduced or all kept, so the common cases become tight loops: reducing inner
// axes (ReduceMean over H,W of NCHW) sums contiguous spans, reducing outer axes accumulates whole rows.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// Accumulators compute in float for half types and in the element type otherwise; Finish turns the
// accumulator over `n` elements into the result.
template <typename T>
struct SumOp {
  using Acc = ComputeType<T>;
  static Acc Init() { return Acc(0); }
  static void Add(Acc& a, Acc x) { a += x; }
  static void Merge(Acc& a, Acc b) { a += b; }
  static Acc Finish(Acc a, int64_t) { return a; }
};

template <typename T>
struct MeanOp : SumOp<T> {
  using Acc = ComputeType<T>;
  static Acc Finish(Acc a, int64_t n) {
    if constexpr (std::is_floating_point_v<Acc>) {
      return a / static_cast<Acc>(n);  // 0/0 is NaN for an empty set, as numpy's mean.
    } else {
      return n == 0 ? Acc(0) : static_cast<Acc>(a / static_cast<Acc>(n));
    }
  }
};

template <typename T>
struct SumSquareOp : SumOp<T> {
  using Acc = ComputeType<T>;
  static void Add(Acc& a, Acc x) { a += x * x; }
};

template <typename T>
struct L1Op : SumOp<T> {
  using Acc = ComputeType<T>;
  static void Add(Acc& a, Acc x) {
    if constexpr (std::is_unsigned_v<Acc>) {
      a += x;
    } else {
      a += x < 0 ? -x : x;
    }
  }
};

template <typename T>
struct L2Op : SumSquareOp<T> {
  using Acc = ComputeType<T>;
  static Acc Finish(Acc a, int64_t) { return FromReal<Acc>(std::sqrt(static_cast<double>(a))); }
};

template <typename T>
struct LogSumOp : SumOp<T> {
  using Acc = ComputeType<T>;
  static Acc Finish(Acc a, int64_t) { return FromReal<Acc>(std::log(static_cast<double>(a))); }
};

template <typename T>
struct ProdOp {
  using Acc = ComputeType<T>;
  static Acc Init() { return Acc(1); }
  static void Add(Acc& a, Acc x) { a *= x; }
  static void Merge(Acc& a, Acc b) { a *= b; }
  static Acc Finish(Acc a, int64_t) { return a; }
};

// Max and min propagate NaN like numpy; an empty set yields -inf/+inf or the type's lowest/highest value.
template <typename T>
struct MaxOp {
  using Acc = ComputeType<T>;
  static Acc Init() {
    if constexpr (std::numeric_limits<Acc>::has_infinity) return -std::numeric_limits<Acc>::infinity();
    return std::numeric_limits<Acc>::lowest();
  }
  static void Add(Acc& a, Acc x) {
    if constexpr (std::is_floating_point_v<Acc>) {
      a = (x > a || std::isnan(x)) ? x : a;
    } else {
      a = x > a ? x : a;
    }
  }
  static void Merge(Acc& a, Acc b) { Add(a, b); }
  static Acc Finish(Acc a, int64_t) { return a; }
};

template <typename T>
struct MinOp {
  using Acc = ComputeType<T>;
  static Acc Init() {
    if constexpr (std::numeric_limits<Acc>::has_infinity) return std::numeric_limits<Acc>::infinity();
    return std::numeric_limits<Acc>::max();
  }
  static void Add(Acc& a, Acc x) {
    if constexpr (std::is_floating_point_v<Acc>) {
      a = (x < a || std::isnan(x)) ? x : a;
    } else {
      a = x < a ? x : a;
    }
  }
  static void Merge(Acc& a, Acc b) { Add(a, b); }
  static Acc Finish(Acc a, int64_t) { return a; }
};

// log(sum(exp(x))) computed online as max + log(sum(exp(x - max))) so large inputs do not overflow.
template <typename T>
struct LogSumExpOp {
  using F = std::conditional_t<std::is_floating_point_v<ComputeType<T>>, ComputeType<T>, double>;
  struct Acc {
    F max;
    F sum;
  };
  static Acc Init() { return {-std::numeric_limits<F>::infinity(), F(0)}; }
  static void Merge(Acc& a, Acc b) {
    if (b.max > a.max) {
      a.sum = a.sum * std::exp(a.max - b.max) + b.sum;
      a.max = b.max;
    } else if (b.max != -std::numeric_limits<F>::infinity()) {  // -inf terms add exp(-inf) = 0
      a.sum += b.sum * std::exp(b.max - a.max);
    }
  }
  static void Add(Acc& a, ComputeType<T> x) { Merge(a, {static_cast<F>(x), F(1)}); }
  static ComputeType<T> Finish(Acc a, int64_t) {
    return FromReal<ComputeType<T>>(a.max + std::log(a.sum));
  }
};

// The reduction as loops over the input: every output reduces `reduced_offsets` x `inner` elements when
// the innermost coalesced dim is reduced; otherwise outputs come in rows of `inner` that accumulate
// whole input rows at each reduced offset.
struct ReducePlan {
  Shape out_shape;
  int64_t reduced_count = 1;  // input elements per output
  int64_t inner = 1;          // length of the innermost coalesced dim
  bool inner_reduced = true;
  std::vector<int64_t> bases;            // input offset of each output (or of each output row)
  std::vector<int64_t> reduced_offsets;  // offsets of the reduced positions outside the innermost dim
};

struct Dim {
  int64_t size;
  int64_t stride;
};

// Offsets of every position of `dims` in row-major order.
std::vector<int64_t> EnumerateOffsets(const std::vector<Dim>& dims) {
  std::vector<int64_t> offsets = {0};
  for (const Dim& d : dims) {
    std::vector<int64_t> next;
    next.reserve(offsets.size() * static_cast<size_t>(d.size));
    for (int64_t base : offsets) {
      for (int64_t i = 0; i < d.size; ++i) next.push_back(base + i * d.stride);
    }
    offsets = std::move(next);
  }
  return offsets;
}

// `reduced[d]` says whether dim d is reduced; the input has at least one element.
ReducePlan MakePlan(const Shape& in, const std::vector<bool>& reduced, bool keepdims) {
  ReducePlan plan;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!reduced[d]) {
      plan.out_shape.push_back(in[d]);
    } else if (keepdims) {
      plan.out_shape.push_back(1);
    }
  }
  // Coalesce: drop size-1 dims, merge neighbours that are both reduced or both kept.
  std::vector<int64_t> sizes;
  std::vector<bool> is_reduced;
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 1) continue;
    if (!sizes.empty() && is_reduced.back() == reduced[d]) {
      sizes.back() *= in[d];
    } else {
      sizes.push_back(in[d]);
      is_reduced.push_back(reduced[d]);
    }
  }
  if (!sizes.empty()) {
    plan.inner = sizes.back();
    plan.inner_reduced = is_reduced.back();
  }
  std::vector<Dim> kept_dims, reduced_dims;
  int64_t stride = plan.inner;
  for (int64_t g = static_cast<int64_t>(sizes.size()) - 2; g >= 0; --g) {
    (is_reduced[g] ? reduced_dims : kept_dims).push_back(Dim{sizes[g], stride});
    stride *= sizes[g];
  }
  std::reverse(kept_dims.begin(), kept_dims.end());  // collected innermost first
  std::reverse(reduced_dims.begin(), reduced_dims.end());
  plan.bases = EnumerateOffsets(kept_dims);
  plan.reduced_offsets = EnumerateOffsets(reduced_dims);
  plan.reduced_count = static_cast<int64_t>(plan.reduced_offsets.size()) * (plan.inner_reduced ? plan.inner : 1);
  return plan;
}

// Reduces x[0..n) with four independent accumulators so the loop pipelines (and vectorizes for simple ops).
template <typename Op, typename T>
typename Op::Acc ReduceSpan(const T* x, int64_t n) {
  typename Op::Acc a0 = Op::Init(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    Op::Add(a0, ToCompute(x[i]));
    Op::Add(a1, ToCompute(x[i + 1]));
    Op::Add(a2, ToCompute(x[i + 2]));
    Op::Add(a3, ToCompute(x[i + 3]));
  }
  for (; i < n; ++i) Op::Add(a0, ToCompute(x[i]));
  Op::Merge(a0, a1);
  Op::Merge(a2, a3);
  Op::Merge(a0, a2);
  return a0;
}

// Each output reduces contiguous spans of `inner` elements, one per reduced offset.
template <typename Op, typename T>
void ReduceInner(const ReducePlan& plan, const T* x, T* y, ThreadPool& pool) {
  const int64_t outputs = static_cast<int64_t>(plan.bases.size());
  pool.ParallelFor(outputs, std::max<int64_t>(1, 32768 / std::max<int64_t>(plan.reduced_count, 1)),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t o = begin; o < end; ++o) {
                       typename Op::Acc acc = Op::Init();
                       for (int64_t r : plan.reduced_offsets) {
                         Op::Merge(acc, ReduceSpan<Op>(x + plan.bases[o] + r, plan.inner));
                       }
                       y[o] = FromCompute<T>(Op::Finish(acc, plan.reduced_count));
                     }
                   });
}

// Outputs come in rows of `inner`; each row accumulates the input row at every reduced offset. Rows are
// split into column blocks so a single wide row still spreads over the threads.
template <typename Op, typename T>
void ReduceRows(const ReducePlan& plan, const T* x, T* y, ThreadPool& pool) {
  constexpr int64_t kBlock = 256;
  const int64_t width = plan.inner;
  const int64_t blocks = (width + kBlock - 1) / kBlock;
  const int64_t items = static_cast<int64_t>(plan.bases.size()) * blocks;
  const int64_t work_per_item = std::min(width, kBlock) * plan.reduced_count;
  pool.ParallelFor(items, std::max<int64_t>(1, 32768 / std::max<int64_t>(work_per_item, 1)),
                   [&](int64_t begin, int64_t end) {
                     typename Op::Acc acc[kBlock];
                     for (int64_t item = begin; item < end; ++item) {
                       const int64_t row = item / blocks;
                       const int64_t col = (item % blocks) * kBlock;
                       const int64_t w = std::min(kBlock, width - col);
                       for (int64_t j = 0; j < w; ++j) acc[j] = Op::Init();
                       for (int64_t r : plan.reduced_offsets) {
                         const T* in = x + plan.bases[row] + r + col;
                         for (int64_t j = 0; j < w; ++j) Op::Add(acc[j], ToCompute(in[j]));
                       }
                       T* out = y + row * width + col;
                       for (int64_t j = 0; j < w; ++j) out[j] = FromCompute<T>(Op::Finish(acc[j], plan.reduced_count));
                     }
                   });
}

// The reduced dims of an input of rank `rank`: `axes` normalized, or all dims when `axes` is empty
// (none when noop_with_empty_axes is set).
absl::StatusOr<std::vector<bool>> ReducedDims(absl::Span<const int64_t> axes, int64_t rank, bool noop) {
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty() && !noop);
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank) {
      return absl::InvalidArgumentError(
          absl::StrCat("axes: ", axis, " is out of range for an input of rank ", rank, ", expected [",
                       -rank, ", ", rank - 1, "]"));
    }
    const size_t d = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    if (reduced[d]) return absl::InvalidArgumentError(absl::StrCat("axes: axis ", axis, " is repeated"));
    reduced[d] = true;
  }
  return reduced;
}

// Whether Op applies to T: every op takes the spec's float and 32/64-bit integer types; max and min also
// take 8-bit integers (12+) and bool (20+).
template <typename T, bool kMinMax>
inline constexpr bool kReducible =
    !std::is_same_v<T, int16_t> && !std::is_same_v<T, uint16_t> &&
    (kMinMax || (!std::is_same_v<T, int8_t> && !std::is_same_v<T, uint8_t> && !std::is_same_v<T, bool>));

// Axes come from the attribute before opset `kAxesInputSince` and from the optional second input after.
template <template <typename> class Op, int kAxesInputSince, bool kMinMax = false>
class Reduce final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const int64_t keepdims, info.Attr<int64_t>("keepdims", 1));
    keepdims_ = keepdims != 0;
    axes_from_input_ = info.opset() >= kAxesInputSince;
    if (axes_from_input_) {
      ASSIGN_OR_RETURN(const int64_t noop, info.Attr<int64_t>("noop_with_empty_axes", 0));
      noop_with_empty_axes_ = noop != 0;
    } else {
      ASSIGN_OR_RETURN(axes_, info.Attr<std::vector<int64_t>>("axes", {}));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    std::vector<int64_t> axes_input;
    if (axes_from_input_ && ctx.Input(1) != nullptr) {
      const Tensor& axes = *ctx.Input(1);
      if (axes.dtype() != DataType::kInt64 || axes.rank() > 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("axes: expected a 1-D int64 tensor, got ", axes.DebugString()));
      }
      axes_input.assign(axes.data<int64_t>(), axes.data<int64_t>() + axes.NumElements());
    }
    ASSIGN_OR_RETURN(const std::vector<bool> reduced,
                     ReducedDims(axes_from_input_ ? axes_input : axes_, x.rank(), noop_with_empty_axes_));
    absl::Status status = absl::OkStatus();
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (kReducible<T, kMinMax>) {
        Run<T>(ctx, x, reduced);
      } else {
        status = absl::InvalidArgumentError(
            absl::StrCat("input: element type ", DataTypeName(x.dtype()), " is not supported"));
      }
    });
    return status;
  }

 private:
  template <typename T>
  void Run(KernelContext& ctx, const Tensor& x, const std::vector<bool>& reduced) const {
    if (x.NumElements() == 0) {
      RunEmpty<T>(ctx, x.shape(), reduced);
      return;
    }
    const ReducePlan plan = MakePlan(x.shape(), reduced, keepdims_);
    Tensor& y = ctx.Output(0, x.dtype(), plan.out_shape);
    if (plan.inner_reduced) {
      ReduceInner<Op<T>>(plan, x.data<T>(), y.data<T>(), ctx.pool());
    } else {
      ReduceRows<Op<T>>(plan, x.data<T>(), y.data<T>(), ctx.pool());
    }
  }

  // An empty input: every output (if any) is the reduction of an empty set, the op's identity.
  template <typename T>
  void RunEmpty(KernelContext& ctx, const Shape& in, const std::vector<bool>& reduced) const {
    Shape out_shape;
    for (size_t d = 0; d < in.size(); ++d) {
      if (!reduced[d] || keepdims_) out_shape.push_back(reduced[d] ? 1 : in[d]);
    }
    Tensor& y = ctx.Output(0, kTypeOf<T>, out_shape);
    const T value = FromCompute<T>(Op<T>::Finish(Op<T>::Init(), 0));
    std::fill_n(y.data<T>(), y.NumElements(), value);
  }

  std::vector<int64_t> axes_;
  bool keepdims_ = true;
  bool axes_from_input_ = false;
  bool noop_with_empty_axes_ = false;
};

template <template <typename> class Op>
using ReduceMinMax = Reduce<Op, 18, true>;

// Element types by spec version: 1-12 float16/float/double and 32/64-bit integers, 13+ add bfloat16;
// ReduceMax/Min add 8-bit integers in 12 and bool in 20.
constexpr DataType kReduce1Types[] = {DataType::kFloat, DataType::kDouble, DataType::kFloat16,
                                      DataType::kInt32, DataType::kInt64, DataType::kUint32,
                                      DataType::kUint64};
constexpr DataType kReduce13Types[] = {DataType::kFloat, DataType::kDouble, DataType::kFloat16,
                                       DataType::kBFloat16, DataType::kInt32, DataType::kInt64,
                                       DataType::kUint32, DataType::kUint64};
constexpr DataType kMinMax12Types[] = {DataType::kFloat, DataType::kDouble, DataType::kFloat16,
                                       DataType::kInt32, DataType::kInt64, DataType::kUint32,
                                       DataType::kUint64, DataType::kInt8, DataType::kUint8};
constexpr DataType kMinMax13Types[] = {DataType::kFloat, DataType::kDouble, DataType::kFloat16,
                                       DataType::kBFloat16, DataType::kInt32, DataType::kInt64,
                                       DataType::kUint32, DataType::kUint64, DataType::kInt8,
                                       DataType::kUint8};
constexpr DataType kMinMax20Types[] = {DataType::kFloat, DataType::kDouble, DataType::kFloat16,
                                       DataType::kBFloat16, DataType::kInt32, DataType::kInt64,
                                       DataType::kUint32, DataType::kUint64, DataType::kInt8,
                                       DataType::kUint8, DataType::kBool};

// -1 axes attribute; -11 negative axes; -13 bfloat16; -18 axes become an input with noop_with_empty_axes.
// ReduceSum moved axes to an input early, in 13, and has no 18.
REGISTER_KERNEL(kOnnx, "ReduceSum", 1, 10, kReduce1Types, Reduce<SumOp, 13>);
REGISTER_KERNEL(kOnnx, "ReduceSum", 11, 12, kReduce1Types, Reduce<SumOp, 13>);
REGISTER_KERNEL(kOnnx, "ReduceSum", 13, kLatest, kReduce13Types, Reduce<SumOp, 13>);

REGISTER_KERNEL(kOnnx, "ReduceMean", 1, 10, kReduce1Types, Reduce<MeanOp, 18>);
REGISTER_KERNEL(kOnnx, "ReduceMean", 11, 12, kReduce1Types, Reduce<MeanOp, 18>);
REGISTER_KERNEL(kOnnx, "ReduceMean", 13, 17, kReduce13Types, Reduce<MeanOp, 18>);
REGISTER_KERNEL(kOnnx, "ReduceMean", 18, kLatest, kReduce13Types, Reduce<MeanOp, 18>);
REGISTER_KERNEL(kOnnx, "ReduceProd", 1, 10, kReduce1Types, Reduce<ProdOp, 18>);
REGISTER_KERNEL(kOnnx, "ReduceProd", 11, 12, kReduce1Types, Reduce<ProdOp, 18>);
REGISTER_KERNEL(kOnnx, "ReduceProd", 13, 17, kReduce13Types, Reduce<ProdOp, 18>);
REGISTER_KERNEL(kOnnx, "ReduceProd", 18, kLatest, kReduce13Types, Reduce<ProdOp, 18>);
REGISTER_KERNEL(kOnnx, "ReduceL1", 1, 10, kReduce1Types, Reduce<L1Op, 18>);
REGISTER_KERNEL(kOnnx, "ReduceL1", 11, 12, kReduce1Types, Reduce<L1Op, 18>);
REGISTER_KERNEL(kOnnx, "ReduceL1", 13, 17, kReduce13Types, Reduce<L1Op, 18>);
REGISTER_KERNEL(kOnnx, "ReduceL1", 18, kLatest, kReduce13Types, Reduce<L1Op, 18>);
REGISTER_KERNEL(kOnnx, "ReduceL2", 1, 10, kReduce1Types, Reduce<L2Op, 18>);
REGISTER_KERNEL(kOnnx, "ReduceL2", 11, 12, kReduce1Types, Reduce<L2Op, 18>);
REGISTER_KERNEL(kOnnx, "ReduceL2", 13, 17, kReduce13Types, Reduce<L2Op, 18>);
REGISTER_KERNEL(kOnnx, "ReduceL2", 18, kLatest, kReduce13Types, Reduce<L2Op, 18>);
REGISTER_KERNEL(kOnnx, "ReduceLogSum", 1, 10, kReduce1Types, Reduce<LogSumOp, 18>);
REGISTER_KERNEL(kOnnx, "ReduceLogSum", 11, 12, kReduce1Types, Reduce<LogSumOp, 18>);
REGISTER_KERNEL(kOnnx, "ReduceLogSum", 13, 17, kReduce13Types, Reduce<LogSumOp, 18>);
REGISTER_KERNEL(kOnnx, "ReduceLogSum", 18, kLatest, kReduce13Types, Reduce<LogSumOp, 18>);
REGISTER_KERNEL(kOnnx, "ReduceLogSumExp", 1, 10, kReduce1Types, Reduce<LogSumExpOp, 18>);
REGISTER_KERNEL(kOnnx, "ReduceLogSumExp", 11, 12, kReduce1Types, Reduce<LogSumExpOp, 18>);
REGISTER_KERNEL(kOnnx, "ReduceLogSumExp", 13, 17, kReduce13Types, Reduce<LogSumExpOp, 18>);
REGISTER_KERNEL(kOnnx, "ReduceLogSumExp", 18, kLatest, kReduce13Types, Reduce<LogSumExpOp, 18>);
REGISTER_KERNEL(kOnnx, "ReduceSumSquare", 1, 10, kReduce1Types, Reduce<SumSquareOp, 18>);
REGISTER_KERNEL(kOnnx, "ReduceSumSquare", 11, 12, kReduce1Types, Reduce<SumSquareOp, 18>);
REGISTER_KERNEL(kOnnx, "ReduceSumSquare", 13, 17, kReduce13Types, Reduce<SumSquareOp, 18>);
REGISTER_KERNEL(kOnnx, "ReduceSumSquare", 18, kLatest, kReduce13Types, Reduce<SumSquareOp, 18>);

// ReduceMax/Min: -12 adds int8/uint8, -20 adds bool.
REGISTER_KERNEL(kOnnx, "ReduceMax", 1, 10, kReduce1Types, ReduceMinMax<MaxOp>);
REGISTER_KERNEL(kOnnx, "ReduceMax", 11, 11, kReduce1Types, ReduceMinMax<MaxOp>);
REGISTER_KERNEL(kOnnx, "ReduceMax", 12, 12, kMinMax12Types, ReduceMinMax<MaxOp>);
REGISTER_KERNEL(kOnnx, "ReduceMax", 13, 17, kMinMax13Types, ReduceMinMax<MaxOp>);
REGISTER_KERNEL(kOnnx, "ReduceMax", 18, 19, kMinMax13Types, ReduceMinMax<MaxOp>);
REGISTER_KERNEL(kOnnx, "ReduceMax", 20, kLatest, kMinMax20Types, ReduceMinMax<MaxOp>);
REGISTER_KERNEL(kOnnx, "ReduceMin", 1, 10, kReduce1Types, ReduceMinMax<MinOp>);
REGISTER_KERNEL(kOnnx, "ReduceMin", 11, 11, kReduce1Types, ReduceMinMax<MinOp>);
REGISTER_KERNEL(kOnnx, "ReduceMin", 12, 12, kMinMax12Types, ReduceMinMax<MinOp>);
REGISTER_KERNEL(kOnnx, "ReduceMin", 13, 17, kMinMax13Types, ReduceMinMax<MinOp>);
REGISTER_KERNEL(kOnnx, "ReduceMin", 18, 19, kMinMax13Types, ReduceMinMax<MinOp>);
REGISTER_KERNEL(kOnnx, "ReduceMin", 20, kLatest, kMinMax20Types, ReduceMinMax<MinOp>);

}  // namespace
}  // namespace onnxserve

// Building blocks of the elementwise op families (unary.cc, activation.cc, binary.cc, logical.cc,
// variadic.cc): type predicates, a parallel map, and a broadcast plan that turns numpy broadcasting into
// runs where every input either advances by one element or repeats one element, so inner loops are tight
// and vectorizable (same shape, scalar and row broadcasting are all single runs per row). Float ops that
// name a vector form run on the active ISA's kernels (runtime/math/vector_kernels.h).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/math/vector_kernels.h"
#include "runtime/ops/common.h"
#include "runtime/registry/kernel.h"

namespace onnxserve {

// Element-type predicates for the ops' `kAccepts` (bool and std::string are neither floats nor integers).
template <typename T>
inline constexpr bool kIsFloat =
    std::is_floating_point_v<T> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;
template <typename T>
inline constexpr bool kIsInteger = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <typename T>
inline constexpr bool kIsNumber = kIsFloat<T> || kIsInteger<T>;
template <typename T>
inline constexpr bool kIsSignedNumber = kIsFloat<T> || (kIsInteger<T> && std::is_signed_v<T>);

// Bases of op functors: which element types an op takes and whether it yields bool (a predicate) or T.
struct FloatOp {
  template <typename T> static constexpr bool kAccepts = kIsFloat<T>;
  static constexpr bool kPredicate = false;
};
struct SignedOp {
  template <typename T> static constexpr bool kAccepts = kIsSignedNumber<T>;
  static constexpr bool kPredicate = false;
};
struct NumberOp {
  template <typename T> static constexpr bool kAccepts = kIsNumber<T>;
  static constexpr bool kPredicate = false;
};
struct IntegerOp {
  template <typename T> static constexpr bool kAccepts = kIsInteger<T>;
  static constexpr bool kPredicate = false;
};
struct BoolOp {
  template <typename T> static constexpr bool kAccepts = std::is_same_v<T, bool>;
  static constexpr bool kPredicate = false;
};

template <typename Op, typename T>
using OpResult = std::conditional_t<Op::kPredicate, bool, T>;

// NaN test that also compiles (to false) for integers.
template <typename C>
inline bool IsNan(C x) {
  if constexpr (std::is_floating_point_v<C>) return x != x;
  return false;
}

// Integer +, -, * wrap around as two's complement (signed overflow would be undefined in C++, and small
// types promote to int); floats are unchanged.
template <typename C, bool = std::is_integral_v<C>>
struct WrapOf {
  using type = C;
};
template <typename C>
struct WrapOf<C, true> {
  using type = std::make_unsigned_t<decltype(C{} + C{})>;
};
template <typename C>
using WrapType = typename WrapOf<C>::type;

inline absl::Status UnsupportedTypeError(DataType type) {
  return absl::UnimplementedError(
      absl::StrCat("element type ", DataTypeName(type), " is not supported by this operator"));
}

// Elements per parallel chunk: below about this many, handing work to another thread costs more than it
// saves for cheap elementwise math.
inline constexpr int64_t kElementwiseGrain = 1 << 15;

// Runs fn(begin, end) over [0, n), split over the intra-op pool when n spans several grains.
template <typename Fn>
void ParallelRange(ThreadPool& pool, int64_t n, int64_t grain, const Fn& fn) {
  if (n <= 0) return;
  if (n < 2 * grain || pool.num_threads() <= 1) {
    fn(int64_t{0}, n);
    return;
  }
  pool.ParallelFor(n, grain, fn);
}

// out[i] = f(in[i]) for i in [0, n); f takes ComputeType<In> (half types go through float).
template <typename In, typename Out, typename F>
void MapUnary(ThreadPool& pool, const In* in, Out* out, int64_t n, const F& f) {
  ParallelRange(pool, n, kElementwiseGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = static_cast<Out>(f(ToCompute(in[i])));
  });
}

// A unary op functor's vector form for float tensors: MapFloats(kernels, x, y, n) writes y[i] = op(x[i])
// with the given table's kernels.
template <typename Op>
concept HasVectorMap = requires(const Op& op, const float* x, float* y) {
  op.MapFloats(vec::Kernels(), x, y, int64_t{0});
};

// A binary op functor's vector form: `static constexpr vec::BinaryOp kVectorOp`, which must give exactly
// the functor's float results.
template <typename Op>
concept HasVectorBinary = requires { Op::kVectorOp; };

// Runs map(kernels, in + begin, out + begin, end - begin) over [0, n) in parallel chunks, with the active
// ISA's vector kernels.
template <typename Map>
void ParallelMapFloats(ThreadPool& pool, const float* in, float* out, int64_t n, const Map& map) {
  const vec::VectorKernels& kernels = vec::Kernels();
  ParallelRange(pool, n, kElementwiseGrain,
                [&](int64_t begin, int64_t end) { map(kernels, in + begin, out + begin, end - begin); });
}

// Op's vector kernel over `n` floats, split over the pool. `T` (always float) keeps the call dependent on
// the dispatch's type: clang checks a non-dependent call even in a discarded branch, for ops without one.
template <typename Op, typename T>
void MapFloatsWith(const Op& op, ThreadPool& pool, const T* in, T* out, int64_t n) {
  static_assert(std::is_same_v<T, float>);
  ParallelMapFloats(pool, in, out, n, [&op](const vec::VectorKernels& k, const float* from, float* to, int64_t count) {
    op.MapFloats(k, from, to, count);
  });
}

// Numpy broadcasting of N inputs onto an output shape, with adjacent dimensions merged where every input
// stays contiguous (or stays broadcast) across them. The output is `rows` runs of `inner` elements; within
// a run input n advances by one element when steps[n], else repeats one element.
template <size_t N>
struct BroadcastPlan {
  int64_t total = 0;
  int64_t inner = 1;
  std::array<bool, N> steps{};
  Shape outer;  // merged dims outside the run, outermost first
  std::array<std::vector<int64_t>, N> outer_strides;
};

// `inputs` must broadcast onto `out` (checked by the caller with BroadcastShapes).
template <size_t N>
BroadcastPlan<N> PlanBroadcast(const Shape& out, const std::array<const Shape*, N>& inputs) {
  BroadcastPlan<N> plan;
  plan.total = NumElements(out);
  std::array<std::vector<int64_t>, N> strides;
  for (size_t n = 0; n < N; ++n) strides[n] = BroadcastStrides(*inputs[n], out);
  // Merge from the innermost dim outwards; size-1 dims contribute nothing.
  Shape dims;
  std::array<std::vector<int64_t>, N> merged;
  for (int64_t d = static_cast<int64_t>(out.size()) - 1; d >= 0; --d) {
    if (out[d] == 1) continue;
    bool contiguous = !dims.empty();
    for (size_t n = 0; n < N && contiguous; ++n) contiguous = strides[n][d] == merged[n].back() * dims.back();
    if (contiguous) {
      dims.back() *= out[d];
      continue;
    }
    dims.push_back(out[d]);
    for (size_t n = 0; n < N; ++n) merged[n].push_back(strides[n][d]);
  }
  if (dims.empty()) return plan;  // A single element: every input repeats its only value.
  plan.inner = dims[0];
  for (size_t n = 0; n < N; ++n) plan.steps[n] = merged[n][0] != 0;
  plan.outer.assign(dims.rbegin(), dims.rend() - 1);
  for (size_t n = 0; n < N; ++n) plan.outer_strides[n].assign(merged[n].rbegin(), merged[n].rend() - 1);
  return plan;
}

// Calls fn(out_offset, in_offsets, length) for the runs covering output elements [begin, end); a run may be
// a part of a row at either end.
template <size_t N, typename Fn>
void ForEachRun(const BroadcastPlan<N>& plan, int64_t begin, int64_t end, const Fn& fn) {
  if (begin >= end) return;
  const size_t rank = plan.outer.size();
  std::vector<int64_t> index(rank);
  std::array<int64_t, N> row_offsets{};
  int64_t row = begin / plan.inner;
  for (size_t d = rank; d-- > 0;) {
    index[d] = row % plan.outer[d];
    row /= plan.outer[d];
    for (size_t n = 0; n < N; ++n) row_offsets[n] += index[d] * plan.outer_strides[n][d];
  }
  int64_t column = begin % plan.inner;
  for (int64_t pos = begin; pos < end;) {
    const int64_t length = std::min(plan.inner - column, end - pos);
    std::array<int64_t, N> at;
    for (size_t n = 0; n < N; ++n) at[n] = row_offsets[n] + (plan.steps[n] ? column : 0);
    fn(pos, at, length);
    pos += length;
    column = 0;
    for (size_t d = rank; d-- > 0;) {
      for (size_t n = 0; n < N; ++n) row_offsets[n] += plan.outer_strides[n][d];
      if (++index[d] < plan.outer[d]) break;
      for (size_t n = 0; n < N; ++n) row_offsets[n] -= plan.outer_strides[n][d] * plan.outer[d];
      index[d] = 0;
    }
  }
}

template <size_t N, typename Fn>
void ParallelRuns(ThreadPool& pool, const BroadcastPlan<N>& plan, const Fn& fn) {
  ParallelRange(pool, plan.total, kElementwiseGrain,
                [&](int64_t begin, int64_t end) { ForEachRun(plan, begin, end, fn); });
}

// out[k] = f(a[k or 0], b[k or 0]) for k < length, with the stride pattern hoisted so each case is a plain
// loop the compiler vectorizes.
template <typename A, typename B, typename Out, typename F>
inline void BinaryRun(const A* a, bool a_steps, const B* b, bool b_steps, Out* out, int64_t length,
                      const F& f) {
  if (a_steps && b_steps) {
    for (int64_t k = 0; k < length; ++k) out[k] = f(a[k], b[k]);
  } else if (a_steps) {
    const B y = b[0];
    for (int64_t k = 0; k < length; ++k) out[k] = f(a[k], y);
  } else if (b_steps) {
    const A x = a[0];
    for (int64_t k = 0; k < length; ++k) out[k] = f(x, b[k]);
  } else {
    std::fill(out, out + length, f(a[0], b[0]));
  }
}

// Applies `op` (in ComputeType) to a and b broadcast onto out's shape. `out` may be `a` itself when a
// already has the output shape (variadic ops accumulate that way).
template <typename A, typename B, typename Out, typename Op>
void BroadcastBinary(ThreadPool& pool, const Tensor& a, const Tensor& b, Tensor& out, const Op& op) {
  const BroadcastPlan<2> plan = PlanBroadcast<2>(out.shape(), {&a.shape(), &b.shape()});
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  Out* po = out.data<Out>();
  if constexpr (std::is_same_v<A, float> && std::is_same_v<B, float> && std::is_same_v<Out, float> &&
                HasVectorBinary<Op>) {
    const vec::VectorKernels& kernels = vec::Kernels();
    ParallelRuns(pool, plan, [&](int64_t o, const std::array<int64_t, 2>& in, int64_t length) {
      kernels.binary(Op::kVectorOp, pa + in[0], plan.steps[0], pb + in[1], plan.steps[1], po + o, length);
    });
    return;
  }
  const auto f = [&op](const A& x, const B& y) -> Out {
    if constexpr (std::is_same_v<A, std::string>) {
      return op(x, y);
    } else {
      return static_cast<Out>(op(ToCompute(x), ToCompute(y)));
    }
  };
  ParallelRuns(pool, plan, [&](int64_t o, const std::array<int64_t, 2>& in, int64_t length) {
    BinaryRun(pa + in[0], plan.steps[0], pb + in[1], plan.steps[1], po + o, length, f);
  });
}

// The shapes of a binary op. From opset 7 on, numpy multidirectional broadcasting. Before, the
// `broadcast`/`axis` attributes: without broadcast=1 the shapes must match; with it, B's shape is matched
// to A's dims starting at `axis` (default: A's trailing dims) and B broadcasts onto A only.
class BinaryShapes {
 public:
  absl::Status Init(const KernelInfo& info) {
    legacy_ = info.opset() < 7;
    if (!legacy_) return absl::OkStatus();
    ASSIGN_OR_RETURN(const int64_t broadcast, info.Attr<int64_t>("broadcast", 0));
    broadcast_ = broadcast != 0;
    if (info.HasAttr("axis")) {
      ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis"));
    }
    return absl::OkStatus();
  }

  // The output shape; *b_view is B's shape as it lines up with A (B's own shape from opset 7 on).
  absl::StatusOr<Shape> Resolve(const Shape& a, const Shape& b, Shape* b_view) const {
    *b_view = b;
    if (!legacy_) return BroadcastShapes(a, b);
    if (!broadcast_) {
      if (a == b) return a;
      return absl::InvalidArgumentError(absl::StrCat("shapes ", ShapeToString(a), " and ", ShapeToString(b),
                                                     " differ and attribute broadcast is 0"));
    }
    const int64_t rank_a = static_cast<int64_t>(a.size());
    const int64_t rank_b = static_cast<int64_t>(b.size());
    int64_t axis = axis_.value_or(rank_a - rank_b);
    if (axis < 0) axis += rank_a;
    if (axis < 0 || axis + rank_b > rank_a) {
      return absl::InvalidArgumentError(absl::StrCat("B ", ShapeToString(b), " does not fit A ",
                                                     ShapeToString(a), " at axis ", axis_.value_or(axis)));
    }
    b_view->assign(a.size(), 1);
    for (int64_t i = 0; i < rank_b; ++i) {
      if (b[i] != 1 && b[i] != a[axis + i]) {
        return absl::InvalidArgumentError(absl::StrCat("B ", ShapeToString(b), " does not broadcast onto A ",
                                                       ShapeToString(a), " at axis ", axis));
      }
      (*b_view)[axis + i] = b[i];
    }
    return a;
  }

 private:
  bool legacy_ = false;
  bool broadcast_ = false;
  std::optional<int64_t> axis_;
};

// A kernel applying Op to two inputs of one type with broadcasting. Op: a functor on ComputeType values
// deriving from one of the bases above; optional Init(const KernelInfo&) for attributes and optional
// CheckInputs<T>(a, b) for argument checks that need the data (integer division by zero).
template <typename Op>
class BinaryKernel final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    RETURN_IF_ERROR(shapes_.Init(info));
    if constexpr (requires(Op& op) { op.Init(info); }) {
      return op_.Init(info);
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& a = *ctx.Input(0);
    const Tensor& b = *ctx.Input(1);
    if (a.dtype() != b.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat("inputs must have one element type, got ",
                                                     DataTypeName(a.dtype()), " and ",
                                                     DataTypeName(b.dtype())));
    }
    Shape b_view;
    ASSIGN_OR_RETURN(Shape out_shape, shapes_.Resolve(a.shape(), b.shape(), &b_view));
    absl::Status status = UnsupportedTypeError(a.dtype());
    DispatchAny(a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (Op::template kAccepts<T>) {
        if constexpr (requires { op_.template CheckInputs<T>(a, b); }) {
          status = op_.template CheckInputs<T>(a, b);
          if (!status.ok()) return;
        }
        using Out = OpResult<Op, T>;
        Tensor& out = ctx.Output(0, kTypeOf<Out>, std::move(out_shape));
        BroadcastBinary<T, T, Out>(ctx.pool(), a, b.Reshaped(b_view), out, op_);
        status = absl::OkStatus();
      }
    });
    return status;
  }

 private:
  BinaryShapes shapes_;
  Op op_;
};

// A kernel applying Op to each element of its one input. Op as for BinaryKernel (without CheckInputs).
template <typename Op>
class UnaryKernel final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    if constexpr (requires(Op& op) { op.Init(info); }) {
      return op_.Init(info);
    }
    (void)info;
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    absl::Status status = UnsupportedTypeError(x.dtype());
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (Op::template kAccepts<T>) {
        using Out = OpResult<Op, T>;
        Tensor& y = ctx.Output(0, kTypeOf<Out>, x.shape());
        if constexpr (std::is_same_v<T, float> && HasVectorMap<Op>) {
          MapFloatsWith(op_, ctx.pool(), x.data<T>(), y.data<T>(), x.NumElements());
        } else {
          MapUnary(ctx.pool(), x.data<T>(), y.data<Out>(), x.NumElements(), op_);
        }
        status = absl::OkStatus();
      }
    });
    return status;
  }

 private:
  Op op_;
};

}  // namespace onnxserve

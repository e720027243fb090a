// ArgMax and ArgMin: the index of the extreme value along one axis, as int64.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// Whether `x` replaces the current best `best`. Ties keep the first index unless `last` asks for the last
// one; NaN wins over numbers (numpy's argmax/argmin return the first NaN).
template <bool kMax, typename C>
inline bool Better(C x, C best, bool last) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(best)) return false;
    if (std::isnan(x)) return true;
  }
  if (last && x == best) return true;
  return kMax ? x > best : x < best;
}

template <bool kMax>
class ArgReduce final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis", 0));
    ASSIGN_OR_RETURN(const int64_t keepdims, info.Attr<int64_t>("keepdims", 1));
    ASSIGN_OR_RETURN(const int64_t select_last, info.Attr<int64_t>("select_last_index", 0));
    keepdims_ = keepdims != 0;
    select_last_index_ = select_last != 0;
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(axis_, x.rank()));
    const int64_t n = x.rank() == 0 ? 1 : x.dim(axis);
    if (n == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("data: axis ", axis_, " has size 0 in ", x.DebugString(), ", expected at least 1"));
    }
    Shape out_shape = x.shape();
    if (x.rank() > 0) {
      if (keepdims_) {
        out_shape[axis] = 1;
      } else {
        out_shape.erase(out_shape.begin() + axis);
      }
    }
    Tensor& y = ctx.Output(0, DataType::kInt64, out_shape);
    const int64_t inner = x.rank() == 0 ? 1 : NumElements(absl::MakeSpan(x.shape()).subspan(axis + 1));
    absl::Status status = absl::OkStatus();
    const bool dispatched = DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, bool>) {
        status = absl::InvalidArgumentError("data: bool is not supported, expected a numeric type");
      } else {
        Run<T>(x.data<T>(), n, inner, y.NumElements(), y.data<int64_t>(), ctx.pool());
      }
    });
    if (!dispatched) {
      return absl::InvalidArgumentError(absl::StrCat("data: ", DataTypeName(x.dtype()), " is not supported"));
    }
    return status;
  }

 private:
  // The input is [outer, n, inner]; output o = (outer, j) scans n values at stride `inner`.
  template <typename T>
  void Run(const T* x, int64_t n, int64_t inner, int64_t outputs, int64_t* y, ThreadPool& pool) const {
    const bool last = select_last_index_;
    pool.ParallelFor(outputs, std::max<int64_t>(1, 16384 / n), [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        const T* p = x + (o / inner) * n * inner + o % inner;
        ComputeType<T> best = ToCompute(p[0]);
        int64_t best_index = 0;
        for (int64_t i = 1; i < n; ++i) {
          const ComputeType<T> v = ToCompute(p[i * inner]);
          if (Better<kMax>(v, best, last)) {
            best = v;
            best_index = i;
          }
        }
        y[o] = best_index;
      }
    });
  }

  int64_t axis_ = 0;
  bool keepdims_ = true;
  bool select_last_index_ = false;
};

// Numeric types without bfloat16 (1-12); 13 adds bfloat16.
constexpr DataType kArg1Types[] = {DataType::kFloat, DataType::kDouble, DataType::kFloat16,
                                   DataType::kInt8,  DataType::kInt16,  DataType::kInt32,
                                   DataType::kInt64, DataType::kUint8,  DataType::kUint16,
                                   DataType::kUint32, DataType::kUint64};

// -1 axis in [0, r); -11 negative axis; -12 select_last_index; -13 bfloat16.
REGISTER_KERNEL(kOnnx, "ArgMax", 1, 10, kArg1Types, ArgReduce<true>);
REGISTER_KERNEL(kOnnx, "ArgMax", 11, 11, kArg1Types, ArgReduce<true>);
REGISTER_KERNEL(kOnnx, "ArgMax", 12, 12, kArg1Types, ArgReduce<true>);
REGISTER_KERNEL(kOnnx, "ArgMax", 13, kLatest, kNumericTypes, ArgReduce<true>);
REGISTER_KERNEL(kOnnx, "ArgMin", 1, 10, kArg1Types, ArgReduce<false>);
REGISTER_KERNEL(kOnnx, "ArgMin", 11, 11, kArg1Types, ArgReduce<false>);
REGISTER_KERNEL(kOnnx, "ArgMin", 12, 12, kArg1Types, ArgReduce<false>);
REGISTER_KERNEL(kOnnx, "ArgMin", 13, kLatest, kNumericTypes, ArgReduce<false>);

}  // namespace
}  // namespace onnxserve

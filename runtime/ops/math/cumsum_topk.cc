// CumSum and CumProd (running sums and products along an axis) and TopK (the k largest or smallest values along an axis with
// their indices). Both view the input as [outer, n, inner] around the axis.
#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/ops/common.h"
#include "runtime/ops/elementwise.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

struct AxisView {
  int64_t outer;
  int64_t n;
  int64_t inner;
};

AxisView ViewAround(const Shape& shape, int64_t axis) {
  AxisView v{1, shape.empty() ? 1 : shape[axis], 1};
  for (int64_t d = 0; d < axis; ++d) v.outer *= shape[d];
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) v.inner *= shape[d];
  return v;
}

// Running sums (CumSum) or products (CumProd) along the axis given as input 1, optionally exclusive
// (starting from the identity) and reversed. Integer results wrap around as two's complement.
struct SumStep {
  static constexpr int kIdentity = 0;
  template <typename A> static A Apply(A acc, A v) { return static_cast<A>(acc + v); }
};
struct ProductStep {
  static constexpr int kIdentity = 1;
  template <typename A> static A Apply(A acc, A v) { return static_cast<A>(acc * v); }
};

template <typename Step>
class Cumulative final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const int64_t exclusive, info.Attr<int64_t>("exclusive", 0));
    ASSIGN_OR_RETURN(const int64_t reverse, info.Attr<int64_t>("reverse", 0));
    exclusive_ = exclusive != 0;
    reverse_ = reverse != 0;
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& x = *ctx.Input(0);
    ASSIGN_OR_RETURN(const int64_t axis_value, ScalarInput(*ctx.Input(1), "axis"));
    ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(axis_value, x.rank()));
    Tensor& y = ctx.Output(0, x.dtype(), x.shape());
    if (x.NumElements() == 0) return absl::OkStatus();
    const AxisView view = ViewAround(x.shape(), axis);
    absl::Status status = absl::OkStatus();
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, bool>) {
        status = absl::InvalidArgumentError("x: bool is not supported, expected a numeric type");
      } else {
        Run<T>(x.data<T>(), view, y.data<T>(), ctx.pool());
      }
    });
    return status;
  }

 private:
  // Each (outer, j) line runs on its own; lines of one outer slice are adjacent in memory.
  template <typename T>
  void Run(const T* x, const AxisView& v, T* y, ThreadPool& pool) const {
    using Acc = WrapType<ComputeType<T>>;
    const int64_t step = reverse_ ? -v.inner : v.inner;
    const int64_t first = reverse_ ? (v.n - 1) * v.inner : 0;
    pool.ParallelFor(v.outer * v.inner, std::max<int64_t>(1, 16384 / v.n), [&](int64_t begin, int64_t end) {
      for (int64_t line = begin; line < end; ++line) {
        const int64_t start = (line / v.inner) * v.n * v.inner + line % v.inner + first;
        Acc acc = static_cast<Acc>(Step::kIdentity);
        for (int64_t i = 0, at = start; i < v.n; ++i, at += step) {
          const Acc value = static_cast<Acc>(ToCompute(x[at]));
          if (!exclusive_) acc = Step::Apply(acc, value);
          y[at] = FromCompute<T>(static_cast<ComputeType<T>>(acc));
          if (exclusive_) acc = Step::Apply(acc, value);
        }
      }
    });
  }

  bool exclusive_ = false;
  bool reverse_ = false;
};

// TopK-1 takes k as an attribute; 10+ as input K. Equal values keep their input order (lower index
// first), as the spec requires; the outputs are always sorted, which `sorted = 0` permits.
class TopK final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis", -1));
    ASSIGN_OR_RETURN(const int64_t largest, info.Attr<int64_t>("largest", 1));
    largest_ = largest != 0;
    if (info.opset() < 10) {
      ASSIGN_OR_RETURN(k_attr_, info.Attr<int64_t>("k"));
      if (k_attr_ < 0) return absl::InvalidArgumentError(absl::StrCat("k: ", k_attr_, ", expected >= 0"));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const bool k_from_input = k_attr_ < 0;
    RETURN_IF_ERROR(RequireInputs(ctx, k_from_input ? 2 : 1));
    const Tensor& x = *ctx.Input(0);
    int64_t k = k_attr_;
    if (k_from_input) {
      ASSIGN_OR_RETURN(k, ScalarInput(*ctx.Input(1), "K"));
    }
    ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(axis_, x.rank()));
    const AxisView view = ViewAround(x.shape(), axis);
    if (x.rank() == 0 || k < 0 || k > view.n) {
      return absl::InvalidArgumentError(absl::StrCat("K: ", k, " is out of range for axis ", axis_, " of ",
                                                     x.DebugString(), ", expected [0, axis size]"));
    }
    Shape out_shape = x.shape();
    out_shape[axis] = k;
    Tensor& values = ctx.Output(0, x.dtype(), out_shape);
    Tensor& indices = ctx.Output(1, DataType::kInt64, out_shape);
    if (values.NumElements() == 0) return absl::OkStatus();
    absl::Status status = absl::OkStatus();
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, bool>) {
        status = absl::InvalidArgumentError("X: bool is not supported, expected a numeric type");
      } else {
        Run<T>(x.data<T>(), view, k, values.data<T>(), indices.data<int64_t>(), ctx.pool());
      }
    });
    return status;
  }

 private:
  template <typename T>
  void Run(const T* x, const AxisView& v, int64_t k, T* values, int64_t* indices, ThreadPool& pool) const {
    using C = ComputeType<T>;
    using Entry = std::pair<C, int64_t>;
    const bool largest = largest_;
    auto before = [largest](const Entry& a, const Entry& b) {
      const bool a_first = largest ? OrderedLess(b.first, a.first) : OrderedLess(a.first, b.first);
      const bool b_first = largest ? OrderedLess(a.first, b.first) : OrderedLess(b.first, a.first);
      return a_first || (!b_first && a.second < b.second);
    };
    pool.ParallelFor(v.outer * v.inner, std::max<int64_t>(1, 16384 / v.n), [&](int64_t begin, int64_t end) {
      std::vector<Entry> line(static_cast<size_t>(v.n));  // scratch reused by the lines of this chunk
      for (int64_t l = begin; l < end; ++l) {
        const int64_t o = l / v.inner, j = l % v.inner;
        const T* in = x + o * v.n * v.inner + j;
        for (int64_t i = 0; i < v.n; ++i) line[i] = {ToCompute(in[i * v.inner]), i};
        std::partial_sort(line.begin(), line.begin() + k, line.end(), before);
        const int64_t out_base = o * k * v.inner + j;
        for (int64_t i = 0; i < k; ++i) {
          values[out_base + i * v.inner] = FromCompute<T>(line[i].first);
          indices[out_base + i * v.inner] = line[i].second;
        }
      }
    });
  }

  int64_t axis_ = -1;
  int64_t k_attr_ = -1;  // TopK-1's k; -1 when k is input K
  bool largest_ = true;
};

// CumSum-11: 32/64-bit integers, float, double; -14 adds float16 and bfloat16.
constexpr DataType kCumSum11Types[] = {DataType::kFloat, DataType::kDouble, DataType::kInt32,
                                       DataType::kInt64, DataType::kUint32, DataType::kUint64};
constexpr DataType kCumSum14Types[] = {DataType::kFloat,    DataType::kDouble, DataType::kFloat16,
                                       DataType::kBFloat16, DataType::kInt32,  DataType::kInt64,
                                       DataType::kUint32,   DataType::kUint64};
REGISTER_KERNEL(kOnnx, "CumSum", 11, 13, kCumSum11Types, Cumulative<SumStep>);
REGISTER_KERNEL(kOnnx, "CumSum", 14, kLatest, kCumSum14Types, Cumulative<SumStep>);
constexpr DataType kCumProdTypes[] = {DataType::kUint32,  DataType::kUint64, DataType::kInt32,
                                      DataType::kInt64,   DataType::kFloat16, DataType::kFloat,
                                      DataType::kDouble,  DataType::kBFloat16};
REGISTER_KERNEL(kOnnx, "CumProd", 26, kLatest, kCumProdTypes, Cumulative<ProductStep>);

// TopK-1/-10: float16, float, double; -11 adds largest, sorted and the integer types; -24 bfloat16.
constexpr DataType kTopK1Types[] = {DataType::kFloat, DataType::kDouble, DataType::kFloat16};
constexpr DataType kTopK11Types[] = {DataType::kFloat, DataType::kDouble, DataType::kFloat16,
                                     DataType::kInt8,  DataType::kInt16,  DataType::kInt32,
                                     DataType::kInt64, DataType::kUint8,  DataType::kUint16,
                                     DataType::kUint32, DataType::kUint64};
REGISTER_KERNEL(kOnnx, "TopK", 1, 9, kTopK1Types, TopK);
REGISTER_KERNEL(kOnnx, "TopK", 10, 10, kTopK1Types, TopK);
REGISTER_KERNEL(kOnnx, "TopK", 11, 23, kTopK11Types, TopK);
REGISTER_KERNEL(kOnnx, "TopK", 24, kLatest, kNumericTypes, TopK);

}  // namespace
}  // namespace onnxserve

// Softmax, LogSoftmax and Hardmax.
//
// Versions 1 and 11 coerce the input to 2-D, [d0*..*d(axis-1), d(axis)*..*d(n-1)], and normalize each row
// (axis defaults to 1). Version 13 normalizes along the single dimension `axis` (default -1). Both are the
// same loop over X viewed as [outer, n, inner]: 1/11 is the case inner = 1.
#include <algorithm>
#include <cmath>

#include "runtime/math/vector_kernels.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

struct SoftmaxLayout {
  int64_t outer = 1;
  int64_t n = 1;      // elements normalized together
  int64_t inner = 1;  // stride between them
};

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

// One row of n values at `stride`: writes the normalized row. `C` is the compute type.
template <SoftmaxKind kKind, typename T>
void NormalizeRow(const T* x, T* y, int64_t n, int64_t stride) {
  using C = ComputeType<T>;
  C max = ToCompute(x[0]);
  int64_t argmax = 0;
  for (int64_t i = 1; i < n; ++i) {
    const C v = ToCompute(x[i * stride]);
    if (v > max) {
      max = v;
      argmax = i;
    }
  }
  if constexpr (kKind == SoftmaxKind::kHardmax) {
    for (int64_t i = 0; i < n; ++i) y[i * stride] = FromCompute<T>(i == argmax ? C{1} : C{0});
  } else {
    C sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += std::exp(ToCompute(x[i * stride]) - max);
    if constexpr (kKind == SoftmaxKind::kSoftmax) {
      const C inv = C{1} / sum;
      for (int64_t i = 0; i < n; ++i) y[i * stride] = FromCompute<T>(std::exp(ToCompute(x[i * stride]) - max) * inv);
    } else {
      const C log_sum = std::log(sum);
      for (int64_t i = 0; i < n; ++i) y[i * stride] = FromCompute<T>(ToCompute(x[i * stride]) - max - log_sum);
    }
  }
}

// A contiguous float row on the vector kernels: the max, exp(x - max) stored and summed in one pass, then
// one scaling pass. Every element goes through the same vector code, so equal inputs stay equal outputs.
template <SoftmaxKind kKind>
void NormalizeFloatRow(const vec::VectorKernels& k, const float* x, float* y, int64_t n) {
  const float max = k.max(x, n);
  const float sum = k.exp_shifted_sum(x, y, n, max);
  if constexpr (kKind == SoftmaxKind::kSoftmax) {
    const float inv = 1.0f / sum;
    k.binary(vec::BinaryOp::kMul, y, true, &inv, false, y, n);
  } else {
    const float log_sum = std::log(sum);
    k.binary(vec::BinaryOp::kSub, x, true, &max, false, y, n);
    k.binary(vec::BinaryOp::kSub, y, true, &log_sum, false, y, n);
  }
}

template <SoftmaxKind kKind>
class SoftmaxFamily final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    per_axis_ = info.opset() >= 13;
    ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis", per_axis_ ? -1 : 1));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    ASSIGN_OR_RETURN(SoftmaxLayout layout, LayoutOf(x.shape()));
    Tensor& y = ctx.Output(0, x.dtype(), x.shape());
    if (x.NumElements() == 0) return absl::OkStatus();
    bool ok = false;
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        ok = true;
        Run<T>(ctx.pool(), layout, x.data<T>(), y.data<T>());
      }
    });
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat("input must be floating-point, got ", x.DebugString()));
    }
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<SoftmaxLayout> LayoutOf(const Shape& shape) const {
    const int64_t rank = static_cast<int64_t>(shape.size());
    ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(axis_, rank));
    SoftmaxLayout l;
    for (int64_t d = 0; d < rank; ++d) {
      if (d < axis) {
        l.outer *= shape[d];
      } else if (d == axis || !per_axis_) {
        l.n *= shape[d];
      } else {
        l.inner *= shape[d];
      }
    }
    return l;
  }

  template <typename T>
  static void Run(ThreadPool& pool, const SoftmaxLayout& l, const T* x, T* y) {
    const int64_t rows = l.outer * l.inner;
    pool.ParallelFor(rows, std::max<int64_t>(1, 4096 / l.n), [&](int64_t begin, int64_t end) {
      if constexpr (std::is_same_v<T, float> && kKind != SoftmaxKind::kHardmax) {
        if (l.inner == 1) {
          const vec::VectorKernels& k = vec::Kernels();
          for (int64_t r = begin; r < end; ++r) NormalizeFloatRow<kKind>(k, x + r * l.n, y + r * l.n, l.n);
          return;
        }
      }
      for (int64_t r = begin; r < end; ++r) {
        const int64_t offset = (r / l.inner) * l.n * l.inner + r % l.inner;
        NormalizeRow<kKind, T>(x + offset, y + offset, l.n, l.inner);
      }
    });
  }

  bool per_axis_ = true;
  int64_t axis_ = -1;
};

using Softmax = SoftmaxFamily<SoftmaxKind::kSoftmax>;
using LogSoftmax = SoftmaxFamily<SoftmaxKind::kLogSoftmax>;
using Hardmax = SoftmaxFamily<SoftmaxKind::kHardmax>;

REGISTER_KERNEL(kOnnx, "Softmax", 1, 10, kFloatTypes, Softmax);
REGISTER_KERNEL(kOnnx, "Softmax", 11, 12, kFloatTypes, Softmax);
REGISTER_KERNEL(kOnnx, "Softmax", 13, kLatest, kFloatTypes, Softmax);
REGISTER_KERNEL(kOnnx, "LogSoftmax", 1, 10, kFloatTypes, LogSoftmax);
REGISTER_KERNEL(kOnnx, "LogSoftmax", 11, 12, kFloatTypes, LogSoftmax);
REGISTER_KERNEL(kOnnx, "LogSoftmax", 13, kLatest, kFloatTypes, LogSoftmax);
REGISTER_KERNEL(kOnnx, "Hardmax", 1, 10, kFloatTypes, Hardmax);
REGISTER_KERNEL(kOnnx, "Hardmax", 11, 12, kFloatTypes, Hardmax);
REGISTER_KERNEL(kOnnx, "Hardmax", 13, kLatest, kFloatTypes, Hardmax);

}  // namespace
}  // namespace onnxserve

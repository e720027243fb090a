// BatchNormalization: y = (x - mean) / sqrt(var + epsilon) * scale + B per channel, folded into y = x*a + b.
//
// How each version decides the mode and the shape of the statistics:
//   1, 6    training unless is_test != 0; `spatial` = 0 means one statistic per element of C x D1 x ...
//   7       no is_test: training when the node asks for more than Y (the spec's output case #1); spatial.
//   9       as 7 without `spatial`.
//   14      training_mode attribute; training outputs running_mean, running_var only.
//   15      as 14; scale/B and mean/var may each have a type other than X's.
// In training the batch statistics (population variance over N and the spatial dims) normalize X and
// update running = input * momentum + batch * (1 - momentum). Before 14 the outputs are Y, running mean,
// running var, saved (batch) mean, saved (batch) var.
#include <cmath>
#include <optional>
#include <vector>

#include "runtime/math/vector_kernels.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// X viewed as [batch, channels, inner]: statistics are per channel, shared over batch and inner.
struct BatchNormLayout {
  int64_t batch = 1;
  int64_t channels = 1;
  int64_t inner = 1;
};

BatchNormLayout LayoutOf(const Shape& shape, bool spatial) {
  BatchNormLayout layout;
  if (shape.empty()) return layout;
  layout.batch = shape[0];
  for (size_t d = 1; d < shape.size(); ++d) {
    // Non-spatial statistics cover every element of C x D1 x ...: all of those dims become channels.
    (d == 1 || !spatial ? layout.channels : layout.inner) *= shape[d];
  }
  return layout;
}

// Per-channel affine coefficients y = x * a + b.
struct Affine {
  std::vector<double> a, b;
};

Affine FoldAffine(const Tensor& scale, const Tensor& bias, const std::vector<double>& mean,
                  const std::vector<double>& var, double epsilon) {
  Affine f;
  const size_t channels = mean.size();
  f.a.resize(channels);
  f.b.resize(channels);
  for (size_t c = 0; c < channels; ++c) {
    f.a[c] = scale.GetAsDouble(static_cast<int64_t>(c)) / std::sqrt(var[c] + epsilon);
    f.b[c] = bias.GetAsDouble(static_cast<int64_t>(c)) - mean[c] * f.a[c];
  }
  return f;
}

std::vector<double> ValuesOf(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.NumElements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = t.GetAsDouble(static_cast<int64_t>(i));
  return v;
}

// y = x * a[c] + b[c] over [batch, channels, inner], parallel over batch x channels rows.
template <typename T>
void ApplyAffine(ThreadPool& pool, const BatchNormLayout& l, const T* x, const Affine& f, T* y) {
  using C = ComputeType<T>;
  const int64_t rows = l.batch * l.channels;
  pool.ParallelFor(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(l.inner, 1)),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t r = begin; r < end; ++r) {
                       const size_t c = static_cast<size_t>(r % l.channels);
                       const C a = static_cast<C>(f.a[c]);
                       const C b = static_cast<C>(f.b[c]);
                       const T* in = x + r * l.inner;
                       T* out = y + r * l.inner;
                       if constexpr (std::is_same_v<T, float>) {
                         vec::Kernels().affine(in, out, l.inner, a, b);
                       } else {
                         for (int64_t i = 0; i < l.inner; ++i) out[i] = FromCompute<T>(ToCompute(in[i]) * a + b);
                       }
                     }
                   });
}

// Batch mean and population variance per channel, accumulated in double (two passes for accuracy).
template <typename T>
void BatchStatistics(ThreadPool& pool, const BatchNormLayout& l, const T* x, std::vector<double>& mean,
                     std::vector<double>& var) {
  mean.assign(static_cast<size_t>(l.channels), 0.0);
  var.assign(static_cast<size_t>(l.channels), 0.0);
  const double count = static_cast<double>(l.batch * l.inner);
  pool.ParallelFor(l.channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      double sum = 0;
      for (int64_t n = 0; n < l.batch; ++n) {
        const T* in = x + (n * l.channels + c) * l.inner;
        for (int64_t i = 0; i < l.inner; ++i) sum += static_cast<double>(ToCompute(in[i]));
      }
      const double m = sum / count;
      double sq = 0;
      for (int64_t n = 0; n < l.batch; ++n) {
        const T* in = x + (n * l.channels + c) * l.inner;
        for (int64_t i = 0; i < l.inner; ++i) {
          const double d = static_cast<double>(ToCompute(in[i])) - m;
          sq += d * d;
        }
      }
      mean[static_cast<size_t>(c)] = m;
      var[static_cast<size_t>(c)] = sq / count;
    }
  });
}

// Writes `values` into output `index` with the given type and shape, when the output is wanted.
void WriteStatistic(KernelContext& ctx, int index, DataType type, const Shape& shape,
                    const std::vector<double>& values) {
  if (!ctx.OutputWanted(index)) return;
  Tensor& out = ctx.Output(index, type, shape);
  DispatchNumeric(type, [&](auto tag) {
    using T = decltype(tag);
    T* data = out.data<T>();
    for (size_t i = 0; i < values.size(); ++i) data[i] = static_cast<T>(static_cast<ComputeType<T>>(values[i]));
  });
}

class BatchNorm final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    opset_ = info.opset();
    ASSIGN_OR_RETURN(float epsilon, info.Attr<float>("epsilon", 1e-5f));
    ASSIGN_OR_RETURN(float momentum, info.Attr<float>("momentum", 0.9f));
    epsilon_ = epsilon;
    momentum_ = momentum;
    if (opset_ < 9) {
      ASSIGN_OR_RETURN(int64_t spatial, info.Attr<int64_t>("spatial", 1));
      spatial_ = spatial != 0;
    }
    if (opset_ < 7) {
      ASSIGN_OR_RETURN(int64_t is_test, info.Attr<int64_t>("is_test", 0));
      training_ = is_test == 0;
    } else if (opset_ < 14) {
      training_ = info.HasOutput(1) || info.HasOutput(2) || info.HasOutput(3) || info.HasOutput(4);
    } else {
      ASSIGN_OR_RETURN(int64_t training_mode, info.Attr<int64_t>("training_mode", 0));
      training_ = training_mode != 0;
      if (!training_ && (info.HasOutput(1) || info.HasOutput(2))) {
        return absl::InvalidArgumentError(
            "running_mean and running_var are outputs of training_mode=1 only, but the node asks for them");
      }
    }
    FoldConstants(info);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 5));
    const Tensor& x = *ctx.Input(0);
    const BatchNormLayout layout = LayoutOf(x.shape(), spatial_);
    RETURN_IF_ERROR(CheckParameters(ctx, layout));
    const Tensor& input_mean = *ctx.Input(3);
    const Tensor& input_var = *ctx.Input(4);

    std::vector<double> mean, var;
    Affine folded;
    const Affine* affine = &folded;
    if (prepacked_.has_value()) {
      affine = &*prepacked_;
    } else if (training_) {
      DispatchNumeric(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_floating_point_v<ComputeType<T>>) {
          BatchStatistics<T>(ctx.pool(), layout, x.data<T>(), mean, var);
        }
      });
    } else {
      mean = ValuesOf(input_mean);
      var = ValuesOf(input_var);
    }
    if (!prepacked_.has_value()) folded = FoldAffine(*ctx.Input(1), *ctx.Input(2), mean, var, epsilon_);
    bool ok = false;
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        ok = true;
        ApplyAffine<T>(ctx.pool(), layout, x.data<T>(), *affine, ctx.Output(0, x.dtype(), x.shape()).data<T>());
      }
    });
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat("input \"X\" must be floating-point, got ", x.DebugString()));
    }
    if (training_) WriteTrainingOutputs(ctx, input_mean, input_var, mean, var);
    return absl::OkStatus();
  }

 private:
  // Inference with constant scale, B, mean and var (the usual exported model): fold them once at load.
  void FoldConstants(const KernelInfo& info) {
    if (training_) return;
    for (int i = 1; i < 5; ++i) {
      // Mismatched sizes are left to Compute, which knows X and reports them.
      const Tensor* param = info.ConstantInput(i);
      if (param == nullptr || param->NumElements() != info.ConstantInput(1)->NumElements()) return;
    }
    prepacked_ = FoldAffine(*info.ConstantInput(1), *info.ConstantInput(2), ValuesOf(*info.ConstantInput(3)),
                            ValuesOf(*info.ConstantInput(4)), epsilon_);
  }

  absl::Status CheckParameters(const KernelContext& ctx, const BatchNormLayout& layout) const {
    static constexpr const char* kNames[] = {"X", "scale", "B", "mean", "var"};
    for (int i = 1; i < 5; ++i) {
      if (ctx.Input(i)->NumElements() != layout.channels) {
        return absl::InvalidArgumentError(absl::StrCat("input \"", kNames[i], "\" should hold ", layout.channels,
                                                       " values (one per ", spatial_ ? "channel" : "feature",
                                                       " of X ", ctx.Input(0)->DebugString(), "), got ",
                                                       ctx.Input(i)->DebugString()));
      }
    }
    return absl::OkStatus();
  }

  void WriteTrainingOutputs(KernelContext& ctx, const Tensor& input_mean, const Tensor& input_var,
                            const std::vector<double>& batch_mean, const std::vector<double>& batch_var) const {
    std::vector<double> running_mean = ValuesOf(input_mean);
    std::vector<double> running_var = ValuesOf(input_var);
    for (size_t c = 0; c < running_mean.size(); ++c) {
      running_mean[c] = running_mean[c] * momentum_ + batch_mean[c] * (1 - momentum_);
      running_var[c] = running_var[c] * momentum_ + batch_var[c] * (1 - momentum_);
    }
    WriteStatistic(ctx, 1, input_mean.dtype(), input_mean.shape(), running_mean);
    WriteStatistic(ctx, 2, input_var.dtype(), input_var.shape(), running_var);
    if (opset_ < 14) {
      WriteStatistic(ctx, 3, input_mean.dtype(), input_mean.shape(), batch_mean);
      WriteStatistic(ctx, 4, input_var.dtype(), input_var.shape(), batch_var);
    }
  }

  int opset_ = 0;
  double epsilon_ = 1e-5;
  double momentum_ = 0.9;
  bool spatial_ = true;
  bool training_ = false;
  std::optional<Affine> prepacked_;
};

REGISTER_KERNEL(kOnnx, "BatchNormalization", 1, 5, kFloatTypes, BatchNorm);
REGISTER_KERNEL(kOnnx, "BatchNormalization", 6, 6, kFloatTypes, BatchNorm);
REGISTER_KERNEL(kOnnx, "BatchNormalization", 7, 8, kFloatTypes, BatchNorm);
REGISTER_KERNEL(kOnnx, "BatchNormalization", 9, 13, kFloatTypes, BatchNorm);
REGISTER_KERNEL(kOnnx, "BatchNormalization", 14, 14, kFloatTypes, BatchNorm);
REGISTER_KERNEL(kOnnx, "BatchNormalization", 15, kLatest, kFloatTypes, BatchNorm);

}  // namespace
}  // namespace onnxserve

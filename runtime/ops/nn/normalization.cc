// Normalizations that standardize groups of elements with their own statistics: LayerNormalization,
// InstanceNormalization, GroupNormalization, MeanVarianceNormalization, and LRN (across channels).
//
// Layer, Instance and Group normalization all standardize contiguous rows of X ([outer, len]) and then
// apply a scale and bias; they differ in what a row is and how scale/bias are indexed:
//   LayerNormalization-17      rows are d0*..*d(axis-1), scale/B broadcast over the row (d(axis)..).
//   InstanceNormalization-1,6,22  rows are (n, c) planes, scale/B per channel.
//   GroupNormalization-18      rows are (n, group), scale/bias per group (shape [num_groups]).
//   GroupNormalization-21      same rows, scale/bias per channel (shape [C]); stash_type added.
// Statistics accumulate in double whatever stash_type says (at least as precise as every allowed stash).
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "runtime/core/run_limits.h"
#include "runtime/math/vector_kernels.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

struct RowStats {
  double mean = 0;
  double inv_std = 0;
};

// Mean and 1/sqrt(population variance + epsilon) of len values, two passes for accuracy. Float rows take
// the vector kernels' blocked sums (float within a block, double across blocks).
template <typename T>
RowStats StatsOf(const T* x, int64_t len, double epsilon) {
  if constexpr (std::is_same_v<T, float>) {
    const vec::VectorKernels& k = vec::Kernels();
    const double mean = len > 0 ? k.sum(x, len) / static_cast<double>(len) : 0;
    const double var =
        len > 0 ? k.sum_squared_deviations(x, len, static_cast<float>(mean)) / static_cast<double>(len) : 0;
    return {mean, 1.0 / std::sqrt(var + epsilon)};
  }
  double sum = 0;
  for (int64_t i = 0; i < len; ++i) sum += static_cast<double>(ToCompute(x[i]));
  const double mean = len > 0 ? sum / static_cast<double>(len) : 0;
  double sq = 0;
  for (int64_t i = 0; i < len; ++i) {
    const double d = static_cast<double>(ToCompute(x[i])) - mean;
    sq += d * d;
  }
  const double var = len > 0 ? sq / static_cast<double>(len) : 0;
  return {mean, 1.0 / std::sqrt(var + epsilon)};
}

// Offsets into a parameter (scale or bias) for each position of a row of `row_shape`, following
// unidirectional broadcasting; empty when the parameter is laid out exactly like the row, or when no row is
// read (`rows` 0: X [0, 2^32] normalizes none of its 2^32-long rows, whose offsets would be 32 GiB).
absl::StatusOr<std::vector<int64_t>> BroadcastOffsets(const Tensor& param, const Shape& row_shape, int64_t rows,
                                                      const char* name) {
  if (param.shape() == row_shape) return std::vector<int64_t>{};
  Shape shape = param.shape();
  while (shape.size() > row_shape.size() && shape.front() == 1) shape.erase(shape.begin());
  bool ok = shape.size() <= row_shape.size();
  for (size_t i = 0; ok && i < shape.size(); ++i) {
    const int64_t dim = shape[shape.size() - 1 - i];
    ok = dim == 1 || dim == row_shape[row_shape.size() - 1 - i];
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat("input \"", name, "\" ", param.DebugString(),
                                                   " does not broadcast to the normalized dims ",
                                                   ShapeToString(row_shape)));
  }
  if (rows == 0) return std::vector<int64_t>{};
  std::vector<int64_t> offsets(static_cast<size_t>(NumElements(row_shape)));
  ForEachBroadcast<1>(row_shape, {BroadcastStrides(shape, row_shape)},
                      [&](int64_t i, const std::array<int64_t, 1>& at) { offsets[i] = at[0]; });
  return offsets;
}

// The rows LayerNormalization normalizes: the product of X's dims before `axis`.
int64_t RowsOf(const Tensor& x, int64_t axis) {
  return NumElements(Shape(x.shape().begin(), x.shape().begin() + axis));
}

class LayerNormalization final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis", -1));
    ASSIGN_OR_RETURN(float epsilon, info.Attr<float>("epsilon", 1e-5f));
    epsilon_ = epsilon;
    ASSIGN_OR_RETURN(int64_t stash, info.Attr<int64_t>("stash_type", 1));
    ASSIGN_OR_RETURN(stash_type_, DataTypeFromOnnx(static_cast<int32_t>(stash)));
    if (stash_type_ != DataType::kFloat && stash_type_ != DataType::kDouble && stash_type_ != DataType::kBFloat16) {
      return absl::InvalidArgumentError(absl::StrCat("stash_type must be float, double or bfloat16, got ", stash));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& x = *ctx.Input(0);
    const Tensor& scale = *ctx.Input(1);
    const Tensor* bias = ctx.Input(2);
    ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(axis_, x.rank()));
    const Shape row_shape(x.shape().begin() + axis, x.shape().end());
    const int64_t rows = RowsOf(x, axis);
    absl::StatusOr<std::vector<int64_t>> scale_at = BroadcastOffsets(scale, row_shape, rows, "Scale");
    absl::StatusOr<std::vector<int64_t>> bias_at = std::vector<int64_t>{};
    if (bias != nullptr) {
      bias_at = BroadcastOffsets(*bias, row_shape, rows, "B");
      if (bias->dtype() != x.dtype()) return absl::InvalidArgumentError("B must have the type of X");
    }
    if (scale.dtype() != x.dtype()) return absl::InvalidArgumentError("Scale must have the type of X");
    if (!scale_at.ok() || !bias_at.ok()) {
      return NormalizeThenBroadcast(ctx, x, axis, scale, bias, scale_at.ok() ? bias_at.status() : scale_at.status());
    }
    return Normalize(ctx, x, axis, scale, *scale_at, bias, *bias_at, ctx.Output(0, x.dtype(), x.shape()));
  }

 private:
  // Y = (X - mean) / sqrt(var + epsilon) * Scale + B into `out` (X's shape), with the statistics outputs.
  absl::Status Normalize(KernelContext& ctx, const Tensor& x, int64_t axis, const Tensor& scale,
                         const std::vector<int64_t>& scale_at, const Tensor* bias, const std::vector<int64_t>& bias_at,
                         Tensor& out_tensor) const {
    const Shape row_shape(x.shape().begin() + axis, x.shape().end());
    Shape stats_shape = x.shape();
    std::fill(stats_shape.begin() + axis, stats_shape.end(), 1);
    const int64_t len = NumElements(row_shape);
    const int64_t rows = RowsOf(x, axis);
    // A tensor, charged to the run: X [2^32, 0] has 2^32 empty rows, 64 GiB of statistics.
    static_assert(sizeof(RowStats) == 2 * sizeof(double));
    Tensor stats_tensor(DataType::kDouble, {rows, 2});
    RowStats* stats = reinterpret_cast<RowStats*>(stats_tensor.data<double>());
    RETURN_IF_ERROR(DispatchFloating(x, "input \"X\"", [&](auto tag) {
      using T = decltype(tag);
      using C = ComputeType<T>;
      const T* in = x.data<T>();
      const T* s = scale.data<T>();
      const T* b = bias != nullptr ? bias->data<T>() : nullptr;
      T* out = out_tensor.template data<T>();
      ForEachRow(ctx.pool(), rows, len, [&](int64_t r) {
        const RowStats st = stats[r] = StatsOf(in + r * len, len, epsilon_);
        const C mean = static_cast<C>(st.mean), inv_std = static_cast<C>(st.inv_std);
        if constexpr (std::is_same_v<T, float>) {
          if (scale_at.empty() && bias_at.empty()) {
            vec::Kernels().normalize(in + r * len, out + r * len, len, mean, inv_std, s, b);
            return;
          }
        }
        for (int64_t i = 0; i < len; ++i) {
          const C normalized = (ToCompute(in[r * len + i]) - mean) * inv_std;
          const C shift = b == nullptr ? C{0} : ToCompute(b[bias_at.empty() ? i : bias_at[i]]);
          out[r * len + i] = FromCompute<T>(normalized * ToCompute(s[scale_at.empty() ? i : scale_at[i]]) + shift);
        }
      });
    }));
    WriteStats(ctx, 1, stats_shape, stats, rows, [](const RowStats& s) { return s.mean; });
    WriteStats(ctx, 2, stats_shape, stats, rows, [](const RowStats& s) { return s.inv_std; });
    return absl::OkStatus();
  }

  // Scale or B that do not fit the normalized dims but broadcast with X, as the Mul and Add of a spelled-out
  // layer normalization do (LayerNorm fusion absorbs those without seeing shapes: gamma [4] against a
  // normalized dim of 1 makes Y [..., 4]): normalize with a Scale of 1, then multiply and add broadcasting.
  // `misfit` is the error when they do not broadcast either.
  absl::Status NormalizeThenBroadcast(KernelContext& ctx, const Tensor& x, int64_t axis, const Tensor& scale,
                                      const Tensor* bias, const absl::Status& misfit) const {
    Shape y_shape = x.shape();
    for (const Tensor* param : {&scale, bias}) {
      if (param == nullptr) continue;
      absl::StatusOr<Shape> widened = BroadcastShapes(y_shape, param->shape());
      if (!widened.ok()) return misfit;
      y_shape = *std::move(widened);
    }
    const Shape row_shape(x.shape().begin() + axis, x.shape().end());
    Tensor one(x.dtype(), {});
    ASSIGN_OR_RETURN(Tensor normalized, Tensor::Create(x.dtype(), x.shape()));
    RETURN_IF_ERROR(DispatchFloating(x, "input \"X\"", [&](auto tag) {
      using T = decltype(tag);
      one.data<T>()[0] = FromCompute<T>(ComputeType<T>{1});
    }));
    ASSIGN_OR_RETURN(const std::vector<int64_t> one_at,
                     BroadcastOffsets(one, row_shape, RowsOf(x, axis), "Scale"));
    RETURN_IF_ERROR(Normalize(ctx, x, axis, one, one_at, nullptr, {}, normalized));
    ASSIGN_OR_RETURN(Tensor * y, ctx.CheckedOutput(0, x.dtype(), y_shape));
    const std::array<std::vector<int64_t>, 3> strides = {
        BroadcastStrides(x.shape(), y_shape), BroadcastStrides(scale.shape(), y_shape),
        BroadcastStrides(bias != nullptr ? bias->shape() : Shape{}, y_shape)};
    return DispatchFloating(x, "input \"X\"", [&](auto tag) {
      using T = decltype(tag);
      using C = ComputeType<T>;
      const T* n = normalized.data<T>();
      const T* s = scale.data<T>();
      const T* b = bias != nullptr ? bias->data<T>() : nullptr;
      T* out = y->template data<T>();
      ForEachBroadcast(y_shape, strides, [&](int64_t at_out, const std::array<int64_t, 3>& at) {
        const C shift = b == nullptr ? C{0} : ToCompute(b[at[2]]);
        out[at_out] = FromCompute<T>(ToCompute(n[at[0]]) * ToCompute(s[at[1]]) + shift);
      });
    });
  }

  template <typename Field>
  void WriteStats(KernelContext& ctx, int index, const Shape& shape, const RowStats* stats, int64_t rows,
                  Field field) const {
    if (!ctx.OutputWanted(index)) return;
    Tensor& out = ctx.Output(index, stash_type_, shape);
    DispatchNumeric(stash_type_, [&](auto tag) {
      using U = decltype(tag);
      U* data = out.data<U>();
      for (int64_t i = 0; i < rows; ++i) data[i] = static_cast<U>(static_cast<ComputeType<U>>(field(stats[i])));
    });
  }

  int64_t axis_ = -1;
  double epsilon_ = 1e-5;
  DataType stash_type_ = DataType::kFloat;
};

// Instance and Group normalization: rows are `groups` consecutive blocks of each instance n; the scale
// and bias of element i of row r are at ParamIndex(r, i).
class GroupedNormalization final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(float epsilon, info.Attr<float>("epsilon", 1e-5f));
    epsilon_ = epsilon;
    instance_ = info.op_type() == "InstanceNormalization";
    if (!instance_) {
      ASSIGN_OR_RETURN(num_groups_, info.Attr<int64_t>("num_groups"));
      if (num_groups_ < 1) return absl::InvalidArgumentError("num_groups must be positive");
      per_channel_params_ = info.opset() >= 21;
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 3));
    const Tensor& x = *ctx.Input(0);
    if (x.rank() < 2) {
      return absl::InvalidArgumentError(absl::StrCat("input should be [N, C, ...], got ", x.DebugString()));
    }
    const int64_t channels = x.dim(1);
    // No channels make one empty group for InstanceNormalization: 0 groups would divide by zero below.
    const int64_t groups = instance_ ? std::max<int64_t>(channels, 1) : num_groups_;
    if (channels % groups != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("num_groups ", groups, " does not divide the ", channels, " channels of ", x.DebugString()));
    }
    const int64_t spatial = channels == 0 || x.dim(0) == 0 ? 0 : x.NumElements() / (x.dim(0) * channels);
    const int64_t channels_per_group = channels / groups;
    const int64_t len = channels_per_group * spatial;
    const int64_t param_count = instance_ || per_channel_params_ ? channels : groups;
    for (int i = 1; i < 3; ++i) {
      if (ctx.Input(i)->NumElements() != param_count || ctx.Input(i)->dtype() != x.dtype()) {
        return absl::InvalidArgumentError(absl::StrCat("input ", i == 1 ? "\"scale\"" : "\"bias\"", " should be ",
                                                       DataTypeName(x.dtype()), "[", param_count, "], got ",
                                                       ctx.Input(i)->DebugString()));
      }
    }
    return DispatchFloating(x, "input \"X\"", [&](auto tag) {
      using T = decltype(tag);
      using C = ComputeType<T>;
      const T* in = x.data<T>();
      const T* s = ctx.Input(1)->data<T>();
      const T* b = ctx.Input(2)->data<T>();
      T* out = ctx.Output(0, x.dtype(), x.shape()).template data<T>();
      ForEachRow(ctx.pool(), x.dim(0) * groups, len, [&](int64_t r) {
        const RowStats st = StatsOf(in + r * len, len, epsilon_);
        const C mean = static_cast<C>(st.mean), inv_std = static_cast<C>(st.inv_std);
        const int64_t group = r % groups;
        for (int64_t c = 0; c < channels_per_group; ++c) {
          const int64_t p = param_count == groups ? group : group * channels_per_group + c;
          const C a = ToCompute(s[p]) * inv_std;
          const C shift = ToCompute(b[p]) - mean * a;
          const T* row_in = in + r * len + c * spatial;
          T* row_out = out + r * len + c * spatial;
          if constexpr (std::is_same_v<T, float>) {
            vec::Kernels().affine(row_in, row_out, spatial, a, shift);
          } else {
            for (int64_t i = 0; i < spatial; ++i) row_out[i] = FromCompute<T>(ToCompute(row_in[i]) * a + shift);
          }
        }
      });
    });
  }

 private:
  double epsilon_ = 1e-5;
  bool instance_ = false;
  int64_t num_groups_ = 1;
  bool per_channel_params_ = false;
};

// MeanVarianceNormalization: (X - mean) / (sqrt(var) + 1e-9) with statistics over `axes` (the ONNX
// function body adds that epsilon to the standard deviation).
class MeanVarianceNormalization final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(axes_, info.Attr<std::vector<int64_t>>("axes", {0, 2, 3}));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    Shape kept = x.shape();
    for (int64_t axis : axes_) {
      ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axis, x.rank()));
      if (a < x.rank()) kept[a] = 1;  // a scalar's axis 0, which NormalizeAxis accepts, has no dim to keep
    }
    const std::array<std::vector<int64_t>, 1> strides = {BroadcastStrides(kept, x.shape())};
    const int64_t groups = NumElements(kept);
    const double count = groups == 0 ? 0 : static_cast<double>(x.NumElements()) / static_cast<double>(groups);
    return DispatchFloating(x, "input \"X\"", [&](auto tag) {
      using T = decltype(tag);
      // Nothing to normalize, however many groups the empty X's other dims make: X [2^24, 256, 0, 1] over
      // axes [2, 3] has 2^32 of them, whose sums would be 64 GiB.
      if (x.NumElements() == 0) {
        ctx.Output(0, x.dtype(), x.shape());
        return;
      }
      const T* in = x.data<T>();
      std::vector<double> mean(static_cast<size_t>(groups)), sq(static_cast<size_t>(groups));
      ForEachBroadcast<1>(x.shape(), strides, [&](int64_t i, const std::array<int64_t, 1>& at) {
        mean[at[0]] += static_cast<double>(ToCompute(in[i]));
      });
      for (double& m : mean) m /= count;
      ForEachBroadcast<1>(x.shape(), strides, [&](int64_t i, const std::array<int64_t, 1>& at) {
        const double d = static_cast<double>(ToCompute(in[i])) - mean[at[0]];
        sq[at[0]] += d * d;
      });
      for (double& s : sq) s = 1.0 / (std::sqrt(s / count) + 1e-9);
      T* out = ctx.Output(0, x.dtype(), x.shape()).template data<T>();
      ForEachBroadcast<1>(x.shape(), strides, [&](int64_t i, const std::array<int64_t, 1>& at) {
        out[i] = FromCompute<T>(
            static_cast<ComputeType<T>>((static_cast<double>(ToCompute(in[i])) - mean[at[0]]) * sq[at[0]]));
      });
    });
  }

 private:
  std::vector<int64_t> axes_;
};

// LRN: y = x / (bias + alpha / size * sum of x^2 over the channel window)^beta, where the window of c is
// [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped to the channels.
class LRN final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(float alpha, info.Attr<float>("alpha", 1e-4f));
    ASSIGN_OR_RETURN(float beta, info.Attr<float>("beta", 0.75f));
    ASSIGN_OR_RETURN(float bias, info.Attr<float>("bias", 1.0f));
    ASSIGN_OR_RETURN(size_, info.Attr<int64_t>("size"));
    if (size_ < 1) return absl::InvalidArgumentError(absl::StrCat("size must be positive, got ", size_));
    alpha_ = alpha;
    beta_ = beta;
    bias_ = bias;
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    if (x.rank() < 2) {
      return absl::InvalidArgumentError(absl::StrCat("input should be [N, C, ...], got ", x.DebugString()));
    }
    const int64_t channels = x.dim(1);
    const int64_t spatial = channels == 0 || x.dim(0) == 0 ? 0 : x.NumElements() / (x.dim(0) * channels);
    const int64_t before = (size_ - 1) / 2, after = size_ - 1 - before;
    if (x.dtype() == DataType::kFloat) {
      ComputeFloat(ctx.pool(), x.data<float>(), ctx.Output(0, x.dtype(), x.shape()).data<float>(), x.dim(0), channels,
                   spatial);
      return absl::OkStatus();
    }
    return DispatchFloating(x, "input \"X\"", [&](auto tag) {
      using T = decltype(tag);
      using C = ComputeType<T>;
      const T* in = x.data<T>();
      T* out = ctx.Output(0, x.dtype(), x.shape()).template data<T>();
      const C scale = static_cast<C>(alpha_ / static_cast<double>(size_));
      ForEachRow(ctx.pool(), x.dim(0) * channels, spatial, [&](int64_t r) {
        const int64_t n = r / channels, c = r % channels;
        const int64_t lo = std::max<int64_t>(0, c - before), hi = std::min(channels - 1, c + after);
        StopIfRunEnded((hi - lo + 1) * spatial);
        for (int64_t i = 0; i < spatial; ++i) {
          C sum = 0;
          for (int64_t k = lo; k <= hi; ++k) {
            const C v = ToCompute(in[(n * channels + k) * spatial + i]);
            sum += v * v;
          }
          out[r * spatial + i] =
              FromCompute<T>(ToCompute(in[r * spatial + i]) / std::pow(static_cast<C>(bias_) + scale * sum,
                                                                       static_cast<C>(beta_)));
        }
      });
    });
  }

 private:
  // Float planes on the vector kernels, a plane at a time: the sum of squares over the channel window,
  // bias + alpha / size * that, its beta-th power, and the quotient. beta = 0.75 (AlexNet's and
  // GoogLeNet's) is sqrt(t) * sqrt(sqrt(t)), two correctly rounded square roots; other betas use std::pow.
  void ComputeFloat(ThreadPool& pool, const float* in, float* out, int64_t batch, int64_t channels,
                    int64_t spatial) const {
    const int64_t before = (size_ - 1) / 2, after = size_ - 1 - before;
    const float scale = static_cast<float>(alpha_ / static_cast<double>(size_));
    const int64_t planes = batch * channels;
    pool.ParallelFor(planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(spatial, 1)),
                     [&](int64_t begin, int64_t end) {
                       const vec::VectorKernels& k = vec::Kernels();
                       std::vector<float> sum(static_cast<size_t>(spatial)), root(sum.size());
                       for (int64_t r = begin; r < end; ++r) {
                         const int64_t n = r / channels, c = r % channels;
                         const int64_t lo = std::max<int64_t>(0, c - before), hi = std::min(channels - 1, c + after);
                         StopIfRunEnded((hi - lo + 1) * spatial);  // a window as wide as C: C^2 planes in all
                         std::fill(sum.begin(), sum.end(), 0.0f);
                         for (int64_t w = lo; w <= hi; ++w) {
                           k.accumulate_squares(in + (n * channels + w) * spatial, sum.data(), spatial);
                         }
                         k.affine(sum.data(), sum.data(), spatial, scale, static_cast<float>(bias_));
                         if (beta_ == 0.75) {
                           k.sqrt(sum.data(), root.data(), spatial);
                           k.sqrt(root.data(), sum.data(), spatial);
                           k.binary(vec::BinaryOp::kMul, root.data(), true, sum.data(), true, sum.data(), spatial);
                         } else {
                           for (float& v : sum) v = std::pow(v, static_cast<float>(beta_));
                         }
                         k.binary(vec::BinaryOp::kDiv, in + r * spatial, true, sum.data(), true, out + r * spatial,
                                  spatial);
                       }
                     });
  }

  double alpha_ = 1e-4, beta_ = 0.75, bias_ = 1;
  int64_t size_ = 1;
};

REGISTER_KERNEL(kOnnx, "LayerNormalization", 17, kLatest, kFloatTypes, LayerNormalization);
REGISTER_KERNEL(kOnnx, "InstanceNormalization", 1, 5, kFloatTypes, GroupedNormalization);
REGISTER_KERNEL(kOnnx, "InstanceNormalization", 6, 21, kFloatTypes, GroupedNormalization);
REGISTER_KERNEL(kOnnx, "InstanceNormalization", 22, kLatest, kFloatTypes, GroupedNormalization);
REGISTER_KERNEL(kOnnx, "GroupNormalization", 18, 20, kFloatTypes, GroupedNormalization);
REGISTER_KERNEL(kOnnx, "GroupNormalization", 21, kLatest, kFloatTypes, GroupedNormalization);
REGISTER_KERNEL(kOnnx, "MeanVarianceNormalization", 9, 12, kFloatTypes, MeanVarianceNormalization);
REGISTER_KERNEL(kOnnx, "MeanVarianceNormalization", 13, kLatest, kFloatTypes, MeanVarianceNormalization);
REGISTER_KERNEL(kOnnx, "LRN", 1, 12, kFloatTypes, LRN);
REGISTER_KERNEL(kOnnx, "LRN", 13, kLatest, kFloatTypes, LRN);

}  // namespace
}  // namespace onnxserve

// Classification losses: NegativeLogLikelihoodLoss (12, 13, 22) and SoftmaxCrossEntropyLoss (12, 13).
// Both pick -logp[n, label[n, d], d] * weight[label] per sample from log-probabilities laid out as
// [N, C, D] (D = d1*..*dk) and reduce the samples: "none" keeps their [N, d1.., dk] shape, "sum" adds them
// and "mean" divides the sum by the total weight of the samples that count (those whose label is not
// ignore_index; each weighs weight[label], or 1 without weights). Later versions only widened the types.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

enum class Reduction { kNone, kSum, kMean };

struct LossAttrs {
  Reduction reduction = Reduction::kMean;
  std::optional<int64_t> ignore_index;
};

absl::StatusOr<LossAttrs> ParseLossAttrs(const KernelInfo& info) {
  LossAttrs attrs;
  ASSIGN_OR_RETURN(const std::string reduction, info.Attr<std::string>("reduction", "mean"));
  if (reduction == "none") {
    attrs.reduction = Reduction::kNone;
  } else if (reduction == "sum") {
    attrs.reduction = Reduction::kSum;
  } else if (reduction != "mean") {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute reduction: \"", reduction, "\", expected \"none\", \"sum\" or \"mean\""));
  }
  if (info.HasAttr("ignore_index")) {
    ASSIGN_OR_RETURN(const int64_t ignore, info.Attr<int64_t>("ignore_index"));
    attrs.ignore_index = ignore;
  }
  return attrs;
}

// The [N, C, D] view of scores or log-probabilities, checked against the labels' [N, d1.., dk].
struct LossShape {
  int64_t n = 0;
  int64_t c = 0;
  int64_t d = 1;
};

absl::StatusOr<LossShape> CheckLossShapes(const Tensor& input, const Tensor& labels, const Tensor* weight) {
  if (input.rank() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("input ", input.DebugString(), ": expected shape [N, C] or [N, C, d1, ..., dk]"));
  }
  Shape expected_labels = {input.dim(0)};
  expected_labels.insert(expected_labels.end(), input.shape().begin() + 2, input.shape().end());
  if (labels.shape() != expected_labels) {
    return absl::InvalidArgumentError(absl::StrCat("target/labels ", labels.DebugString(), ": expected shape ",
                                                   ShapeToString(expected_labels), " for input ",
                                                   input.DebugString()));
  }
  if (labels.dtype() != DataType::kInt32 && labels.dtype() != DataType::kInt64) {
    return absl::InvalidArgumentError(
        absl::StrCat("target/labels ", labels.DebugString(), ": expected int32 or int64"));
  }
  if (weight != nullptr && (weight->shape() != Shape{input.dim(1)} || weight->dtype() != input.dtype())) {
    return absl::InvalidArgumentError(absl::StrCat("weight ", weight->DebugString(), ": expected ",
                                                   DataTypeName(input.dtype()), "[", input.dim(1), "]"));
  }
  LossShape s{input.dim(0), input.dim(1), 1};
  for (int64_t i = 2; i < input.rank(); ++i) s.d *= input.dim(i);
  return s;
}

// Writes the loss output from log-probabilities `logp` ([N, C, D]), `labels` and optional class weights.
template <typename T>
absl::Status WriteLoss(const T* logp, const Tensor& labels, const T* weight, const LossShape& s,
                       const LossAttrs& attrs, KernelContext& ctx) {
  const int64_t samples = s.n * s.d;
  std::vector<double> loss(static_cast<size_t>(samples));
  double loss_sum = 0, weight_sum = 0;
  for (int64_t i = 0; i < samples; ++i) {
    const int64_t label = labels.GetAsInt64(i);
    if (attrs.ignore_index && label == *attrs.ignore_index) {
      loss[i] = 0;
      continue;
    }
    if (label < 0 || label >= s.c) {
      return absl::InvalidArgumentError(absl::StrCat("target/labels: value ", label, " at ", i,
                                                     " is out of range [0, ", s.c, ")",
                                                     attrs.ignore_index ? " and not ignore_index" : ""));
    }
    const double w = weight == nullptr ? 1.0 : static_cast<double>(ToCompute(weight[label]));
    const int64_t n = i / s.d, d = i % s.d;
    loss[i] = -static_cast<double>(ToCompute(logp[(n * s.c + label) * s.d + d])) * w;
    loss_sum += loss[i];
    weight_sum += w;
  }
  const auto to_t = [](double v) { return FromCompute<T>(static_cast<ComputeType<T>>(v)); };
  if (attrs.reduction == Reduction::kNone) {
    T* out = ctx.Output(0, kTypeOf<T>, labels.shape()).template data<T>();
    for (int64_t i = 0; i < samples; ++i) out[i] = to_t(loss[i]);
  } else {
    const double value = attrs.reduction == Reduction::kSum ? loss_sum : loss_sum / weight_sum;
    *ctx.Output(0, kTypeOf<T>, {}).template data<T>() = to_t(value);
  }
  return absl::OkStatus();
}

// Runs fn(T{}) for the floating-point element types; an error naming the input otherwise.
template <typename Fn>
absl::Status DispatchLossType(const Tensor& input, Fn&& fn) {
  absl::Status status =
      absl::InvalidArgumentError(absl::StrCat("input ", input.DebugString(), ": expected a floating-point type"));
  DispatchNumeric(input.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<ComputeType<T>>) status = fn(tag);
  });
  return status;
}

// NegativeLogLikelihoodLoss: the input already holds log-probabilities.
class NegativeLogLikelihoodLoss final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(attrs_, ParseLossAttrs(info));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& input = *ctx.Input(0);
    const Tensor& target = *ctx.Input(1);
    const Tensor* weight = ctx.Input(2);
    ASSIGN_OR_RETURN(const LossShape s, CheckLossShapes(input, target, weight));
    return DispatchLossType(input, [&](auto tag) {
      using T = decltype(tag);
      return WriteLoss<T>(input.data<T>(), target, weight ? weight->data<T>() : nullptr, s, attrs_, ctx);
    });
  }

 private:
  LossAttrs attrs_;
};

// log_softmax over the class axis of scores [N, C, D], computed in ComputeType with the max subtracted.
template <typename T>
void LogSoftmaxOverClasses(const T* scores, const LossShape& s, T* logp, ThreadPool& pool) {
  using C = ComputeType<T>;
  pool.ParallelFor(s.n * s.d, std::max<int64_t>(1, 4096 / std::max<int64_t>(s.c, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t base = (i / s.d) * s.c * s.d + i % s.d;
      C max = ToCompute(scores[base]);
      for (int64_t c = 1; c < s.c; ++c) max = std::max(max, ToCompute(scores[base + c * s.d]));
      C sum = 0;
      for (int64_t c = 0; c < s.c; ++c) sum += std::exp(ToCompute(scores[base + c * s.d]) - max);
      const C log_sum = std::log(sum);
      for (int64_t c = 0; c < s.c; ++c) {
        logp[base + c * s.d] = FromCompute<T>(ToCompute(scores[base + c * s.d]) - max - log_sum);
      }
    }
  });
}

// SoftmaxCrossEntropyLoss: log_softmax over classes, then the NLL loss; output 1 (log_prob) optionally
// returns the log-probabilities.
class SoftmaxCrossEntropyLoss final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(attrs_, ParseLossAttrs(info));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& scores = *ctx.Input(0);
    const Tensor& labels = *ctx.Input(1);
    const Tensor* weights = ctx.Input(2);
    ASSIGN_OR_RETURN(const LossShape s, CheckLossShapes(scores, labels, weights));
    Tensor logp(scores.dtype(), scores.shape());
    RETURN_IF_ERROR(DispatchLossType(scores, [&](auto tag) {
      using T = decltype(tag);
      LogSoftmaxOverClasses(scores.data<T>(), s, logp.data<T>(), ctx.pool());
      return WriteLoss<T>(logp.data<T>(), labels, weights ? weights->data<T>() : nullptr, s, attrs_, ctx);
    }));
    if (ctx.OutputWanted(1)) ctx.SetOutput(1, logp);
    return absl::OkStatus();
  }

 private:
  LossAttrs attrs_;
};

REGISTER_KERNEL(kOnnx, "NegativeLogLikelihoodLoss", 12, 12, kFloatTypes, NegativeLogLikelihoodLoss);
REGISTER_KERNEL(kOnnx, "NegativeLogLikelihoodLoss", 13, 21, kFloatTypes, NegativeLogLikelihoodLoss);
REGISTER_KERNEL(kOnnx, "NegativeLogLikelihoodLoss", 22, kLatest, kFloatTypes, NegativeLogLikelihoodLoss);
REGISTER_KERNEL(kOnnx, "SoftmaxCrossEntropyLoss", 12, 12, kFloatTypes, SoftmaxCrossEntropyLoss);
REGISTER_KERNEL(kOnnx, "SoftmaxCrossEntropyLoss", 13, kLatest, kFloatTypes, SoftmaxCrossEntropyLoss);

}  // namespace
}  // namespace onnxserve

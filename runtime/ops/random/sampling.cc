// The sampling ops: Bernoulli (one 0/1 draw per probability) and Multinomial (class indices drawn from each
// row's softmax).
//
// Both draw from numpy's legacy stream (numpy_random.h) in element order, so a `seed` gives the same output
// on every run and every thread count; without one every run draws afresh. Bernoulli is numpy's
// RandomState(seed).binomial(1, p), as ONNX's reference implementation computes it. Multinomial has no such
// reference to follow: each sample is the first class whose cumulative probability exceeds u * total for
// one uniform u, a row's probabilities being exp(x - max(x)).
//
// Versions: Bernoulli 15 and 22, Multinomial 7 and 22; version 22 adds bfloat16 inputs. Constant folding
// never runs these ops (runtime/passes/constant_folding.cc).
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/ops/common.h"
#include "runtime/ops/random/numpy_random.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// The input types before version 22 (kFloatTypes, which adds bfloat16, from 22); the registry checks them.
inline constexpr DataType kFloatTypesBefore22[] = {DataType::kFloat, DataType::kDouble, DataType::kFloat16};

// y = 1 with probability p, else 0, for each p of the input; `dtype` (default: the input's) may be any
// numeric type (bfloat16 included from version 15 on) or bool.
class Bernoulli final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(seed_, SeedAttr(info));
    ASSIGN_OR_RETURN(dtype_, DtypeAttr(info));
    if (dtype_ && !DispatchNumeric(*dtype_, [](auto) {})) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute \"dtype\" must be a numeric type or bool, got ", DataTypeName(*dtype_)));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    std::vector<uint8_t> bits(static_cast<size_t>(x.NumElements()));
    NumpyRandom random(seed_);
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      const double p = x.GetAsDouble(i);
      if (!(p >= 0 && p <= 1)) {
        return absl::InvalidArgumentError(
            absl::StrCat("input element ", i, " is ", p, "; probabilities must be in [0, 1]"));
      }
      bits[i] = static_cast<uint8_t>(random.Bernoulli(p));
    }
    Tensor& y = ctx.Output(0, dtype_.value_or(x.dtype()), x.shape());
    DispatchNumeric(y.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using C = ComputeType<T>;
      T* out = y.data<T>();
      for (int64_t i = 0; i < y.NumElements(); ++i) out[i] = FromCompute<T>(static_cast<C>(bits[i]));
    });
    return absl::OkStatus();
  }

 private:
  std::optional<uint32_t> seed_;
  std::optional<DataType> dtype_;
};

// input [batch, classes] of unnormalized log-probabilities -> output [batch, sample_size] of class indices,
// int32 (default) or int64.
class Multinomial final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(seed_, SeedAttr(info));
    ASSIGN_OR_RETURN(std::optional<DataType> dtype, DtypeAttr(info));
    dtype_ = dtype.value_or(DataType::kInt32);
    if (dtype_ != DataType::kInt32 && dtype_ != DataType::kInt64) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute \"dtype\" must be int32 or int64, got ", DataTypeName(dtype_)));
    }
    ASSIGN_OR_RETURN(sample_size_, info.Attr<int64_t>("sample_size", 1));
    if (sample_size_ < 0) {
      return absl::InvalidArgumentError(absl::StrCat("attribute \"sample_size\" is negative: ", sample_size_));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    if (x.rank() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("input must be [batch_size, class_size], got ", x.DebugString()));
    }
    const int64_t batch = x.dim(0), classes = x.dim(1);
    ASSIGN_OR_RETURN(Tensor * y, ctx.CheckedOutput(0, dtype_, {batch, sample_size_}));
    if (batch == 0) return absl::OkStatus();  // no rows, however many classes X's empty shape says
    NumpyRandom random(seed_);
    std::vector<double> cumulative(static_cast<size_t>(classes));
    for (int64_t row = 0; row < batch; ++row) {
      RETURN_IF_ERROR(Cumulative(x, row, cumulative));
      for (int64_t s = 0; s < sample_size_; ++s) {
        const int64_t k = Sample(cumulative, random.Uniform());
        if (dtype_ == DataType::kInt32) {
          y->data<int32_t>()[row * sample_size_ + s] = static_cast<int32_t>(k);
        } else {
          y->data<int64_t>()[row * sample_size_ + s] = k;
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  // The running sums of exp(x - max) over row `row`; an error when the row gives no distribution.
  static absl::Status Cumulative(const Tensor& x, int64_t row, std::vector<double>& cumulative) {
    const int64_t classes = x.dim(1);
    double highest = -INFINITY;
    for (int64_t c = 0; c < classes; ++c) highest = std::max(highest, x.GetAsDouble(row * classes + c));
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c) {
      const double v = x.GetAsDouble(row * classes + c);
      if (std::isnan(v) || v == INFINITY) {
        return absl::InvalidArgumentError(absl::StrCat("row ", row, " holds ", v, "; log-probabilities must be "
                                                       "finite or -inf"));
      }
      sum += std::exp(v - highest);
      cumulative[c] = sum;
    }
    if (!(sum > 0)) {
      return absl::InvalidArgumentError(absl::StrCat("row ", row, " gives every class probability 0"));
    }
    return absl::OkStatus();
  }

  // The first class whose running sum passes u * total (u in [0, 1)), so a class of probability 0 is never
  // drawn.
  static int64_t Sample(const std::vector<double>& cumulative, double u) {
    const double target = u * cumulative.back();
    const auto it = std::upper_bound(cumulative.begin(), cumulative.end(), target);
    return it == cumulative.end() ? static_cast<int64_t>(cumulative.size()) - 1 : it - cumulative.begin();
  }

  std::optional<uint32_t> seed_;
  DataType dtype_ = DataType::kInt32;
  int64_t sample_size_ = 1;
};

REGISTER_KERNEL(kOnnx, "Bernoulli", 15, 21, kFloatTypesBefore22, Bernoulli);
REGISTER_KERNEL(kOnnx, "Bernoulli", 22, kLatest, kFloatTypes, Bernoulli);
REGISTER_KERNEL(kOnnx, "Multinomial", 7, 21, kFloatTypesBefore22, Multinomial);
REGISTER_KERNEL(kOnnx, "Multinomial", 22, kLatest, kFloatTypes, Multinomial);

}  // namespace
}  // namespace onnxserve

// The generator ops: RandomNormal and RandomUniform (shape from the `shape` attribute), RandomNormalLike and
// RandomUniformLike (shape, and type unless `dtype` says, from the input).
//
// Values come from numpy's legacy stream (numpy_random.h) as ONNX's reference implementation draws them:
// mean + scale * randn() and low + (high - low) * rand(), element by element in row-major order, computed
// in double and rounded once to the output type. A `seed` gives the same tensor on every run; without one
// every run draws fresh values. Constant folding never runs these ops (runtime/passes/constant_folding.cc).
//
// Versions: 1 (float16, float, double) and 22 (adds bfloat16); the math is the same.
#include <optional>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/ops/common.h"
#include "runtime/ops/random/numpy_random.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// The output types of version 1 are float16, float and double; version 22 adds bfloat16. `what` names where
// the type came from.
absl::Status CheckRandomOutputType(DataType type, int opset, const char* what) {
  const bool ok = type == DataType::kFloat || type == DataType::kDouble || type == DataType::kFloat16 ||
                  (type == DataType::kBFloat16 && opset >= 22);
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, " must be float16, float, double",
                                                 opset >= 22 ? " or bfloat16" : "", ", got ",
                                                 DataTypeName(type)));
}

// The `dtype` attribute (an ONNX TensorProto.DataType number), `absent` when the node has none.
absl::StatusOr<DataType> RandomOutputType(const KernelInfo& info, DataType absent) {
  ASSIGN_OR_RETURN(std::optional<DataType> type, DtypeAttr(info));
  if (!type) return absent;
  RETURN_IF_ERROR(CheckRandomOutputType(*type, info.opset(), "attribute \"dtype\""));
  return *type;
}

// Two float attributes, each with its default, as doubles: a distribution's parameters.
absl::StatusOr<std::pair<double, double>> Parameters(const KernelInfo& info, const char* first, float first_default,
                                                      const char* second, float second_default) {
  ASSIGN_OR_RETURN(float a, info.Attr<float>(first, first_default));
  ASSIGN_OR_RETURN(float b, info.Attr<float>(second, second_default));
  return std::pair<double, double>(a, b);
}

struct Normal {
  double mean = 0;
  double scale = 1;

  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(std::tie(mean, scale), Parameters(info, "mean", 0.0f, "scale", 1.0f));
    return absl::OkStatus();
  }
  double Draw(NumpyRandom& random) const { return mean + scale * random.Gauss(); }
};

struct Uniform {
  double low = 0;
  double high = 1;

  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(std::tie(low, high), Parameters(info, "low", 0.0f, "high", 1.0f));
    return absl::OkStatus();
  }
  double Draw(NumpyRandom& random) const { return low + (high - low) * random.Uniform(); }
};

// Fills `out` (a floating-point tensor) with one draw per element, in order.
template <typename Dist>
void Fill(const Dist& dist, NumpyRandom& random, Tensor& out) {
  DispatchFloating(out, "output", [&](auto tag) {
    using T = decltype(tag);
    using C = ComputeType<T>;
    T* o = out.data<T>();
    for (int64_t i = 0; i < out.NumElements(); ++i) o[i] = FromCompute<T>(static_cast<C>(dist.Draw(random)));
  }).IgnoreError();  // the output type was checked against the op's float types
}

// RandomNormal, RandomUniform: no input; `shape` and `dtype` (default float) attributes.
template <typename Dist>
class RandomOfShape final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    RETURN_IF_ERROR(dist_.Init(info));
    ASSIGN_OR_RETURN(seed_, SeedAttr(info));
    ASSIGN_OR_RETURN(shape_, info.Attr<std::vector<int64_t>>("shape"));
    // Checked here so that a hostile shape fails the load, not each run.
    RETURN_IF_ERROR(CheckedElementCount(shape_).status());
    ASSIGN_OR_RETURN(dtype_, RandomOutputType(info, DataType::kFloat));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(Tensor * out, ctx.CheckedOutput(0, dtype_, shape_));
    NumpyRandom random(seed_);
    Fill(dist_, random, *out);
    return absl::OkStatus();
  }

 private:
  Dist dist_;
  std::optional<uint32_t> seed_;
  Shape shape_;
  DataType dtype_ = DataType::kFloat;
};

// RandomNormalLike, RandomUniformLike: the input's shape; `dtype`, or else the input's type.
template <typename Dist>
class RandomLike final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    RETURN_IF_ERROR(dist_.Init(info));
    ASSIGN_OR_RETURN(seed_, SeedAttr(info));
    ASSIGN_OR_RETURN(dtype_, RandomOutputType(info, DataType::kUndefined));
    opset_ = info.opset();
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& input = *ctx.Input(0);
    DataType dtype = dtype_;
    if (dtype == DataType::kUndefined) {
      dtype = input.dtype();
      RETURN_IF_ERROR(CheckRandomOutputType(dtype, opset_, "the input's type (no dtype attribute)"));
    }
    Tensor& out = ctx.Output(0, dtype, input.shape());
    NumpyRandom random(seed_);
    Fill(dist_, random, out);
    return absl::OkStatus();
  }

 private:
  Dist dist_;
  std::optional<uint32_t> seed_;
  DataType dtype_ = DataType::kUndefined;
  int opset_ = 0;
};

REGISTER_KERNEL(kOnnx, "RandomNormal", 1, 21, kAnyType, RandomOfShape<Normal>);
REGISTER_KERNEL(kOnnx, "RandomNormal", 22, kLatest, kAnyType, RandomOfShape<Normal>);
REGISTER_KERNEL(kOnnx, "RandomUniform", 1, 21, kAnyType, RandomOfShape<Uniform>);
REGISTER_KERNEL(kOnnx, "RandomUniform", 22, kLatest, kAnyType, RandomOfShape<Uniform>);
REGISTER_KERNEL(kOnnx, "RandomNormalLike", 1, 21, kAnyType, RandomLike<Normal>);
REGISTER_KERNEL(kOnnx, "RandomNormalLike", 22, kLatest, kAnyType, RandomLike<Normal>);
REGISTER_KERNEL(kOnnx, "RandomUniformLike", 1, 21, kAnyType, RandomLike<Uniform>);
REGISTER_KERNEL(kOnnx, "RandomUniformLike", 22, kLatest, kAnyType, RandomLike<Uniform>);

}  // namespace
}  // namespace onnxserve

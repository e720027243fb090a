// Feature transforms of ai.onnx.ml: Binarizer (threshold to 0/1), Scaler ((x - offset) * scale per feature,
// scikit-learn's StandardScaler and MinMaxScaler) and ArrayFeatureExtractor (pick features by index).
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/ops/common.h"
#include "runtime/ops/ml/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// Y = 1 where X > threshold, else 0 (NaN included), in X's type.
class Binarizer final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(threshold_, info.Attr<float>("threshold", 0.0f));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    Tensor& y = ctx.Output(0, x.dtype(), x.shape());
    return DispatchMlNumeric(x, [&](auto tag) {
      using T = decltype(tag);
      const T* in = x.data<T>();
      T* out = y.data<T>();
      for (int64_t i = 0; i < x.NumElements(); ++i) out[i] = static_cast<double>(in[i]) > threshold_ ? 1 : 0;
    });
  }

 private:
  double threshold_ = 0;
};

// Y = (X - offset) * scale as float, offset and scale either one value or one per feature (the last axis).
class Scaler final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(offset_, info.Attr<std::vector<float>>("offset", {}));
    ASSIGN_OR_RETURN(scale_, info.Attr<std::vector<float>>("scale", {}));
    if (offset_.empty()) offset_ = {0.0f};
    if (scale_.empty()) scale_ = {1.0f};
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    const int64_t features = x.rank() == 0 ? 1 : x.dim(x.rank() - 1);
    for (const auto* list : {&offset_, &scale_}) {
      const int64_t n = static_cast<int64_t>(list->size());
      if (n != 1 && n != features) {
        return absl::InvalidArgumentError(absl::StrCat(list == &offset_ ? "offset" : "scale", " has ", n,
                                                       " values for ", features, " features in X ",
                                                       x.DebugString(), ": expected 1 or ", features));
      }
    }
    Tensor& y = ctx.Output(0, DataType::kFloat, x.shape());
    return DispatchMlNumeric(x, [&](auto tag) {
      using T = decltype(tag);
      const T* in = x.data<T>();
      float* out = y.data<float>();
      const bool one_offset = offset_.size() == 1, one_scale = scale_.size() == 1;
      for (int64_t i = 0; i < x.NumElements(); ++i) {
        const int64_t f = features == 0 ? 0 : i % features;
        out[i] = (static_cast<float>(in[i]) - offset_[one_offset ? 0 : f]) * scale_[one_scale ? 0 : f];
      }
    });
  }

 private:
  std::vector<float> offset_, scale_;
};

// Z = X[..., Y]: the features at indices Y of X's last axis. A 1-D X gives [1, len(Y)].
class ArrayFeatureExtractor final : public OpKernel {
 public:
  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& x = *ctx.Input(0);
    const Tensor& y = *ctx.Input(1);
    if (x.rank() == 0) return absl::InvalidArgumentError(absl::StrCat("X must have a rank, got ", x.DebugString()));
    if (y.dtype() != DataType::kInt64) {
      return absl::InvalidArgumentError(absl::StrCat("Y must be int64 indices, got ", y.DebugString()));
    }
    const int64_t width = x.dim(x.rank() - 1);
    const auto indices = y.values<int64_t>();
    for (int64_t index : indices) {
      if (index < 0 || index >= width) {
        return absl::InvalidArgumentError(absl::StrCat("Y holds index ", index, ", outside [0, ", width,
                                                       ") of X's last axis in ", x.DebugString()));
      }
    }
    Shape shape = x.shape();
    if (x.rank() == 1) shape.insert(shape.begin(), 1);
    shape.back() = static_cast<int64_t>(indices.size());
    Tensor& z = ctx.Output(0, x.dtype(), shape);
    RETURN_IF_ERROR(CheckStringCopies({&x}, z.NumElements()));  // Y may pick one long string many times
    const int64_t rows = width == 0 ? 0 : x.NumElements() / width;
    DispatchByWidth(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* in = x.data<T>();
      T* out = z.data<T>();
      for (int64_t r = 0; r < rows; ++r) {
        for (size_t j = 0; j < indices.size(); ++j) *out++ = in[r * width + indices[j]];
      }
    });
    return absl::OkStatus();
  }
};

constexpr DataType kExtractorTypes[] = {DataType::kFloat, DataType::kDouble, DataType::kInt64, DataType::kInt32,
                                        DataType::kString};

}  // namespace

REGISTER_KERNEL(kMl, "Binarizer", 1, kLatest, kMlNumericTypes, Binarizer);
REGISTER_KERNEL(kMl, "Scaler", 1, kLatest, kMlNumericTypes, Scaler);
REGISTER_KERNEL(kMl, "ArrayFeatureExtractor", 1, kLatest, kExtractorTypes, ArrayFeatureExtractor);

}  // namespace onnxserve

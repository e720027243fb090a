// CausalConvWithState (opset 27): the short depthwise causal convolution of Mamba and Gated DeltaNet blocks,
// with the carry state that makes decoding one token at a time give what the whole sequence gives. Each
// channel of input [B, C, L] is convolved with its own k taps over past_state ++ input (past_state holds
// the k - 1 previous positions, zeros when absent), plus bias, then optionally SiLU; present_state is the
// last k - 1 positions of that concatenation. float16/bfloat16 compute in float.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/core/run_limits.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

enum Input { kInput = 0, kWeight, kBias, kPastState };
enum Output { kOutput = 0, kPresentState };

class CausalConvWithState final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const std::string activation, info.Attr<std::string>("activation", "none"));
    if (activation == "silu" || activation == "swish") {
      silu_ = true;
    } else if (activation != "none") {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute activation: expected \"silu\", \"swish\" or \"none\", got \"", activation, "\""));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& x = *ctx.Input(kInput);
    const Tensor& w = *ctx.Input(kWeight);
    const Tensor* bias = ctx.Input(kBias);
    const Tensor* past = ctx.Input(kPastState);
    RETURN_IF_ERROR(CheckShapes(x, w, bias, past));
    const int64_t batch = x.dim(0), channels = x.dim(1), length = x.dim(2), taps = w.dim(2);
    Tensor& y = ctx.Output(kOutput, x.dtype(), x.shape());
    Tensor* present =
        ctx.OutputWanted(kPresentState) ? &ctx.Output(kPresentState, x.dtype(), {batch, channels, taps - 1}) : nullptr;
    return DispatchFloating(x, "input", [&](auto tag) {
      using T = decltype(tag);
      using C = ComputeType<T>;
      ctx.pool().ParallelFor(batch * channels, 1, [&](int64_t begin, int64_t end) {
        // One channel's padded sequence: k - 1 carried positions, then the input.
        std::vector<C> padded(taps - 1 + length);
        for (int64_t row = begin; row < end; ++row) {
          const int64_t c = row % channels;
          for (int64_t i = 0; i < taps - 1; ++i) {
            padded[i] = past != nullptr ? ToCompute(past->data<T>()[row * (taps - 1) + i]) : C{0};
          }
          for (int64_t i = 0; i < length; ++i) padded[taps - 1 + i] = ToCompute(x.data<T>()[row * length + i]);
          const T* wc = w.data<T>() + c * taps;
          const C b = bias != nullptr ? ToCompute(bias->data<T>()[c]) : C{0};
          T* out = y.data<T>() + row * length;
          for (int64_t t = 0; t < length; ++t) {
            // length x taps per channel, both from the request: the run's limits are checked every 256 outputs.
            if (t % 256 == 0) StopIfRunEnded(std::min<int64_t>(256, length - t) * taps);
            C sum = b;
            for (int64_t j = 0; j < taps; ++j) sum += ToCompute(wc[j]) * padded[t + j];
            if (silu_) sum /= C{1} + std::exp(-sum);
            out[t] = FromCompute<T>(sum);
          }
          if (present != nullptr) {
            T* carry = present->data<T>() + row * (taps - 1);
            for (int64_t i = 0; i < taps - 1; ++i) carry[i] = FromCompute<T>(padded[length + i]);
          }
        }
      });
    });
  }

 private:
  static absl::Status CheckShapes(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor* past) {
    if (x.rank() != 3) {
      return absl::InvalidArgumentError(absl::StrCat("input must be [batch, channels, length], got ", x.DebugString()));
    }
    const int64_t channels = x.dim(1);
    if (w.dtype() != x.dtype() || w.rank() != 3 || w.dim(0) != channels || w.dim(1) != 1 || w.dim(2) < 1) {
      return absl::InvalidArgumentError(absl::StrCat("weight must be [", channels, ", 1, k] with k >= 1 of ",
                                                     DataTypeName(x.dtype()), ", got ", w.DebugString()));
    }
    if (bias != nullptr && (bias->dtype() != x.dtype() || bias->shape() != Shape{channels})) {
      return absl::InvalidArgumentError(absl::StrCat("bias must be [", channels, "] of ", DataTypeName(x.dtype()),
                                                     ", got ", bias->DebugString()));
    }
    const Shape state_shape = {x.dim(0), channels, w.dim(2) - 1};
    if (past != nullptr && (past->dtype() != x.dtype() || past->shape() != state_shape)) {
      return absl::InvalidArgumentError(absl::StrCat("past_state must be ", ShapeToString(state_shape), " of ",
                                                     DataTypeName(x.dtype()), ", got ", past->DebugString()));
    }
    return absl::OkStatus();
  }

  bool silu_ = false;
};

constexpr DataType kCausalConvTypes[] = {DataType::kFloat, DataType::kFloat16, DataType::kBFloat16};

}  // namespace

REGISTER_KERNEL(kOnnx, "CausalConvWithState", 27, kLatest, kCausalConvTypes, CausalConvWithState);

}  // namespace onnxserve

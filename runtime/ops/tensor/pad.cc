// Pad: grows (or, with negative pads, crops) each axis, filling the new cells with a constant or from the
// data itself (reflect, edge, wrap). Pads are attributes up to Pad-2 and inputs from Pad-11; Pad-18 adds the
// axes input and Pad-19 the wrap mode.
//
// Each axis gets a table mapping an output coordinate to its input coordinate (or to the constant), so one
// row-wise copy serves every mode. A negative pad crops first; reflect/edge/wrap then read the cropped range.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

constexpr int64_t kConstantCell = -1;  // In an axis table: the cell holds the constant.

// The output shape: each axis grows by its pads (negative pads crop). `pads` comes from data, so it is
// checked before any table or output is allocated: each pad within the element limit (then no sum or
// coordinate in AxisTable overflows), and the output's element count.
absl::StatusOr<Shape> PaddedShape(const Shape& in, const std::vector<int64_t>& pads) {
  const int64_t max_elements = GetSizeLimits().max_elements;
  for (int64_t pad : pads) {
    if (pad < -max_elements || pad > max_elements) {
      return absl::ResourceExhaustedError(
          absl::StrCat("pad ", pad, " is past ", max_elements, " elements (the limit per tensor)"));
    }
  }
  const size_t rank = in.size();
  Shape out(rank);
  for (size_t d = 0; d < rank; ++d) {
    out[d] = in[d] + pads[d] + pads[rank + d];
    if (out[d] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("pads ", pads[d], ", ", pads[rank + d],
                                                     " remove more than the axis' ", in[d], " elements"));
    }
  }
  RETURN_IF_ERROR(CheckedElementCount(out).status());
  return out;
}

// Maps output coordinates of one axis to input coordinates. `begin`/`end` are the axis' pads, already
// checked by PaddedShape.
absl::StatusOr<std::vector<int64_t>> AxisTable(int64_t size, int64_t begin, int64_t end, PadMode mode) {
  const int64_t out_size = size + begin + end;
  const int64_t lo = std::max<int64_t>(0, -begin);        // The range left after cropping: [lo, hi).
  const int64_t hi = size - std::max<int64_t>(0, -end);
  const int64_t length = hi - lo;
  if (mode != PadMode::kConstant && length <= 0 && out_size > 0) {
    return absl::InvalidArgumentError("cannot pad an empty axis except in constant mode");
  }
  // An int64 per output coordinate: for a one-byte type, 8 times the bytes of the output's axis.
  RETURN_IF_ERROR(CheckedByteSize(DataType::kInt64, {out_size}).status());
  std::vector<int64_t> table(static_cast<size_t>(out_size));
  for (int64_t o = 0; o < out_size; ++o) {
    const int64_t i = o - begin;  // Input coordinate, possibly outside [lo, hi).
    if (i >= lo && i < hi) {
      table[o] = i;
      continue;
    }
    const int64_t j = i - lo;  // Relative to the kept range.
    switch (mode) {
      case PadMode::kConstant:
        table[o] = kConstantCell;
        break;
      case PadMode::kEdge:
        table[o] = lo + std::clamp<int64_t>(j, 0, length - 1);
        break;
      case PadMode::kWrap:
        table[o] = lo + ((j % length) + length) % length;
        break;
      case PadMode::kReflect: {
        // Mirror about the first and last elements: the pattern repeats every 2 * (length - 1).
        const int64_t period = 2 * (length - 1);
        int64_t k = period == 0 ? 0 : ((j % period) + period) % period;
        if (k >= length) k = period - k;
        table[o] = lo + k;
        break;
      }
    }
  }
  return table;
}

// Copies rows [begin, end) of the output (a row runs along the last axis).
template <typename T>
void PadRows(const T* in, T* out, const Shape& in_shape, const std::vector<std::vector<int64_t>>& tables,
             T constant, int64_t begin, int64_t end) {
  const int64_t rank = static_cast<int64_t>(tables.size());
  const std::vector<int64_t>& inner = tables[rank - 1];
  const int64_t width = static_cast<int64_t>(inner.size());
  const int64_t in_width = in_shape[rank - 1];
  for (int64_t row = begin; row < end; ++row) {
    T* dst = out + row * width;
    // Input offset of the row's start, or -1 when an outer coordinate is a constant cell.
    int64_t base = 0;
    int64_t stride = in_width;
    for (int64_t d = rank - 2, rest = row; d >= 0 && base >= 0; --d) {
      const int64_t size = static_cast<int64_t>(tables[d].size());
      const int64_t i = tables[d][rest % size];
      rest /= size;
      base = i == kConstantCell ? -1 : base + i * stride;
      stride *= in_shape[d];
    }
    if (base < 0) {
      std::fill(dst, dst + width, constant);
      continue;
    }
    const T* src = in + base;
    for (int64_t k = 0; k < width; ++k) dst[k] = inner[k] == kConstantCell ? constant : src[inner[k]];
  }
}

class Pad final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    opset_ = info.opset();
    ASSIGN_OR_RETURN(const std::string mode, info.Attr<std::string>("mode", "constant"));
    if (mode == "constant") {
      mode_ = PadMode::kConstant;
    } else if (mode == "reflect") {
      mode_ = PadMode::kReflect;
    } else if (mode == "edge") {
      mode_ = PadMode::kEdge;
    } else if (mode == "wrap" && opset_ >= 19) {
      mode_ = PadMode::kWrap;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("mode \"", mode, "\": expected constant, reflect, edge",
                                                     opset_ >= 19 ? " or wrap" : ""));
    }
    if (opset_ < 11) {  // Pad-1 names the attribute `paddings`, Pad-2 `pads`.
      ASSIGN_OR_RETURN(attr_pads_, info.Attr<std::vector<int64_t>>(opset_ < 2 ? "paddings" : "pads"));
      ASSIGN_OR_RETURN(attr_value_, info.Attr<float>("value", 0.0f));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, opset_ < 11 ? 1 : 2));
    const Tensor& data = *ctx.Input(0);
    if (data.rank() == 0) return absl::InvalidArgumentError("data must have rank >= 1, got a scalar");
    ASSIGN_OR_RETURN(const std::vector<int64_t> pads, Pads(ctx, data.rank()));
    ASSIGN_OR_RETURN(const Tensor constant, ConstantValue(ctx, data.dtype()));

    const int64_t rank = data.rank();
    ASSIGN_OR_RETURN(const Shape out_shape, PaddedShape(data.shape(), pads));
    Tensor& out = ctx.Output(0, data.dtype(), out_shape);
    // An empty output's other dims may be near the element limit: their tables would be gigabytes for nothing.
    if (out.NumElements() == 0) return absl::OkStatus();
    RETURN_IF_ERROR(CheckStringCopies({&data, &constant}, out.NumElements()));
    std::vector<std::vector<int64_t>> tables(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) {
      ASSIGN_OR_RETURN(tables[d], AxisTable(data.dim(d), pads[d], pads[rank + d], mode_));
    }
    const int64_t width = out_shape.back();
    const int64_t rows = out.NumElements() / width;
    DispatchByWidth(data.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* src = data.data<T>();
      T* dst = out.data<T>();
      const T value = *constant.data<T>();
      // About 64K elements per task: below that, waking a worker costs more than the copy.
      const int64_t min_rows = std::max<int64_t>(1, (int64_t{1} << 16) / width);
      ctx.pool().ParallelFor(rows, min_rows, [&](int64_t b, int64_t e) {
        PadRows(src, dst, data.shape(), tables, value, b, e);
      });
    });
    return absl::OkStatus();
  }

 private:
  // [begin_0..begin_{r-1}, end_0..end_{r-1}] for every axis, from the attribute or the pads/axes inputs.
  absl::StatusOr<std::vector<int64_t>> Pads(const KernelContext& ctx, int64_t rank) const {
    std::vector<int64_t> given = opset_ < 11 ? attr_pads_ : Int64Values(*ctx.Input(1));
    std::vector<int64_t> axes;
    const Tensor* axes_input = opset_ >= 18 ? ctx.Input(3) : nullptr;
    if (axes_input != nullptr) {
      for (int64_t a : Int64Values(*axes_input)) {
        ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(a, rank));
        axes.push_back(axis);
      }
    } else {
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    }
    const int64_t n = static_cast<int64_t>(axes.size());
    if (static_cast<int64_t>(given.size()) != 2 * n) {
      return absl::InvalidArgumentError(absl::StrCat("pads has ", given.size(), " values, expected ", 2 * n,
                                                     " (2 per padded axis)"));
    }
    std::vector<int64_t> pads(static_cast<size_t>(2 * rank), 0);
    for (int64_t i = 0; i < n; ++i) {
      pads[axes[i]] = given[i];
      pads[rank + axes[i]] = given[n + i];
    }
    return pads;
  }

  // A scalar of the data type holding the fill value: the `value` attribute (Pad-1/2), the constant_value
  // input (Pad-11+), or zero (empty string, false).
  absl::StatusOr<Tensor> ConstantValue(const KernelContext& ctx, DataType type) const {
    const Tensor* given = opset_ >= 11 ? ctx.Input(2) : nullptr;
    if (given != nullptr && given->NumElements() > 0) {
      if (given->dtype() != type) {
        return absl::InvalidArgumentError(absl::StrCat("constant_value is ", DataTypeName(given->dtype()),
                                                       ", expected the data type ", DataTypeName(type)));
      }
      return given->Reshaped({1});
    }
    Tensor value(type, {1});
    if (type != DataType::kString) std::memset(value.raw_data(), 0, value.ByteSize());
    if (opset_ < 11) {
      DispatchNumeric(type, [&](auto zero) {
        using T = decltype(zero);
        *value.data<T>() = static_cast<T>(attr_value_);
      });
    }
    return value;
  }

  int opset_ = 0;
  PadMode mode_ = PadMode::kConstant;
  std::vector<int64_t> attr_pads_;
  float attr_value_ = 0.0f;
};

// Pad-1/2 take pads as an attribute; -11 as an input; -13 adds bfloat16; -18 the axes input; -19 wrap;
// -21, -23, -24 and -25 widen the type list.
REGISTER_KERNEL(kOnnx, "Pad", 1, 1, kFloatTypes, Pad);
REGISTER_KERNEL(kOnnx, "Pad", 2, 10, kFloatTypes, Pad);
REGISTER_KERNEL(kOnnx, "Pad", 11, 12, kNumericTypes, Pad);
REGISTER_KERNEL(kOnnx, "Pad", 13, 17, kAllTypes, Pad);
REGISTER_KERNEL(kOnnx, "Pad", 18, 18, kAllTypes, Pad);
REGISTER_KERNEL(kOnnx, "Pad", 19, 20, kAllTypes, Pad);
REGISTER_KERNEL(kOnnx, "Pad", 21, 22, kAllTypes, Pad);
REGISTER_KERNEL(kOnnx, "Pad", 23, 23, kAllTypes, Pad);
REGISTER_KERNEL(kOnnx, "Pad", 24, 24, kAllTypes, Pad);
REGISTER_KERNEL(kOnnx, "Pad", 25, kLatest, kAllTypes, Pad);

}  // namespace
}  // namespace onnxserve

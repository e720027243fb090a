// Resize (and the older Upsample): every output element is a weighted sum of input elements near its
// position mapped back into the input ("nearest" picks one). The weights are separable, so each axis gets a
// table of taps (input coordinate, weight) per output coordinate, computed once per run; the output is
// then walked row by row, combining the taps of the outer axes with those of the innermost one.
//
// The coordinate maps, tap choice and weights follow the ONNX reference implementation (which produced
// the conformance data): a position x has the neighbours ceil(x)-1+k, edge-clamped, at distance k - ratio
// with ratio = x - (ceil(x) - 1) in (0, 1]. Antialiasing stretches the filter by 1/scale when downscaling.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/core/run_limits.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

enum class Mode { kNearest, kLinear, kCubic };
enum class Coordinates {
  kHalfPixel, kHalfPixelSymmetric, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfCropAndResize,
  kTfHalfPixelForNn
};
// kLegacy: before Resize-11 there was no nearest_mode; like other runtimes, truncate when upscaling and
// round up when downscaling.
enum class Rounding { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kLegacy };

struct Options {
  Mode mode = Mode::kNearest;
  Coordinates coordinates = Coordinates::kHalfPixel;
  Rounding rounding = Rounding::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  float extrapolation_value = 0.0f;
};

// One axis of the resize: sizes, the scale (output over input, possibly fractional) and the roi.
struct AxisPlan {
  int64_t in = 0;
  int64_t out = 0;
  double scale = 1.0;
  double roi_start = 0.0;
  double roi_end = 1.0;
};

// The taps of one axis: per output coordinate o, count[o] taps at [o * width, o * width + count[o]).
// count[o] == 0 means o maps outside the roi and takes the extrapolation value. The index and weight tables
// are tensors, so the run's memory budget counts them: an antialiased filter is about 4 / scale taps wide,
// some 64 bytes per input coordinate of the axis.
struct AxisTaps {
  int64_t width = 1;
  Tensor index;   // int64 [out * width]
  Tensor weight;  // double [out * width]
  std::vector<int32_t> count;

  const int64_t* indices(int64_t o) const { return index.data<int64_t>() + o * width; }
  const double* weights(int64_t o) const { return weight.data<double>() + o * width; }
};

// Where output coordinate x of the axis lies in the input.
double OriginalCoordinate(const Options& opt, const AxisPlan& axis, int64_t x_out) {
  const double x = static_cast<double>(x_out);
  const double in = static_cast<double>(axis.in);
  const double out = axis.scale * in;  // The fractional output length the scale implies.
  switch (opt.coordinates) {
    case Coordinates::kHalfPixel:
      return (x + 0.5) / axis.scale - 0.5;
    case Coordinates::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(axis.out) / out;
      return in / 2 * (1 - adjustment) + (x + 0.5) / axis.scale - 0.5;
    }
    case Coordinates::kPytorchHalfPixel:
      return out == 1 ? -0.5 : (x + 0.5) / axis.scale - 0.5;
    case Coordinates::kAlignCorners:
      return out == 1 ? 0.0 : x * (in - 1) / (out - 1);
    case Coordinates::kAsymmetric:
      return x / axis.scale;
    case Coordinates::kTfCropAndResize: {
      const double span = (axis.roi_end - axis.roi_start) * (in - 1);
      return axis.roi_start * (in - 1) + (out == 1 ? span / 2 : x * span / (out - 1));
    }
    case Coordinates::kTfHalfPixelForNn:
      return (x + 0.5) / axis.scale;
  }
  return x;
}

int64_t NearestIndex(Rounding rounding, double x, double scale) {
  const double below = std::ceil(x) - 1;  // The neighbour below; x itself when x is integral lies above.
  const double ratio = x - below;
  switch (rounding) {
    case Rounding::kRoundPreferFloor: return static_cast<int64_t>(ratio <= 0.5 ? below : below + 1);
    case Rounding::kRoundPreferCeil: return static_cast<int64_t>(ratio < 0.5 ? below : below + 1);
    case Rounding::kFloor: return static_cast<int64_t>(ratio == 1 ? below + 1 : below);
    case Rounding::kCeil: return static_cast<int64_t>(below + 1);
    case Rounding::kLegacy: return static_cast<int64_t>(scale < 1 ? std::ceil(x) : std::trunc(x));
  }
  return 0;
}

double CubicWeight(double d, double a) {
  d = std::abs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

// The tables are checked against the per-tensor byte limit before they are built, and charged to the run.
absl::StatusOr<AxisTaps> BuildTaps(const Options& opt, const AxisPlan& axis) {
  // Linear weighs neighbours within 1 (cubic: 2) of x; antialiasing widens that by 1/scale when downscaling.
  const double stretch = opt.antialias ? std::min(axis.scale, 1.0) : 1.0;
  const double reach = opt.mode == Mode::kCubic ? 2.0 : 1.0;
  const int64_t first =
      opt.mode == Mode::kNearest ? 0 : static_cast<int64_t>(std::floor(-reach / stretch)) + 1;
  AxisTaps taps;
  taps.width = opt.mode == Mode::kNearest ? 1 : 2 - 2 * first;
  ASSIGN_OR_RETURN(const int64_t entries, CheckedMul(axis.out, taps.width));
  const Shape table = {entries};
  RETURN_IF_ERROR(CheckedByteSize(DataType::kDouble, table).status());
  taps.index = Tensor(DataType::kInt64, table);
  taps.weight = Tensor(DataType::kDouble, table);
  taps.count.resize(static_cast<size_t>(axis.out));
  for (int64_t o = 0; o < axis.out; ++o) {
    const double x = OriginalCoordinate(opt, axis, o);
    int64_t* index = taps.index.data<int64_t>() + o * taps.width;
    double* weight = taps.weight.data<double>() + o * taps.width;
    // Written to catch NaN too (from a NaN roi): it lies nowhere in the input, and must not become an index.
    if (opt.coordinates == Coordinates::kTfCropAndResize && !(x >= 0 && x <= static_cast<double>(axis.in - 1))) {
      taps.count[o] = 0;
      continue;
    }
    if (opt.mode == Mode::kNearest) {
      index[0] = std::clamp<int64_t>(NearestIndex(opt.rounding, x, axis.scale), 0, axis.in - 1);
      weight[0] = 1;
      taps.count[o] = 1;
      continue;
    }
    const double below = std::ceil(x) - 1;
    const double ratio = x - below;
    double sum = 0;
    int32_t kept = 0;
    for (int64_t k = first; k < first + taps.width; ++k) {
      const double d = (static_cast<double>(k) - ratio) * stretch;
      double w = opt.mode == Mode::kCubic ? CubicWeight(d, opt.cubic_a) : std::max(0.0, 1 - std::abs(d));
      const int64_t i = static_cast<int64_t>(below) + k;
      if (opt.exclude_outside && (i < 0 || i >= axis.in)) w = 0;
      sum += w;
      if (w == 0) continue;  // Drops the zero taps of integral positions and of the stretched filter's ends.
      index[kept] = std::clamp<int64_t>(i, 0, axis.in - 1);
      weight[kept] = w;
      ++kept;
    }
    if ((opt.antialias || opt.exclude_outside) && sum != 0) {
      for (int32_t t = 0; t < kept; ++t) weight[t] /= sum;
    }
    taps.count[o] = kept;
  }
  return taps;
}

// The taps of the outer axes (all but the innermost) of one output row, one combination at a time: each is
// an input offset and the product of its taps' weights. Never listed, as their number is the product of the
// axes' tap counts: 4^15 for a cubic upscale of a rank-16 tensor of one element. Combinations come with axis
// rank - 2 varying slowest and axis 0 fastest, each weight multiplied in that order, so every output's sum
// adds the same terms in the same order whatever the rank.
class OuterTaps {
 public:
  OuterTaps(const std::vector<AxisTaps>& taps, const std::vector<int64_t>& in_strides, const Shape& out_shape)
      : taps_(taps), in_strides_(in_strides), out_shape_(out_shape), axes_(static_cast<int64_t>(taps.size()) - 1),
        coordinate_(axes_), tap_(axes_), offset_(axes_ + 1, 0), weight_(axes_ + 1, 1.0) {}

  // Starts output row `row` at its first combination; false when the row lies outside the roi.
  bool Start(int64_t row) {
    for (int64_t d = axes_ - 1; d >= 0; --d) {
      coordinate_[d] = row % out_shape_[d];
      row /= out_shape_[d];
      if (taps_[d].count[coordinate_[d]] == 0) return false;
      tap_[d] = 0;
    }
    Combine(axes_ - 1);
    return true;
  }
  // Moves to the next combination of the row; false after its last.
  bool Next() {
    for (int64_t d = 0; d < axes_; ++d) {
      if (++tap_[d] < taps_[d].count[coordinate_[d]]) {
        Combine(d);
        return true;
      }
      tap_[d] = 0;
    }
    return false;
  }
  int64_t offset() const { return offset_[0]; }
  double weight() const { return weight_[0]; }

 private:
  // offset_[d] and weight_[d] combine the current taps of axes rank - 2 down to d; recomputes them from
  // axis `from` down.
  void Combine(int64_t from) {
    for (int64_t d = from; d >= 0; --d) {
      const AxisTaps& axis = taps_[d];
      offset_[d] = offset_[d + 1] + axis.indices(coordinate_[d])[tap_[d]] * in_strides_[d];
      weight_[d] = weight_[d + 1] * axis.weights(coordinate_[d])[tap_[d]];
    }
  }

  const std::vector<AxisTaps>& taps_;
  const std::vector<int64_t>& in_strides_;
  const Shape& out_shape_;
  const int64_t axes_;
  std::vector<int64_t> coordinate_, tap_, offset_;
  std::vector<double> weight_;
};

// Nearest for any element type: a pure copy through the single-tap tables.
void CopyNearest(const Tensor& in, Tensor& out, const std::vector<AxisTaps>& taps, const Tensor& fill,
                 ThreadPool& pool) {
  const std::vector<int64_t> in_strides = StridesOf(in.shape());
  const Shape& out_shape = out.shape();
  const int64_t width = out_shape.back();
  const AxisTaps& inner = taps.back();
  DispatchByWidth(in.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* src = in.data<T>();
    T* dst = out.data<T>();
    const T fill_value = *fill.data<T>();
    const int64_t min_rows = std::max<int64_t>(1, 4096 / width);
    pool.ParallelFor(out.NumElements() / width, min_rows, [&](int64_t b, int64_t e) {
      OuterTaps outer(taps, in_strides, out_shape);
      for (int64_t row = b; row < e; ++row) {
        T* row_out = dst + row * width;
        if (!outer.Start(row)) {
          std::fill(row_out, row_out + width, fill_value);
          continue;
        }
        const T* row_in = src + outer.offset();  // nearest has one tap per axis
        for (int64_t o = 0; o < width; ++o) {
          row_out[o] = inner.count[o] == 0 ? fill_value : row_in[*inner.indices(o)];
        }
      }
    });
  });
}

// Outputs of a row summed at once, over every combination of the outer axes' taps: their sums stay in L1.
constexpr int64_t kSumBlock = 256;

// sums[i] = the weighted sum of output o + i of the row `outer` has started, for i in [0, n).
template <typename T>
void SumBlock(const T* src, OuterTaps& outer, const AxisTaps& inner, int64_t o, int64_t n, double* sums) {
  std::fill_n(sums, n, 0.0);
  do {
    const T* row_in = src + outer.offset();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t* index = inner.indices(o + i);
      const double* weight = inner.weights(o + i);
      double part = 0;
      for (int32_t t = 0; t < inner.count[o + i]; ++t) {
        part += weight[t] * static_cast<double>(ToCompute(row_in[index[t]]));
      }
      sums[i] += outer.weight() * part;
    }
    StopIfRunEnded(WorkOf({n, inner.width}));
  } while (outer.Next());
}

// Linear and cubic: weighted sums in double, converted back to the element type.
absl::Status Interpolate(const Tensor& in, Tensor& out, const std::vector<AxisTaps>& taps, double fill,
                         ThreadPool& pool) {
  const std::vector<int64_t> in_strides = StridesOf(in.shape());
  const Shape& out_shape = out.shape();
  const int64_t width = out_shape.back();
  const AxisTaps& inner = taps.back();
  bool supported = false;
  DispatchNumeric(in.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (!std::is_same_v<T, bool>) {
      supported = true;
      const T* src = in.data<T>();
      T* dst = out.data<T>();
      const T fill_value = static_cast<T>(static_cast<ComputeType<T>>(fill));
      const int64_t min_rows = std::max<int64_t>(1, 1024 / width);
      pool.ParallelFor(out.NumElements() / width, min_rows, [&](int64_t b, int64_t e) {
        OuterTaps outer(taps, in_strides, out_shape);
        std::array<double, kSumBlock> sums;
        for (int64_t row = b; row < e; ++row) {
          for (int64_t o = 0; o < width; o += kSumBlock) {
            const int64_t n = std::min(kSumBlock, width - o);
            T* block_out = dst + row * width + o;
            if (!outer.Start(row)) {
              std::fill_n(block_out, n, fill_value);
              continue;
            }
            SumBlock(src, outer, inner, o, n, sums.data());
            for (int64_t i = 0; i < n; ++i) {
              block_out[i] = inner.count[o + i] == 0 ? fill_value
                                                     : FromCompute<T>(static_cast<ComputeType<T>>(sums[i]));
            }
          }
        }
      });
    }
  });
  if (!supported) {
    return absl::InvalidArgumentError(absl::StrCat("linear and cubic modes need a numeric type, got ",
                                                   DataTypeName(in.dtype())));
  }
  return absl::OkStatus();
}

enum class AspectPolicy { kStretch, kNotLarger, kNotSmaller };

// Resize-10..19 and Upsample-1/7/9. Inputs by version: Upsample-1/7 X (scales from attributes);
// Upsample-9 and Resize-10 X, scales; Resize-11+ X, roi, scales, sizes.
class Resize final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    is_upsample_ = info.op_type() == "Upsample";
    opset_ = info.opset();
    const bool legacy = is_upsample_ || opset_ < 11;
    ASSIGN_OR_RETURN(const std::string mode, info.Attr<std::string>("mode", "nearest"));
    if (mode == "nearest") {
      opt_.mode = Mode::kNearest;
    } else if (mode == "linear" || (legacy && mode == "bilinear")) {
      opt_.mode = Mode::kLinear;
    } else if (mode == "cubic" && !legacy) {
      opt_.mode = Mode::kCubic;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("mode \"", mode, "\": expected nearest, linear",
                                                     legacy ? "" : " or cubic"));
    }
    if (legacy) {
      opt_.coordinates = Coordinates::kAsymmetric;
      opt_.rounding = Rounding::kLegacy;
    } else {
      RETURN_IF_ERROR(ParseCoordinates(info));
      RETURN_IF_ERROR(ParseRounding(info));
      ASSIGN_OR_RETURN(const float a, info.Attr<float>("cubic_coeff_a", -0.75f));
      opt_.cubic_a = a;
      ASSIGN_OR_RETURN(const int64_t exclude, info.Attr<int64_t>("exclude_outside", 0));
      opt_.exclude_outside = exclude != 0;
      ASSIGN_OR_RETURN(opt_.extrapolation_value, info.Attr<float>("extrapolation_value", 0.0f));
    }
    if (opset_ >= 18 && !is_upsample_) {
      ASSIGN_OR_RETURN(const int64_t antialias, info.Attr<int64_t>("antialias", 0));
      opt_.antialias = antialias != 0 && opt_.mode != Mode::kNearest;
      ASSIGN_OR_RETURN(axes_, info.Attr<std::vector<int64_t>>("axes", {}));
      RETURN_IF_ERROR(ParsePolicy(info));
    }
    if (is_upsample_ && opset_ < 7) {  // Upsample-1 (experimental) resizes NCHW by two attributes.
      ASSIGN_OR_RETURN(const float height, info.Attr<float>("height_scale"));
      ASSIGN_OR_RETURN(const float width, info.Attr<float>("width_scale"));
      attr_scales_ = {1.0f, 1.0f, height, width};
    } else if (is_upsample_ && opset_ < 9) {
      ASSIGN_OR_RETURN(attr_scales_, info.Attr<std::vector<float>>("scales"));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    if (x.rank() == 0) return absl::InvalidArgumentError("X must have rank >= 1, got a scalar");
    ASSIGN_OR_RETURN(const std::vector<AxisPlan> plan, Plan(ctx, x.shape()));
    Shape out_shape;
    for (const AxisPlan& axis : plan) out_shape.push_back(axis.out);
    // The taps take memory in proportion to the output's dims: check its size before building them.
    RETURN_IF_ERROR(CheckedByteSize(x.dtype(), out_shape).status());
    Tensor& y = ctx.Output(0, x.dtype(), out_shape);
    // Taps only for a non-empty output of a non-empty X: then every scale is at least about 1 / (input
    // length), and an antialiased filter stretched by 1 / scale stays within int64 (a scale of 1e-30 leaving
    // no output would stretch it to 2e30 taps, a float-to-int64 conversion that is undefined).
    if (y.NumElements() == 0) return absl::OkStatus();
    if (x.NumElements() == 0) {
      return absl::InvalidArgumentError(absl::StrCat("cannot resize the empty X ", ShapeToString(x.shape()),
                                                     " to ", ShapeToString(out_shape)));
    }
    std::vector<AxisTaps> taps;
    for (const AxisPlan& axis : plan) {
      ASSIGN_OR_RETURN(AxisTaps axis_taps, BuildTaps(opt_, axis));
      taps.push_back(std::move(axis_taps));
    }
    if (opt_.mode != Mode::kNearest) return Interpolate(x, y, taps, opt_.extrapolation_value, ctx.pool());
    Tensor fill(x.dtype(), {1});
    if (x.dtype() != DataType::kString) std::memset(fill.raw_data(), 0, fill.ByteSize());
    DispatchNumeric(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      *fill.data<T>() = static_cast<T>(static_cast<ComputeType<T>>(opt_.extrapolation_value));
    });
    RETURN_IF_ERROR(CheckStringCopies({&x}, y.NumElements()));
    CopyNearest(x, y, taps, fill, ctx.pool());
    return absl::OkStatus();
  }

 private:
  absl::Status ParseCoordinates(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const std::string name,
                     info.Attr<std::string>("coordinate_transformation_mode", "half_pixel"));
    if (name == "half_pixel") {
      opt_.coordinates = Coordinates::kHalfPixel;
    } else if (name == "half_pixel_symmetric" && opset_ >= 19) {
      opt_.coordinates = Coordinates::kHalfPixelSymmetric;
    } else if (name == "pytorch_half_pixel") {
      opt_.coordinates = Coordinates::kPytorchHalfPixel;
    } else if (name == "align_corners") {
      opt_.coordinates = Coordinates::kAlignCorners;
    } else if (name == "asymmetric") {
      opt_.coordinates = Coordinates::kAsymmetric;
    } else if (name == "tf_crop_and_resize") {
      opt_.coordinates = Coordinates::kTfCropAndResize;
    } else if (name == "tf_half_pixel_for_nn" && opset_ < 13) {
      opt_.coordinates = Coordinates::kTfHalfPixelForNn;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("coordinate_transformation_mode \"", name,
                                                     "\" is not defined at opset ", opset_));
    }
    return absl::OkStatus();
  }

  absl::Status ParseRounding(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const std::string name, info.Attr<std::string>("nearest_mode", "round_prefer_floor"));
    if (name == "round_prefer_floor") {
      opt_.rounding = Rounding::kRoundPreferFloor;
    } else if (name == "round_prefer_ceil") {
      opt_.rounding = Rounding::kRoundPreferCeil;
    } else if (name == "floor") {
      opt_.rounding = Rounding::kFloor;
    } else if (name == "ceil") {
      opt_.rounding = Rounding::kCeil;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "nearest_mode \"", name, "\": expected round_prefer_floor, round_prefer_ceil, floor or ceil"));
    }
    return absl::OkStatus();
  }

  absl::Status ParsePolicy(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const std::string name, info.Attr<std::string>("keep_aspect_ratio_policy", "stretch"));
    if (name == "stretch") {
      policy_ = AspectPolicy::kStretch;
    } else if (name == "not_larger") {
      policy_ = AspectPolicy::kNotLarger;
    } else if (name == "not_smaller") {
      policy_ = AspectPolicy::kNotSmaller;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("keep_aspect_ratio_policy \"", name,
                                                     "\": expected stretch, not_larger or not_smaller"));
    }
    return absl::OkStatus();
  }

  // The input index of scales (sizes follows it; roi precedes it from Resize-11).
  int ScalesInput() const { return is_upsample_ || opset_ < 11 ? 1 : 2; }

  // Sizes, scales and rois of every axis, from scales or sizes (exactly one is given) over `axes`.
  absl::StatusOr<std::vector<AxisPlan>> Plan(const KernelContext& ctx, const Shape& in_shape) const {
    const int64_t rank = static_cast<int64_t>(in_shape.size());
    std::vector<AxisPlan> plan(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) plan[d] = AxisPlan{in_shape[d], in_shape[d], 1.0, 0.0, 1.0};
    std::vector<int64_t> axes;
    for (int64_t a : axes_) {
      ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(a, rank));
      axes.push_back(axis);
    }
    if (axes.empty()) {
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    }
    const int64_t n = static_cast<int64_t>(axes.size());

    std::vector<double> scales;
    if (!attr_scales_.empty()) {
      scales.assign(attr_scales_.begin(), attr_scales_.end());
    } else if (const Tensor* t = ctx.Input(ScalesInput()); t != nullptr) {
      for (int64_t i = 0; i < t->NumElements(); ++i) scales.push_back(t->GetAsDouble(i));
    }
    const Tensor* sizes = ScalesInput() == 2 ? ctx.Input(3) : nullptr;
    if (sizes != nullptr && sizes->NumElements() == 0) sizes = nullptr;
    if (scales.empty() == (sizes == nullptr)) {
      return absl::InvalidArgumentError("exactly one of scales and sizes must be given");
    }
    const int64_t given = sizes != nullptr ? sizes->NumElements() : static_cast<int64_t>(scales.size());
    if (given != n) {
      return absl::InvalidArgumentError(absl::StrCat(sizes != nullptr ? "sizes" : "scales", " has ", given,
                                                     " values, expected ", n, " (one per resized axis)"));
    }
    if (sizes != nullptr) {
      RETURN_IF_ERROR(PlanFromSizes(Int64Values(*sizes), axes, plan));
    } else {
      for (int64_t i = 0; i < n; ++i) {
        if (!(scales[i] > 0) || !std::isfinite(scales[i])) {
          return absl::InvalidArgumentError(absl::StrCat("scale ", scales[i], " must be finite and > 0"));
        }
        AxisPlan& axis = plan[axes[i]];
        axis.scale = scales[i];
        ASSIGN_OR_RETURN(axis.out, CheckedDimFromDouble(static_cast<double>(axis.in) * axis.scale));
      }
    }
    if (opt_.coordinates == Coordinates::kTfCropAndResize) {
      const Tensor* roi = ctx.Input(1);
      if (roi == nullptr || roi->NumElements() != 2 * n) {
        return absl::InvalidArgumentError(
            absl::StrCat("tf_crop_and_resize needs roi with ", 2 * n, " values"));
      }
      for (int64_t i = 0; i < n; ++i) {
        plan[axes[i]].roi_start = roi->GetAsDouble(i);
        plan[axes[i]].roi_end = roi->GetAsDouble(n + i);
      }
    }
    return plan;
  }

  // Output sizes from `sizes`; keeping the aspect ratio resizes every axis by one scale.
  absl::Status PlanFromSizes(const std::vector<int64_t>& sizes, const std::vector<int64_t>& axes,
                             std::vector<AxisPlan>& plan) const {
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] < 0) return absl::InvalidArgumentError(absl::StrCat("size ", sizes[i], " must be >= 0"));
      AxisPlan& axis = plan[axes[i]];
      axis.out = sizes[i];
      axis.scale = static_cast<double>(sizes[i]) / static_cast<double>(axis.in);
    }
    if (policy_ == AspectPolicy::kStretch) return absl::OkStatus();
    double scale = plan[axes[0]].scale;
    for (int64_t axis : axes) {
      scale = policy_ == AspectPolicy::kNotLarger ? std::min(scale, plan[axis].scale)
                                                  : std::max(scale, plan[axis].scale);
    }
    for (int64_t axis : axes) {
      plan[axis].scale = scale;
      ASSIGN_OR_RETURN(plan[axis].out, CheckedDimFromDouble(scale * static_cast<double>(plan[axis].in) + 0.5));
    }
    return absl::OkStatus();
  }

  bool is_upsample_ = false;
  int opset_ = 0;
  Options opt_;
  std::vector<int64_t> axes_;
  AspectPolicy policy_ = AspectPolicy::kStretch;
  std::vector<float> attr_scales_;
};

// Kept for the error message: the spec removes Upsample from opset 10 in favour of Resize.
class DeprecatedUpsample final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Upsample is deprecated since opset 10 (model opset ", info.opset(), "): use Resize"));
  }
  absl::Status Compute(KernelContext&) const override { return absl::InternalError("unreachable"); }
};

// Upsample-1 (experimental) takes height_scale/width_scale, -7 a scales attribute, -9 a scales input;
// -10 deprecates it.
REGISTER_KERNEL(kOnnx, "Upsample", 1, 6, kAllTypes, Resize);
REGISTER_KERNEL(kOnnx, "Upsample", 7, 8, kAllTypes, Resize);
REGISTER_KERNEL(kOnnx, "Upsample", 9, 9, kAllTypes, Resize);
REGISTER_KERNEL(kOnnx, "Upsample", 10, kLatest, kAllTypes, DeprecatedUpsample);
// Resize-10: X, scales; -11 adds roi, sizes, coordinate modes, cubic; -13 drops tf_half_pixel_for_nn and
// makes roi/scales optional; -18 adds antialias, axes, keep_aspect_ratio_policy; -19 half_pixel_symmetric.
REGISTER_KERNEL(kOnnx, "Resize", 10, 10, kAllTypes, Resize);
REGISTER_KERNEL(kOnnx, "Resize", 11, 12, kAllTypes, Resize);
REGISTER_KERNEL(kOnnx, "Resize", 13, 17, kAllTypes, Resize);
REGISTER_KERNEL(kOnnx, "Resize", 18, 18, kAllTypes, Resize);
REGISTER_KERNEL(kOnnx, "Resize", 19, kLatest, kAllTypes, Resize);

}  // namespace
}  // namespace onnxserve

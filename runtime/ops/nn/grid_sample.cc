// GridSample (sampling X at normalized grid positions, 2-D in -16, N-D from -20) and AffineGrid (the grid
// of an affine transform). Coordinates follow PyTorch's grid_sample/affine_grid, as the ONNX reference does.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/run_limits.h"
#include "runtime/core/work_tally.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

enum class Mode { kNearest, kLinear, kCubic };
enum class Padding { kZeros, kBorder, kReflection };

// From [-1, 1] to pixel coordinates: -1 and 1 are corner pixel centers with align_corners, else edges.
float Denormalize(float n, int64_t size, bool align_corners) {
  return align_corners ? (n + 1) / 2.0f * static_cast<float>(size - 1)
                       : ((n + 1) * static_cast<float>(size) - 1) / 2.0f;
}

// How many times a point dx past a border reflects over `range`; nullopt past 2^62 flips (an infinite or
// absurd coordinate: converting that to int64 is undefined behaviour, and float has lost the answer anyway).
std::optional<int64_t> Flips(float dx, float range) {
  const float flips = dx / range;
  if (!(flips < 0x1p62f)) return std::nullopt;
  return static_cast<int64_t>(flips);
}

// Reflects x by the borders [lo, hi] until it falls inside; NaN where the reflection is lost.
float Reflect(float x, float lo, float hi) {
  const float range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const float dx = lo - x;
    const std::optional<int64_t> maybe_flips = Flips(dx, range);
    if (!maybe_flips) return std::numeric_limits<float>::quiet_NaN();
    const int64_t flips = *maybe_flips;
    const float r = dx - static_cast<float>(flips) * range;
    return flips % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const float dx = x - hi;
    const std::optional<int64_t> maybe_flips = Flips(dx, range);
    if (!maybe_flips) return std::numeric_limits<float>::quiet_NaN();
    const int64_t flips = *maybe_flips;
    const float r = dx - static_cast<float>(flips) * range;
    return flips % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

// Keys' cubic convolution weights (alpha = -0.75) for the taps at -1, 0, 1, 2 around a fraction t.
void CubicWeights(float t, float* w) {
  constexpr float a = -0.75f;
  auto near = [](float x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
  auto far = [](float x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

struct SampleOptions {
  Mode mode = Mode::kLinear;
  Padding padding = Padding::kZeros;
  bool align_corners = false;
};

// The taps of one output point along one spatial axis: input indices (-1 reads zero) and weights.
struct AxisTaps {
  int64_t index[4];
  float weight[4];
};

class AxisSampler {
 public:
  AxisSampler(int64_t size, const SampleOptions& options) : size_(size), options_(options) {
    lo_ = options.align_corners ? 0.0f : -0.5f;
    hi_ = options.align_corners ? static_cast<float>(size - 1) : static_cast<float>(size) - 0.5f;
  }

  void Taps(float normalized, AxisTaps& taps) const {
    // An empty axis has no border to clamp to (clamping to [0, -1] is undefined, and read index 0).
    if (size_ == 0) {
      taps = ZeroTaps();
      return;
    }
    float x = Denormalize(normalized, size_, options_.align_corners);
    // Nearest rounds half to even in every rank (the spec says so; the volumetric node tests agree).
    if (options_.mode == Mode::kNearest) x = std::nearbyint(x);
    if (x < lo_ || x > hi_) {
      if (options_.padding == Padding::kBorder) x = std::clamp(x, 0.0f, static_cast<float>(size_ - 1));
      if (options_.padding == Padding::kReflection) x = Reflect(x, lo_, hi_);
    }
    // A NaN coordinate samples nothing; a huge one (past any tensor) stays just as far outside but within
    // int64, since converting a float beyond it is undefined behaviour.
    if (std::isnan(x)) {
      taps = ZeroTaps();
      return;
    }
    x = std::clamp(x, -kFarOutside, kFarOutside);
    switch (options_.mode) {
      case Mode::kNearest:
        taps.index[0] = Resolve(static_cast<int64_t>(x));
        taps.weight[0] = 1.0f;
        return;
      case Mode::kLinear: {
        const float floor = std::floor(x), t = x - floor;
        taps.index[0] = Resolve(static_cast<int64_t>(floor));
        taps.index[1] = Resolve(static_cast<int64_t>(floor) + 1);
        taps.weight[0] = 1 - t;
        taps.weight[1] = t;
        return;
      }
      case Mode::kCubic: {
        const float floor = std::floor(x);
        CubicWeights(x - floor, taps.weight);
        for (int k = 0; k < 4; ++k) taps.index[k] = Resolve(static_cast<int64_t>(floor) + k - 1);
        return;
      }
    }
  }

 private:
  static constexpr float kFarOutside = 0x1p40f;

  static AxisTaps ZeroTaps() {
    AxisTaps taps;
    for (int k = 0; k < 4; ++k) {
      taps.index[k] = -1;
      taps.weight[k] = 0.0f;
    }
    return taps;
  }

  // An integer tap index under the padding mode; -1 when it reads the zero padding.
  int64_t Resolve(int64_t i) const {
    if (i >= 0 && i < size_) return i;
    switch (options_.padding) {
      case Padding::kZeros:
        return -1;
      case Padding::kBorder:
        return std::clamp<int64_t>(i, 0, size_ - 1);
      case Padding::kReflection:
        return std::clamp<int64_t>(static_cast<int64_t>(Reflect(static_cast<float>(i), lo_, hi_)), 0,
                                   size_ - 1);
    }
    return -1;
  }

  int64_t size_;
  SampleOptions options_;
  float lo_, hi_;
};

int TapCount(Mode mode) { return mode == Mode::kNearest ? 1 : mode == Mode::kLinear ? 2 : 4; }

class GridSample final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    const bool v16 = info.opset() < 20;
    ASSIGN_OR_RETURN(const std::string mode, info.Attr<std::string>("mode", v16 ? "bilinear" : "linear"));
    ASSIGN_OR_RETURN(const std::string padding, info.Attr<std::string>("padding_mode", "zeros"));
    ASSIGN_OR_RETURN(const int64_t align_corners, info.Attr<int64_t>("align_corners", 0));
    if (mode == "nearest") {
      options_.mode = Mode::kNearest;
    } else if (mode == (v16 ? "bilinear" : "linear")) {
      options_.mode = Mode::kLinear;
    } else if (mode == (v16 ? "bicubic" : "cubic")) {
      options_.mode = Mode::kCubic;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "mode must be nearest, ", v16 ? "bilinear or bicubic" : "linear or cubic", ", got \"", mode, "\""));
    }
    if (padding == "zeros") {
      options_.padding = Padding::kZeros;
    } else if (padding == "border") {
      options_.padding = Padding::kBorder;
    } else if (padding == "reflection") {
      options_.padding = Padding::kReflection;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("padding_mode must be zeros, border or reflection, got \"", padding, "\""));
    }
    options_.align_corners = align_corners != 0;
    only_2d_ = v16;
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& x = *ctx.Input(0);
    const Tensor& grid = *ctx.Input(1);
    const int64_t spatial = x.rank() - 2;
    if (spatial < 1 || (only_2d_ && spatial != 2) || grid.rank() != x.rank() || grid.dim(0) != x.dim(0) ||
        grid.dim(grid.rank() - 1) != spatial) {
      return absl::InvalidArgumentError(absl::StrCat("X ", x.DebugString(), " and grid ", grid.DebugString(),
                                                     " must be [N,C,D1..Dr] and [N,D1_out..Dr_out,r]",
                                                     only_2d_ ? " with r = 2" : ""));
    }
    Shape y_shape = {x.dim(0), x.dim(1)};
    y_shape.insert(y_shape.end(), grid.shape().begin() + 1, grid.shape().end() - 1);
    Tensor& y = ctx.Output(0, x.dtype(), y_shape);
    if (y.NumElements() == 0) return absl::OkStatus();
    const Tensor grid_f = Cast(grid);
    bool supported = false;
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, bool>) {
        supported = true;
        Sample<T>(x, grid_f, y, ctx.pool());
      }
    });
    if (!supported)
      return absl::InvalidArgumentError(absl::StrCat("X must be numeric, got ", x.DebugString()));
    return absl::OkStatus();
  }

 private:
  // The grid as float (the reference computes coordinates in float32).
  static Tensor Cast(const Tensor& grid) {
    if (grid.dtype() == DataType::kFloat) return grid;
    Tensor out(DataType::kFloat, grid.shape());
    DispatchNumeric(grid.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* in = grid.data<T>();
      for (int64_t i = 0; i < grid.NumElements(); ++i) out.data<float>()[i] = static_cast<float>(ToCompute(in[i]));
    });
    return out;
  }

  template <typename T>
  void Sample(const Tensor& x, const Tensor& grid, Tensor& y, ThreadPool& pool) const {
    const int64_t rank = x.rank() - 2, batch = x.dim(0), channels = x.dim(1);
    const Shape in_dims(x.shape().begin() + 2, x.shape().end());
    const std::vector<int64_t> in_strides = StridesOf(in_dims);
    const int64_t in_size = NumElements(in_dims);
    const int64_t points = NumElements(Shape(grid.shape().begin() + 1, grid.shape().end() - 1));
    std::vector<AxisSampler> samplers;
    for (int64_t d = 0; d < rank; ++d) samplers.emplace_back(in_dims[d], options_);
    const int taps = TapCount(options_.mode);
    // taps^rank, and the rank comes from the request: saturated, past 2^63 at rank 32 of cubic taps.
    int64_t combos = 1;
    for (int64_t d = 0; d < rank; ++d) combos = WorkOf({combos, taps});
    pool.ParallelFor(batch * points, 64, [&](int64_t begin, int64_t end) {
      std::vector<AxisTaps> axis_taps(rank);
      WorkTally combined;  // one output of a high-rank X may take days: its combinations count within it
      for (int64_t task = begin; task < end; ++task) {
        const int64_t n = task / points, p = task % points;
        // Grid coordinates list the innermost axis first.
        const float* g = grid.data<float>() + task * rank;
        for (int64_t d = 0; d < rank; ++d) samplers[d].Taps(g[rank - 1 - d], axis_taps[d]);
        for (int64_t c = 0; c < channels; ++c) {
          const T* image = x.data<T>() + (n * channels + c) * in_size;
          double sum = 0;
          for (int64_t combo = 0; combo < combos; ++combo) {
            combined.Add(rank);
            int64_t offset = 0, rest = combo;
            double weight = 1;
            for (int64_t d = rank - 1; d >= 0 && offset >= 0; --d) {
              const int k = static_cast<int>(rest % taps);
              rest /= taps;
              const int64_t index = axis_taps[d].index[k];
              offset = index < 0 ? -1 : offset + index * in_strides[d];
              weight *= axis_taps[d].weight[k];
            }
            if (offset >= 0) sum += weight * static_cast<double>(ToCompute(image[offset]));
          }
          y.data<T>()[(n * channels + c) * points + p] = FromCompute<T>(static_cast<ComputeType<T>>(sum));
        }
      }
    });
  }

  SampleOptions options_;
  bool only_2d_ = false;
};

// AffineGrid: grid[n, ..., :] = theta[n] * [x, y, (z), 1] over an evenly spaced base grid in [-1, 1].
class AffineGrid final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(align_corners_, info.Attr<int64_t>("align_corners", 0));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& theta = *ctx.Input(0);
    const std::vector<int64_t> size = Int64Values(*ctx.Input(1));
    const int64_t rank = static_cast<int64_t>(size.size()) - 2;
    if ((rank != 2 && rank != 3) || theta.rank() != 3 || theta.dim(0) != size[0] || theta.dim(1) != rank ||
        theta.dim(2) != rank + 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("theta ", theta.DebugString(), " and size ", ShapeToString(size),
                       " must be [N,2,3] with [N,C,H,W] or [N,3,4] with [N,C,D,H,W]"));
    }
    Shape out_shape(size.begin(), size.end());
    out_shape.erase(out_shape.begin() + 1);  // drop C
    out_shape.push_back(rank);
    ASSIGN_OR_RETURN(Tensor* grid_tensor, ctx.CheckedOutput(0, theta.dtype(), out_shape));
    Tensor& grid = *grid_tensor;
    bool supported = false;
    DispatchNumeric(theta.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        supported = true;
        Fill<T>(theta, Shape(size.begin() + 2, size.end()), grid);
      }
    });
    if (!supported)
      return absl::InvalidArgumentError(absl::StrCat("theta must be float, got ", theta.DebugString()));
    return absl::OkStatus();
  }

 private:
  // Position i of `size` evenly spaced points in [-1, 1] (pixel centers unless align_corners).
  double BaseCoordinate(int64_t i, int64_t size) const {
    if (align_corners_)
      return size == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(size - 1);
    return (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(size) - 1.0;
  }

  template <typename T>
  void Fill(const Tensor& theta, const Shape& spatial, Tensor& grid) const {
    const int64_t rank = static_cast<int64_t>(spatial.size());
    const int64_t points = NumElements(spatial);
    const std::vector<int64_t> strides = StridesOf(spatial);
    T* out = grid.data<T>();
    for (int64_t n = 0; n < theta.dim(0); ++n) {
      const T* m = theta.data<T>() + n * rank * (rank + 1);
      for (int64_t p = 0; p < points; ++p) {
        // base = [x (innermost axis), y, (z), 1]
        double base[4] = {0, 0, 0, 1};
        for (int64_t d = 0; d < rank; ++d) {
          base[rank - 1 - d] = BaseCoordinate((p / strides[d]) % spatial[d], spatial[d]);
        }
        base[rank] = 1;
        for (int64_t r = 0; r < rank; ++r) {
          double v = 0;
          for (int64_t k = 0; k <= rank; ++k)
            v += static_cast<double>(ToCompute(m[r * (rank + 1) + k])) * base[k];
          *out++ = FromCompute<T>(static_cast<ComputeType<T>>(v));
        }
      }
    }
  }

  int64_t align_corners_ = 0;
};

// GridSample-16 is 2-D with modes bilinear/bicubic; -20 goes N-D and renames them linear/cubic; -22 widens
// the types.
REGISTER_KERNEL(kOnnx, "GridSample", 16, 19, kNumericTypes, GridSample);
REGISTER_KERNEL(kOnnx, "GridSample", 20, 21, kNumericTypes, GridSample);
REGISTER_KERNEL(kOnnx, "GridSample", 22, kLatest, kNumericTypes, GridSample);
REGISTER_KERNEL(kOnnx, "AffineGrid", 20, kLatest, kFloatTypes, AffineGrid);

}  // namespace
}  // namespace onnxserve

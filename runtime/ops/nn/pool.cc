// Pooling over the spatial dims of [N, C, D1, ...]: MaxPool (with Indices), AveragePool, LpPool and their
// Global* forms.
//
// Attributes by version:
//   MaxPool      1: kernel_shape, strides, pads, auto_pad; 8: Indices output, storage_order;
//                10: ceil_mode, dilations; 12: int8/uint8; 22: bfloat16.
//   AveragePool  7: count_include_pad; 10: ceil_mode; 19: dilations.
//   LpPool       1: p is a float; 2: p is an int; 18: ceil_mode, dilations.
//   GlobalLpPool 1: p is a float; 2: p is an int.
// Windows are computed on up to three spatial dims (1-D and 2-D pools are 3-D pools with unit leading
// dims), one (n, c) plane per parallel task.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "runtime/core/run_limits.h"
#include "runtime/core/work_tally.h"
#include "runtime/math/vector_kernels.h"
#include "runtime/ops/common.h"
#include "runtime/ops/nn/pool_geometry.h"
#include "runtime/ops/window.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// Walks every window of one plane: reduce(acc, value, flat input index) over its taps, then
// finish(acc, output index, divisors) writes the output.
template <typename Acc, typename Reduce, typename Finish>
void ForEachWindow(const PoolGeometry& g, Acc init, Reduce reduce, Finish finish) {
  const auto& [w0, w1, w2] = g.windows;
  int64_t out_index = 0;
  // Windows as large as the image make a plane quadratic in it, and one row (a 1-D pool of a long signal) may
  // be all of it: the taps count window by window.
  WorkTally taps;
  for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
    for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
      for (int64_t o2 = 0; o2 < g.out[2]; ++o2, ++out_index) {
        Acc acc = init;
        for (int64_t k0 = w0.lo[o0]; k0 < w0.hi[o0]; ++k0) {
          const int64_t i0 = w0.start[o0] + k0 * g.dilation[0];
          for (int64_t k1 = w1.lo[o1]; k1 < w1.hi[o1]; ++k1) {
            const int64_t i01 = i0 * g.in[1] + w1.start[o1] + k1 * g.dilation[1];
            for (int64_t k2 = w2.lo[o2]; k2 < w2.hi[o2]; ++k2) {
              reduce(acc, i01 * g.in[2] + w2.start[o2] + k2 * g.dilation[2]);
            }
          }
        }
        const int64_t valid = (w0.hi[o0] - w0.lo[o0]) * (w1.hi[o1] - w1.lo[o1]) * (w2.hi[o2] - w2.lo[o2]);
        const int64_t padded = w0.padded[o0] * w1.padded[o1] * w2.padded[o2];
        finish(acc, out_index, valid, padded);
        taps.Add(valid + 1);
      }
    }
  }
  taps.Flush();
}

// MaxPool of one plane of a 1-D/2-D float pool without Indices, the common case: each output row is the
// running max over its valid input rows, and each output column reads only the taps its precomputed
// window keeps inside the image, so there is no index tracking and no per-tap bounds check. A window of -inf
// and NaN only is -inf, as on the vector path.
template <typename T>
void MaxPoolPlane2D(const PoolGeometry& g, const T* in, T* out) {
  const DimWindows& rows = g.windows[1];
  const DimWindows& cols = g.windows[2];
  const int64_t width = g.in[2], out_width = g.out[2];
  const int64_t row_dilation = g.dilation[1], col_dilation = g.dilation[2];
  WorkTally count;
  for (int64_t oh = 0; oh < g.out[1]; ++oh, out += out_width) {
    std::fill(out, out + out_width, -std::numeric_limits<T>::infinity());
    for (int64_t kh = rows.lo[oh]; kh < rows.hi[oh]; ++kh) {
      const T* row = in + (rows.start[oh] + kh * row_dilation) * width;
      for (int64_t ow = 0; ow < out_width; ++ow) {
        const T* taps = row + cols.start[ow];
        T best = out[ow];
        for (int64_t kw = cols.lo[ow]; kw < cols.hi[ow]; ++kw) {
          const T v = taps[kw * col_dilation];
          best = v > best ? v : best;
        }
        out[ow] = best;
        count.Add(cols.hi[ow] - cols.lo[ow] + 1);
      }
    }
  }
  count.Flush();
}

// Where the output is empty: makes it (and Indices when wanted), which needs no windows (PlanPool builds none
// then), and says so.
bool MadeEmptyOutputs(KernelContext& ctx, DataType type, const PoolGeometry& g) {
  if (NumElements(g.out_shape) != 0) return false;
  ctx.Output(0, type, g.out_shape);
  if (ctx.OutputWanted(1)) ctx.Output(1, DataType::kInt64, g.out_shape);
  return true;
}

// Runs fn(begin, end) over the (n, c) planes in parallel chunks.
template <typename Fn>
void ForEachPlaneRange(ThreadPool& pool, const PoolGeometry& g, Fn&& fn) {
  const int64_t work = NumElements(g.out_shape) / std::max<int64_t>(g.planes, 1);
  pool.ParallelFor(g.planes, std::max<int64_t>(1, 4096 / std::max<int64_t>(work, 1)), fn);
}

// Runs fn(plane) for every (n, c) plane in parallel.
template <typename Fn>
void ForEachPlane(ThreadPool& pool, const PoolGeometry& g, Fn&& fn) {
  ForEachPlaneRange(pool, g, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) fn(p);
  });
}

// The vector kernels' path: 1-D/2-D float pools without dilation, for MaxPool (without Indices) and
// AveragePool. Each output row first reduces its valid input rows column by column into the middle of a
// row padded on both sides with the reduction's identity (-inf for max, 0 for sum); the window kernel
// then reduces each output's taps along that row, vectors of outputs at a time for strides 1 and 2.
bool HasFloatPlanePath(const PoolGeometry& g) {
  return g.in[0] == 1 && g.out[0] == 1 && g.dilation[1] == 1 && g.dilation[2] == 1 &&
         (g.out[2] == 0 || g.windows[2].start[0] <= 0);
}

// Whether every plane has one window, exactly the plane (a global pool spelled as MaxPool or AveragePool,
// as exporters write the head of a small CNN): then one reduction over the plane replaces the row walk.
bool IsWholePlaneWindow(const PoolGeometry& g) {
  for (int d = 0; d < kMaxSpatial; ++d) {
    if (g.out[d] != 1 || g.kernel[d] != g.in[d] || g.dilation[d] != 1 || g.windows[d].start[0] != 0) return false;
  }
  return true;
}

// The max or the mean of one float plane of `size` values: global pooling, however it is spelled.
float ReduceFloatPlane(bool max, const float* plane, int64_t size) {
  const vec::VectorKernels& k = vec::Kernels();
  return max ? k.max(plane, size) : static_cast<float>(k.sum(plane, size) / static_cast<double>(size));
}

// y[p] = max or mean of plane p, for planes [begin, end) of `size` floats each.
void ReduceWholePlanes(bool max, int64_t begin, int64_t end, int64_t size, const float* x, float* y) {
  for (int64_t p = begin; p < end; ++p) y[p] = ReduceFloatPlane(max, x + p * size, size);
}

class FloatPoolPlanes {
 public:
  // col_divisors: AveragePool's ColumnDivisors, or null for MaxPool.
  FloatPoolPlanes(const PoolGeometry& g, const std::vector<float>* col_divisors, bool count_include_pad)
      : g_(g), col_divisors_(col_divisors), count_include_pad_(count_include_pad) {}

  // AveragePool's divisor of each output column before the row's factor: its count of taps inside the
  // input (or inside input plus pads).
  static std::vector<float> ColumnDivisors(const PoolGeometry& g, bool count_include_pad) {
    const DimWindows& cols = g.windows[2];
    std::vector<float> d(static_cast<size_t>(g.out[2]));
    for (size_t o = 0; o < d.size(); ++o) {
      d[o] = static_cast<float>(count_include_pad ? cols.padded[o] : cols.hi[o] - cols.lo[o]);
    }
    return d;
  }

  // Pools planes [begin, end) of in (g.in[1] x g.in[2] each) into out.
  void Run(int64_t begin, int64_t end, const float* in, float* out) const {
    const vec::VectorKernels& k = vec::Kernels();
    const int64_t width = g_.in[2], out_width = g_.out[2];
    const int64_t pad_begin = out_width > 0 ? -g_.windows[2].start[0] : 0;
    const int64_t span = std::max(pad_begin + width, (out_width - 1) * g_.stride[2] + g_.kernel[2]);
    const float identity = col_divisors_ == nullptr ? -std::numeric_limits<float>::infinity() : 0.0f;
    std::vector<float> padded(static_cast<size_t>(std::max<int64_t>(span, 0)), identity);
    std::vector<float> divisors(static_cast<size_t>(out_width));
    for (int64_t p = begin; p < end; ++p) {
      const float* plane = in + p * g_.in[1] * width;
      float* y = out + p * g_.out[1] * out_width;
      for (int64_t oh = 0; oh < g_.out[1]; ++oh, y += out_width) {
        StopIfRunEnded(WorkOf({g_.windows[1].hi[oh] - g_.windows[1].lo[oh], width}));
        ReduceRows(k, plane, oh, padded.data() + pad_begin);
        PoolColumns(k, padded.data(), y);
        if (col_divisors_ != nullptr) Average(k, oh, divisors.data(), y);
      }
    }
  }

 private:
  // mid[0, width) = max (or sum) of output row oh's valid input rows. The max starts from -inf, so, as in
  // the window, a NaN tap is dropped against a number.
  void ReduceRows(const vec::VectorKernels& k, const float* plane, int64_t oh, float* mid) const {
    const DimWindows& rows = g_.windows[1];
    const int64_t width = g_.in[2];
    const bool max = col_divisors_ == nullptr;
    if (rows.lo[oh] >= rows.hi[oh]) {
      std::fill(mid, mid + width, max ? -std::numeric_limits<float>::infinity() : 0.0f);
      return;
    }
    const float* first = plane + (rows.start[oh] + rows.lo[oh]) * width;
    if (max) {
      const float kNegInf = -std::numeric_limits<float>::infinity();
      k.binary(vec::BinaryOp::kMax, first, true, &kNegInf, false, mid, width);
    } else {
      std::copy(first, first + width, mid);
    }
    for (int64_t kh = rows.lo[oh] + 1; kh < rows.hi[oh]; ++kh) {
      const float* row = plane + (rows.start[oh] + kh) * width;
      k.binary(max ? vec::BinaryOp::kMax : vec::BinaryOp::kAdd, row, true, mid, true, mid, width);
    }
  }

  // y[0, out_width) = the max (or sum) of each window along the reduced row, in blocks of outputs: one row of
  // wide windows may be the whole pool (a 1-D one), quadratic in the row.
  void PoolColumns(const vec::VectorKernels& k, const float* padded, float* y) const {
    const int64_t out_width = g_.out[2], kernel = g_.kernel[2], stride = g_.stride[2];
    const int64_t block = std::max<int64_t>(1, kTapsPerBlock / std::max<int64_t>(kernel, 1));
    for (int64_t o = 0; o < out_width; o += block) {
      const int64_t n = std::min(block, out_width - o);
      StopIfRunEnded(WorkOf({n, kernel}));
      (col_divisors_ == nullptr ? k.window_max : k.window_sum)(padded + o * stride, n, kernel, stride, y + o);
    }
  }

  // Blocks this large make the calls per row few whatever the window.
  static constexpr int64_t kTapsPerBlock = int64_t{1} << 16;

  // y = sums / counts; an output with no taps to count is 0, as in the generic path.
  void Average(const vec::VectorKernels& k, int64_t oh, float* divisors, float* y) const {
    const DimWindows& rows = g_.windows[1];
    const float row_count = static_cast<float>(count_include_pad_ ? rows.padded[oh] : rows.hi[oh] - rows.lo[oh]);
    const int64_t out_width = g_.out[2];
    k.binary(vec::BinaryOp::kMul, col_divisors_->data(), true, &row_count, false, divisors, out_width);
    k.binary(vec::BinaryOp::kDiv, y, true, divisors, true, y, out_width);
    for (int64_t o = 0; o < out_width; ++o) {
      if (divisors[o] == 0) y[o] = 0;
    }
  }

  const PoolGeometry& g_;
  const std::vector<float>* col_divisors_;
  bool count_include_pad_;
};

inline constexpr DataType kMaxPoolTypes[] = {DataType::kFloat, DataType::kDouble, DataType::kFloat16,
                                             DataType::kBFloat16, DataType::kInt8, DataType::kUint8};

template <typename T>
inline constexpr bool kIsPoolable = std::is_floating_point_v<ComputeType<T>> || std::is_same_v<T, int8_t> ||
                                    std::is_same_v<T, uint8_t>;

absl::Status UnsupportedType(const Tensor& x) {
  return absl::InvalidArgumentError(absl::StrCat("input \"X\" has an unsupported type: ", x.DebugString()));
}

class MaxPool final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(attrs_, ReadPoolAttrs(info, info.opset() >= 10, info.opset() >= 10));
    if (info.opset() >= 8) {
      ASSIGN_OR_RETURN(int64_t order, info.Attr<int64_t>("storage_order", 0));
      column_major_ = order != 0;
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    ASSIGN_OR_RETURN(PoolGeometry g, PlanPool(attrs_, x.shape()));
    if (MadeEmptyOutputs(ctx, x.dtype(), g)) return absl::OkStatus();
    bool ok = false;
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (kIsPoolable<T>) {
        ok = true;
        Run<T>(ctx, g, x);
      }
    });
    return ok ? absl::OkStatus() : UnsupportedType(x);
  }

 private:
  template <typename T>
  void Run(KernelContext& ctx, const PoolGeometry& g, const Tensor& x) const {
    using C = ComputeType<T>;
    const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
    const int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
    T* y = ctx.Output(0, x.dtype(), g.out_shape).template data<T>();
    int64_t* indices = ctx.OutputWanted(1) ? ctx.Output(1, DataType::kInt64, g.out_shape).data<int64_t>() : nullptr;
    if constexpr (std::is_same_v<T, float>) {
      if (indices == nullptr && IsWholePlaneWindow(g)) {
        ForEachPlaneRange(ctx.pool(), g, [&](int64_t begin, int64_t end) {
          ReduceWholePlanes(/*max=*/true, begin, end, in_plane, x.data<float>(), y);
        });
        return;
      }
      if (indices == nullptr && HasFloatPlanePath(g)) {
        const FloatPoolPlanes planes(g, nullptr, false);
        ForEachPlaneRange(ctx.pool(), g, [&](int64_t begin, int64_t end) { planes.Run(begin, end, x.data<float>(), y); });
        return;
      }
    }
    if constexpr (std::is_floating_point_v<T>) {
      if (indices == nullptr && g.out[0] == 1 && g.in[0] == 1) {
        ForEachPlane(ctx.pool(), g,
                     [&](int64_t p) { MaxPoolPlane2D(g, x.data<T>() + p * in_plane, y + p * out_plane); });
        return;
      }
    }
    ForEachPlane(ctx.pool(), g, [&](int64_t p) {
      const T* plane = x.data<T>() + p * in_plane;
      struct Acc {
        C value;
        int64_t index;
      };
      // As on the other paths, NaN loses against every number wherever it stands in the window, and a
      // window of NaN and -inf only is -inf, at its first tap.
      constexpr C kLowest =
          std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::lowest();
      ForEachWindow(
          g, Acc{kLowest, -1},
          [&](Acc& acc, int64_t i) {
            const C v = ToCompute(plane[i]);
            if (v > acc.value) {
              acc = {v, i};
            } else if (acc.index < 0) {
              acc.index = i;
            }
          },
          [&](const Acc& acc, int64_t o, int64_t, int64_t) {
            y[p * out_plane + o] = FromCompute<T>(acc.value);
            if (indices != nullptr) indices[p * out_plane + o] = p * in_plane + SpatialIndex(g, std::max<int64_t>(acc.index, 0));
          });
    });
  }

  // The flat index of a row-major plane offset, as Indices reports it (column-major with storage_order 1).
  int64_t SpatialIndex(const PoolGeometry& g, int64_t row_major) const {
    if (!column_major_) return row_major;
    const int64_t i2 = row_major % g.in[2], i1 = row_major / g.in[2] % g.in[1], i0 = row_major / (g.in[2] * g.in[1]);
    return (i2 * g.in[1] + i1) * g.in[0] + i0;
  }

  PoolAttrs attrs_;
  bool column_major_ = false;
};

// AveragePool (sum / count) and LpPool ((sum |x|^p)^(1/p)) share the window walk.
class AveragePool final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(attrs_, ReadPoolAttrs(info, info.opset() >= 10, info.opset() >= 19));
    if (info.opset() >= 7) {
      ASSIGN_OR_RETURN(int64_t include, info.Attr<int64_t>("count_include_pad", 0));
      count_include_pad_ = include != 0;
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    ASSIGN_OR_RETURN(PoolGeometry g, PlanPool(attrs_, x.shape()));
    if (MadeEmptyOutputs(ctx, x.dtype(), g)) return absl::OkStatus();
    bool ok = false;
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        ok = true;
        using C = ComputeType<T>;
        const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
        const int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
        T* y = ctx.Output(0, x.dtype(), g.out_shape).template data<T>();
        if constexpr (std::is_same_v<T, float>) {
          if (IsWholePlaneWindow(g)) {
            ForEachPlaneRange(ctx.pool(), g, [&](int64_t begin, int64_t end) {
              ReduceWholePlanes(/*max=*/false, begin, end, in_plane, x.data<float>(), y);
            });
            return;
          }
          if (HasFloatPlanePath(g)) {
            const std::vector<float> col_divisors = FloatPoolPlanes::ColumnDivisors(g, count_include_pad_);
            const FloatPoolPlanes planes(g, &col_divisors, count_include_pad_);
            ForEachPlaneRange(ctx.pool(), g,
                              [&](int64_t begin, int64_t end) { planes.Run(begin, end, x.data<float>(), y); });
            return;
          }
        }
        ForEachPlane(ctx.pool(), g, [&](int64_t p) {
          const T* plane = x.data<T>() + p * in_plane;
          ForEachWindow(
              g, C{0}, [&](C& sum, int64_t i) { sum += ToCompute(plane[i]); },
              [&](C sum, int64_t o, int64_t valid, int64_t padded) {
                const int64_t count = count_include_pad_ ? padded : valid;
                y[p * out_plane + o] = FromCompute<T>(count > 0 ? sum / static_cast<C>(count) : C{0});
              });
        });
      }
    });
    return ok ? absl::OkStatus() : UnsupportedType(x);
  }

 private:
  PoolAttrs attrs_;
  bool count_include_pad_ = false;
};

// Reads p: a float in the first version of LpPool/GlobalLpPool, an int afterwards.
absl::StatusOr<double> ReadP(const KernelInfo& info) {
  if (info.opset() < 2) {
    ASSIGN_OR_RETURN(float p, info.Attr<float>("p", 2.0f));
    return p;
  }
  ASSIGN_OR_RETURN(int64_t p, info.Attr<int64_t>("p", 2));
  return static_cast<double>(p);
}

class LpPool final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(attrs_, ReadPoolAttrs(info, info.opset() >= 18, info.opset() >= 18));
    ASSIGN_OR_RETURN(p_, ReadP(info));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    ASSIGN_OR_RETURN(PoolGeometry g, PlanPool(attrs_, x.shape()));
    if (MadeEmptyOutputs(ctx, x.dtype(), g)) return absl::OkStatus();
    bool ok = false;
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        ok = true;
        using C = ComputeType<T>;
        const C p = static_cast<C>(p_);
        const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
        const int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
        T* y = ctx.Output(0, x.dtype(), g.out_shape).template data<T>();
        ForEachPlane(ctx.pool(), g, [&](int64_t plane_index) {
          const T* plane = x.data<T>() + plane_index * in_plane;
          ForEachWindow(
              g, C{0}, [&](C& sum, int64_t i) { sum += std::pow(std::abs(ToCompute(plane[i])), p); },
              [&](C sum, int64_t o, int64_t, int64_t) {
                y[plane_index * out_plane + o] = FromCompute<T>(std::pow(sum, C{1} / p));
              });
        });
      }
    });
    return ok ? absl::OkStatus() : UnsupportedType(x);
  }

 private:
  PoolAttrs attrs_;
  double p_ = 2;
};

enum class GlobalKind { kAverage, kMax, kLp };

// Global*Pool: one value per (n, c) plane, output [N, C, 1, ..., 1].
template <GlobalKind kKind>
class GlobalPool final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    if constexpr (kKind == GlobalKind::kLp) {
      ASSIGN_OR_RETURN(p_, ReadP(info));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    if (x.rank() < 2) {
      return absl::InvalidArgumentError(absl::StrCat("input should be [N, C, ...], got ", x.DebugString()));
    }
    Shape out_shape(x.shape().size(), 1);
    out_shape[0] = x.dim(0);
    out_shape[1] = x.dim(1);
    const int64_t planes = x.dim(0) * x.dim(1);
    const int64_t size = planes == 0 ? 0 : x.NumElements() / planes;
    bool ok = false;
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        ok = true;
        T* y = ctx.Output(0, x.dtype(), out_shape).template data<T>();
        const T* in = x.data<T>();
        ctx.pool().ParallelFor(planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(size, 1)),
                               [&](int64_t begin, int64_t end) {
                                 for (int64_t p = begin; p < end; ++p) y[p] = Reduce<T>(in + p * size, size);
                               });
      }
    });
    return ok ? absl::OkStatus() : UnsupportedType(x);
  }

 private:
  template <typename T>
  T Reduce(const T* in, int64_t size) const {
    using C = ComputeType<T>;
    if constexpr (std::is_same_v<T, float> && kKind != GlobalKind::kLp) {
      return ReduceFloatPlane(kKind == GlobalKind::kMax, in, size);
    } else if constexpr (kKind == GlobalKind::kMax) {
      C best = std::numeric_limits<C>::lowest();
      for (int64_t i = 0; i < size; ++i) best = std::max(best, ToCompute(in[i]));
      return FromCompute<T>(best);
    } else if constexpr (kKind == GlobalKind::kAverage) {
      C sum = 0;
      for (int64_t i = 0; i < size; ++i) sum += ToCompute(in[i]);
      return FromCompute<T>(sum / static_cast<C>(size));
    } else {
      const C p = static_cast<C>(p_);
      C sum = 0;
      for (int64_t i = 0; i < size; ++i) sum += std::pow(std::abs(ToCompute(in[i])), p);
      return FromCompute<T>(std::pow(sum, C{1} / p));
    }
  }

  double p_ = 2;
};

REGISTER_KERNEL(kOnnx, "MaxPool", 1, 7, kFloatTypes, MaxPool);
REGISTER_KERNEL(kOnnx, "MaxPool", 8, 9, kFloatTypes, MaxPool);
REGISTER_KERNEL(kOnnx, "MaxPool", 10, 10, kFloatTypes, MaxPool);
REGISTER_KERNEL(kOnnx, "MaxPool", 11, 11, kFloatTypes, MaxPool);
REGISTER_KERNEL(kOnnx, "MaxPool", 12, 21, kMaxPoolTypes, MaxPool);
REGISTER_KERNEL(kOnnx, "MaxPool", 22, kLatest, kMaxPoolTypes, MaxPool);
REGISTER_KERNEL(kOnnx, "AveragePool", 1, 6, kFloatTypes, AveragePool);
REGISTER_KERNEL(kOnnx, "AveragePool", 7, 9, kFloatTypes, AveragePool);
REGISTER_KERNEL(kOnnx, "AveragePool", 10, 10, kFloatTypes, AveragePool);
REGISTER_KERNEL(kOnnx, "AveragePool", 11, 18, kFloatTypes, AveragePool);
REGISTER_KERNEL(kOnnx, "AveragePool", 19, 21, kFloatTypes, AveragePool);
REGISTER_KERNEL(kOnnx, "AveragePool", 22, kLatest, kFloatTypes, AveragePool);
REGISTER_KERNEL(kOnnx, "LpPool", 1, 1, kFloatTypes, LpPool);
REGISTER_KERNEL(kOnnx, "LpPool", 2, 10, kFloatTypes, LpPool);
REGISTER_KERNEL(kOnnx, "LpPool", 11, 17, kFloatTypes, LpPool);
REGISTER_KERNEL(kOnnx, "LpPool", 18, 21, kFloatTypes, LpPool);
REGISTER_KERNEL(kOnnx, "LpPool", 22, kLatest, kFloatTypes, LpPool);
REGISTER_KERNEL(kOnnx, "GlobalAveragePool", 1, 21, kFloatTypes, GlobalPool<GlobalKind::kAverage>);
REGISTER_KERNEL(kOnnx, "GlobalAveragePool", 22, kLatest, kFloatTypes, GlobalPool<GlobalKind::kAverage>);
REGISTER_KERNEL(kOnnx, "GlobalMaxPool", 1, 21, kFloatTypes, GlobalPool<GlobalKind::kMax>);
REGISTER_KERNEL(kOnnx, "GlobalMaxPool", 22, kLatest, kFloatTypes, GlobalPool<GlobalKind::kMax>);
REGISTER_KERNEL(kOnnx, "GlobalLpPool", 1, 1, kFloatTypes, GlobalPool<GlobalKind::kLp>);
REGISTER_KERNEL(kOnnx, "GlobalLpPool", 2, 21, kFloatTypes, GlobalPool<GlobalKind::kLp>);
REGISTER_KERNEL(kOnnx, "GlobalLpPool", 22, kLatest, kFloatTypes, GlobalPool<GlobalKind::kLp>);

}  // namespace
}  // namespace onnxserve

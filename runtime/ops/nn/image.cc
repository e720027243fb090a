// Image rearrangement: Col2Im (column blocks summed back into an N-D image, the adjoint of the im2col
// that Conv uses) and CenterCropPad (crop or zero-pad each chosen axis around its center).
#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/ops/blas.h"
#include "runtime/ops/common.h"
#include "runtime/ops/window.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// ---- Col2Im ----------------------------------------------------------------------------------------------

class Col2ImOp final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(dilations_, info.Attr<std::vector<int64_t>>("dilations", {}));
    ASSIGN_OR_RETURN(pads_, info.Attr<std::vector<int64_t>>("pads", {}));
    ASSIGN_OR_RETURN(strides_, info.Attr<std::vector<int64_t>>("strides", {}));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 3));
    const Tensor& x = *ctx.Input(0);
    ASSIGN_OR_RETURN(const ConvGeometry geo, Geometry(Int64Values(*ctx.Input(1)), Int64Values(*ctx.Input(2))));
    const int64_t kernel = geo.KernelSize();
    if (x.rank() != 3 || x.dim(1) % kernel != 0 || x.dim(2) != geo.GridSize()) {
      return absl::InvalidArgumentError(absl::StrCat("input ", ShapeToString(x.shape()), ": expected [N, C*", kernel,
                                                     ", ", geo.GridSize(), "] for these image and block shapes"));
    }
    const int64_t batch = x.dim(0), channels = x.dim(1) / kernel;
    Shape y_shape = {batch, channels};
    y_shape.insert(y_shape.end(), geo.image.begin(), geo.image.end());
    Tensor& y = ctx.Output(0, x.dtype(), y_shape);
    if (x.dtype() == DataType::kDouble) {
      Run<double>(geo, batch, channels, x, y, ctx.pool());
    } else if (x.dtype() == DataType::kFloat) {
      Run<float>(geo, batch, channels, x, y, ctx.pool());
    } else if (IsHalfType(x.dtype())) {
      Tensor y_float(DataType::kFloat, y_shape);
      Run<float>(geo, batch, channels, WidenToFloat(&x), y_float, ctx.pool());
      NarrowFromFloat(y_float, y);
    } else {
      return absl::UnimplementedError(absl::StrCat("Col2Im of ", DataTypeName(x.dtype()),
                                                   " is not supported: expected a float type"));
    }
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<ConvGeometry> Geometry(const std::vector<int64_t>& image, const std::vector<int64_t>& block) const {
    const size_t rank = image.size();
    if (rank == 0 || block.size() != rank) {
      return absl::InvalidArgumentError(absl::StrCat("image_shape has ", rank, " dims and block_shape ",
                                                     block.size(), ": expected one per spatial axis"));
    }
    ConvGeometry geo;
    geo.image.assign(image.begin(), image.end());
    geo.kernel.assign(block.begin(), block.end());
    geo.dilations = ConvGeometry::OrOnes(dilations_, rank);
    geo.strides = ConvGeometry::OrOnes(strides_, rank);
    const std::vector<int64_t> pads = pads_.empty() ? std::vector<int64_t>(2 * rank, 0) : pads_;
    if (geo.dilations.size() != rank || geo.strides.size() != rank || pads.size() != 2 * rank) {
      return absl::InvalidArgumentError(absl::StrCat("dilations, strides and pads: expected ", rank, ", ", rank,
                                                     " and ", 2 * rank, " values"));
    }
    geo.pad_begin.assign(pads.begin(), pads.begin() + rank);
    for (size_t d = 0; d < rank; ++d) {
      if (geo.image[d] < 0 || geo.kernel[d] < 1 || geo.dilations[d] < 1 || geo.strides[d] < 1 || pads[d] < 0 ||
          pads[d + rank] < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "axis ", d, ": block_shape, dilations and strides must be positive, image_shape and pads >= 0"));
      }
      ASSIGN_OR_RETURN(const int64_t extent, DilatedExtent(geo.kernel[d], geo.dilations[d]));
      ASSIGN_OR_RETURN(const int64_t padded, PaddedSize(geo.image[d], pads[d], pads[d + rank]));
      absl::StatusOr<int64_t> windows = WindowCount(padded, extent, geo.strides[d]);
      if (!windows.ok()) return absl::InvalidArgumentError(absl::StrCat("axis ", d, ": ", windows.status().message()));
      geo.grid.push_back(*windows);
    }
    // image_shape and block_shape are data: their products are checked before anything divides by or
    // allocates them.
    for (const ConvGeometry::Dims* dims : {&geo.image, &geo.kernel, &geo.grid}) {
      RETURN_IF_ERROR(CheckedElementCount(*dims).status());
    }
    return geo;
  }

  template <typename T>
  static void Run(const ConvGeometry& geo, int64_t batch, int64_t channels, const Tensor& x, Tensor& y,
                  ThreadPool& pool) {
    const int64_t image = channels * geo.ImageSize(), col = channels * geo.KernelSize() * geo.GridSize();
    std::fill_n(y.data<T>(), y.NumElements(), T{0});
    for (int64_t n = 0; n < batch; ++n) Col2Im<T>(geo, channels, x.data<T>() + n * col, y.data<T>() + n * image, pool);
  }

  std::vector<int64_t> dilations_, pads_, strides_;
};

REGISTER_KERNEL(kOnnx, "Col2Im", 18, kLatest, kFloatTypes, Col2ImOp);

// ---- CenterCropPad ---------------------------------------------------------------------------------------

class CenterCropPad final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(axes_, info.Attr<std::vector<int64_t>>("axes", {}));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& x = *ctx.Input(0);
    const std::vector<int64_t> shape = Int64Values(*ctx.Input(1));
    std::vector<int64_t> axes = axes_;
    if (axes.empty()) {
      for (int64_t d = 0; d < x.rank(); ++d) axes.push_back(d);
    }
    if (shape.size() != axes.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape has ", shape.size(), " values: expected one per axis (", axes.size(), ")"));
    }
    // Per axis: the kept extent and where it starts in the input and in the output (floor of half the
    // difference, so an odd difference leaves the extra element at the end).
    Shape y_shape = x.shape();
    std::vector<int64_t> in_start(x.rank(), 0), out_start(x.rank(), 0);
    Shape kept = x.shape();
    for (size_t j = 0; j < axes.size(); ++j) {
      ASSIGN_OR_RETURN(const int64_t a, NormalizeAxis(axes[j], x.rank()));
      if (a >= x.rank()) return absl::InvalidArgumentError("axes: a scalar X has no axis to crop or pad");
      const int64_t dim = x.dim(a), target = shape[j];
      if (target < 0) return absl::InvalidArgumentError(absl::StrCat("shape[", j, "] = ", target, ": expected >= 0"));
      y_shape[a] = target;
      kept[a] = std::min(dim, target);
      (dim > target ? in_start[a] : out_start[a]) = std::abs(dim - target) / 2;
    }
    ASSIGN_OR_RETURN(Tensor* y_tensor, ctx.CheckedOutput(0, x.dtype(), y_shape));
    Tensor& y = *y_tensor;
    const bool ok = DispatchByWidth(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      std::fill_n(y.data<T>(), y.NumElements(), T{});
      CopyRegion(x.data<T>(), x.shape(), in_start, y.data<T>(), y_shape, out_start, kept);
    });
    if (!ok) return absl::InvalidArgumentError(absl::StrCat("unsupported type ", DataTypeName(x.dtype())));
    return absl::OkStatus();
  }

 private:
  // Copies the box `kept` at in_start of `in` to out_start of `out`, one innermost row at a time.
  template <typename T>
  static void CopyRegion(const T* in, const Shape& in_shape, const std::vector<int64_t>& in_start, T* out,
                         const Shape& out_shape, const std::vector<int64_t>& out_start, const Shape& kept) {
    if (NumElements(kept) == 0) return;
    const int64_t rank = static_cast<int64_t>(kept.size());
    if (rank == 0) {
      out[0] = in[0];
      return;
    }
    const std::vector<int64_t> in_strides = StridesOf(in_shape), out_strides = StridesOf(out_shape);
    std::vector<int64_t> index(rank, 0);
    const int64_t rows = NumElements(kept) / kept[rank - 1];
    for (int64_t r = 0; r < rows; ++r) {
      int64_t src = 0, dst = 0;
      for (int64_t d = 0; d < rank; ++d) {
        src += (in_start[d] + index[d]) * in_strides[d];
        dst += (out_start[d] + index[d]) * out_strides[d];
      }
      std::copy_n(in + src, kept[rank - 1], out + dst);
      for (int64_t d = rank - 2; d >= 0; --d) {
        if (++index[d] < kept[d]) break;
        index[d] = 0;
      }
    }
  }

  std::vector<int64_t> axes_;
};

REGISTER_KERNEL(kOnnx, "CenterCropPad", 18, kLatest, kAllTypes, CenterCropPad);

}  // namespace
}  // namespace onnxserve

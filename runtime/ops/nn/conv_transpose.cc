// ConvTranspose: the adjoint of Conv. Per (image, group) one GEMM makes the column matrix W_g^T * X_g and
// col2im scatters it onto the output, which starts as the bias.
#include "absl/strings/str_cat.h"
#include "runtime/ops/blas.h"
#include "runtime/ops/common.h"
#include "runtime/ops/window.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

constexpr DataType kConvTranspose1Types[] = {DataType::kFloat16, DataType::kFloat, DataType::kDouble};
constexpr DataType kConvTranspose22Types[] = {DataType::kBFloat16, DataType::kFloat16, DataType::kFloat,
                                              DataType::kDouble};

class ConvTranspose final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    RETURN_IF_ERROR(attrs_.Parse(info));
    ASSIGN_OR_RETURN(output_padding_, info.Attr<std::vector<int64_t>>("output_padding", {}));
    ASSIGN_OR_RETURN(output_shape_, info.Attr<std::vector<int64_t>>("output_shape", {}));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& x = *ctx.Input(0);
    const Tensor& w = *ctx.Input(1);
    const Tensor* b = ctx.Input(2);
    RETURN_IF_ERROR(CheckShapes(x, w, b));
    ConvGeometry geo;
    RETURN_IF_ERROR(attrs_.Resolve(absl::MakeConstSpan(w.shape()).subspan(2), &geo));
    geo.grid.assign(x.shape().begin() + 2, x.shape().end());
    RETURN_IF_ERROR(PlaceOutput(geo));
    // Run's column matrix: (output map, kernel offset) rows by input positions.
    ASSIGN_OR_RETURN(const int64_t column_rows, CheckedMul(w.dim(1), geo.KernelSize()));
    RETURN_IF_ERROR(CheckedMul(column_rows, geo.GridSize()).status());
    Shape y_shape = {x.dim(0), w.dim(1) * attrs_.group};
    y_shape.insert(y_shape.end(), geo.image.begin(), geo.image.end());
    Tensor& y = ctx.Output(0, x.dtype(), y_shape);
    if (IsHalfType(x.dtype())) {
      Tensor y_float(DataType::kFloat, y_shape);
      const Tensor b_float = WidenToFloat(b);
      Run<float>(geo, WidenToFloat(&x), WidenToFloat(&w), b ? &b_float : nullptr, y_float, ctx.pool());
      NarrowFromFloat(y_float, y);
    } else if (x.dtype() == DataType::kDouble) {
      Run<double>(geo, x, w, b, y, ctx.pool());
    } else {
      Run<float>(geo, x, w, b, y, ctx.pool());
    }
    return absl::OkStatus();
  }

 private:
  absl::Status CheckShapes(const Tensor& x, const Tensor& w, const Tensor* b) const {
    if (x.dtype() != w.dtype() || (b != nullptr && b->dtype() != x.dtype())) {
      return absl::InvalidArgumentError(absl::StrCat("X, W and B must share one type, got ",
                                                     DataTypeName(x.dtype()), ", ", DataTypeName(w.dtype()),
                                                     b ? absl::StrCat(", ", DataTypeName(b->dtype())) : ""));
    }
    if (x.rank() < 3 || w.rank() != x.rank() || w.dim(0) != x.dim(1) || x.dim(1) % attrs_.group != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "X ", ShapeToString(x.shape()), ", W ", ShapeToString(w.shape()), ", group ", attrs_.group,
          ": expected X [N,C,D1,...] and W [C,M/group,k1,...] of one rank, C divisible by group"));
    }
    if (b != nullptr && (b->rank() != 1 || b->dim(0) != w.dim(1) * attrs_.group)) {
      return absl::InvalidArgumentError(absl::StrCat("B ", ShapeToString(b->shape()), ": expected [",
                                                     w.dim(1) * attrs_.group, "] (one bias per output map)"));
    }
    return absl::OkStatus();
  }

  // Output spatial dims (geo.image) and begin pads from the input dims (geo.grid), following the spec's
  // equations: explicit output_shape or SAME_* derive the pads, otherwise the pads derive the output.
  absl::Status PlaceOutput(ConvGeometry& geo) const {
    const size_t rank = geo.grid.size();
    if (!output_padding_.empty() && output_padding_.size() != rank) {
      return absl::InvalidArgumentError(
          absl::StrCat("output_padding has ", output_padding_.size(), " values, expected ", rank));
    }
    // output_shape may be given with or without the leading N and C.
    const size_t shape_skip = output_shape_.size() == rank + 2 ? 2 : 0;
    if (!output_shape_.empty() && output_shape_.size() != rank + shape_skip) {
      return absl::InvalidArgumentError(
          absl::StrCat("output_shape has ", output_shape_.size(), " values, expected ", rank));
    }
    using AutoPad = ConvAttributes::AutoPad;
    geo.image.resize(rank);
    geo.pad_begin.resize(rank);
    for (size_t d = 0; d < rank; ++d) {
      const int64_t in = geo.grid[d], stride = geo.strides[d];
      const int64_t adjust = output_padding_.empty() ? 0 : output_padding_[d];
      ASSIGN_OR_RETURN(const int64_t full, FullExtent(in, stride, adjust, geo.kernel[d], geo.dilations[d]));
      if (!output_shape_.empty() || attrs_.auto_pad == AutoPad::kSameUpper ||
          attrs_.auto_pad == AutoPad::kSameLower) {
        if (output_shape_.empty()) {
          ASSIGN_OR_RETURN(geo.image[d], CheckedMul(in, stride));
        } else {
          geo.image[d] = output_shape_[d + shape_skip];
        }
        if (geo.image[d] < 0) {
          return absl::InvalidArgumentError(absl::StrCat("spatial axis ", d, ": output_shape ", geo.image[d]));
        }
        // Negative when output_shape asks for more than the full extent. The spec halves with floor
        // division (as the reference does): SAME_UPPER puts the odd element at the end, others at the start.
        ASSIGN_OR_RETURN(const int64_t total, CheckedAdd(full, -geo.image[d]));
        const int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);
        geo.pad_begin[d] = attrs_.auto_pad == AutoPad::kSameUpper ? half : total - half;
      } else if (attrs_.auto_pad == AutoPad::kValid || attrs_.pads.empty()) {
        geo.image[d] = full;
        geo.pad_begin[d] = 0;
      } else {
        ASSIGN_OR_RETURN(const int64_t begin_cut, CheckedAdd(full, -attrs_.pads[d]));  // pads are >= 0
        ASSIGN_OR_RETURN(geo.image[d], CheckedAdd(begin_cut, -attrs_.pads[d + rank]));
        geo.pad_begin[d] = attrs_.pads[d];
      }
      if (geo.image[d] < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("spatial axis ", d, ": the pads leave a negative output size ", geo.image[d]));
      }
    }
    return absl::OkStatus();
  }

  // stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1: the output a transposed convolution
  // covers before pads are taken off.
  static absl::StatusOr<int64_t> FullExtent(int64_t in, int64_t stride, int64_t adjust, int64_t kernel,
                                            int64_t dilation) {
    if (adjust < 0) return absl::InvalidArgumentError(absl::StrCat("output_padding ", adjust, ": expected >= 0"));
    ASSIGN_OR_RETURN(const int64_t extent, DilatedExtent(kernel, dilation));
    ASSIGN_OR_RETURN(const int64_t strided, CheckedMul(stride, in - 1));
    ASSIGN_OR_RETURN(const int64_t adjusted, CheckedAdd(strided, adjust));
    return CheckedAdd(adjusted, extent);
  }

  template <typename T>
  void Run(const ConvGeometry& geo, const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y,
           ThreadPool& pool) const {
    const int64_t batch = x.dim(0), channels = x.dim(1), group = attrs_.group;
    const int64_t group_channels = channels / group, group_maps = w.dim(1), maps = group_maps * group;
    const int64_t image_size = geo.ImageSize(), grid_size = geo.GridSize();
    const int64_t rows = group_maps * geo.KernelSize();  // column-matrix rows: (output map, kernel offset)
    const bool pointwise = geo.IsPointwise();
    T* out = y.data<T>();
    if (b != nullptr) {
      pool.ParallelFor(batch * maps, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          std::fill(out + i * image_size, out + (i + 1) * image_size, b->data<T>()[i % maps]);
        }
      });
    } else {
      std::fill(out, out + y.NumElements(), T{});
    }
    Tensor col_buffer(kTypeOf<T>, {pointwise ? 0 : rows * grid_size});
    T* col = col_buffer.data<T>();
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t g = 0; g < group; ++g) {
        const T* x_g = x.data<T>() + (n * channels + g * group_channels) * grid_size;
        const T* w_g = w.data<T>() + g * group_channels * rows;
        T* y_g = out + (n * maps + g * group_maps) * image_size;
        // W_g is [Cg, rows]: its transpose times X_g [Cg, grid] is the column matrix [rows, grid].
        if (pointwise) {
          Gemm<T>(true, false, rows, grid_size, group_channels, T{1}, w_g, rows, x_g, grid_size, T{1}, y_g,
                  grid_size, &pool);
        } else {
          Gemm<T>(true, false, rows, grid_size, group_channels, T{1}, w_g, rows, x_g, grid_size, T{0}, col,
                  grid_size, &pool);
          Col2Im(geo, group_maps, col, y_g, pool);
        }
      }
    }
  }

  ConvAttributes attrs_;
  std::vector<int64_t> output_padding_;
  std::vector<int64_t> output_shape_;
};

// ConvTranspose-1 and -11 share the math (-11 fixes the documented pad split); -22 adds bfloat16.
REGISTER_KERNEL(kOnnx, "ConvTranspose", 1, 10, kConvTranspose1Types, ConvTranspose);
REGISTER_KERNEL(kOnnx, "ConvTranspose", 11, 21, kConvTranspose1Types, ConvTranspose);
REGISTER_KERNEL(kOnnx, "ConvTranspose", 22, kLatest, kConvTranspose22Types, ConvTranspose);

}  // namespace
}  // namespace onnxserve

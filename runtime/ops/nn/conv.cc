// Conv (1-D/2-D/3-D and beyond, grouped, dilated, strided, padded): im2col + one GEMM per (image, group);
// a 1x1 stride-1 unpadded kernel multiplies the input directly, without im2col. A 1-D or 2-D float
// convolution with groups of few channels and maps (depthwise, ResNeXt) runs GroupedConv2D instead, which
// reads each plane once: a GEMM per group of a few rows would spend more on im2col than on arithmetic.
// FusedConv (domain ai.onnxserve, written by the graph optimizer) is Conv [+ Z] [-> activation] in one
// node (runtime/ops/fused_activation.h names the activations).
//
// Constant float weights are packed at load for PackedGemm (on CPUs it has micro-kernels for), which adds
// bias and Z and applies the activation as each tile leaves the registers or while it is in L1. A 2-D
// convolution of one group with a kernel larger than 1x1 and no Z runs on oneDNN instead when it is built
// in (runtime/math/dnnl_conv.h: its direct convolution beats im2col + GEMM there). Otherwise
// the OpenBLAS GEMM accumulates onto bias + Z, and the activation runs on each block right after the GEMM
// that wrote it, while it is in cache.
#include <mutex>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/core/memory_budget.h"
#include "runtime/math/dnnl_conv.h"
#include "runtime/math/grouped_conv.h"
#include "runtime/math/packed_gemm.h"
#include "runtime/math/winograd.h"
#include "runtime/ops/blas.h"
#include "runtime/ops/common.h"
#include "runtime/ops/elementwise.h"
#include "runtime/ops/fused_activation.h"
#include "runtime/ops/window.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

constexpr DataType kConv1Types[] = {DataType::kFloat16, DataType::kFloat, DataType::kDouble};
constexpr DataType kConv22Types[] = {DataType::kBFloat16, DataType::kFloat16, DataType::kFloat, DataType::kDouble};

// Y[n, m, ...] = B[m] + Z[n, m, ...] for every position, so the GEMM accumulates onto them with beta 1
// (beta 0 would cost OpenBLAS a zeroing pass of its own); bias or z may be null, not both.
template <typename T>
void PrefillOutput(const T* bias, const T* z, int64_t batch, int64_t channels, int64_t size, T* y,
                   ThreadPool& pool) {
  pool.ParallelFor(batch * channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T* out = y + i * size;
      const T add = bias != nullptr ? bias[i % channels] : T{0};
      if (z == nullptr) {
        std::fill(out, out + size, add);
      } else {
        const T* in = z + i * size;
        for (int64_t j = 0; j < size; ++j) out[j] = in[j] + add;
      }
    }
  });
}

// y = max(y, 0) over `rows` rows of `cols` values, `stride` apart: the block a GEMM just wrote, while it is
// in cache. NaN passes through, as Relu's does.
template <typename T>
void ReluBlock(T* y, int64_t rows, int64_t cols, int64_t stride, ThreadPool& pool) {
  pool.ParallelFor(rows, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(cols, 1)),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t r = begin; r < end; ++r) {
                       T* row = y + r * stride;
                       for (int64_t j = 0; j < cols; ++j) row[j] = row[j] < T{0} ? T{0} : row[j];
                     }
                   });
}

// A column block this size stays in L2 between im2col writing it and the GEMM packing it.
constexpr int64_t kColumnBlockBytes = int64_t{512} << 10;

// Grid rows per im2col block of a 2-D convolution, or 0 to build the whole column matrix at once. Each
// block repacks W for its GEMM, so blocks pay only while W is small next to the columns (early layers).
int64_t ColumnBlockRows(const ConvGeometry& geo, int64_t depth, int64_t group_maps, size_t element_bytes) {
  if (geo.image.size() != 2) return 0;
  const int64_t row_bytes = depth * geo.grid[1] * static_cast<int64_t>(element_bytes);
  if (row_bytes == 0) return 0;  // no input channels or an empty grid: nothing to block
  const int64_t rows = std::max<int64_t>(1, kColumnBlockBytes / row_bytes);
  const int64_t blocks = (geo.grid[0] + rows - 1) / rows;
  const int64_t weight_bytes = group_maps * depth * static_cast<int64_t>(element_bytes);
  return blocks > 1 && weight_bytes * blocks < row_bytes * geo.grid[0] ? rows : 0;
}

// Scratch floats (16 KiB) GroupedConv2D's planes may take whatever their size: small maps' padded rows
// are mostly the room left for a whole last vector.
constexpr int64_t kSmallPlaneScratch = 4096;

// A 2-D kernel's column matrix up to this many floats (64 KiB) is built whole before the packed GEMM
// rather than row by row into each cache block: a keyword spotter's 10x4/2 stem (40 x 125 columns) spent
// about 5 us in 1000 per-row calls gathering 5 floats each, about 3 building it whole (AVX-512).
constexpr int64_t kMaxWholeColumnFloats = 16384;

// Groups of at most this many input channels and output maps convolve directly (ResNeXt's 4 and 8):
// im2col and packing their columns cost more than the multiply-adds a few maps do with them. Depthwise
// convolutions (one channel per group) do, whatever their maps per channel.
constexpr int64_t kMaxDirectGroupChannels = 8;
constexpr int64_t kMaxDirectGroupMaps = 8;

bool ConvolvesDirectly(int64_t group, int64_t group_channels, int64_t group_maps, size_t spatial_rank) {
  return group > 1 && spatial_rank <= 2 &&
         (group_channels == 1 || (group_channels <= kMaxDirectGroupChannels && group_maps <= kMaxDirectGroupMaps));
}

// The sum of a convolution and a Z that broadcasts against it, on the vector kernels Add runs on.
struct ResidualSum {
  static constexpr vec::BinaryOp kVectorOp = vec::BinaryOp::kAdd;
  float operator()(float a, float b) const { return a + b; }
};

// kFused: FusedConv, whose 4th input Z and `activation` attribute extend Conv.
template <bool kFused>
class ConvKernel final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    RETURN_IF_ERROR(attrs_.Parse(info));
    if constexpr (kFused) {
      ASSIGN_OR_RETURN(activation_, FusedActivation(info));
    }
    PackConstantWeights(info.ConstantInput(1));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& x = *ctx.Input(0);
    const Tensor& w = *ctx.Input(1);
    const Tensor* b = ctx.Input(2);
    const Tensor* z = kFused ? ctx.Input(3) : nullptr;
    RETURN_IF_ERROR(CheckShapes(x, w, b));
    ConvGeometry geo;
    RETURN_IF_ERROR(attrs_.Resolve(absl::MakeConstSpan(w.shape()).subspan(2), &geo));
    geo.image.assign(x.shape().begin() + 2, x.shape().end());
    RETURN_IF_ERROR(attrs_.PlaceOutput(geo));
    Shape y_shape = {x.dim(0), w.dim(0)};
    y_shape.insert(y_shape.end(), geo.grid.begin(), geo.grid.end());
    if (z != nullptr && z->dtype() != x.dtype()) {
      return absl::InvalidArgumentError(
          absl::StrCat("Z ", z->DebugString(), ": expected ", DataTypeName(x.dtype()), " (the type of X)"));
    }
    if (z != nullptr && z->shape() != y_shape) return ComputeBroadcastingZ(ctx, geo, y_shape);
    Tensor& y = z != nullptr && StoresOverZ(geo, x, w) ? ctx.OutputOver(0, 3, x.dtype(), y_shape)
                                                       : ctx.Output(0, x.dtype(), y_shape);
    if (IsHalfType(x.dtype())) {
      Tensor y_float(DataType::kFloat, y_shape);
      const Tensor b_float = WidenToFloat(b), z_float = WidenToFloat(z);
      RETURN_IF_ERROR(RunFloat(geo, WidenToFloat(&x), WidenToFloat(&w), b ? &b_float : nullptr,
                               z ? &z_float : nullptr, activation_, y_float, ctx.pool()));
      NarrowFromFloat(y_float, y);
    } else if (x.dtype() == DataType::kDouble) {
      // The pass fuses activations after float convolutions only; the vector kernels are float.
      if (AppliedAfterStore(activation_)) {
        return absl::InvalidArgumentError("X is double: of the fused activations only Relu takes double");
      }
      Run<double>(geo, x, w, b, z, activation_, y, ctx.pool());
    } else {
      RETURN_IF_ERROR(RunFloat(geo, x, w, b, z, activation_, y, ctx.pool()));
    }
    return absl::OkStatus();
  }

  // FusedConv of an Add whose other operand broadcasts against the convolution (a [C,1,1] constant, or a
  // map the convolution's result broadcasts up to): the pass cannot see shapes, so the kernel computes
  // what Conv -> Add -> activation computes, the convolution, then the broadcasting sum, then the
  // activation. Float only: the pass fuses float convolutions.
  absl::Status ComputeBroadcastingZ(KernelContext& ctx, const ConvGeometry& geo, const Shape& conv_shape) const {
    const Tensor& x = *ctx.Input(0);
    const Tensor& z = *ctx.Input(3);
    if (x.dtype() != DataType::kFloat) {
      return absl::InvalidArgumentError(absl::StrCat("Z ", z.DebugString(), ": expected ", ShapeToString(conv_shape),
                                                     " (the shape of Y) for ", DataTypeName(x.dtype())));
    }
    absl::StatusOr<Shape> y_shape = BroadcastShapes(conv_shape, z.shape());
    if (!y_shape.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("Z ", z.DebugString(), " does not broadcast with the convolution's ",
                                                     ShapeToString(conv_shape), ": ", y_shape.status().message()));
    }
    ASSIGN_OR_RETURN(Tensor conv, Tensor::Create(DataType::kFloat, conv_shape));
    RETURN_IF_ERROR(RunFloat(geo, x, *ctx.Input(1), ctx.Input(2), nullptr, Activation{}, conv, ctx.pool()));
    ASSIGN_OR_RETURN(Tensor * y, ctx.CheckedOutput(0, DataType::kFloat, *y_shape));
    BroadcastBinary<float, float, float>(ctx.pool(), conv, z, *y, ResidualSum{});
    ActivateRows(activation_, y->data<float>(), 1, y->NumElements(), y->NumElements(), ctx.pool());
    return absl::OkStatus();
  }

 private:
  absl::Status CheckShapes(const Tensor& x, const Tensor& w, const Tensor* b) const {
    if (x.dtype() != w.dtype() || (b != nullptr && b->dtype() != x.dtype())) {
      return absl::InvalidArgumentError(absl::StrCat("X, W and B must share one type, got ",
                                                     DataTypeName(x.dtype()), ", ", DataTypeName(w.dtype()),
                                                     b ? absl::StrCat(", ", DataTypeName(b->dtype())) : ""));
    }
    if (x.rank() < 3 || w.rank() != x.rank()) {
      return absl::InvalidArgumentError(absl::StrCat("X ", ShapeToString(x.shape()), " and W ",
                                                     ShapeToString(w.shape()),
                                                     ": expected [N,C,D1,...] and [M,C/group,k1,...] of one rank"));
    }
    const int64_t group = attrs_.group;
    if (x.dim(1) != w.dim(1) * group || w.dim(0) % group != 0) {
      return absl::InvalidArgumentError(absl::StrCat("X ", ShapeToString(x.shape()), ", W ",
                                                     ShapeToString(w.shape()), ", group ", group,
                                                     ": expected C == W[1] * group and M divisible by group"));
    }
    if (b != nullptr && (b->rank() != 1 || b->dim(0) != w.dim(0))) {
      return absl::InvalidArgumentError(
          absl::StrCat("B ", ShapeToString(b->shape()), ": expected [", w.dim(0), "] (one bias per output map)"));
    }
    return absl::OkStatus();
  }

  // Small groups run directly; constant weights of the shapes it takes on oneDNN, other constant
  // weights on the packed path; the rest over OpenBLAS.
  absl::Status RunFloat(const ConvGeometry& geo, const Tensor& x, const Tensor& w, const Tensor* b,
                        const Tensor* z, const Activation& activation, Tensor& y, ThreadPool& pool) const {
    if (const std::optional<GroupedConvShape> direct = DirectShape(geo, x, w)) {
      const GroupedConvEpilogue epilogue{
          .bias = b ? b->data<float>() : nullptr, .z = z ? z->data<float>() : nullptr, .activation = activation};
      GroupedConv2D(*direct, x.data<float>(), w.data<float>(), epilogue, y.data<float>(), pool);
      return absl::OkStatus();
    }
    const bool constant = packed_source_ != nullptr && w.raw_data() == packed_source_;
    // Both exist only for 2-D weights.
    if (constant && (winograd_ != nullptr || dnnl_ != nullptr)) {
      const ConvShape2D shape = geo.Shape2D(x.dim(0));
      // Where Winograd's sums overflowed (huge or infinite inputs), a direct path below computes Y again.
      if (winograd_ != nullptr && WinogradPays(shape) &&
          winograd_->Run(shape, x.data<float>(),
                         {.bias = b ? b->data<float>() : nullptr, .z = z ? z->data<float>() : nullptr,
                          .activation = activation},
                         y.data<float>(), pool)) {
        return absl::OkStatus();
      }
      if (dnnl_ != nullptr && z == nullptr) {
        ASSIGN_OR_RETURN(const bool ran, dnnl_->TryRun(shape, x.data<float>(), w.data<float>(),
                                                       b ? b->data<float>() : nullptr, activation, y.data<float>(),
                                                       pool));
        if (ran) return absl::OkStatus();
      }
    }
    if (constant) {
      RunPacked(geo, x, PackedWeights(w), b, z, activation, y, pool);
    } else {
      Run<float>(geo, x, w, b, z, activation, y, pool);
    }
    return absl::OkStatus();
  }

  // Whether RunFloat takes the packed path, whose stores may go over Z itself: PackedGemm reads each element
  // of Z as it stores that element of Y. The other paths may write Y before they read Z, and Winograd's may
  // compute Y twice (its overflow check).
  bool StoresOverZ(const ConvGeometry& geo, const Tensor& x, const Tensor& w) const {
    if (x.dtype() != DataType::kFloat || packed_source_ == nullptr || w.raw_data() != packed_source_ ||
        DirectShape(geo, x, w)) {
      return false;
    }
    return winograd_ == nullptr || !WinogradPays(geo.Shape2D(x.dim(0)));
  }

  // winograd_ exists for 2-D 3x3 weights of one group; it pays at stride 1 on large maps.
  bool WinogradPays(const ConvShape2D& s) const {
    return s.stride_h == 1 && s.stride_w == 1 && s.dilation_h == 1 && s.dilation_w == 1 &&
           // In double: with no images, the map's size is not bounded by Y's.
           static_cast<double>(s.out_h) * static_cast<double>(s.out_w) >= kMinWinogradPixels && winograd_->Fits(s);
  }

  // The shape GroupedConv2D takes when this 1-D or 2-D convolution's groups are small enough
  // (ConvolvesDirectly), unless huge pads or dilations would make its padded copy of a group's planes much
  // larger than im2col's columns.
  std::optional<GroupedConvShape> DirectShape(const ConvGeometry& geo, const Tensor& x, const Tensor& w) const {
    const size_t rank = geo.image.size();
    const int64_t group = attrs_.group;
    if (!ConvolvesDirectly(group, x.dim(1) / group, w.dim(0) / group, rank)) return std::nullopt;
    // A 1-D convolution is a 2-D one of height 1.
    const size_t w_axis = rank - 1;
    auto along_h = [&](const ConvGeometry::Dims& dims, int64_t one) { return rank == 2 ? dims[0] : one; };
    const GroupedConvShape shape{
        .batch = x.dim(0),
        .groups = group,
        .group_channels = x.dim(1) / group,
        .group_maps = w.dim(0) / group,
        .in_h = along_h(geo.image, 1),
        .in_w = geo.image[w_axis],
        .out_h = along_h(geo.grid, 1),
        .out_w = geo.grid[w_axis],
        .kernel_h = along_h(geo.kernel, 1),
        .kernel_w = geo.kernel[w_axis],
        .stride_h = along_h(geo.strides, 1),
        .stride_w = geo.strides[w_axis],
        .dilation_h = along_h(geo.dilations, 1),
        .dilation_w = geo.dilations[w_axis],
        .pad_top = along_h(geo.pad_begin, 0),
        .pad_left = geo.pad_begin[w_axis],
    };
    // In double: a heuristic, and im2col's column count of a hostile shape need not fit in int64.
    const double planes = static_cast<double>(shape.group_channels) * static_cast<double>(geo.ImageSize());
    const double columns = static_cast<double>(shape.group_channels) * static_cast<double>(geo.KernelSize()) *
                           static_cast<double>(geo.GridSize());
    const int64_t scratch = GroupedConvScratchFloats(shape);
    if (scratch == INT64_MAX || static_cast<double>(scratch) > 2 * (planes + columns) + kSmallPlaneScratch) {
      return std::nullopt;
    }
    return shape;
  }

  template <typename T>
  void Run(const ConvGeometry& geo, const Tensor& x, const Tensor& w, const Tensor* b, const Tensor* z,
           const Activation& activation, Tensor& y, ThreadPool& pool) const {
    const int64_t batch = x.dim(0), channels = x.dim(1), maps = w.dim(0), group = attrs_.group;
    const int64_t group_channels = channels / group, group_maps = maps / group;
    const int64_t image_size = geo.ImageSize(), grid_size = geo.GridSize();
    const int64_t depth = group_channels * geo.KernelSize();  // the GEMM's K: one W row per output map
    const bool pointwise = geo.IsPointwise();
    const int64_t block_rows = pointwise ? 0 : ColumnBlockRows(geo, depth, group_maps, sizeof(T));
    const int64_t block_size = block_rows > 0 ? block_rows * geo.grid[1] : grid_size;
    // The column matrix (block) of one (image, group): reused across them, allocated (not zeroed) once.
    Tensor col_buffer(kTypeOf<T>, {pointwise ? 0 : depth * block_size});
    T* col = col_buffer.data<T>();
    const bool prefill = b != nullptr || z != nullptr;
    if (prefill) {
      PrefillOutput(b ? b->data<T>() : nullptr, z ? z->data<T>() : nullptr, batch, maps, grid_size,
                    y.data<T>(), pool);
    }
    const T beta = prefill ? T{1} : T{0};
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t g = 0; g < group; ++g) {
        const T* x_g = x.data<T>() + (n * channels + g * group_channels) * image_size;
        const T* w_g = w.data<T>() + g * group_maps * depth;
        T* y_tile = y.data<T>() + (n * maps + g * group_maps) * grid_size;
        if (block_rows > 0) {
          ConvolveByRowBlocks(geo, group_channels, group_maps, depth, block_rows, x_g, w_g, col, beta, activation,
                              y_tile, pool);
          continue;
        }
        if (!pointwise) Im2Col(geo, group_channels, x_g, col, pool);
        Gemm<T>(false, false, group_maps, grid_size, depth, T{1}, w_g, depth, pointwise ? x_g : col, grid_size,
                beta, y_tile, grid_size, &pool);
        ActivateBlock(activation, y_tile, group_maps, grid_size, grid_size, pool);
      }
    }
  }

  // Packs W per group when it is a float constant and PackedGemm runs on this CPU, however few maps a
  // group has (a 3-D grouped convolution's): the AVX2 kernel multiplies 4 or 2 rows at a time, and one
  // OpenBLAS call per small group cost more in overhead than in arithmetic. Groups GroupedConv2D takes
  // are left unpacked: it reads W as it is.
  void PackConstantWeights(const Tensor* w) {
    if (w == nullptr || w->dtype() != DataType::kFloat || w->rank() < 3 || !PackedGemmSupported()) return;
    const int64_t maps = w->dim(0), group = attrs_.group;
    if (maps % group != 0) return;  // Compute reports the bad shape
    if (w->NumElements() == 0) return;  // no maps (or no depth): nothing to pack, and W's depth divides by maps
    if (ConvolvesDirectly(group, w->dim(1), maps / group, w->rank() - 2)) return;
    packed_source_ = w->raw_data();
    if (group == 1 && w->rank() == 4) {
      dnnl_ = DnnlConv::Create({.maps = maps, .channels = w->dim(1), .kernel_h = w->dim(2), .kernel_w = w->dim(3)});
      // Its weights are transformed on the first call it runs: a node only ever run on small maps keeps none.
      if (w->dim(2) == 3 && w->dim(3) == 3 && WinogradConvolutionsWin()) {
        winograd_ = std::make_unique<Winograd3x3>(w->data<float>(), maps, w->dim(1));
      }
    }
    // A node oneDNN runs keeps W in oneDNN's layout; ours is packed only if some shape falls back to us, so
    // that a ResNet does not hold every 3x3 weight three times (W, oneDNN's copy and ours: +53 MB RSS).
    if (dnnl_ == nullptr) PackedWeights(*w);
  }

  // W packed per group, made once, on the first call that needs it: the model's, as W is, so outside the
  // budget of the run that happens to need it first, and assigned whole, so that a first call that throws
  // (memory) leaves no groups made for the next to append to.
  const std::vector<PackedRows>& PackedWeights(const Tensor& w) const {
    std::call_once(packed_once_, [&] {
      const ScopedMemoryAccount model_state(nullptr);
      const int64_t maps = w.dim(0), group_maps = maps / attrs_.group, depth = w.NumElements() / maps;
      std::vector<PackedRows> packed;
      for (int64_t g = 0; g < attrs_.group; ++g) {
        packed.emplace_back(w.data<float>() + g * group_maps * depth, group_maps, depth, depth);
      }
      packed_weights_ = std::move(packed);
    });
    return packed_weights_;
  }

  // The packed path, per (image, group): X itself is the column matrix of a pointwise kernel; a 2-D
  // kernel's columns, unless few (kMaxWholeColumnFloats), are built row by row of each cache block, by the
  // thread that multiplies it, straight into the packed layout; other ranks and few columns are built
  // whole. PackedGemm adds B and Z and applies the activation as it stores. With at least two (image,
  // group) products per thread and no shared column buffer, whole products share out over the pool:
  // ResNeXt's 32 groups are each too small for PackedGemm to split.
  void RunPacked(const ConvGeometry& geo, const Tensor& x, const std::vector<PackedRows>& packed, const Tensor* b,
                 const Tensor* z, const Activation& activation, Tensor& y, ThreadPool& pool) const {
    const int64_t batch = x.dim(0), channels = x.dim(1), group = attrs_.group;
    const int64_t group_channels = channels / group, maps = y.dim(1), group_maps = maps / group;
    const int64_t image_size = geo.ImageSize(), grid_size = geo.GridSize();
    const int64_t depth = packed[0].depth();
    const bool pointwise = geo.IsPointwise();
    const bool blockwise = !pointwise && geo.image.size() == 2 && depth * grid_size > kMaxWholeColumnFloats;
    Tensor col_buffer(DataType::kFloat, {pointwise || blockwise ? 0 : depth * grid_size});
    auto multiply = [&](int64_t product, ThreadPool* gemm_pool) {
      const int64_t n = product / group, g = product % group;
      const float* x_g = x.data<float>() + (n * channels + g * group_channels) * image_size;
      const int64_t tile = (n * maps + g * group_maps) * grid_size;
      float* y_tile = y.data<float>() + tile;
      const GemmEpilogue epilogue{.bias = b ? b->data<float>() + g * group_maps : nullptr,
                                  .z = z ? z->data<float>() + tile : nullptr,
                                  .ldz = grid_size,
                                  .activation = activation};
      if (blockwise) {
        auto im2col = [&](int64_t k, int64_t n_begin, int64_t columns, float* row) {
          Im2ColRow(geo, x_g, k, n_begin, columns, row);
        };
        return PackedGemm(packed[g], grid_size, im2col, y_tile, grid_size, epilogue, gemm_pool);
      }
      if (!pointwise) Im2Col(geo, group_channels, x_g, col_buffer.data<float>(), pool);
      PackedGemm(packed[g], grid_size, pointwise ? x_g : col_buffer.data<float>(), grid_size, y_tile,
                 grid_size, epilogue, gemm_pool);
    };
    const int64_t products = batch * group;
    if (group > 1 && (pointwise || blockwise) && products >= 2 * pool.num_threads()) {
      pool.ParallelFor(products, 1, [&](int64_t begin, int64_t end) {
        for (int64_t product = begin; product < end; ++product) multiply(product, nullptr);
      });
      return;
    }
    for (int64_t product = 0; product < products; ++product) multiply(product, &pool);
  }

  // y_tile = W_g * columns (+ y_tile when beta is 1) [-> activation], one block of `block_rows` grid rows
  // at a time (2-D only).
  template <typename T>
  void ConvolveByRowBlocks(const ConvGeometry& geo, int64_t channels, int64_t maps, int64_t depth,
                           int64_t block_rows, const T* x_g, const T* w_g, T* col, T beta,
                           const Activation& activation, T* y_tile, ThreadPool& pool) const {
    const int64_t rows = geo.grid[0], cols = geo.grid[1];
    for (int64_t r = 0; r < rows; r += block_rows) {
      const int64_t r_end = std::min(rows, r + block_rows), size = (r_end - r) * cols;
      Im2ColRows(geo, channels, x_g, r, r_end, col, pool);
      Gemm<T>(false, false, maps, size, depth, T{1}, w_g, depth, col, size, beta, y_tile + r * cols, rows * cols,
              &pool);
      ActivateBlock(activation, y_tile + r * cols, maps, size, rows * cols, pool);
    }
  }

  // The fused activation over a block an OpenBLAS GEMM just wrote (double: Relu only, Compute checks).
  template <typename T>
  static void ActivateBlock(const Activation& activation, T* y, int64_t rows, int64_t cols, int64_t stride,
                            ThreadPool& pool) {
    if constexpr (std::is_same_v<T, float>) {
      ActivateRows(activation, y, rows, cols, stride, pool);
    } else if (activation.kind == ActivationKind::kRelu) {
      ReluBlock(y, rows, cols, stride, pool);
    }
  }

  ConvAttributes attrs_;
  Activation activation_;
  const void* packed_source_ = nullptr;  // the constant W of the packed path, or null: W is not one
  mutable std::once_flag packed_once_;
  mutable std::vector<PackedRows> packed_weights_;  // one per group, from packed_source_ (PackedWeights)
  std::unique_ptr<DnnlConv> dnnl_;             // null unless oneDNN runs this node's shape class
  std::unique_ptr<Winograd3x3> winograd_;      // for a 3x3 of one group on AVX2, used where WinogradPays
};

using Conv = ConvKernel<false>;
using FusedConv = ConvKernel<true>;

// Conv-1 and -11 differ only in documentation (dilations default to 1 in both); -22 adds bfloat16.
REGISTER_KERNEL(kOnnx, "Conv", 1, 10, kConv1Types, Conv);
REGISTER_KERNEL(kOnnx, "Conv", 11, 21, kConv1Types, Conv);
REGISTER_KERNEL(kOnnx, "Conv", 22, kLatest, kConv22Types, Conv);
REGISTER_KERNEL(kInternal, "FusedConv", 1, kLatest, kConv22Types, FusedConv);

}  // namespace
}  // namespace onnxserve

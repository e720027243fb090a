#include "runtime/math/dnnl_conv.h"

#include <omp.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "runtime/core/run_limits.h"
#include "runtime/math/dnnl_common.h"
#include "runtime/math/isa.h"
#include "runtime/math/scratch.h"
#include "runtime/math/vector_kernels.h"

namespace onnxserve {
namespace {

using Dims = dnnl::memory::dims;
using Tag = dnnl::memory::format_tag;
constexpr auto kF32 = dnnl::memory::data_type::f32;

// A single output row past this many multiply-adds is not banded (our kernel runs it).
constexpr int64_t kMaxRowWork = int64_t{1} << 30;

// Multiply-adds per output (channels x kernel taps) below which our packed GEMM wins: oneDNN runs a
// 3x3 of 8 channels (72) at 0.97x ours on AVX-512, MobileNet's 3x3/2 stem of 3 (27) at 0.68x and the
// keyword spotter's 10x4 stem of 1 (40) at 0.45x; 3x3s of 16 channels (144) and ResNet's 7x7 stem of 3
// (147) at 1.1-1.5x (conv_libraries_benchmark).
constexpr int64_t kMinDepth = 128;

// Maps a share of a split by maps computes: whole blocks of 16, the widest channel block of oneDNN's
// layouts, so that no share ends inside a block.
constexpr int64_t kMapsBlock = 16;

// One band shape's primitives: the input window's reorder to the convolution's layout, the convolution,
// and the reorder of its output into Y's window; its maps' weights in the layout it chose.
struct Band {
  dnnl::memory::desc src_window, dst_window;
  dnnl::convolution_forward::primitive_desc conv_pd;
  dnnl::convolution_forward conv;
  dnnl::reorder src_reorder, dst_reorder;
  dnnl::memory weights;
  int64_t out_rows = 0;
  int64_t map_begin = 0, maps = 0;  // the maps it computes
};

// The bands of one input shape on one thread count: each image's maps in `shares` shares (one unless split
// by maps), each share's rows in `bands` bands.
struct Plan {
  ConvShape2D shape;
  int threads = 0;
  int64_t shares = 1, band_rows = 0, bands = 0, band_work = 0;
  // By (first map, rows in, pad before, after, out).
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>, Band> kinds;
  std::vector<const Band*> band_of;  // per share * bands + band
};

class DnnlConvImpl final : public DnnlConv {
 public:
  explicit DnnlConvImpl(const DnnlConvWeights& dims)
      : dims_(dims), engine_(dnnl::engine::kind::cpu, 0), zero_bias_(static_cast<size_t>(dims.maps), 0.0f) {}

  absl::StatusOr<bool> TryRun(const ConvShape2D& shape, const float* x, const float* w, const float* bias,
                              const Activation& activation, float* y, ThreadPool& pool) const override {
    // No images: nothing to compute, however large an image the request declares (X and Y are empty then,
    // so nothing bounds the image, and its plan would have a band per few rows).
    if (shape.batch == 0) return true;
    const Plan* plan = PlanFor(shape, w, pool.num_threads());
    if (plan == nullptr) return false;
    const float* b = bias != nullptr ? bias : zero_bias_.data();
    try {
      RunBands(*plan, shape.batch, x, b, activation, y, pool);
    } catch (const dnnl::error& e) {
      return absl::InternalError(absl::StrCat("oneDNN convolution: ", e.what()));
    }
    return true;
  }

 private:
  // The plan's bands of each of `batch` images, shared out over `pool`, each followed by the activation
  // over the rows it wrote while they are in cache.
  void RunBands(const Plan& plan, int64_t batch, const float* x, const float* bias, const Activation& activation,
                float* y, ThreadPool& pool) const {
    const ConvShape2D& shape = plan.shape;
    const int64_t image_in = dims_.channels * shape.in_h * shape.in_w;
    const int64_t image_out = dims_.maps * shape.out_h * shape.out_w;
    const vec::VectorKernels& kernels = vec::Kernels();
    const int64_t per_image = plan.shares * plan.bands, map_size = shape.out_h * shape.out_w;
    pool.ParallelFor(batch * per_image, 1, [&](int64_t begin, int64_t end) {
      omp_set_num_threads(1);  // this thread's oneDNN calls compute alone: the pool is the parallelism
      for (int64_t i = begin; i < end; ++i) {
        StopIfRunEnded(plan.band_work);
        const int64_t n = i / per_image, r0 = (i % plan.bands) * plan.band_rows;
        const Band& band = *plan.band_of[static_cast<size_t>(i % per_image)];
        const int64_t in_row = std::max<int64_t>(r0 * shape.stride_h - shape.pad_top, 0);
        float* y_band = y + n * image_out + band.map_begin * map_size + r0 * shape.out_w;
        RunBand(band, x + n * image_in + in_row * shape.in_w, bias + band.map_begin, y_band);
        ApplyActivationToRows(kernels, activation, y_band, band.maps, band.out_rows * shape.out_w, map_size);
      }
    });
  }

  // The plan of `shape` on `threads` threads, made on its first call; null when it is not one to run.
  const Plan* PlanFor(const ConvShape2D& shape, const float* w, int threads) const {
    absl::MutexLock lock(&mutex_);
    return FindOrMakePlan(plans_, shape, threads, [&] {
      return MakePlan(shape, w, threads);  // under the lock taken above
    });
  }

  std::unique_ptr<Plan> MakePlan(const ConvShape2D& shape, const float* w, int threads) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    const int64_t ext_h = (dims_.kernel_h - 1) * shape.dilation_h + 1;
    const int64_t ext_w = (dims_.kernel_w - 1) * shape.dilation_w + 1;
    // Pads of a kernel's extent or more make windows of only zeros, which oneDNN refuses.
    if (shape.pad_top >= ext_h || shape.pad_left >= ext_w || shape.pad_top < 0 || shape.pad_left < 0 ||
        shape.out_h <= 0 || shape.out_w <= 0) {
      return nullptr;
    }
    const double row_work = static_cast<double>(dims_.maps) * static_cast<double>(dims_.channels) *
                            static_cast<double>(dims_.kernel_h * dims_.kernel_w) * static_cast<double>(shape.out_w);
    if (row_work > static_cast<double>(kMaxRowWork)) return nullptr;
    auto plan = std::make_unique<Plan>();
    plan->shape = shape;
    plan->threads = threads;
    const int64_t share = MapsShare(shape, threads);
    plan->shares = (dims_.maps + share - 1) / share;
    const double share_row_work = row_work * static_cast<double>(share) / static_cast<double>(dims_.maps);
    const int64_t work_bands =
        static_cast<int64_t>(share_row_work * static_cast<double>(shape.out_h) / kDnnlBandWork) + 1;
    const int64_t wanted_bands = plan->shares > 1 ? 1 : std::max(threads, 1);
    const int64_t wanted = std::min(shape.out_h, std::max(wanted_bands, work_bands));
    plan->band_rows = (shape.out_h + wanted - 1) / wanted;
    plan->bands = (shape.out_h + plan->band_rows - 1) / plan->band_rows;
    plan->band_work = WorkOf({static_cast<int64_t>(share_row_work), plan->band_rows});
    const RowWindow cols =
        WindowOf(0, shape.out_w, shape.in_w, shape.stride_w, shape.dilation_w, dims_.kernel_w, shape.pad_left);
    try {
      omp_set_num_threads(1);
      for (int64_t m0 = 0; m0 < dims_.maps; m0 += share) {
        const int64_t maps = std::min(share, dims_.maps - m0);
        for (int64_t band = 0; band < plan->bands; ++band) {
          const int64_t r0 = band * plan->band_rows, rows = std::min(plan->band_rows, shape.out_h - r0);
          const RowWindow window =
              WindowOf(r0, rows, shape.in_h, shape.stride_h, shape.dilation_h, dims_.kernel_h, shape.pad_top);
          const auto key = std::make_tuple(m0, window.end - window.begin, window.pad_before, window.pad_after, rows);
          auto it = plan->kinds.find(key);
          if (it == plan->kinds.end()) {
            it = plan->kinds.emplace(key, MakeBand(shape, window, cols, rows, w, m0, maps)).first;
          }
          plan->band_of.push_back(&it->second);
        }
      }
    } catch (const dnnl::error&) {
      return nullptr;  // a shape oneDNN does not take: ours runs it
    }
    return plan;
  }

  // The maps of each share when an image is shared out by maps, else all of them. A band of rows reads
  // all of W: where W outweighs the image's X and Y (ResNet-50's 7x7 stage: 9.4 MB of weights a 3x3
  // against 100 KB of X and of Y), two threads' bands of 4 + 3 rows streamed W twice, and such a 3x3
  // scaled 1.57x over two threads of AVX2 where ONNX Runtime's scales 2.07x. A share of the maps over the
  // whole image reads its part of W once and all of X, and writes its maps of Y, contiguous in NCHW. That
  // also pays where X is a small part of Y (ResNet-50's stem: 3 channels in, 64 maps of a quarter of the
  // pixels out), which every thread then reads whole for little: two AVX2 threads' bands of rows took 1.10
  // times as long there (whole-binary alternation, per-node medians), and the MaxPool after it, which
  // splits by planes, then finds each plane where it was written.
  // Images that outnumber the threads share out whole instead.
  int64_t MapsShare(const ConvShape2D& shape, int threads) const {
    if (threads < 2 || shape.batch >= threads) return dims_.maps;
    const double weights = static_cast<double>(dims_.maps) * static_cast<double>(dims_.channels) *
                           static_cast<double>(dims_.kernel_h * dims_.kernel_w);
    const auto [x, y] = FloatsOfImage(shape, dims_.channels, dims_.maps);
    if (weights <= x + y && 4 * x > y) return dims_.maps;
    const int64_t share = (dims_.maps + threads - 1) / threads;
    return std::min(dims_.maps, (share + kMapsBlock - 1) / kMapsBlock * kMapsBlock);
  }

  // Output rows `rows_out` of maps [map_begin, map_begin + m).
  Band MakeBand(const ConvShape2D& shape, const RowWindow& rows_in, const RowWindow& cols_in, int64_t rows_out,
                const float* w, int64_t map_begin, int64_t m) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    const int64_t c = dims_.channels;
    const int64_t in_rows = rows_in.end - rows_in.begin, in_cols = cols_in.end - cols_in.begin;
    const Dims src_dims = {1, c, in_rows, in_cols}, dst_dims = {1, m, rows_out, shape.out_w};
    const Dims weight_dims = {m, c, dims_.kernel_h, dims_.kernel_w};
    const dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
        dnnl::memory::desc(src_dims, kF32, Tag::any), dnnl::memory::desc(weight_dims, kF32, Tag::any),
        dnnl::memory::desc({m}, kF32, Tag::x), dnnl::memory::desc(dst_dims, kF32, Tag::any),
        {shape.stride_h, shape.stride_w}, {shape.dilation_h - 1, shape.dilation_w - 1},
        {rows_in.pad_before, cols_in.pad_before}, {rows_in.pad_after, cols_in.pad_after});
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // per-thread scratch: calls may run concurrently
    Band band;
    band.conv_pd = dnnl::convolution_forward::primitive_desc(desc, attr, engine_);
    band.conv = dnnl::convolution_forward(band.conv_pd);
    band.src_window = PlainWindow(c, in_rows, in_cols, shape.in_h, shape.in_w);
    band.dst_window = PlainWindow(m, rows_out, shape.out_w, shape.out_h, shape.out_w);
    band.src_reorder =
        dnnl::reorder(dnnl::reorder::primitive_desc(engine_, band.src_window, engine_, band.conv_pd.src_desc()));
    band.dst_reorder =
        dnnl::reorder(dnnl::reorder::primitive_desc(engine_, band.conv_pd.dst_desc(), engine_, band.dst_window));
    band.out_rows = rows_out;
    band.map_begin = map_begin;
    band.maps = m;
    band.weights = WeightsIn(band.conv_pd.weights_desc(), w, map_begin, m);
    return band;
  }

  // Maps [map_begin, map_begin + maps) of W in the layout `desc`, reordered from the plain one on its first
  // request; the bands and shapes whose primitives chose one layout for those maps share its copy.
  dnnl::memory WeightsIn(const dnnl::memory::desc& desc, const float* w, int64_t map_begin, int64_t maps) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    for (const auto& [begin, weights] : weights_) {
      if (begin == map_begin && weights.get_desc() == desc) return weights;
    }
    const Dims plain_dims = {maps, dims_.channels, dims_.kernel_h, dims_.kernel_w};
    const float* plain = w + map_begin * dims_.channels * dims_.kernel_h * dims_.kernel_w;
    weights_.emplace_back(map_begin,
                          ReorderedWeights(desc, dnnl::memory::desc(plain_dims, kF32, Tag::oihw), plain, engine_));
    return weights_.back().second;
  }

  // One band: X's window into the primitive's layout, the convolution, its output into Y's window. The
  // blocked copies and oneDNN's scratchpad live in this thread's scratch.
  void RunBand(const Band& band, const float* x_window, const float* bias, float* y_window) const {
    auto scratch = [&](ScratchSlot slot, const dnnl::memory::desc& desc) {
      return dnnl::memory(desc, engine_,
                          ThreadScratch(slot, static_cast<int64_t>(desc.get_size() / sizeof(float)) + 1));
    };
    dnnl::memory src_user(band.src_window, engine_, const_cast<float*>(x_window));
    dnnl::memory dst_user(band.dst_window, engine_, y_window);
    dnnl::memory src = scratch(ScratchSlot::kDnnlSource, band.conv_pd.src_desc());
    dnnl::memory dst = scratch(ScratchSlot::kDnnlDestination, band.conv_pd.dst_desc());
    const dnnl::memory pad = scratch(ScratchSlot::kDnnlScratchpad, band.conv_pd.scratchpad_desc());
    const dnnl::memory b(dnnl::memory::desc({band.maps}, kF32, Tag::x), engine_, const_cast<float*>(bias));
    dnnl::stream stream(engine_);
    band.src_reorder.execute(stream, src_user, src);
    band.conv.execute(stream, {{DNNL_ARG_SRC, src},
                               {DNNL_ARG_WEIGHTS, band.weights},
                               {DNNL_ARG_BIAS, b},
                               {DNNL_ARG_DST, dst},
                               {DNNL_ARG_SCRATCHPAD, pad}});
    band.dst_reorder.execute(stream, dst, dst_user);
    stream.wait();
  }

  const DnnlConvWeights dims_;
  const dnnl::engine engine_;
  const std::vector<float> zero_bias_;
  mutable absl::Mutex mutex_;
  mutable std::vector<std::unique_ptr<Plan>> plans_ ABSL_GUARDED_BY(mutex_);
  // One per (first map, layout) the primitives chose.
  mutable std::vector<std::pair<int64_t, dnnl::memory>> weights_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace

std::unique_ptr<DnnlConv> DnnlConv::Create(const DnnlConvWeights& dims) {
  const bool shallow = dims.channels * dims.kernel_h * dims.kernel_w < kMinDepth;
  if (ActiveIsa() == Isa::kBaseline || dims.maps <= 0 || dims.kernel_h * dims.kernel_w <= 1 || shallow ||
      !LimitDnnlIsaOnce()) {
    return nullptr;
  }
  try {
    return std::make_unique<DnnlConvImpl>(dims);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

}  // namespace onnxserve

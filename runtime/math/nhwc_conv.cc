#include "runtime/math/nhwc_conv.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
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

// An image's convolution or layout change of less work than this runs on one thread: below it, handing
// half to the other thread costs more than it saves (the keyword spotter's layers, measured for the
// packed GEMM).
constexpr int64_t kMinSplitWork = int64_t{1} << 18;

// A layout change of fewer floats runs on one thread. The halves of a map go to the threads that then
// convolve those rows (the caller takes the first), so a split costs only the hand-off: MobileNet's 150K
// floats of image took 47 us on one thread.
constexpr int64_t kMinSplitReorder = int64_t{1} << 16;

constexpr int64_t kChannelBlock = 16;  // nChw16c, the blocked layout oneDNN's Winograd kernel takes

// Layout-change primitives the process keeps (by shape and direction); past them each call makes its own,
// so a client cycling through image sizes costs time, not memory.
constexpr size_t kMaxReorders = 256;

int64_t RoundUp(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

const dnnl::engine& Engine() {
  static const dnnl::engine kEngine(dnnl::engine::kind::cpu, 0);
  return kEngine;
}

// This thread's stream: made once, not per call.
dnnl::stream& ThreadStream() {
  thread_local dnnl::stream stream(Engine());
  return stream;
}

// The reorder of one image's window between NCHW (`plain`) and NHWC (`nhwc`), made once per shape and
// direction. Returned as a handle of its own (oneDNN's are reference-counted): the cache may grow while the
// caller runs it.
dnnl::reorder ReorderFor(const dnnl::memory::desc& plain, const dnnl::memory::desc& nhwc, bool to_nhwc) {
  static absl::Mutex mutex(absl::kConstInit);
  static auto* const reorders =
      new std::vector<std::tuple<dnnl::memory::desc, dnnl::memory::desc, bool, dnnl::reorder>>();
  absl::MutexLock lock(&mutex);
  for (const auto& [p, n, direction, reorder] : *reorders) {
    if (direction == to_nhwc && p == plain && n == nhwc) return reorder;
  }
  const dnnl::reorder made = to_nhwc ? dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), plain, Engine(), nhwc))
                                     : dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), nhwc, Engine(), plain));
  if (reorders->size() < kMaxReorders) reorders->emplace_back(plain, nhwc, to_nhwc, made);
  return made;
}

// `from` changed from NCHW to NHWC or back, the window of each given by `plain` and `nhwc`.
void ChangeLayout(const dnnl::memory::desc& plain, const dnnl::memory::desc& nhwc, bool to_nhwc, const float* from,
                  float* to) {
  const dnnl::reorder reorder = ReorderFor(plain, nhwc, to_nhwc);
  dnnl::memory src(to_nhwc ? plain : nhwc, Engine(), const_cast<float*>(from));
  dnnl::memory dst(to_nhwc ? nhwc : plain, Engine(), to);
  reorder.execute(ThreadStream(), src, dst);
  ThreadStream().wait();
}

// One image's NHWC -> NCHW change of maps [c0, c0 + count): each of its pixels' floats to their planes.
void ChangeMapsToNchw(int64_t channels, int64_t pixels, int64_t c0, int64_t count, const float* x, float* y) {
  const dnnl::memory::desc nhwc({1, count, 1, pixels}, kF32,
                                dnnl::memory::dims{channels * pixels, 1, channels * pixels, channels});
  ChangeLayout(dnnl::memory::desc({1, count, 1, pixels}, kF32, Tag::nchw), nhwc, false, x + c0, y + c0 * pixels);
}

// One image's NCHW -> NHWC change of pixels [first, first + count): a strided window of each plane to
// dense pixels.
void ChangePixelsToNhwc(int64_t channels, int64_t pixels, int64_t first, int64_t count, const float* x, float* y) {
  ChangeLayout(PlainWindow(channels, 1, count, 1, pixels), dnnl::memory::desc({1, channels, 1, count}, kF32, Tag::nhwc),
               true, x + first, y + first * channels);
}

// Each image cut into parts, at least one per thread when the tensor is large enough: runs of pixels into
// NHWC, whose pixels are dense there; whole planes into NCHW, blocks of kChannelBlock maps: runs of pixels
// would have both threads write the cache line of each plane where their runs meet, and read the maps of
// the other's share where a convolution cut by maps made them. ResNet-50's 7 x 7 x 2048 on two threads:
// 157 -> 32 us.
void Reorder(int64_t batch, int64_t channels, int64_t pixels, bool to_nhwc, const float* x, float* y,
             ThreadPool& pool) {
  LimitDnnlIsaOnce();  // before oneDNN generates its first code, as for the convolutions
  if (batch == 0 || channels == 0 || pixels == 0) return;
  const int64_t threads = batch * channels * pixels >= kMinSplitReorder ? pool.num_threads() : 1;
  const int64_t cut = to_nhwc ? pixels : channels;
  const int64_t wanted = std::min(cut, std::max<int64_t>(1, threads / std::max<int64_t>(batch, 1)));
  const int64_t part = to_nhwc ? (pixels + wanted - 1) / wanted
                               : std::min(channels, RoundUp((channels + wanted - 1) / wanted, kChannelBlock));
  const int64_t parts = (cut + part - 1) / part;
  pool.ParallelFor(batch * parts, 1, [&](int64_t begin, int64_t end) {
    omp_set_num_threads(1);
    for (int64_t i = begin; i < end; ++i) {
      const int64_t n = i / parts, first = (i % parts) * part, count = std::min(cut - first, part);
      StopIfRunEnded(WorkOf({count, to_nhwc ? channels : pixels}));
      const int64_t image = n * channels * pixels;
      if (to_nhwc) {
        ChangePixelsToNhwc(channels, pixels, first, count, x + image, y + image);
      } else {
        ChangeMapsToNchw(channels, pixels, first, count, x + image, y + image);
      }
    }
  });
}

// Winograd's transformed weights are 1.8 to 4 times the size of the plain ones, and each band streams them
// whole, from memory in a model whose weights do not stay in cache: that costs the same for any band size,
// while what Winograd saves grows with the band's pixels. Measured in light_resnet50 on one thread of
// AVX-512 (reorders to and from the blocked layout included), per 3x3 against the direct primitive: 56x56
// maps (64 channels) 955 -> 574 us, 28x28 (128) 927 -> 703-804, 14x14 (256) 901 -> 938, 7x7 (512) 1237 ->
// 2097; at two threads, bands of 28 rows of 56 gained (510 -> 290), of 16 rows of 28 lost (499 -> 614).
// Outputs differ from the direct ones by under 2e-6 of the largest.
constexpr int64_t kMinWinogradPixels = 28 * 28;

// A Winograd band's blocked copies of its window of X and of its output stay in per-thread scratch after
// the call; a band is bounded in work (kDnnlBandWork), and on few channels and maps, padded to oneDNN's
// blocks of 16, that let one band of a 3000 x 3000 image of one channel keep 1.1 GB. Bands are cut to keep
// their copies within this many floats (16 MB), which ResNet's bands are far below.
constexpr int64_t kMaxBlockedBandFloats = int64_t{1} << 22;

// A prologue's output of one image below this stays in cache between the two convolutions (the L2 of a
// core holds it, or most of the L3): it is computed whole then, not band by band. Measured in MobileNet on
// one thread of AVX-512: its 16 -> 96 maps of 112 x 112 (4.8 MB) into a depthwise 3x3 at stride 2 took
// 488 + 178 us apart; 32 -> 144 maps of 56 x 56 (1.8 MB) gained nothing.
constexpr int64_t kMinPrologueBytes = int64_t{3} << 20;
// The window of a prologue's output a band computes: it stays in a core's L2 with the band's output.
constexpr int64_t kPrologueWindowBytes = int64_t{512} << 10;
// Past this a band of one output row needs more scratch than a thread should keep: such an image runs the
// convolutions one after the other.
constexpr int64_t kMaxPrologueWindowFloats = int64_t{4} << 20;

// Whether none of y's n floats is infinite or NaN (the maximum of their bits less the sign is below the
// infinity's), applying Relu to them on the way when `relu`: one pass over a band, not two. AVX2 code,
// which NhwcConv needs (NhwcConvAvailable).
__attribute__((target("avx2"))) bool AllFiniteThenRelu(float* y, int64_t n, bool relu) {
  int32_t largest_bits = 0;
  for (int64_t i = 0; i < n; ++i) {
    largest_bits = std::max(largest_bits, std::bit_cast<int32_t>(y[i]) & 0x7fffffff);
    if (relu) y[i] = std::max(y[i], 0.0f);
  }
  return largest_bits < 0x7f800000;
}

// One band's primitive: a dense part of an image's output (its floats from `out_offset` on) and where in
// the image its input starts. A band of output rows reads the input rows its windows cover, with the zero
// rows before and after them as its own padding; a pointwise convolution's band is any run of pixels. A
// band may instead be every row of `maps` maps from `map_begin` on: a strided part of Y.
struct Band {
  int64_t in_offset = 0, out_offset = 0, out_floats = 0, map_begin = 0, maps = 0;
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward conv;
  dnnl::memory weights;
  // A Winograd band runs in oneDNN's blocked layout: its window of X is reordered into per-thread scratch
  // before the primitive and its output back into Y after it. Its activation runs on the blocked output
  // before that, after the check of its values (AllFiniteThenRelu): an infinity or NaN its transforms made
  // must be seen before a Relu hides one.
  bool blocked = false;
  dnnl::memory::desc nhwc_src, nhwc_dst;
  dnnl::reorder to_blocked, from_blocked;
  // Under a prologue: the pointwise convolution that computes the band's window of its output, of
  // `window_floats`, from X's pixels from `prologue_in_offset` on, into per-thread scratch.
  int64_t prologue_in_offset = 0, window_floats = 0;
  dnnl::convolution_forward::primitive_desc prologue_pd;
  dnnl::convolution_forward prologue_conv;
  dnnl::memory prologue_weights;
};

// The bands of one input shape on one thread count.
struct Plan {
  ConvShape2D shape;
  int threads = 0;
  int64_t band_work = 0;
  std::vector<Band> bands;

  // Shares an image's multiply-adds (in double: a hostile shape's need not fit in int64) over the bands,
  // as the run limits count each band's.
  void ShareWork(double image_work) {
    band_work = static_cast<int64_t>(
        std::min(image_work / static_cast<double>(bands.size()), static_cast<double>(INT64_MAX / 2)));
  }
};

class NhwcConvImpl final : public NhwcConv {
 public:
  NhwcConvImpl(const NhwcConvWeights& dims, bool has_z, const Activation& activation,
               std::optional<NhwcPrologue> prologue)
      : dims_(dims),
        has_z_(has_z),
        activation_(activation),
        prologue_(std::move(prologue)),
        zero_bias_(static_cast<size_t>(std::max(dims.maps, InChannels())), 0.0f) {}

  absl::StatusOr<bool> TryRun(const ConvShape2D& shape, const float* x, const float* w, const float* bias,
                              const float* z, float* y, ThreadPool& pool) const override {
    if (has_z_ != (z != nullptr)) return absl::InternalError("Z given to a convolution made without it, or none");
    // No images: nothing to compute, however large an image the request declares (X and Y are empty then,
    // so nothing bounds the image, and its plan would have a band per row).
    if (shape.batch == 0) return true;
    return RunPlan(PlanFor(shape, w, pool.num_threads()), shape.batch, x, nullptr, bias, z, y, pool);
  }

  absl::StatusOr<bool> TryRunWithPrologue(const ConvShape2D& shape, const float* x, const float* w_pre,
                                          const float* bias_pre, const float* w, const float* bias,
                                          const float* z, float* y, ThreadPool& pool) const override {
    if (!prologue_) return absl::InternalError("a prologue given to a convolution made without one");
    if (has_z_ != (z != nullptr)) return absl::InternalError("Z given to a convolution made without it, or none");
    if (shape.batch == 0) return true;
    // In double: the image is the request's, and a hostile one need not fit in int64 when multiplied.
    const double window_bytes = static_cast<double>(shape.in_h) * static_cast<double>(shape.in_w) *
                                static_cast<double>(InChannels()) * sizeof(float);
    if (window_bytes < static_cast<double>(kMinPrologueBytes)) return false;
    return RunPlan(ProloguePlanFor(shape, w_pre, w, pool.num_threads()), shape.batch, x,
                   bias_pre != nullptr ? bias_pre : zero_bias_.data(), bias, z, y, pool);
  }

 private:
  // The call's images on `plan` (null: the shape is declined), oneDNN's errors as statuses.
  absl::StatusOr<bool> RunPlan(const Plan* plan, int64_t batch, const float* x, const float* bias_pre,
                               const float* bias, const float* z, float* y, ThreadPool& pool) const {
    if (plan == nullptr) return false;
    try {
      return RunBands(*plan, batch, x, bias_pre, bias != nullptr ? bias : zero_bias_.data(), z, y, pool);
    } catch (const dnnl::error& e) {
      return absl::InternalError(absl::StrCat("oneDNN NHWC convolution: ", e.what()));
    }
  }

  // Relu is oneDNN's post-op; the other activations run over each band after it, while it is in cache,
  // with the vector kernels every other path uses.
  bool ReluInPrimitive() const { return activation_.kind == ActivationKind::kRelu; }
  bool PrologueReluInPrimitive() const { return prologue_->activation.kind == ActivationKind::kRelu; }
  int64_t InChannels() const { return dims_.depthwise ? dims_.maps : dims_.channels; }

  // The plan's bands of each of `batch` images: the call's, not the plan's, which is kept for any batch.
  // Z joins through oneDNN's sum post-op: each band copies its rows of Z into its rows of Y just before
  // its convolution adds to them, on its own thread, while they are then in cache. Under a prologue
  // (`bias_pre` given) each band first computes the window of X' it reads. False where a Winograd
  // band's result is infinite or NaN: its transforms add and scale neighbouring pixels before the weights
  // scale them down, so huge or infinite inputs overflow there where the direct convolution's sums need not
  // (inputs of 1e38 and weights of 1e-3 gave inf for 1.4e37).
  bool RunBands(const Plan& plan, int64_t batch, const float* x, const float* bias_pre, const float* bias,
                const float* z, float* y, ThreadPool& pool) const {
    const ConvShape2D& s = plan.shape;
    const int64_t x_channels = bias_pre != nullptr ? prologue_->channels : InChannels();
    const int64_t in_image = s.in_h * s.in_w * x_channels, out_image = s.out_h * s.out_w * dims_.maps;
    const int64_t bands = static_cast<int64_t>(plan.bands.size());
    const vec::VectorKernels& kernels = vec::Kernels();
    std::atomic<bool> finite{true};
    pool.ParallelFor(batch * bands, 1, [&](int64_t begin, int64_t end) {
      omp_set_num_threads(1);  // this thread's oneDNN calls compute alone: the pool is the parallelism
      for (int64_t i = begin; i < end; ++i) {
        StopIfRunEnded(plan.band_work);
        const int64_t n = i / bands;
        const Band& band = plan.bands[static_cast<size_t>(i % bands)];
        const float* band_x = x + n * in_image + band.in_offset;
        if (bias_pre != nullptr) {
          float* window = ThreadScratch(ScratchSlot::kPrologueWindow, band.window_floats);
          RunPrologue(band, x + n * in_image + band.prologue_in_offset, bias_pre, window);
          if (!PrologueReluInPrimitive()) ApplyActivation(kernels, prologue_->activation, window, band.window_floats);
          band_x = window;
        }
        const int64_t y_offset = n * out_image + band.out_offset;
        if (band.maps < dims_.maps && !band.blocked) {
          RunMapsBand(band, band_x, bias, z != nullptr ? z + y_offset : nullptr, y + y_offset, kernels);
          continue;
        }
        if (z != nullptr && z != y) {
          std::memcpy(y + y_offset, z + y_offset, static_cast<size_t>(band.out_floats) * sizeof(float));
        }
        if (!RunBand(band, band_x, bias + band.map_begin, y + y_offset, kernels)) {
          finite.store(false, std::memory_order_relaxed);
          continue;
        }
        if (!band.blocked && !ReluInPrimitive()) ApplyActivation(kernels, activation_, y + y_offset, band.out_floats);
      }
    });
    return finite.load(std::memory_order_relaxed);
  }

  // A direct band cut by maps computes its part of Y, each pixel's `band.maps` floats dims_.maps apart, in
  // a dense per-thread copy: oneDNN's kernels take no strided output (only its reference one does).
  void RunMapsBand(const Band& band, const float* x, const float* bias, const float* z, float* y,
                   const vec::VectorKernels& kernels) const {
    float* out = ThreadScratch(ScratchSlot::kDnnlDestination, band.out_floats);
    const int64_t pixels = band.out_floats / band.maps;
    const size_t bytes = static_cast<size_t>(band.maps) * sizeof(float);
    if (z != nullptr) {
      for (int64_t p = 0; p < pixels; ++p) std::memcpy(out + p * band.maps, z + p * dims_.maps, bytes);
    }
    RunBand(band, x, bias + band.map_begin, out, kernels);
    if (!ReluInPrimitive()) ApplyActivation(kernels, activation_, out, band.out_floats);
    for (int64_t p = 0; p < pixels; ++p) std::memcpy(y + p * dims_.maps, out + p * band.maps, bytes);
  }

  void RunPrologue(const Band& band, const float* x, const float* bias, float* window) const {
    const dnnl::memory pad = Scratch(ScratchSlot::kDnnlScratchpad, band.prologue_pd.scratchpad_desc());
    const dnnl::memory b(dnnl::memory::desc({InChannels()}, kF32, Tag::x), Engine(), const_cast<float*>(bias));
    dnnl::stream& stream = ThreadStream();
    band.prologue_conv.execute(stream, {{DNNL_ARG_SRC, dnnl::memory(band.prologue_pd.src_desc(), Engine(),
                                                                   const_cast<float*>(x))},
                                        {DNNL_ARG_WEIGHTS, band.prologue_weights},
                                        {DNNL_ARG_BIAS, b},
                                        {DNNL_ARG_DST, dnnl::memory(band.prologue_pd.dst_desc(), Engine(), window)},
                                        {DNNL_ARG_SCRATCHPAD, pad}});
    stream.wait();
  }

  // False where a Winograd band's results are not all finite (Y's part of it then unwritten).
  bool RunBand(const Band& band, const float* x, const float* bias, float* y, const vec::VectorKernels& kernels) const {
    const dnnl::memory pad = Scratch(ScratchSlot::kDnnlScratchpad, band.pd.scratchpad_desc());
    const dnnl::memory b(band.pd.bias_desc(), Engine(), const_cast<float*>(bias));
    dnnl::stream& stream = ThreadStream();
    const auto run = [&](const dnnl::memory& src, const dnnl::memory& dst) {
      band.conv.execute(stream, {{DNNL_ARG_SRC, src},
                                 {DNNL_ARG_WEIGHTS, band.weights},
                                 {DNNL_ARG_BIAS, b},
                                 {DNNL_ARG_DST, dst},
                                 {DNNL_ARG_SCRATCHPAD, pad}});
    };
    if (!band.blocked) {
      run(dnnl::memory(band.pd.src_desc(), Engine(), const_cast<float*>(x)),
          dnnl::memory(band.pd.dst_desc(), Engine(), y));
      stream.wait();
      return true;
    }
    dnnl::memory src = Scratch(ScratchSlot::kDnnlSource, band.pd.src_desc());
    dnnl::memory dst = Scratch(ScratchSlot::kDnnlDestination, band.pd.dst_desc());
    dnnl::memory x_window(band.nhwc_src, Engine(), const_cast<float*>(x));
    dnnl::memory y_band(band.nhwc_dst, Engine(), y);
    band.to_blocked.execute(stream, x_window, src);
    run(src, dst);
    stream.wait();
    // Padded maps of the blocked layout are zeros oneDNN keeps: finite, and never copied out.
    float* blocked = static_cast<float*>(dst.get_data_handle());
    const int64_t floats = static_cast<int64_t>(band.pd.dst_desc().get_size() / sizeof(float));
    if (!AllFiniteThenRelu(blocked, floats, ReluInPrimitive())) return false;
    if (!ReluInPrimitive()) ApplyActivation(kernels, activation_, blocked, floats);
    band.from_blocked.execute(stream, dst, y_band);
    stream.wait();
    return true;
  }

  static dnnl::memory Scratch(ScratchSlot slot, const dnnl::memory::desc& desc) {
    return dnnl::memory(desc, Engine(),
                        ThreadScratch(slot, static_cast<int64_t>(desc.get_size() / sizeof(float)) + 1));
  }

  const Plan* PlanFor(const ConvShape2D& shape, const float* w, int threads) const {
    absl::MutexLock lock(&mutex_);
    return FindOrMakePlan(plans_, shape, threads, [&] {
      return MakePlan(shape, w, threads);  // under the lock taken above
    });
  }

  const Plan* ProloguePlanFor(const ConvShape2D& shape, const float* w_pre, const float* w, int threads) const {
    absl::MutexLock lock(&mutex_);
    return FindOrMakePlan(prologue_plans_, shape, threads, [&] {
      return MakeProloguePlan(shape, w_pre, w, threads);  // under the lock taken above
    });
  }

  // Pads of a kernel's extent or more make windows of only zeros, and pads below zero skip input rows:
  // oneDNN takes neither.
  bool PadsFit(const ConvShape2D& shape) const {
    const int64_t ext_h = (dims_.kernel_h - 1) * shape.dilation_h + 1;
    const int64_t ext_w = (dims_.kernel_w - 1) * shape.dilation_w + 1;
    return shape.pad_top >= 0 && shape.pad_left >= 0 && shape.pad_bottom >= 0 && shape.pad_right >= 0 &&
           shape.pad_top < ext_h && shape.pad_bottom < ext_h && shape.pad_left < ext_w && shape.pad_right < ext_w &&
           shape.out_h > 0 && shape.out_w > 0;
  }

  // The multiply-adds of one image's convolution, in double: a hostile shape's need not fit in int64.
  double ImageWork(const ConvShape2D& shape) const {
    return static_cast<double>(dims_.maps) * static_cast<double>(dims_.channels) *
           static_cast<double>(dims_.kernel_h * dims_.kernel_w) * static_cast<double>(shape.out_h) *
           static_cast<double>(shape.out_w);
  }

  // Bands of output rows whose windows of X' fit kPrologueWindowBytes (a row at least), at least one per
  // thread when an image is split and bounded in work like the others.
  std::unique_ptr<Plan> MakeProloguePlan(const ConvShape2D& shape, const float* w_pre, const float* w,
                                         int threads) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    if (!PadsFit(shape)) return nullptr;
    const double row_floats = static_cast<double>(shape.in_w) * static_cast<double>(InChannels());
    const double ext_h = static_cast<double>((dims_.kernel_h - 1) * shape.dilation_h + 1);
    if (std::min(ext_h, static_cast<double>(shape.in_h)) * row_floats > kMaxPrologueWindowFloats) return nullptr;
    const double window_rows = kPrologueWindowBytes / sizeof(float) / row_floats;
    const double rows_that_fit = std::max(1.0, (window_rows - ext_h) / static_cast<double>(shape.stride_h) + 1);
    const double image_work = ImageWork(shape) + static_cast<double>(shape.in_h) * row_floats *
                                                     static_cast<double>(prologue_->channels);
    const bool split = threads > 1 && shape.batch < threads;
    const double out_h = static_cast<double>(shape.out_h);
    const int64_t wanted = static_cast<int64_t>(std::min(
        out_h, std::max({split ? threads : 1.0, image_work / kDnnlBandWork + 1, std::ceil(out_h / rows_that_fit)})));
    const int64_t band_rows = (shape.out_h + wanted - 1) / wanted;
    auto plan = std::make_unique<Plan>();
    plan->shape = shape;
    plan->threads = threads;
    try {
      omp_set_num_threads(1);
      for (int64_t r0 = 0; r0 < shape.out_h; r0 += band_rows) {
        Band band = MakeBand(shape, r0, std::min(band_rows, shape.out_h - r0), false, w);
        AddPrologue(shape, w_pre, band);
        plan->bands.push_back(std::move(band));
      }
    } catch (const dnnl::error&) {
      return nullptr;
    }
    plan->ShareWork(image_work);
    return plan;
  }

  // The prologue's primitive for `band`'s window: the rows of X' it reads, a run of pixels of X.
  void AddPrologue(const ConvShape2D& shape, const float* w_pre, Band& band) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    const int64_t first_row = band.in_offset / (shape.in_w * InChannels());
    const int64_t pixels = band.pd.src_desc().dims()[2] * shape.in_w;
    const Dims weight_dims = {InChannels(), prologue_->channels, 1, 1};
    const dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
        dnnl::memory::desc({1, prologue_->channels, 1, pixels}, kF32, Tag::nhwc),
        dnnl::memory::desc(weight_dims, kF32, Tag::any), dnnl::memory::desc({InChannels()}, kF32, Tag::x),
        dnnl::memory::desc({1, InChannels(), 1, pixels}, kF32, Tag::nhwc), {1, 1}, {0, 0}, {0, 0}, {0, 0});
    std::tie(band.prologue_pd, band.prologue_conv) = MakePrimitive(desc, false, PrologueReluInPrimitive());
    band.prologue_weights = WeightsIn(prologue_weights_, band.prologue_pd.weights_desc(),
                                      dnnl::memory::desc(weight_dims, kF32, Tag::oihw), w_pre);
    band.prologue_in_offset = first_row * shape.in_w * prologue_->channels;
    band.window_floats = pixels * InChannels();
  }

  std::unique_ptr<Plan> MakePlan(const ConvShape2D& shape, const float* w, int threads) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    if (!PadsFit(shape)) return nullptr;
    const double image_work = ImageWork(shape);
    const bool split = threads > 1 && shape.batch < threads && image_work >= kMinSplitWork;
    // In double until bounded by the rows: the work of a hostile shape need not fit in int64.
    const int64_t wanted = static_cast<int64_t>(std::min<double>(
        static_cast<double>(shape.out_h), std::max<double>(split ? threads : 1, image_work / kDnnlBandWork + 1)));
    auto plan = std::make_unique<Plan>();
    plan->shape = shape;
    plan->threads = threads;
    try {
      omp_set_num_threads(1);
      if (IsPointwise(shape) && split && TryDirectByMaps(shape, threads, w, *plan)) return plan;
      if (wanted > 1 && IsPointwise(shape)) {
        // Runs of pixels share the work out evenly where rows cannot: a 7x7 map's rows split 4 + 3.
        const int64_t pixels = shape.out_h * shape.out_w, run = (pixels + wanted - 1) / wanted;
        for (int64_t p0 = 0; p0 < pixels; p0 += run) {
          plan->bands.push_back(MakePixelRun(p0, std::min(run, pixels - p0), w));
        }
      } else {
        int64_t band_rows = (shape.out_h + wanted - 1) / wanted;
        // Winograd's bands start on a row of its output tiles (at most 4 rows high), so that each band
        // computes its rows as the whole image does; there may be more of them, for their copies' bound.
        const int64_t winograd_rows = std::min(RoundUp(band_rows, 4), MaxWinogradBandRows(shape));
        const bool winograd = WinogradFits(shape) && winograd_rows * shape.out_w >= kMinWinogradPixels;
        if (winograd) band_rows = winograd_rows;
        if (!winograd && split && TryWinogradByMaps(shape, threads, w, *plan)) return plan;
        if (!winograd && split && TryDirectByMaps(shape, threads, w, *plan)) return plan;
        for (int64_t r0 = 0; r0 < shape.out_h; r0 += band_rows) {
          plan->bands.push_back(MakeBand(shape, r0, std::min(band_rows, shape.out_h - r0), winograd, w));
        }
      }
    } catch (const dnnl::error&) {
      return nullptr;  // a shape oneDNN does not take: the caller runs it
    }
    plan->ShareWork(image_work);
    return plan;
  }

  // An image whose rows, shared out over the threads, are too few for Winograd may be shared out by maps
  // instead: each thread transforms the whole image and computes its maps, in whole blocks of the blocked
  // layout. ResNet-50's 3x3s of 128 x 28 x 28 on two threads of AVX-512 (four in a row, relu between,
  // alternated): 1.85 ms in bands of 14 rows on the direct kernel, 1.06 ms by maps on Winograd's (one
  // thread: 1.67). Whether it made `plan`'s bands.
  bool TryWinogradByMaps(const ConvShape2D& shape, int threads, const float* w, Plan& plan) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    if (!WinogradFits(shape) || shape.out_h * shape.out_w < kMinWinogradPixels) return false;
    const int64_t share = RoundUp((dims_.maps + threads - 1) / threads, kChannelBlock);
    if (share >= dims_.maps) return false;
    // The blocked copies of the whole image and of a share of its maps stay within the bound of any band's.
    const double copies = static_cast<double>(RoundUp(InChannels(), kChannelBlock)) *
                              static_cast<double>(shape.in_h) * static_cast<double>(shape.in_w) +
                          static_cast<double>(share) * static_cast<double>(shape.out_h) * static_cast<double>(shape.out_w);
    if (copies > static_cast<double>(kMaxBlockedBandFloats)) return false;
    std::vector<Band> bands;
    try {
      for (int64_t m0 = 0; m0 < dims_.maps; m0 += share) {
        // Throws where there is no Winograd kernel (AVX2): rows then.
        bands.push_back(MakeBand(shape, 0, shape.out_h, /*winograd=*/true, w, m0, std::min(share, dims_.maps - m0)));
      }
    } catch (const dnnl::error&) {
      return false;
    }
    plan.bands = std::move(bands);
    plan.ShareWork(ImageWork(shape));
    return true;
  }

  // An image whose weights outweigh its maps may be shared out by maps: each thread reads the whole of X
  // and half the weights, where a band of rows reads all the weights and its rows of X. A band of maps
  // computes into per-thread scratch and copies its part of Y out (oneDNN's kernels write no strided Y),
  // and Z in first, so it wins where W > X + Y (+ Z). ResNet-50's last stage on two threads of AVX-512
  // (7 x 7 maps, 2.4 MB of weights a 3x3): 0.67-0.95 of the time of bands of rows, its 1x1s of 256 ->
  // 1024 maps of 14 x 14 with Z, which this rule keeps in rows, 1.2 times. Whether it made `plan`'s bands.
  bool TryDirectByMaps(const ConvShape2D& shape, int threads, const float* w, Plan& plan) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    if (dims_.depthwise) return false;
    const double weights = static_cast<double>(dims_.maps) * static_cast<double>(dims_.channels) *
                           static_cast<double>(dims_.kernel_h * dims_.kernel_w);
    const auto [x, y] = FloatsOfImage(shape, InChannels(), dims_.maps);
    if (weights <= x + (has_z_ ? 2 : 1) * y) return false;
    const int64_t share = RoundUp((dims_.maps + threads - 1) / threads, kChannelBlock);
    if (share >= dims_.maps) return false;
    // Each band bounded in work like a band of rows, its copy of Y like a Winograd band's copies.
    const double image_work = ImageWork(shape), shares = std::ceil(static_cast<double>(dims_.maps) / share);
    if (image_work / shares > static_cast<double>(kDnnlBandWork)) return false;
    const double out_pixels = static_cast<double>(shape.out_h) * static_cast<double>(shape.out_w);
    if (out_pixels * static_cast<double>(share) > static_cast<double>(kMaxBlockedBandFloats)) return false;
    std::vector<Band> bands;
    try {
      for (int64_t m0 = 0; m0 < dims_.maps; m0 += share) {
        bands.push_back(MakeBand(shape, 0, shape.out_h, /*winograd=*/false, w, m0, std::min(share, dims_.maps - m0)));
      }
    } catch (const dnnl::error&) {
      return false;  // only oneDNN's reference kernel takes these maps: rows then
    }
    plan.bands = std::move(bands);
    plan.ShareWork(image_work);
    return true;
  }

  // A 1x1 at stride 1 without pads: its map is a matrix of pixels, cut anywhere.
  bool IsPointwise(const ConvShape2D& s) const {
    return dims_.kernel_h == 1 && dims_.kernel_w == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_top == 0 &&
           s.pad_left == 0 && s.pad_bottom == 0 && s.pad_right == 0;
  }

  // The most output rows, a multiple of 4, of a Winograd band whose blocked copies (its window of X, two
  // rows more, and its output, channels and maps padded to the block) stay within kMaxBlockedBandFloats;
  // 0 when not even 4 rows do.
  int64_t MaxWinogradBandRows(const ConvShape2D& s) const {
    // In double: a hostile width times channels need not fit in int64.
    const double in_row = static_cast<double>(RoundUp(InChannels(), kChannelBlock)) * static_cast<double>(s.in_w);
    const double out_row = static_cast<double>(RoundUp(dims_.maps, kChannelBlock)) * static_cast<double>(s.out_w);
    const double rows = (static_cast<double>(kMaxBlockedBandFloats) - 2 * in_row) / (in_row + out_row);
    if (rows < 4) return 0;
    return static_cast<int64_t>(std::min(rows, static_cast<double>(RoundUp(s.out_h, 4)))) / 4 * 4;
  }

  // A dense 3x3 at stride 1 without Z: oneDNN's Winograd convolution (AVX-512 only) takes it, in its blocked
  // layout, where its bands are large enough (kMinWinogradPixels). Z would have to join in the blocked
  // layout, before the activation: those stay direct.
  bool WinogradFits(const ConvShape2D& s) const {
    return !dims_.depthwise && !has_z_ && dims_.kernel_h == 3 && dims_.kernel_w == 3 && s.stride_h == 1 &&
           s.stride_w == 1 && s.dilation_h == 1 && s.dilation_w == 1;
  }

  // Output rows [out_row, out_row + out_rows) of maps [map_begin, map_begin + maps) (all of them unless
  // given). A direct band of some maps writes them densely (RunMapsBand copies them into Y).
  Band MakeBand(const ConvShape2D& s, int64_t out_row, int64_t out_rows, bool winograd, const float* w,
                int64_t map_begin = 0, int64_t maps = -1) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    if (maps < 0) maps = dims_.maps;
    const RowWindow rows = WindowOf(out_row, out_rows, s.in_h, s.stride_h, s.dilation_h, dims_.kernel_h, s.pad_top);
    const dnnl::memory::desc src({1, InChannels(), rows.end - rows.begin, s.in_w}, kF32, Tag::nhwc);
    // Y's part: its rows, or its maps of each pixel, a pixel's dims_.maps floats apart.
    const dnnl::memory::desc dst =
        maps == dims_.maps
            ? dnnl::memory::desc({1, maps, out_rows, s.out_w}, kF32, Tag::nhwc)
            : dnnl::memory::desc({1, maps, out_rows, s.out_w}, kF32,
                                 {out_rows * s.out_w * dims_.maps, 1, s.out_w * dims_.maps, dims_.maps});
    const Dims weight_dims = WeightDims(maps);
    const auto desc = [&](dnnl::algorithm algorithm, const dnnl::memory::desc& src, const dnnl::memory::desc& dst) {
      return dnnl::convolution_forward::desc(
          dnnl::prop_kind::forward_inference, algorithm, src, dnnl::memory::desc(weight_dims, kF32, Tag::any),
          dnnl::memory::desc({maps}, kF32, Tag::x), dst, {s.stride_h, s.stride_w},
          {s.dilation_h - 1, s.dilation_w - 1}, {rows.pad_before, s.pad_left}, {rows.pad_after, s.pad_right});
    };
    const int64_t in_offset = rows.begin * s.in_w * InChannels();
    const int64_t out_offset = out_row * s.out_w * dims_.maps + map_begin;
    const int64_t out_floats = out_rows * s.out_w * maps;
    const float* band_w = w + map_begin * (weight_dims[1] * dims_.kernel_h * dims_.kernel_w);
    if (winograd) {
      try {
        const auto any = [](const dnnl::memory::desc& d) { return dnnl::memory::desc(d.dims(), kF32, Tag::any); };
        Band band = MakeBandOf(desc(dnnl::algorithm::convolution_winograd, any(src), any(dst)), in_offset,
                               out_offset, out_floats, band_w, weight_dims, /*winograd=*/true);
        band.map_begin = map_begin;
        band.nhwc_src = src;
        band.nhwc_dst = dst;
        band.to_blocked = dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), src, Engine(), band.pd.src_desc()));
        band.from_blocked =
            dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), band.pd.dst_desc(), Engine(), dst));
        return band;
      } catch (const dnnl::error&) {
        // No Winograd kernel here (AVX2, or a shape it does not take): the direct one below.
      }
    }
    const dnnl::memory::desc dense_dst({1, maps, out_rows, s.out_w}, kF32, Tag::nhwc);
    Band band = MakeBandOf(desc(dnnl::algorithm::convolution_direct, src, dense_dst), in_offset, out_offset,
                           out_floats, band_w, weight_dims, /*winograd=*/false);
    band.map_begin = map_begin;
    return band;
  }

  // Pixels [p0, p0 + count) of a pointwise convolution, as one row of `count` pixels.
  Band MakePixelRun(int64_t p0, int64_t count, const float* w) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    const dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
        dnnl::memory::desc({1, InChannels(), 1, count}, kF32, Tag::nhwc),
        dnnl::memory::desc(WeightDims(dims_.maps), kF32, Tag::any), dnnl::memory::desc({dims_.maps}, kF32, Tag::x),
        dnnl::memory::desc({1, dims_.maps, 1, count}, kF32, Tag::nhwc), {1, 1}, {0, 0}, {0, 0}, {0, 0});
    return MakeBandOf(desc, p0 * InChannels(), p0 * dims_.maps, count * dims_.maps, w, WeightDims(dims_.maps),
                      /*winograd=*/false);
  }

  Dims WeightDims(int64_t maps) const {
    return dims_.depthwise ? Dims{maps, 1, 1, dims_.kernel_h, dims_.kernel_w}
                           : Dims{maps, dims_.channels, dims_.kernel_h, dims_.kernel_w};
  }

  // `w`: the weights of the band's maps, of `weight_dims`.
  Band MakeBandOf(const dnnl::convolution_forward::desc& desc, int64_t in_offset, int64_t out_offset,
                  int64_t out_floats, const float* w, const Dims& weight_dims, bool winograd) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    Band band;
    band.maps = weight_dims[0];
    band.blocked = winograd;
    band.in_offset = in_offset;
    band.out_offset = out_offset;
    band.out_floats = out_floats;
    // Winograd's Relu runs after its overflow check (AllFiniteThenRelu): a -inf it would hide is one.
    std::tie(band.pd, band.conv) = MakePrimitive(desc, has_z_, ReluInPrimitive() && !winograd);
    const Tag plain_tag = dims_.depthwise ? Tag::goihw : Tag::oihw;
    band.weights = WeightsIn(weights_, band.pd.weights_desc(), dnnl::memory::desc(weight_dims, kF32, plain_tag), w);
    return band;
  }

  // The primitive of `desc`, adding Z first where `sum`, then Relu where `relu`.
  static std::pair<dnnl::convolution_forward::primitive_desc, dnnl::convolution_forward> MakePrimitive(
      const dnnl::convolution_forward::desc& desc, bool sum, bool relu) {
    dnnl::post_ops post_ops;
    if (sum) post_ops.append_sum(1.0f);
    if (relu) post_ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(post_ops);
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // per-thread scratch: calls may run concurrently
    dnnl::convolution_forward::primitive_desc pd(desc, attr, Engine());
    // oneDNN's reference implementation, its answer to a combination it has no kernel for, is a thousand
    // times slower than ours (an NCHW stem into NHWC took 4.6 ms where ours takes 5 us).
    if (absl::StartsWith(pd.impl_info_str(), "ref")) throw dnnl::error(dnnl_unimplemented, "reference only");
    return {pd, dnnl::convolution_forward(pd)};
  }

  // Weights `w`, laid out as `plain` says, in the layout `desc`, reordered on their first request; the
  // bands and shapes whose primitives chose one layout for the same weights (bands cut by maps have each
  // their own) share its copy in `cache`.
  static dnnl::memory WeightsIn(std::vector<std::pair<const float*, dnnl::memory>>& cache,
                                const dnnl::memory::desc& desc, const dnnl::memory::desc& plain, const float* w) {
    for (const auto& [source, weights] : cache) {
      if (source == w && weights.get_desc() == desc) return weights;
    }
    cache.emplace_back(w, ReorderedWeights(desc, plain, w, Engine()));
    return cache.back().second;
  }

  const NhwcConvWeights dims_;
  const bool has_z_;
  const Activation activation_;
  const std::optional<NhwcPrologue> prologue_;
  const std::vector<float> zero_bias_;  // of the convolution's and the prologue's maps
  mutable absl::Mutex mutex_;
  mutable std::vector<std::unique_ptr<Plan>> plans_ ABSL_GUARDED_BY(mutex_);
  mutable std::vector<std::unique_ptr<Plan>> prologue_plans_ ABSL_GUARDED_BY(mutex_);
  // One copy per layout the primitives chose.
  mutable std::vector<std::pair<const float*, dnnl::memory>> weights_ ABSL_GUARDED_BY(mutex_);
  mutable std::vector<std::pair<const float*, dnnl::memory>> prologue_weights_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace

bool NhwcConvAvailable() {
  static const bool kAvailable = ActiveIsa() != Isa::kBaseline && LimitDnnlIsaOnce();
  return kAvailable;
}

bool NhwcDenseConvsWin() { return NhwcConvAvailable() && ActiveIsa() == Isa::kAvx512; }

void NchwToNhwc(int64_t batch, int64_t channels, int64_t pixels, const float* x, float* y, ThreadPool& pool) {
  Reorder(batch, channels, pixels, true, x, y, pool);
}

void NhwcToNchw(int64_t batch, int64_t channels, int64_t pixels, const float* x, float* y, ThreadPool& pool) {
  Reorder(batch, channels, pixels, false, x, y, pool);
}

std::unique_ptr<NhwcConv> NhwcConv::Create(const NhwcConvWeights& dims, bool has_z, const Activation& activation,
                                           std::optional<NhwcPrologue> prologue) {
  if (!NhwcConvAvailable()) return nullptr;
  return std::make_unique<NhwcConvImpl>(dims, has_z, activation, std::move(prologue));
}

}  // namespace onnxserve

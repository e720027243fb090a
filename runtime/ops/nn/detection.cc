// Object-detection post-processing: NonMaxSuppression (greedy per batch and class), RoiAlign (bilinear
// pooling of regions of interest) and MaxRoiPool (Fast R-CNN's max pooling over integer RoI bins). All follow
// ONNX Runtime's semantics, which the spec's tests were generated from.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "runtime/core/checked_size.h"
#include "runtime/core/run_limits.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// A box as its min/max corners.
struct Box {
  float y_min, x_min, y_max, x_max;
  float Area() const { return (y_max - y_min) * (x_max - x_min); }
};

Box ReadBox(const float* b, bool center_point) {
  if (center_point) {  // [x_center, y_center, width, height]
    return {b[1] - b[3] / 2, b[0] - b[2] / 2, b[1] + b[3] / 2, b[0] + b[2] / 2};
  }
  // [y1, x1, y2, x2] with any diagonal pair of corners.
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

// Whether IoU(a, b) is strictly above `threshold`; degenerate boxes never suppress.
bool Overlaps(const Box& a, const Box& b, float threshold) {
  const float width = std::min(a.x_max, b.x_max) - std::max(a.x_min, b.x_min);
  const float height = std::min(a.y_max, b.y_max) - std::max(a.y_min, b.y_min);
  if (width <= 0 || height <= 0) return false;
  const float intersection = width * height;
  const float area_a = a.Area(), area_b = b.Area();
  const float union_area = area_a + area_b - intersection;
  if (area_a <= 0 || area_b <= 0 || union_area <= 0) return false;
  return intersection / union_area > threshold;
}

class NonMaxSuppression final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(center_point_box_, info.Attr<int64_t>("center_point_box", 0));
    if (center_point_box_ != 0 && center_point_box_ != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("center_point_box must be 0 or 1, got ", center_point_box_));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& boxes = *ctx.Input(0);
    const Tensor& scores = *ctx.Input(1);
    if (boxes.dtype() != DataType::kFloat || scores.dtype() != DataType::kFloat || boxes.rank() != 3 ||
        boxes.dim(2) != 4 || scores.rank() != 3 || scores.dim(0) != boxes.dim(0) ||
        scores.dim(2) != boxes.dim(1)) {
      return absl::InvalidArgumentError(absl::StrCat("boxes ", boxes.DebugString(), " and scores ",
                                                     scores.DebugString(),
                                                     " must be float [B,N,4] and [B,C,N]"));
    }
    const int64_t max_per_class = MaxPerClass(ctx.Input(2));
    const float iou_threshold = ScalarOr<float>(ctx.Input(3), 0.0f);
    // Without score_threshold no box is dropped for its score.
    const float score_threshold = ScalarOr<float>(ctx.Input(4), -std::numeric_limits<float>::infinity());
    const int64_t batches = boxes.dim(0), classes = scores.dim(1), count = boxes.dim(1);
    std::vector<int64_t> selected;  // flattened [batch, class, box] triples
    std::vector<Box> all(static_cast<size_t>(count));
    std::vector<int64_t> order;
    std::vector<int64_t> kept;
    for (int64_t b = 0; b < batches && max_per_class > 0; ++b) {
      for (int64_t i = 0; i < count; ++i)
        all[i] = ReadBox(boxes.data<float>() + (b * count + i) * 4, center_point_box_);
      for (int64_t c = 0; c < classes; ++c) {
        const float* s = scores.data<float>() + (b * classes + c) * count;
        order.clear();
        for (int64_t i = 0; i < count; ++i) {
          if (s[i] > score_threshold) order.push_back(i);
        }
        // Highest score first; ties keep the lower index first.
        std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return s[x] > s[y]; });
        kept.clear();
        for (int64_t i : order) {
          if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
          StopIfRunEnded(static_cast<int64_t>(kept.size()));  // n boxes kept of n take n^2 / 2 comparisons
          const bool suppressed = std::any_of(
              kept.begin(), kept.end(), [&](int64_t k) { return Overlaps(all[k], all[i], iou_threshold); });
          if (suppressed) continue;
          kept.push_back(i);
          selected.insert(selected.end(), {b, c, i});
        }
      }
    }
    Tensor& out = ctx.Output(0, DataType::kInt64, {static_cast<int64_t>(selected.size() / 3), 3});
    std::copy(selected.begin(), selected.end(), out.data<int64_t>());
    return absl::OkStatus();
  }

 private:
  // max_output_boxes_per_class, read as the int64 it is: exporters write INT64_MAX for "no limit", which as
  // a double rounds up to 2^63 and does not convert back.
  static int64_t MaxPerClass(const Tensor* t) {
    if (t == nullptr || t->NumElements() == 0) return 0;
    if (t->dtype() == DataType::kInt64) return t->data<int64_t>()[0];
    return static_cast<int64_t>(std::clamp(t->GetAsDouble(0), 0.0, 0x1p62));
  }

  template <typename T>
  static T ScalarOr(const Tensor* t, T fallback) {
    if (t == nullptr || t->NumElements() == 0) return fallback;
    return static_cast<T>(t->GetAsDouble(0));
  }

  int64_t center_point_box_ = 0;
};

// NonMaxSuppression-10 and -11 compute the same; -11 only clarified the documentation.
REGISTER_KERNEL(kOnnx, "NonMaxSuppression", 10, 10, kAnyType, NonMaxSuppression);
REGISTER_KERNEL(kOnnx, "NonMaxSuppression", 11, kLatest, kAnyType, NonMaxSuppression);

// The four bilinear taps of one sampling point (offsets into a channel plane and their weights).
struct BilinearTaps {
  int64_t offset[4];
  float weight[4];
};

// Taps of the point (y, x) in an H x W plane; points more than one pixel outside read nothing.
BilinearTaps TapsAt(float y, float x, int64_t height, int64_t width) {
  BilinearTaps t{};
  if (y < -1.0f || y > static_cast<float>(height) || x < -1.0f || x > static_cast<float>(width)) return t;
  y = std::max(y, 0.0f);
  x = std::max(x, 0.0f);
  int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x), y_high, x_high;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = static_cast<float>(y_low);
  } else {
    y_high = y_low + 1;
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    x = static_cast<float>(x_low);
  } else {
    x_high = x_low + 1;
  }
  const float ly = y - static_cast<float>(y_low), lx = x - static_cast<float>(x_low);
  const float hy = 1 - ly, hx = 1 - lx;
  t.offset[0] = y_low * width + x_low;
  t.offset[1] = y_low * width + x_high;
  t.offset[2] = y_high * width + x_low;
  t.offset[3] = y_high * width + x_high;
  t.weight[0] = hy * hx;
  t.weight[1] = hy * lx;
  t.weight[2] = ly * hx;
  t.weight[3] = ly * lx;
  return t;
}

class RoiAlign final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const std::string mode, info.Attr<std::string>("mode", "avg"));
    if (mode != "avg" && mode != "max") {
      return absl::InvalidArgumentError(absl::StrCat("mode must be avg or max, got \"", mode, "\""));
    }
    max_ = mode == "max";
    // RoiAlign-10 has no coordinate_transformation_mode and behaves as output_half_pixel.
    const std::string default_transform = info.opset() >= 16 ? "half_pixel" : "output_half_pixel";
    ASSIGN_OR_RETURN(const std::string transform,
                     info.Attr<std::string>("coordinate_transformation_mode", default_transform));
    if (transform != "half_pixel" && transform != "output_half_pixel") {
      return absl::InvalidArgumentError(absl::StrCat(
          "coordinate_transformation_mode must be half_pixel or output_half_pixel, got \"", transform, "\""));
    }
    half_pixel_ = transform == "half_pixel";
    ASSIGN_OR_RETURN(output_height_, info.Attr<int64_t>("output_height", 1));
    ASSIGN_OR_RETURN(output_width_, info.Attr<int64_t>("output_width", 1));
    ASSIGN_OR_RETURN(sampling_ratio_, info.Attr<int64_t>("sampling_ratio", 0));
    ASSIGN_OR_RETURN(spatial_scale_, info.Attr<float>("spatial_scale", 1.0f));
    if (output_height_ <= 0 || output_width_ <= 0 || sampling_ratio_ < 0) {
      return absl::InvalidArgumentError(absl::StrCat("output_height ", output_height_, " and output_width ",
                                                     output_width_, " must be positive, sampling_ratio ",
                                                     sampling_ratio_, " not negative"));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 3));
    const Tensor& x = *ctx.Input(0);
    const Tensor& rois = *ctx.Input(1);
    const Tensor& batch_indices = *ctx.Input(2);
    if (x.rank() != 4 || rois.rank() != 2 || rois.dim(1) != 4 || rois.dtype() != x.dtype() ||
        batch_indices.NumElements() != rois.dim(0)) {
      return absl::InvalidArgumentError(absl::StrCat("X ", x.DebugString(), ", rois ", rois.DebugString(),
                                                     " and batch_indices ", batch_indices.DebugString(),
                                                     " must be [N,C,H,W], [R,4] of X's type and [R]"));
    }
    std::vector<int64_t> batches = Int64Values(batch_indices);
    for (int64_t& b : batches) {
      ASSIGN_OR_RETURN(b, ResolveIndex(b, x.dim(0), false));
    }
    Tensor& y = ctx.Output(0, x.dtype(), {rois.dim(0), x.dim(1), output_height_, output_width_});
    absl::Status status = absl::InvalidArgumentError(absl::StrCat("X must be float, got ", x.DebugString()));
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        absl::StatusOr<std::vector<RoiGrid>> grids = GridsOf<T>(rois);
        status = grids.status();
        if (grids.ok()) Pool<T>(x, *grids, batches, y, ctx.pool());
      }
    });
    return status;
  }

 private:
  // Where one RoI's bins lie and how many samples each takes per axis.
  struct RoiGrid {
    float start_h, start_w, bin_h, bin_w;
    int64_t grid_h, grid_w;
    int64_t samples() const { return grid_h * grid_w; }
  };

  // Samples per bin along an axis: sampling_ratio, or ceil(extent / bins) as ONNX Runtime counts them. An
  // extent that is not positive (a reversed RoI) or not a number samples nothing; past 2^32 the count
  // stops growing, since the check of the whole RoI's taps refuses it anyway.
  int64_t SamplesAlong(float extent, int64_t bins) const {
    if (sampling_ratio_ > 0) return sampling_ratio_;
    const double n = std::ceil(static_cast<double>(extent) / static_cast<double>(bins));
    if (!(n > 0)) return 0;
    return n < 0x1p32 ? static_cast<int64_t>(n) : int64_t{1} << 32;
  }

  RoiGrid GridOf(const float* roi) const {
    const float offset = half_pixel_ ? 0.5f : 0.0f;
    const float start_w = roi[0] * spatial_scale_ - offset, start_h = roi[1] * spatial_scale_ - offset;
    float roi_w = roi[2] * spatial_scale_ - offset - start_w,
          roi_h = roi[3] * spatial_scale_ - offset - start_h;
    if (!half_pixel_) {  // the legacy mode forces RoIs at least one pixel wide
      roi_w = std::max(roi_w, 1.0f);
      roi_h = std::max(roi_h, 1.0f);
    }
    const int64_t grid_h = SamplesAlong(roi_h, output_height_), grid_w = SamplesAlong(roi_w, output_width_);
    return {start_h, start_w, roi_h / static_cast<float>(output_height_), roi_w / static_cast<float>(output_width_),
            grid_h, grid_w};
  }

  // Every RoI's grid, read once. Each RoI's taps (bins x samples of them) are listed before they are pooled:
  // RESOURCE_EXHAUSTED when one RoI's list would pass the tensor limits.
  template <typename T>
  absl::StatusOr<std::vector<RoiGrid>> GridsOf(const Tensor& rois) const {
    std::vector<RoiGrid> grids;
    grids.reserve(static_cast<size_t>(rois.dim(0)));
    for (int64_t r = 0; r < rois.dim(0); ++r) {
      float roi[4];
      for (int k = 0; k < 4; ++k) roi[k] = static_cast<float>(ToCompute(rois.data<T>()[r * 4 + k]));
      const RoiGrid& grid = grids.emplace_back(GridOf(roi));
      absl::StatusOr<int64_t> taps = CheckedElementCount({output_height_, output_width_, grid.grid_h, grid.grid_w});
      if (taps.ok()) taps = CheckedTapBytes(*taps);
      if (!taps.ok()) {
        return absl::ResourceExhaustedError(absl::StrCat("RoI ", r, " [", absl::StrJoin(roi, roi + 4, ", "),
                                                         "] takes ", grid.grid_h, " x ", grid.grid_w,
                                                         " samples per bin: ", taps.status().message()));
      }
    }
    return grids;
  }

  // The bytes of a list of `taps`, or RESOURCE_EXHAUSTED past a tensor's byte limit (a tap is 48 bytes).
  static absl::StatusOr<int64_t> CheckedTapBytes(int64_t taps) {
    const int64_t max_bytes = GetSizeLimits().max_bytes;
    constexpr int64_t kTapBytes = sizeof(BilinearTaps);
    if (taps > max_bytes / kTapBytes) {
      return absl::ResourceExhaustedError(absl::StrCat(taps, " taps of ", kTapBytes, " bytes pass the limit of ",
                                                       max_bytes, " bytes"));
    }
    return taps * kTapBytes;
  }

  // The sampling taps of every output bin of one RoI, bin-major: grid_h * grid_w taps per bin, in `storage`:
  // a tensor, charged to the run, since a RoI of a request's coordinates may have 2^28 of them (16 GiB).
  const BilinearTaps* RoiTaps(const RoiGrid& grid, int64_t height, int64_t width, Tensor& storage) const {
    const int64_t count = output_height_ * output_width_ * grid.samples();
    static_assert(sizeof(BilinearTaps) % sizeof(int64_t) == 0 && alignof(BilinearTaps) <= alignof(int64_t));
    storage = Tensor(DataType::kInt64, {count * static_cast<int64_t>(sizeof(BilinearTaps) / sizeof(int64_t))});
    auto* taps = reinterpret_cast<BilinearTaps*>(storage.data<int64_t>());
    int64_t next = 0;
    for (int64_t ph = 0; ph < output_height_; ++ph) {
      for (int64_t pw = 0; pw < output_width_; ++pw) {
        for (int64_t iy = 0; iy < grid.grid_h; ++iy) {
          const float yy = grid.start_h + ph * grid.bin_h + (iy + 0.5f) * grid.bin_h / static_cast<float>(grid.grid_h);
          for (int64_t ix = 0; ix < grid.grid_w; ++ix) {
            const float xx =
                grid.start_w + pw * grid.bin_w + (ix + 0.5f) * grid.bin_w / static_cast<float>(grid.grid_w);
            std::construct_at(taps + next++, TapsAt(yy, xx, height, width));
          }
        }
      }
    }
    return taps;
  }

  template <typename T>
  void Pool(const Tensor& x, const std::vector<RoiGrid>& grids, const std::vector<int64_t>& batches, Tensor& y,
            ThreadPool& pool) const {
    const int64_t channels = x.dim(1), height = x.dim(2), width = x.dim(3);
    const int64_t bins = output_height_ * output_width_;
    pool.ParallelFor(static_cast<int64_t>(grids.size()), 1, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t samples = grids[r].samples();
        Tensor storage;
        const BilinearTaps* taps = RoiTaps(grids[r], height, width, storage);
        for (int64_t c = 0; c < channels; ++c) {
          StopIfRunEnded(WorkOf({bins, samples, 4}));  // one RoI's taps may number 2^32, pooled per channel
          const T* plane = x.data<T>() + (batches[r] * channels + c) * height * width;
          T* out = y.data<T>() + (r * channels + c) * bins;
          for (int64_t bin = 0; bin < bins; ++bin) {
            out[bin] =
                FromCompute<T>(static_cast<ComputeType<T>>(PoolBin(plane, taps + bin * samples, samples)));
          }
        }
      }
    });
  }

  // avg: the mean of the bilinear samples; max: the largest weighted tap over all samples (ONNX Runtime's
  // definition, which the node tests follow).
  template <typename T>
  float PoolBin(const T* plane, const BilinearTaps* taps, int64_t samples) const {
    if (samples == 0) return 0.0f;
    float acc = max_ ? -std::numeric_limits<float>::infinity() : 0.0f;
    for (int64_t s = 0; s < samples; ++s) {
      const BilinearTaps& t = taps[s];
      if (max_) {
        for (int k = 0; k < 4; ++k)
          acc = std::max(acc, t.weight[k] * static_cast<float>(ToCompute(plane[t.offset[k]])));
      } else {
        for (int k = 0; k < 4; ++k) acc += t.weight[k] * static_cast<float>(ToCompute(plane[t.offset[k]]));
      }
    }
    return max_ ? acc : acc / static_cast<float>(samples);
  }

  bool max_ = false, half_pixel_ = true;
  int64_t output_height_ = 1, output_width_ = 1, sampling_ratio_ = 0;
  float spatial_scale_ = 1.0f;
};

// RoiAlign-10 samples without the half-pixel shift; -16 adds coordinate_transformation_mode (default
// half_pixel); -22 widens the types to bfloat16.
REGISTER_KERNEL(kOnnx, "RoiAlign", 10, 15, kFloatTypes, RoiAlign);
REGISTER_KERNEL(kOnnx, "RoiAlign", 16, 21, kFloatTypes, RoiAlign);
REGISTER_KERNEL(kOnnx, "RoiAlign", 22, kLatest, kFloatTypes, RoiAlign);

// ---- MaxRoiPool ------------------------------------------------------------------------------------------

constexpr DataType kMaxRoiPool1Types[] = {DataType::kFloat, DataType::kDouble, DataType::kFloat16};

// RoI coordinates (scaled) beyond this many pixels are errors: no image is that large, and every bin bound
// stays exact in double and fits in int64 before it is clamped to the image.
constexpr double kMaxRoiCoordinate = double(int64_t{1} << 40);

// One RoI on the feature map: its image, its top-left pixel and the (fractional) size of its bins.
struct RoiBins {
  int64_t batch = 0, start_h = 0, start_w = 0;
  double bin_h = 0, bin_w = 0;
};

// Pixel bounds [begin, end) of bin `index` of size `bin` along an axis of `size` pixels from `start`.
std::pair<int64_t, int64_t> BinBounds(int64_t index, double bin, int64_t start, int64_t size) {
  const auto clamp = [&](double v) { return static_cast<int64_t>(std::clamp<double>(v + start, 0, size)); };
  return {clamp(std::floor(index * bin)), clamp(std::ceil((index + 1) * bin))};
}

class MaxRoiPool final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(pooled_, info.Attr<std::vector<int64_t>>("pooled_shape"));
    if (pooled_.size() != 2 || pooled_[0] <= 0 || pooled_[1] <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("pooled_shape [", absl::StrJoin(pooled_, ","),
                                                     "]: expected two positive dims (height, width)"));
    }
    ASSIGN_OR_RETURN(spatial_scale_, info.Attr<float>("spatial_scale", 1.0f));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& x = *ctx.Input(0);
    const Tensor& rois = *ctx.Input(1);
    if (x.rank() != 4 || rois.rank() != 2 || rois.dim(1) != 5 || rois.dtype() != x.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat("X ", x.DebugString(), " and rois ", rois.DebugString(),
                                                     ": expected [N,C,H,W] and [num_rois,5] of X's type"));
    }
    std::vector<RoiBins> bins(static_cast<size_t>(rois.dim(0)));
    for (int64_t r = 0; r < rois.dim(0); ++r) {
      ASSIGN_OR_RETURN(bins[r], ReadRoi(rois, r, x.dim(0)));
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx.CheckedOutput(0, x.dtype(), {rois.dim(0), x.dim(1), pooled_[0], pooled_[1]}));
    return DispatchFloating(x, "X", [&](auto tag) { Pool<decltype(tag)>(x, bins, *y, ctx.pool()); });
  }

 private:
  // Row r of rois, [batch_id, x1, y1, x2, y2]: corners scaled and rounded to pixels, at least one pixel wide.
  absl::StatusOr<RoiBins> ReadRoi(const Tensor& rois, int64_t r, int64_t batch_size) const {
    double v[5];
    for (int k = 0; k < 5; ++k) v[k] = rois.GetAsDouble(r * 5 + k);
    if (!(v[0] >= 0 && v[0] < static_cast<double>(batch_size))) {
      return absl::InvalidArgumentError(absl::StrCat("rois row ", r, ": batch_id ", v[0], " is not in [0, ",
                                                     batch_size, ")"));
    }
    int64_t corner[4];
    for (int k = 0; k < 4; ++k) {
      // Scaled in float, as ONNX Runtime does, then rounded half away from zero.
      const double scaled = std::round(static_cast<double>(static_cast<float>(v[k + 1]) * spatial_scale_));
      if (!(std::abs(scaled) <= kMaxRoiCoordinate)) {
        return absl::InvalidArgumentError(absl::StrCat("rois row ", r, ": coordinate ", v[k + 1], " times spatial_scale ",
                                                       spatial_scale_, " is not a finite pixel position"));
      }
      corner[k] = static_cast<int64_t>(scaled);
    }
    const int64_t height = std::max<int64_t>(corner[3] - corner[1] + 1, 1);
    const int64_t width = std::max<int64_t>(corner[2] - corner[0] + 1, 1);
    return RoiBins{.batch = static_cast<int64_t>(v[0]),
                   .start_h = corner[1],
                   .start_w = corner[0],
                   .bin_h = static_cast<double>(height) / static_cast<double>(pooled_[0]),
                   .bin_w = static_cast<double>(width) / static_cast<double>(pooled_[1])};
  }

  // Each output is the largest pixel of its bin, clamped to the image; a bin left empty by the clamp is 0.
  template <typename T>
  void Pool(const Tensor& x, const std::vector<RoiBins>& rois, Tensor& y, ThreadPool& pool) const {
    const int64_t channels = x.dim(1), height = x.dim(2), width = x.dim(3);
    const int64_t pooled_h = pooled_[0], pooled_w = pooled_[1];
    ForEachRow(pool, static_cast<int64_t>(rois.size()) * channels, pooled_h * pooled_w, [&](int64_t row) {
      const RoiBins& roi = rois[row / channels];
      const T* plane = x.data<T>() + (roi.batch * channels + row % channels) * height * width;
      T* out = y.data<T>() + row * pooled_h * pooled_w;
      for (int64_t ph = 0; ph < pooled_h; ++ph) {
        const auto [h_begin, h_end] = BinBounds(ph, roi.bin_h, roi.start_h, height);
        int64_t row_taps = pooled_w;  // RoIs from the request, each up to the image, scanned once per channel
        for (int64_t pw = 0; pw < pooled_w; ++pw) {
          const auto [w_begin, w_end] = BinBounds(pw, roi.bin_w, roi.start_w, width);
          ComputeType<T> best = 0;
          if (h_begin < h_end && w_begin < w_end) {
            best = -std::numeric_limits<ComputeType<T>>::infinity();
            row_taps += (h_end - h_begin) * (w_end - w_begin);
          }
          for (int64_t h = h_begin; h < h_end; ++h) {
            for (int64_t w = w_begin; w < w_end; ++w) best = std::max(best, ToCompute(plane[h * width + w]));
          }
          out[ph * pooled_w + pw] = FromCompute<T>(best);
        }
        StopIfRunEnded(row_taps);
      }
    });
  }

  std::vector<int64_t> pooled_;
  float spatial_scale_ = 1.0f;
};

// MaxRoiPool-22 adds bfloat16.
REGISTER_KERNEL(kOnnx, "MaxRoiPool", 1, 21, kMaxRoiPool1Types, MaxRoiPool);
REGISTER_KERNEL(kOnnx, "MaxRoiPool", 22, kLatest, kFloatTypes, MaxRoiPool);

}  // namespace
}  // namespace onnxserve

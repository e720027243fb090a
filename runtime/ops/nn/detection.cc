// Object-detection post-processing: NonMaxSuppression (greedy per batch and class) and RoiAlign
// (bilinear pooling of regions of interest). Both follow ONNX Runtime's semantics, which the spec's tests
// were generated from.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

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
    const int64_t max_per_class = ScalarOr<int64_t>(ctx.Input(2), 0);
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
    bool supported = false;
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        supported = true;
        Pool<T>(x, rois, batches, y, ctx.pool());
      }
    });
    if (!supported) return absl::InvalidArgumentError(absl::StrCat("X must be float, got ", x.DebugString()));
    return absl::OkStatus();
  }

 private:
  // The sampling taps of every output bin of one RoI, bin-major: grid_h * grid_w taps per bin.
  std::vector<BilinearTaps> RoiTaps(const float* roi, int64_t height, int64_t width, int64_t* samples) const {
    const float offset = half_pixel_ ? 0.5f : 0.0f;
    const float start_w = roi[0] * spatial_scale_ - offset, start_h = roi[1] * spatial_scale_ - offset;
    float roi_w = roi[2] * spatial_scale_ - offset - start_w,
          roi_h = roi[3] * spatial_scale_ - offset - start_h;
    if (!half_pixel_) {  // the legacy mode forces RoIs at least one pixel wide
      roi_w = std::max(roi_w, 1.0f);
      roi_h = std::max(roi_h, 1.0f);
    }
    const float bin_h = roi_h / static_cast<float>(output_height_),
                bin_w = roi_w / static_cast<float>(output_width_);
    const int64_t grid_h =
        sampling_ratio_ > 0 ? sampling_ratio_ : static_cast<int64_t>(std::ceil(roi_h / output_height_));
    const int64_t grid_w =
        sampling_ratio_ > 0 ? sampling_ratio_ : static_cast<int64_t>(std::ceil(roi_w / output_width_));
    *samples = grid_h * grid_w;
    std::vector<BilinearTaps> taps;
    taps.reserve(static_cast<size_t>(output_height_ * output_width_ * grid_h * grid_w));
    for (int64_t ph = 0; ph < output_height_; ++ph) {
      for (int64_t pw = 0; pw < output_width_; ++pw) {
        for (int64_t iy = 0; iy < grid_h; ++iy) {
          const float yy = start_h + ph * bin_h + (iy + 0.5f) * bin_h / static_cast<float>(grid_h);
          for (int64_t ix = 0; ix < grid_w; ++ix) {
            const float xx = start_w + pw * bin_w + (ix + 0.5f) * bin_w / static_cast<float>(grid_w);
            taps.push_back(TapsAt(yy, xx, height, width));
          }
        }
      }
    }
    return taps;
  }

  template <typename T>
  void Pool(const Tensor& x, const Tensor& rois, const std::vector<int64_t>& batches, Tensor& y,
            ThreadPool& pool) const {
    const int64_t channels = x.dim(1), height = x.dim(2), width = x.dim(3);
    const int64_t bins = output_height_ * output_width_;
    pool.ParallelFor(rois.dim(0), 1, [&](int64_t begin, int64_t end) {
      float roi[4];
      for (int64_t r = begin; r < end; ++r) {
        for (int k = 0; k < 4; ++k) roi[k] = static_cast<float>(ToCompute(rois.data<T>()[r * 4 + k]));
        int64_t samples = 0;
        const std::vector<BilinearTaps> taps = RoiTaps(roi, height, width, &samples);
        for (int64_t c = 0; c < channels; ++c) {
          const T* plane = x.data<T>() + (batches[r] * channels + c) * height * width;
          T* out = y.data<T>() + (r * channels + c) * bins;
          for (int64_t bin = 0; bin < bins; ++bin) {
            out[bin] =
                FromCompute<T>(static_cast<ComputeType<T>>(PoolBin(plane, &taps[bin * samples], samples)));
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

}  // namespace
}  // namespace onnxserve

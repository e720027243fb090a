// One call's geometry of a 2-D convolution, as the math kernels that take one take it (oneDNN's NCHW and
// NHWC paths, Winograd3x3): X holds [batch] images of in_h x in_w per channel, Y [batch] maps of out_h x
// out_w. The pads are the rows and columns of zeros the windows read before and after the image.
#pragma once

#include <cstdint>

namespace onnxserve {

struct ConvShape2D {
  int64_t batch = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
};

// Whether `a` and `b` have the same image geometry, whatever their batch: what a per-image plan is for.
inline bool SameImageGeometry(const ConvShape2D& a, const ConvShape2D& b) {
  return a.in_h == b.in_h && a.in_w == b.in_w && a.out_h == b.out_h && a.out_w == b.out_w &&
         a.stride_h == b.stride_h && a.stride_w == b.stride_w && a.dilation_h == b.dilation_h &&
         a.dilation_w == b.dilation_w && a.pad_top == b.pad_top && a.pad_left == b.pad_left &&
         a.pad_bottom == b.pad_bottom && a.pad_right == b.pad_right;
}

// The floats of one image's X (`channels` planes of in_h x in_w) and Y (`maps` planes of out_h x out_w), which
// the kernels weigh against their weights to choose how to split an image. In double: a model's channels
// times a request's image size need not fit in int64.
struct ImageFloats {
  double x = 0, y = 0;
};
inline ImageFloats FloatsOfImage(const ConvShape2D& s, int64_t channels, int64_t maps) {
  return {.x = static_cast<double>(channels) * static_cast<double>(s.in_h) * static_cast<double>(s.in_w),
          .y = static_cast<double>(maps) * static_cast<double>(s.out_h) * static_cast<double>(s.out_w)};
}

}  // namespace onnxserve

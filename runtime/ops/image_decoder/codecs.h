// The image codecs ImageDecoder dispatches to, one a file: JPEG (libjpeg-turbo), PNG (libpng), TIFF
// (libtiff), WebP (libwebp), JPEG 2000 (OpenJPEG), and BMP and PNM parsed here.
//
// Every decoder takes untrusted bytes. It reads the header, sizes its output (and any buffer the library
// allocates per pixel) with NewImage / CheckImageBuffer against the process's size limits BEFORE anything
// of that size is allocated, and reports a corrupt, truncated or unsupported stream as a Status naming the
// format: INVALID_ARGUMENT for bad data, RESOURCE_EXHAUSTED for an image past the limits, UNIMPLEMENTED for
// a valid feature we do not decode. No library error handler aborts, prints or throws.
#pragma once

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/core/status_macros.h"
#include "runtime/core/tensor.h"

namespace onnxserve::image {

using Bytes = absl::Span<const uint8_t>;

// Each returns uint8 [height, width, 3] in RGB order.
absl::StatusOr<Tensor> DecodeJpeg(Bytes data);
absl::StatusOr<Tensor> DecodePng(Bytes data);
absl::StatusOr<Tensor> DecodeTiff(Bytes data);
absl::StatusOr<Tensor> DecodeWebp(Bytes data);
absl::StatusOr<Tensor> DecodeJpeg2000(Bytes data);
absl::StatusOr<Tensor> DecodeBmp(Bytes data);
absl::StatusOr<Tensor> DecodePnm(Bytes data);

// A uint8 [height, width, channels] tensor for a decoded image, checked first: INVALID_ARGUMENT for a
// dim below 1, RESOURCE_EXHAUSTED past the size limits. `format` names the codec in the error.
absl::StatusOr<Tensor> NewImage(absl::string_view format, int64_t height, int64_t width, int64_t channels);

// OK when a buffer the codec library allocates itself, `bytes_per_pixel` for each of height * width
// pixels, fits the size limits; errors as NewImage.
absl::Status CheckImageBuffer(absl::string_view format, int64_t height, int64_t width, int64_t bytes_per_pixel);

// The encoded stream as the libraries that pull bytes through callbacks (libtiff, OpenJPEG) read it: a
// cursor, and the first error message the library reported.
struct StreamCursor {
  Bytes data;
  uint64_t offset = 0;
  std::string error;

  // Copies up to n bytes from the cursor on and moves past them; the count copied (0 at or past the end).
  size_t Read(void* buffer, size_t n);
  // Keeps the first error only: later ones tend to be consequences of it.
  void Error(std::string message);
};

// INVALID_ARGUMENT "<format> stream: <what>".
absl::Status CorruptImage(absl::string_view format, absl::string_view what);

}  // namespace onnxserve::image

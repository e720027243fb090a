// PNG through libpng's simplified API: it keeps its setjmp/longjmp inside libpng's own frames
// (png_safe_execute) and reports errors in image.message, so no jump crosses ours. Every PNG (gray,
// palette, 16-bit, with alpha) is converted to 8-bit RGB; alpha is composited onto black.
#include <png.h>

#include <limits>

#include "absl/strings/str_cat.h"
#include "runtime/ops/image_decoder/codecs.h"

namespace onnxserve::image {
namespace {

constexpr absl::string_view kFormat = "PNG";

// png_image_free releases what begin_read allocated when finish_read did not run (or failed).
struct PngImageGuard {
  png_image* image;
  ~PngImageGuard() { png_image_free(image); }
};

}  // namespace

absl::StatusOr<Tensor> DecodePng(Bytes data) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  PngImageGuard guard{&png};
  if (!png_image_begin_read_from_memory(&png, data.data(), data.size())) return CorruptImage(kFormat, png.message);
  png.format = PNG_FORMAT_RGB;
  ASSIGN_OR_RETURN(Tensor image, NewImage(kFormat, png.height, png.width, 3));
  // libpng takes the row stride as a 32-bit int; the size limits allow a single row longer than that.
  const int64_t stride = int64_t{png.width} * 3;
  if (stride > std::numeric_limits<png_int_32>::max()) {
    return absl::ResourceExhaustedError(absl::StrCat("PNG image row of ", png.width, " pixels is too wide"));
  }
  // Without a background libpng would composite alpha onto the buffer's (uninitialized) contents.
  const png_color black{0, 0, 0};
  if (!png_image_finish_read(&png, &black, image.data<uint8_t>(), static_cast<png_int_32>(stride), nullptr)) {
    return CorruptImage(kFormat, png.message);
  }
  return image;
}

}  // namespace onnxserve::image

// WebP through libwebp's one-call decoder, into our buffer once the header's dimensions are checked.
#include <webp/decode.h>

#include "runtime/ops/image_decoder/codecs.h"

namespace onnxserve::image {

absl::StatusOr<Tensor> DecodeWebp(Bytes data) {
  constexpr absl::string_view kFormat = "WebP";
  int width = 0, height = 0;
  if (!WebPGetInfo(data.data(), data.size(), &width, &height)) return CorruptImage(kFormat, "bad header");
  ASSIGN_OR_RETURN(Tensor image, NewImage(kFormat, height, width, 3));
  const int stride = width * 3;  // WebP dims are at most 16383
  if (WebPDecodeRGBInto(data.data(), data.size(), image.data<uint8_t>(), image.ByteSize(), stride) == nullptr) {
    return CorruptImage(kFormat, "the bitstream does not decode");
  }
  return image;
}

}  // namespace onnxserve::image

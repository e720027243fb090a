// BMP, parsed here: the BITMAPCOREHEADER (OS/2, 12 bytes) and BITMAPINFOHEADER and its successors (40 to
// 124 bytes); 1-, 4- and 8-bit palettes, 16-, 24- and 32-bit pixels, uncompressed or with BI_BITFIELDS
// masks. RLE compression is UNIMPLEMENTED. Every offset and size read from the file is checked against the
// stream's length before it is read.
#include <algorithm>
#include <array>
#include <bit>

#include "absl/strings/str_cat.h"
#include "runtime/core/checked_size.h"
#include "runtime/ops/image_decoder/codecs.h"

namespace onnxserve::image {
namespace {

constexpr absl::string_view kFormat = "BMP";
constexpr int64_t kFileHeaderSize = 14;
enum Compression : uint32_t { kRgb = 0, kBitfields = 3 };

uint32_t U16(Bytes d, size_t at) { return d[at] | (uint32_t{d[at + 1]} << 8); }
uint32_t U32(Bytes d, size_t at) { return U16(d, at) | (U16(d, at + 2) << 16); }

// One color channel of a packed pixel: its mask's position and width, scaled to 8 bits.
struct Channel {
  uint32_t mask = 0;
  int shift = 0;
  uint32_t max = 0;
  explicit Channel(uint32_t m) : mask(m), shift(m ? std::countr_zero(m) : 0), max(m ? (m >> shift) : 0) {}
  uint8_t Of(uint32_t pixel) const {
    if (max == 0) return 0;
    return static_cast<uint8_t>((uint64_t{(pixel & mask) >> shift} * 255 + max / 2) / max);
  }
};

struct BmpHeader {
  int64_t width = 0, height = 0;  // height < 0: rows stored top-down
  uint32_t bits = 0, compression = kRgb, colors = 0;
  int64_t palette_offset = 0, palette_entry = 4, pixel_offset = 0;
  std::array<uint32_t, 3> masks{};
};

absl::StatusOr<BmpHeader> ReadHeader(Bytes d) {
  if (d.size() < kFileHeaderSize + 12) return CorruptImage(kFormat, "truncated header");
  BmpHeader h;
  h.pixel_offset = U32(d, 10);
  const int64_t info_size = U32(d, 14);
  if (info_size == 12) {
    h.width = U16(d, 18);
    h.height = U16(d, 20);
    h.bits = U16(d, 24);
    h.palette_entry = 3;
  } else if (info_size >= 40 && info_size <= 124 && static_cast<int64_t>(d.size()) >= kFileHeaderSize + 40) {
    h.width = static_cast<int32_t>(U32(d, 18));
    h.height = static_cast<int32_t>(U32(d, 22));
    h.bits = U16(d, 28);
    h.compression = U32(d, 30);
    h.colors = U32(d, 46);
    if (h.compression == kBitfields) {
      // The masks follow a 40-byte header, or are part of a longer one.
      const int64_t at = kFileHeaderSize + 40;
      if (static_cast<int64_t>(d.size()) < at + 12) return CorruptImage(kFormat, "truncated bit field masks");
      h.masks = {U32(d, at), U32(d, at + 4), U32(d, at + 8)};
    }
  } else {
    return CorruptImage(kFormat, absl::StrCat("info header of ", info_size, " bytes"));
  }
  h.palette_offset = kFileHeaderSize + info_size;
  if (h.compression != kRgb && h.compression != kBitfields) {
    return absl::UnimplementedError(absl::StrCat("BMP compression ", h.compression, " (RLE or embedded) is not supported"));
  }
  return h;
}

absl::Status CheckPixelFormat(BmpHeader& h) {
  switch (h.bits) {
    case 1: case 4: case 8:
      if (h.compression != kRgb) return CorruptImage(kFormat, "bit field masks on a palette image");
      return absl::OkStatus();
    case 16:
      if (h.compression == kRgb) h.masks = {0x7C00, 0x03E0, 0x001F};
      return absl::OkStatus();
    case 24:
      if (h.compression != kRgb) return CorruptImage(kFormat, "bit field masks on a 24-bit image");
      return absl::OkStatus();
    case 32:
      if (h.compression == kRgb) h.masks = {0xFF0000, 0xFF00, 0xFF};
      return absl::OkStatus();
    default:
      return CorruptImage(kFormat, absl::StrCat(h.bits, " bits per pixel"));
  }
}

// The palette, padded with black to 256 entries so that any index reads a color.
absl::StatusOr<std::array<std::array<uint8_t, 3>, 256>> ReadPalette(Bytes d, const BmpHeader& h) {
  std::array<std::array<uint8_t, 3>, 256> palette{};
  if (h.bits > 8) return palette;
  const int64_t entries = std::min<int64_t>(h.colors == 0 ? int64_t{1} << h.bits : h.colors, 256);
  if (h.palette_offset + entries * h.palette_entry > std::min<int64_t>(h.pixel_offset, d.size())) {
    return CorruptImage(kFormat, "palette overlaps the pixels or the end of the stream");
  }
  for (int64_t i = 0; i < entries; ++i) {
    const uint8_t* e = d.data() + h.palette_offset + i * h.palette_entry;
    palette[i] = {e[2], e[1], e[0]};  // stored blue, green, red
  }
  return palette;
}

}  // namespace

absl::StatusOr<Tensor> DecodeBmp(Bytes d) {
  ASSIGN_OR_RETURN(BmpHeader h, ReadHeader(d));
  RETURN_IF_ERROR(CheckPixelFormat(h));
  const int64_t height = h.height < 0 ? -h.height : h.height;
  ASSIGN_OR_RETURN(Tensor image, NewImage(kFormat, height, h.width, 3));
  // Rows are padded to 4 bytes. Within the size limits none of these products overflows.
  const int64_t row_bytes = (h.width * h.bits + 7) / 8, stride = (h.width * h.bits + 31) / 32 * 4;
  if (h.pixel_offset < h.palette_offset ||
      h.pixel_offset + stride * (height - 1) + row_bytes > static_cast<int64_t>(d.size())) {
    return CorruptImage(kFormat, absl::StrCat(h.width, "x", height, " pixels at offset ", h.pixel_offset,
                                              " do not fit in ", d.size(), " bytes"));
  }
  ASSIGN_OR_RETURN(const auto palette, ReadPalette(d, h));
  const Channel red(h.masks[0]), green(h.masks[1]), blue(h.masks[2]);
  uint8_t* out = image.data<uint8_t>();
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* row = d.data() + h.pixel_offset + (h.height < 0 ? y : height - 1 - y) * stride;
    uint8_t* px = out + y * h.width * 3;
    for (int64_t x = 0; x < h.width; ++x, px += 3) {
      if (h.bits <= 8) {
        const int per_byte = 8 / static_cast<int>(h.bits);
        const int shift = 8 - static_cast<int>(h.bits) * (static_cast<int>(x % per_byte) + 1);
        const uint8_t index = static_cast<uint8_t>((row[x / per_byte] >> shift) & ((1u << h.bits) - 1));
        std::copy(palette[index].begin(), palette[index].end(), px);
      } else if (h.bits == 24) {
        const uint8_t* p = row + x * 3;
        px[0] = p[2], px[1] = p[1], px[2] = p[0];
      } else {
        const uint32_t pixel = h.bits == 16 ? U16(d, row - d.data() + x * 2) : U32(d, row - d.data() + x * 4);
        px[0] = red.Of(pixel), px[1] = green.Of(pixel), px[2] = blue.Of(pixel);
      }
    }
  }
  return image;
}

}  // namespace onnxserve::image

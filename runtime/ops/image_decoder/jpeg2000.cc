// JPEG 2000 (a JP2 file or a bare J2K codestream) through OpenJPEG, read from memory with stream
// callbacks. OpenJPEG reports errors through per-codec handlers and return values; it never jumps or
// aborts. The header is read first and the image sized against the limits before opj_decode allocates
// its planes (4 bytes a sample). One or two components are gray (the second, alpha, is dropped); three or
// more are RGB. Components subsampled (dx, dy > 1) are sampled at the nearest pixel; samples of any
// precision are scaled to 8 bits.
#include <openjpeg.h>

#include <algorithm>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/core/memory_budget.h"
#include "runtime/ops/image_decoder/codecs.h"

namespace onnxserve::image {
namespace {

constexpr absl::string_view kFormat = "JPEG 2000";
constexpr uint32_t kMaxComponents = 4;

OPJ_SIZE_T Read(void* buffer, OPJ_SIZE_T size, void* user) {
  const size_t n = static_cast<StreamCursor*>(user)->Read(buffer, size);
  return n > 0 ? n : static_cast<OPJ_SIZE_T>(-1);  // -1: the end of the stream, as OpenJPEG expects it
}

OPJ_OFF_T Skip(OPJ_OFF_T count, void* user) {
  auto* s = static_cast<StreamCursor*>(user);
  const auto size = static_cast<OPJ_OFF_T>(s->data.size()), at = static_cast<OPJ_OFF_T>(s->offset);
  const OPJ_OFF_T target = std::clamp<OPJ_OFF_T>(count, -at, std::max<OPJ_OFF_T>(size - at, 0)) + at;
  const OPJ_OFF_T skipped = target - at;
  s->offset = static_cast<uint64_t>(target);
  return skipped;
}

OPJ_BOOL Seek(OPJ_OFF_T offset, void* user) {
  auto* s = static_cast<StreamCursor*>(user);
  if (offset < 0 || offset > static_cast<OPJ_OFF_T>(s->data.size())) return OPJ_FALSE;
  s->offset = static_cast<uint64_t>(offset);
  return OPJ_TRUE;
}

void OnError(const char* message, void* user) { static_cast<StreamCursor*>(user)->Error(message); }

void Ignore(const char*, void*) {}

struct StreamCloser {
  void operator()(opj_stream_t* s) const { opj_stream_destroy(s); }
};
struct CodecCloser {
  void operator()(opj_codec_t* c) const { opj_destroy_codec(c); }
};
struct ImageCloser {
  void operator()(opj_image_t* i) const { opj_image_destroy(i); }
};

absl::Status Corrupt(const StreamCursor& source, absl::string_view fallback) {
  return CorruptImage(kFormat, source.error.empty() ? fallback : absl::string_view(source.error));
}

// A sample of precision `prec` (signed or not) scaled to 0..255.
uint8_t To8Bit(int32_t v, const opj_image_comp_t& comp) {
  const int prec = static_cast<int>(comp.prec);
  int64_t u = v;
  if (comp.sgnd) u += int64_t{1} << (prec - 1);
  const int64_t max = (int64_t{1} << prec) - 1;
  u = std::clamp<int64_t>(u, 0, max);
  return static_cast<uint8_t>(prec == 8 ? u : (u * 255 + max / 2) / max);
}

// The components' planes to RGB; each must be non-null and cover the image at its subsampling.
absl::StatusOr<Tensor> ToRgb(const opj_image_t& image, int64_t height, int64_t width, const StreamCursor& source) {
  const int channels = image.numcomps >= 3 ? 3 : 1;
  for (int c = 0; c < channels; ++c) {
    const opj_image_comp_t& comp = image.comps[c];
    if (comp.data == nullptr || comp.w == 0 || comp.h == 0 || comp.dx == 0 || comp.dy == 0 || comp.prec < 1 ||
        comp.prec > 31) {
      return Corrupt(source, absl::StrCat("component ", c, " has no samples or a bad precision"));
    }
  }
  ASSIGN_OR_RETURN(Tensor rgb, NewImage(kFormat, height, width, 3));
  uint8_t* out = rgb.data<uint8_t>();
  for (int64_t y = 0; y < height; ++y) {
    for (int64_t x = 0; x < width; ++x) {
      for (int c = 0; c < 3; ++c) {
        const opj_image_comp_t& comp = image.comps[channels == 3 ? c : 0];
        const int64_t cy = std::min<int64_t>(y / comp.dy, comp.h - 1), cx = std::min<int64_t>(x / comp.dx, comp.w - 1);
        out[(y * width + x) * 3 + c] = To8Bit(comp.data[cy * comp.w + cx], comp);
      }
    }
  }
  return rgb;
}

}  // namespace

absl::StatusOr<Tensor> DecodeJpeg2000(Bytes data) {
  StreamCursor source;
  source.data = data;
  const bool jp2 = data.size() >= 4 && data[0] == 0 && data[1] == 0;  // a JP2 box, not the FF4F codestream marker
  std::unique_ptr<opj_codec_t, CodecCloser> codec(opj_create_decompress(jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K));
  std::unique_ptr<opj_stream_t, StreamCloser> stream(opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE));
  if (codec == nullptr || stream == nullptr) return absl::ResourceExhaustedError("JPEG 2000: cannot create the decoder");
  opj_set_error_handler(codec.get(), OnError, &source);
  opj_set_warning_handler(codec.get(), Ignore, nullptr);
  opj_set_info_handler(codec.get(), Ignore, nullptr);
  opj_stream_set_user_data(stream.get(), &source, nullptr);
  opj_stream_set_user_data_length(stream.get(), data.size());
  opj_stream_set_read_function(stream.get(), Read);
  opj_stream_set_skip_function(stream.get(), Skip);
  opj_stream_set_seek_function(stream.get(), Seek);
  opj_dparameters_t parameters;
  opj_set_default_decoder_parameters(&parameters);
  if (!opj_setup_decoder(codec.get(), &parameters)) return Corrupt(source, "decoder setup failed");
  opj_image_t* raw_image = nullptr;
  const OPJ_BOOL header_ok = opj_read_header(stream.get(), codec.get(), &raw_image);
  std::unique_ptr<opj_image_t, ImageCloser> image(raw_image);
  if (!header_ok || image == nullptr) return Corrupt(source, "cannot read the header");
  const int64_t width = int64_t{image->x1} - image->x0, height = int64_t{image->y1} - image->y0;
  if (image->numcomps == 0) return Corrupt(source, "no components");
  // Gray, gray and alpha, RGB, RGBA: a stream of more components (a few bytes declare thousands, of empty
  // packets) would have OpenJPEG decode every one of them, 4 bytes a sample, for planes never read.
  if (image->numcomps > kMaxComponents) {
    return absl::InvalidArgumentError(absl::StrCat("JPEG 2000 image of ", image->numcomps,
                                                   " components: ImageDecoder reads 1 to ", kMaxComponents));
  }
  // OpenJPEG's planes: 4 bytes for each sample of every component, charged to the run while they live.
  const int64_t plane_factor = int64_t{4} * image->numcomps;
  RETURN_IF_ERROR(CheckImageBuffer(kFormat, height, width, plane_factor));
  const MemoryCharge planes = MemoryCharge::ToCurrentRun(static_cast<size_t>(plane_factor * height * width));
  const std::shared_ptr<const void> release_planes(nullptr, [planes](const void*) { planes.Release(); });
  if (!opj_decode(codec.get(), stream.get(), image.get()) || !opj_end_decompress(codec.get(), stream.get())) {
    return Corrupt(source, "the codestream does not decode");
  }
  return ToRgb(*image, height, width, source);
}

}  // namespace onnxserve::image

// JPEG through libjpeg-turbo, whose default ("fancy") chroma upsampling is the one the spec names.
//
// libjpeg reports a fatal error by calling error_exit, which must not return: ours longjmps back to the
// setjmp in ReadHeader or ReadPixels. Those two functions, the error callbacks and libjpeg's own frames
// are all that the jump skips, and none of them holds a C++ object with a destructor; everything that
// needs cleaning up (the decompressor, the output tensor) lives in DecodeJpeg's frame, which the jump
// never leaves. Warnings are dropped, except a premature end of the stream, which is an error: libjpeg
// would otherwise pad a truncated image with gray.
#include <csetjmp>
#include <cstdio>  // jpeglib.h needs FILE and size_t first

#include <jerror.h>
#include <jpeglib.h>

#include "absl/strings/str_cat.h"
#include "runtime/core/checked_size.h"
#include "runtime/ops/image_decoder/codecs.h"

namespace onnxserve::image {
namespace {

constexpr absl::string_view kFormat = "JPEG";

// A progressive JPEG may spell any number of scans, each a pass over the whole image: past this many the
// stream is refused rather than decoded for minutes (libjpeg-turbo's TurboJPEG API caps scans too).
constexpr int kMaxScans = 500;

// libjpeg finds this through cinfo->err, so `mgr` comes first.
struct JpegErrors {
  jpeg_error_mgr mgr;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void Fail(j_common_ptr cinfo) {
  longjmp(reinterpret_cast<JpegErrors*>(cinfo->err)->jump, 1);
}

[[noreturn]] void OnError(j_common_ptr cinfo) {
  (*cinfo->err->format_message)(cinfo, reinterpret_cast<JpegErrors*>(cinfo->err)->message);
  Fail(cinfo);
}

void OnMessage(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) OnError(cinfo);
}

void OnProgress(j_common_ptr cinfo) {
  if (reinterpret_cast<j_decompress_ptr>(cinfo)->input_scan_number <= kMaxScans) return;
  std::snprintf(reinterpret_cast<JpegErrors*>(cinfo->err)->message, JMSG_LENGTH_MAX, "more than %d scans",
                kMaxScans);
  Fail(cinfo);
}

// Creates the decompressor and reads the header; false (with errors->message) on a libjpeg error. Only
// trivially destructible locals: OnError longjmps to here.
bool ReadHeader(jpeg_decompress_struct* cinfo, JpegErrors* errors, jpeg_progress_mgr* progress, Bytes data,
                long max_memory) {
  if (setjmp(errors->jump)) return false;
  jpeg_create_decompress(cinfo);
  cinfo->mem->max_memory_to_use = max_memory;
  cinfo->progress = progress;
  jpeg_mem_src(cinfo, data.data(), static_cast<unsigned long>(data.size()));
  jpeg_read_header(cinfo, TRUE);
  cinfo->out_color_space = JCS_RGB;
  jpeg_calc_output_dimensions(cinfo);
  return true;
}

// Decodes every scanline into `out` (rows of `stride` bytes); false on a libjpeg error, as ReadHeader.
bool ReadPixels(jpeg_decompress_struct* cinfo, JpegErrors* errors, uint8_t* out, size_t stride) {
  if (setjmp(errors->jump)) return false;
  jpeg_start_decompress(cinfo);
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = out + static_cast<size_t>(cinfo->output_scanline) * stride;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

// jpeg_destroy_decompress frees whatever libjpeg allocated, even after an error; on a decompressor never
// created (mem still null) it does nothing.
struct DecompressorGuard {
  jpeg_decompress_struct* cinfo;
  ~DecompressorGuard() { jpeg_destroy_decompress(cinfo); }
};

}  // namespace

absl::StatusOr<Tensor> DecodeJpeg(Bytes data) {
  jpeg_decompress_struct cinfo{};
  JpegErrors errors{};
  cinfo.err = jpeg_std_error(&errors.mgr);
  errors.mgr.error_exit = OnError;
  errors.mgr.emit_message = OnMessage;
  jpeg_progress_mgr progress{};
  progress.progress_monitor = OnProgress;
  DecompressorGuard guard{&cinfo};
  // libjpeg's own buffers (a progressive image's coefficients) stay within the tensor byte limit too.
  const long max_memory = static_cast<long>(GetSizeLimits().max_bytes);
  if (!ReadHeader(&cinfo, &errors, &progress, data, max_memory)) return CorruptImage(kFormat, errors.message);
  if (cinfo.output_components != 3) {
    return CorruptImage(kFormat, absl::StrCat(cinfo.output_components, " output components for RGB"));
  }
  ASSIGN_OR_RETURN(Tensor image, NewImage(kFormat, cinfo.output_height, cinfo.output_width, 3));
  if (!ReadPixels(&cinfo, &errors, image.data<uint8_t>(), size_t{cinfo.output_width} * 3)) {
    return CorruptImage(kFormat, errors.message);
  }
  return image;
}

}  // namespace onnxserve::image

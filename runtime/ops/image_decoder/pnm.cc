// Netpbm (PNM), parsed here: P1/P4 bitmaps (1 is black), P2/P5 gray maps, P3/P6 pixel maps, in ASCII
// (P1-P3) or binary (P4-P6); maxval up to 65535 (two bytes, big-endian, past 255), scaled to 8 bits.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/ops/image_decoder/codecs.h"

namespace onnxserve::image {
namespace {

constexpr absl::string_view kFormat = "PNM";
// Header numbers longer than this many digits are refused before they could overflow.
constexpr int kMaxDigits = 12;

// Reads the stream's whitespace-separated ASCII numbers, skipping # comments.
class Tokens {
 public:
  explicit Tokens(Bytes d) : d_(d) {}

  absl::StatusOr<int64_t> Next(absl::string_view what) {
    SkipSpaceAndComments();
    int64_t value = 0;
    int digits = 0;
    for (; pos_ < d_.size() && d_[pos_] >= '0' && d_[pos_] <= '9'; ++pos_, ++digits) {
      if (digits == kMaxDigits) return CorruptImage(kFormat, absl::StrCat(what, " has too many digits"));
      value = value * 10 + (d_[pos_] - '0');
    }
    if (digits == 0) return CorruptImage(kFormat, absl::StrCat("expected ", what, " at byte ", pos_));
    return value;
  }

  // P1's samples are single digits that need no separating space ("0101").
  absl::StatusOr<int64_t> NextBit() {
    SkipSpaceAndComments();
    if (pos_ >= d_.size() || (d_[pos_] != '0' && d_[pos_] != '1')) {
      return CorruptImage(kFormat, absl::StrCat("expected a 0 or 1 at byte ", pos_));
    }
    return d_[pos_++] - '0';
  }

  // The binary formats' samples start after the single whitespace character that ends the header.
  size_t BinaryStart() const { return pos_ + 1; }

 private:
  void SkipSpaceAndComments() {
    while (pos_ < d_.size()) {
      const uint8_t c = d_[pos_];
      if (c == '#') {
        while (pos_ < d_.size() && d_[pos_] != '\n' && d_[pos_] != '\r') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
        ++pos_;
      } else {
        return;
      }
    }
  }

  Bytes d_;
  size_t pos_ = 2;  // past "Pn"
};

uint8_t Scale(int64_t v, int64_t maxval) {
  return static_cast<uint8_t>(maxval == 255 ? v : (v * 255 + maxval / 2) / maxval);
}

// The samples of the binary formats: `channels` per pixel of `sample_bytes` each, or P4's packed bits.
absl::Status ReadBinary(Bytes d, size_t start, int kind, int64_t maxval, int64_t channels, Tensor& image) {
  const int64_t height = image.dim(0), width = image.dim(1);
  const int64_t sample_bytes = maxval > 255 ? 2 : 1;
  const int64_t row_bytes = kind == 4 ? (width + 7) / 8 : width * channels * sample_bytes;
  if (start > d.size() || static_cast<int64_t>(d.size() - start) / height < row_bytes) {
    return CorruptImage(kFormat, absl::StrCat(width, "x", height, " samples do not fit in ", d.size(), " bytes"));
  }
  const uint8_t* in = d.data() + start;
  uint8_t* out = image.data<uint8_t>();
  for (int64_t y = 0; y < height; ++y, in += row_bytes) {
    for (int64_t x = 0; x < width; ++x) {
      uint8_t* px = out + (y * width + x) * 3;
      if (kind == 4) {
        std::fill(px, px + 3, ((in[x / 8] >> (7 - x % 8)) & 1) ? 0 : 255);
        continue;
      }
      for (int64_t c = 0; c < 3; ++c) {
        const int64_t at = (x * channels + (channels == 3 ? c : 0)) * sample_bytes;
        const int64_t v = sample_bytes == 2 ? (in[at] << 8) | in[at + 1] : in[at];
        if (v > maxval) return CorruptImage(kFormat, absl::StrCat("sample ", v, " is above maxval ", maxval));
        px[c] = Scale(v, maxval);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ReadAscii(Tokens& tokens, int kind, int64_t maxval, int64_t channels, Tensor& image) {
  uint8_t* out = image.data<uint8_t>();
  for (int64_t p = 0; p < image.dim(0) * image.dim(1); ++p) {
    uint8_t* px = out + p * 3;
    if (kind == 1) {
      ASSIGN_OR_RETURN(const int64_t bit, tokens.NextBit());
      std::fill(px, px + 3, bit ? 0 : 255);
      continue;
    }
    for (int64_t c = 0; c < channels; ++c) {
      ASSIGN_OR_RETURN(const int64_t v, tokens.Next("a sample"));
      if (v > maxval) return CorruptImage(kFormat, absl::StrCat("sample ", v, " is above maxval ", maxval));
      px[c] = Scale(v, maxval);
    }
    if (channels == 1) px[1] = px[2] = px[0];
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Tensor> DecodePnm(Bytes d) {
  const int kind = d[1] - '0';  // the caller checked "P1".."P6"
  Tokens tokens(d);
  ASSIGN_OR_RETURN(const int64_t width, tokens.Next("the width"));
  ASSIGN_OR_RETURN(const int64_t height, tokens.Next("the height"));
  int64_t maxval = 1;
  if (kind != 1 && kind != 4) {
    ASSIGN_OR_RETURN(maxval, tokens.Next("maxval"));
    if (maxval < 1 || maxval > 65535) return CorruptImage(kFormat, absl::StrCat("maxval ", maxval));
  }
  ASSIGN_OR_RETURN(Tensor image, NewImage(kFormat, height, width, 3));
  const int64_t channels = kind == 3 || kind == 6 ? 3 : 1;
  if (kind <= 3) RETURN_IF_ERROR(ReadAscii(tokens, kind, maxval, channels, image));
  else RETURN_IF_ERROR(ReadBinary(d, tokens.BinaryStart(), kind, maxval, channels, image));
  return image;
}

}  // namespace onnxserve::image

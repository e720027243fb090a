// ImageDecoder: pixel values of small images built here (BMP, PNM and TIFF byte by byte; PNG, WebP, JPEG and
// JPEG 2000 through the encoders of the same libraries), the pixel formats, and hostile streams: corrupt, truncated
// and with headers claiming images past the size limits, which must be errors before any allocation.
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <jpeglib.h>
#include <openjpeg.h>
#include <png.h>
#include <webp/encode.h>

#include "gtest/gtest.h"
#include "runtime/core/checked_size.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::ScopedSizeLimits;
using testing::TensorsClose;
using Bytes = std::vector<uint8_t>;

absl::StatusOr<std::vector<Tensor>> Decode(const Bytes& stream, const std::string& pixel_format = "RGB") {
  return OpTest("ImageDecoder", 20)
      .Input("encoded_stream", Tensor::FromVector<uint8_t>({static_cast<int64_t>(stream.size())}, stream))
      .Attr("pixel_format", pixel_format)
      .Output("image").Run();
}

Tensor Image(int64_t height, int64_t width, int64_t channels, const std::vector<uint8_t>& pixels) {
  return Tensor::FromVector<uint8_t>({height, width, channels}, pixels);
}

void ExpectCode(const absl::StatusOr<std::vector<Tensor>>& out, absl::StatusCode code, const std::string& text) {
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), code) << out.status();
  EXPECT_NE(out.status().message().find(text), std::string::npos) << out.status();
}

void PutLe(Bytes& b, size_t at, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
void PutBe(Bytes& b, size_t at, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * (bytes - 1 - i)));
}

// A BMP with a 40-byte info header; `pixels` are the rows as stored (padded, bottom-up unless height < 0).
Bytes Bmp(int32_t width, int32_t height, uint16_t bits, const Bytes& palette, const Bytes& pixels) {
  Bytes b(54 + palette.size());
  b[0] = 'B', b[1] = 'M';
  PutLe(b, 2, static_cast<uint32_t>(b.size() + pixels.size()), 4);
  PutLe(b, 10, static_cast<uint32_t>(b.size()), 4);
  PutLe(b, 14, 40, 4);
  PutLe(b, 18, static_cast<uint32_t>(width), 4);
  PutLe(b, 22, static_cast<uint32_t>(height), 4);
  PutLe(b, 26, 1, 2);
  PutLe(b, 28, bits, 2);
  std::copy(palette.begin(), palette.end(), b.begin() + 54);
  b.insert(b.end(), pixels.begin(), pixels.end());
  return b;
}

Bytes Text(const std::string& s) { return Bytes(s.begin(), s.end()); }

// An uncompressed 8-bit gray TIFF (one strip) of `pixels`, which may hold fewer than width * height bytes.
Bytes GrayTiff(uint32_t width, uint32_t height, const Bytes& pixels) {
  const uint32_t entries[][3] = {{256, 4, width}, {257, 4, height},         {258, 3, 8},
                                 {259, 3, 1},     {262, 3, 1},              {273, 4, 122},
                                 {277, 3, 1},     {278, 4, height},         {279, 4, width * height}};
  Bytes b(122);
  b[0] = 'I', b[1] = 'I';
  PutLe(b, 2, 42, 2);
  PutLe(b, 4, 8, 4);
  PutLe(b, 8, 9, 2);
  for (size_t i = 0; i < 9; ++i) {
    const size_t at = 10 + i * 12;
    PutLe(b, at, entries[i][0], 2);
    PutLe(b, at + 2, entries[i][1], 2);
    PutLe(b, at + 4, 1, 4);
    PutLe(b, at + 8, entries[i][2], entries[i][1] == 3 ? 2 : 4);
  }
  b.insert(b.end(), pixels.begin(), pixels.end());
  return b;
}

// An uncompressed one-row TIFF of `width` gray pixels, each followed by samples - 1 extra samples (all 0;
// up to two extra sample kinds fit in their tag's entry, more go after the directory).
Bytes TiffWithExtraSamples(uint32_t width, uint16_t samples) {
  constexpr size_t kEntries = 10, kExtraAt = 8 + 2 + kEntries * 12 + 4;
  const size_t strip_at = kExtraAt + 2 * (samples - 1u);
  const uint32_t entries[kEntries][4] = {{256, 4, 1, width},       {257, 4, 1, 1},
                                         {258, 3, 1, 8},           {259, 3, 1, 1},
                                         {262, 3, 1, 1},           {273, 4, 1, static_cast<uint32_t>(strip_at)},
                                         {277, 3, 1, samples},     {278, 4, 1, 1},
                                         {279, 4, 1, width * samples},
                                         {338, 3, samples - 1u, samples <= 3 ? 0u : static_cast<uint32_t>(kExtraAt)}};
  Bytes b(strip_at + width * samples);
  b[0] = 'I', b[1] = 'I';
  PutLe(b, 2, 42, 2);
  PutLe(b, 4, 8, 4);
  PutLe(b, 8, kEntries, 2);
  for (size_t i = 0; i < kEntries; ++i) {
    const size_t at = 10 + i * 12;
    PutLe(b, at, entries[i][0], 2);
    PutLe(b, at + 2, entries[i][1], 2);
    PutLe(b, at + 4, entries[i][2], 4);
    PutLe(b, at + 8, entries[i][3], entries[i][1] == 3 && entries[i][2] == 1 ? 2 : 4);
  }
  return b;  // extra sample kinds 0 (unspecified) and pixels 0 are the zeros Bytes starts with
}

Bytes EncodePng(int width, int height, const Bytes& rgb) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = width;
  image.height = height;
  image.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_to_memory(&image, nullptr, &size, 0, rgb.data(), 0, nullptr));
  Bytes out(size);
  EXPECT_TRUE(png_image_write_to_memory(&image, out.data(), &size, 0, rgb.data(), 0, nullptr));
  out.resize(size);
  return out;
}

Bytes EncodeJpeg(int width, int height, const Bytes& rgb) {
  jpeg_compress_struct c{};
  jpeg_error_mgr errors{};
  c.err = jpeg_std_error(&errors);
  jpeg_create_compress(&c);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buffer, &size);
  c.image_width = width;
  c.image_height = height;
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 100, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(rgb.data()) + c.next_scanline * width * 3;
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  Bytes out(buffer, buffer + size);
  jpeg_destroy_compress(&c);
  free(buffer);
  return out;
}

// A lossless JPEG 2000 codestream of `values.size()` components of width x height samples, component c all
// values[c] (8 bits, unsigned), through OpenJPEG's encoder.
Bytes EncodeJpeg2000(int width, int height, const std::vector<int>& values) {
  std::vector<opj_image_cmptparm_t> params(values.size());
  for (opj_image_cmptparm_t& p : params) {
    p = {};
    p.dx = p.dy = 1;
    p.w = static_cast<OPJ_UINT32>(width);
    p.h = static_cast<OPJ_UINT32>(height);
    p.prec = 8;
  }
  const auto space = values.size() == 3 ? OPJ_CLRSPC_SRGB : OPJ_CLRSPC_UNSPECIFIED;
  opj_image_t* image = opj_image_create(static_cast<OPJ_UINT32>(values.size()), params.data(), space);
  image->x1 = static_cast<OPJ_UINT32>(width);
  image->y1 = static_cast<OPJ_UINT32>(height);
  for (size_t c = 0; c < values.size(); ++c) std::fill_n(image->comps[c].data, width * height, values[c]);
  opj_cparameters_t parameters;
  opj_set_default_encoder_parameters(&parameters);
  parameters.tcp_mct = values.size() == 3 ? 1 : 0;  // the colour transform takes exactly three components
  parameters.numresolution = 1;                       // the default 6 need images of 32 pixels a side
  opj_codec_t* codec = opj_create_compress(OPJ_CODEC_J2K);
  opj_set_error_handler(codec, [](const char* message, void*) { ADD_FAILURE() << "OpenJPEG: " << message; }, nullptr);
  opj_setup_encoder(codec, &parameters, image);
  Bytes out;
  opj_stream_t* stream = opj_stream_create(1 << 16, OPJ_FALSE);
  opj_stream_set_user_data(stream, &out, nullptr);
  opj_stream_set_write_function(stream, [](void* data, OPJ_SIZE_T n, void* user) -> OPJ_SIZE_T {
    auto* bytes = static_cast<Bytes*>(user);
    bytes->insert(bytes->end(), static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + n);
    return n;
  });
  opj_stream_set_skip_function(stream, [](OPJ_OFF_T n, void*) -> OPJ_OFF_T { return n == 0 ? 0 : -1; });
  opj_stream_set_seek_function(stream, [](OPJ_OFF_T, void*) -> OPJ_BOOL { return OPJ_FALSE; });
  const bool encoded = opj_start_compress(codec, image, stream) && opj_encode(codec, stream) &&
                       opj_end_compress(codec, stream);
  opj_stream_destroy(stream);
  opj_destroy_codec(codec);
  opj_image_destroy(image);
  EXPECT_TRUE(encoded) << "OpenJPEG could not encode the test image";
  return out;
}

// CRC-32 of PNG chunks (ISO 3309), bit by bit.
uint32_t Crc32(const uint8_t* data, size_t n) {
  uint32_t crc = 0xFFFFFFFF;
  for (size_t i = 0; i < n; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320 & (0 - (crc & 1)));
  }
  return ~crc;
}

// A 3x2 RGB test card: red, green, blue / white, black, gray.
const Bytes kCard = {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 128, 128, 128};

TEST(ImageDecoderTest, Bmp24BitRowsAreBottomUpAndBgr) {
  // 2x2, rows padded to 8 bytes; the first stored row is the bottom one.
  const Bytes pixels = {255, 0, 0, 0, 255, 0, 0, 0,  /* bottom: blue, green */
                        0, 0, 255, 255, 255, 255, 0, 0 /* top: red, white */};
  auto out = Decode(Bmp(2, 2, 24, {}, pixels));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Image(2, 2, 3, {255, 0, 0, 255, 255, 255, 0, 0, 255, 0, 255, 0}), (*out)[0]));
}

TEST(ImageDecoderTest, BmpOneBitPaletteTopDown) {
  // Negative height: rows top-down. Palette black, white (stored B, G, R, 0); bits 101 then padding.
  auto out = Decode(Bmp(3, -1, 1, {0, 0, 0, 0, 255, 255, 255, 0}, {0b10100000, 0, 0, 0}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Image(1, 3, 3, {255, 255, 255, 0, 0, 0, 255, 255, 255}), (*out)[0]));
}

TEST(ImageDecoderTest, PixelFormatsSwapOrTakeLuma) {
  // One row: red, green, blue, white. Luma (0.299, 0.587, 0.114 in 16-bit fixed point, rounded):
  // 255 * 19595 / 65536 = 76.2, 255 * 38470 / 65536 = 149.7, 255 * 7471 / 65536 = 29.1, 255.
  const Bytes stream = Text("P6 4 1 255\n");
  Bytes rgb = stream;
  for (uint8_t v : {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255}) rgb.push_back(v);
  auto bgr = Decode(rgb, "BGR");
  ASSERT_TRUE(bgr.ok()) << bgr.status();
  EXPECT_TRUE(TensorsClose(Image(1, 4, 3, {0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 255}), (*bgr)[0]));
  auto gray = Decode(rgb, "Grayscale");
  ASSERT_TRUE(gray.ok()) << gray.status();
  EXPECT_TRUE(TensorsClose(Image(1, 4, 1, {76, 150, 29, 255}), (*gray)[0]));
}

TEST(ImageDecoderTest, PnmScalesMaxvalAndReadsAsciiAndBitmaps) {
  // P5 with maxval 15: 15 -> 255, 7 -> 7 * 255 / 15 = 119, 0 -> 0. A comment in the header.
  Bytes p5 = Text("P5\n# made by hand\n3 1\n15\n");
  p5.insert(p5.end(), {15, 7, 0});
  auto gray = Decode(p5);
  ASSERT_TRUE(gray.ok()) << gray.status();
  EXPECT_TRUE(TensorsClose(Image(1, 3, 3, {255, 255, 255, 119, 119, 119, 0, 0, 0}), (*gray)[0]));
  // P3 ASCII pixels; P1 bits, where 1 is black.
  auto p3 = Decode(Text("P3 2 1 255  10 20 30  40 50 60"));
  ASSERT_TRUE(p3.ok()) << p3.status();
  EXPECT_TRUE(TensorsClose(Image(1, 2, 3, {10, 20, 30, 40, 50, 60}), (*p3)[0]));
  auto p1 = Decode(Text("P1 2 1 10"));
  ASSERT_TRUE(p1.ok()) << p1.status();
  EXPECT_TRUE(TensorsClose(Image(1, 2, 3, {0, 0, 0, 255, 255, 255}), (*p1)[0]));
}

TEST(ImageDecoderTest, TiffGrayIsReplicatedToRgb) {
  auto out = Decode(GrayTiff(2, 2, {0, 50, 100, 255}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Image(2, 2, 3, {0, 0, 0, 50, 50, 50, 100, 100, 100, 255, 255, 255}), (*out)[0]));
}

TEST(ImageDecoderTest, LosslessFormatsRoundTrip) {
  auto png = Decode(EncodePng(3, 2, kCard));
  ASSERT_TRUE(png.ok()) << png.status();
  EXPECT_TRUE(TensorsClose(Image(2, 3, 3, kCard), (*png)[0]));
  uint8_t* webp = nullptr;
  const size_t webp_size = WebPEncodeLosslessRGB(kCard.data(), 3, 2, 9, &webp);
  ASSERT_GT(webp_size, 0u);
  const Bytes webp_stream(webp, webp + webp_size);
  WebPFree(webp);
  auto decoded = Decode(webp_stream);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_TRUE(TensorsClose(Image(2, 3, 3, kCard), (*decoded)[0]));
}

TEST(ImageDecoderTest, JpegOfOneColorDecodesNearIt) {
  // A flat 16x16 image at quality 100: only color conversion rounding separates it from its source.
  Bytes flat(16 * 16 * 3);
  for (size_t i = 0; i < flat.size(); i += 3) flat[i] = 100, flat[i + 1] = 150, flat[i + 2] = 200;
  auto out = Decode(EncodeJpeg(16, 16, flat));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape(), (Shape{16, 16, 3}));
  const uint8_t* px = (*out)[0].data<uint8_t>();
  for (size_t i = 0; i < flat.size(); ++i) EXPECT_NEAR(px[i], flat[i], 2) << i;
}

TEST(ImageDecoderTest, UnknownOrEmptyStreamIsInvalid) {
  ExpectCode(Decode(Text("GIF89a......")), absl::StatusCode::kInvalidArgument, "unknown signature");
  ExpectCode(Decode({}), absl::StatusCode::kInvalidArgument, "unknown signature");
}

TEST(ImageDecoderTest, TruncatedOrCorruptStreamsAreInvalid) {
  Bytes card_jpeg = EncodeJpeg(16, 16, Bytes(16 * 16 * 3, 90));
  card_jpeg.resize(card_jpeg.size() / 2);
  ExpectCode(Decode(card_jpeg), absl::StatusCode::kInvalidArgument, "JPEG stream");
  ExpectCode(Decode({0xFF, 0xD8, 0xFF, 0x00, 0x01, 0x02}), absl::StatusCode::kInvalidArgument, "JPEG stream");
  Bytes png = EncodePng(3, 2, kCard);
  png.resize(png.size() - 20);  // into the image data
  ExpectCode(Decode(png), absl::StatusCode::kInvalidArgument, "PNG stream");
  ExpectCode(Decode(Bmp(4, 4, 24, {}, Bytes(10))), absl::StatusCode::kInvalidArgument, "do not fit");
  ExpectCode(Decode(Text("P6 4 4 255\n\x01\x02")), absl::StatusCode::kInvalidArgument, "do not fit");
  ExpectCode(Decode(Text("P2 2 1 255  10")), absl::StatusCode::kInvalidArgument, "expected a sample");
  ExpectCode(Decode(Text("P5 123456789012345678901 1 255\n")), absl::StatusCode::kInvalidArgument, "too many digits");
  ExpectCode(Decode(GrayTiff(4, 4, {1, 2})), absl::StatusCode::kInvalidArgument, "TIFF stream");
  ExpectCode(Decode(Text("RIFF\x10\0\0\0WEBPVP8 garbage")), absl::StatusCode::kInvalidArgument, "WebP stream");
  Bytes j2k = {0xFF, 0x4F, 0xFF, 0x51, 0x00, 0x02};
  ExpectCode(Decode(j2k), absl::StatusCode::kInvalidArgument, "JPEG 2000 stream");
}

TEST(ImageDecoderTest, HeadersClaimingHugeImagesAreResourceExhausted) {
  // A JPEG whose frame header says 65000x65000 (12.7e9 bytes of RGB).
  Bytes jpeg = EncodeJpeg(16, 16, Bytes(16 * 16 * 3, 90));
  for (size_t i = 0; i + 8 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {
      PutBe(jpeg, i + 5, 65000, 2);
      PutBe(jpeg, i + 7, 65000, 2);
      break;
    }
  }
  ExpectCode(Decode(jpeg), absl::StatusCode::kResourceExhausted, "JPEG image of 65000x65000");
  // A PNG whose IHDR (with its CRC mended) says 100000x100000.
  Bytes png = EncodePng(3, 2, kCard);
  PutBe(png, 16, 100000, 4);
  PutBe(png, 20, 100000, 4);
  PutBe(png, 29, Crc32(png.data() + 12, 17), 4);
  ExpectCode(Decode(png), absl::StatusCode::kResourceExhausted, "PNG image of 100000x100000");
  ExpectCode(Decode(Bmp(1 << 30, 1 << 30, 24, {}, Bytes(16))), absl::StatusCode::kResourceExhausted, "BMP image");
  ExpectCode(Decode(Text("P6 99999999 99999999 255\n")), absl::StatusCode::kResourceExhausted, "PNM image");
  ExpectCode(Decode(GrayTiff(1 << 20, 1 << 20, {1})), absl::StatusCode::kResourceExhausted, "TIFF image");
}

TEST(ImageDecoderTest, ValidImagesPastLoweredLimitsAreResourceExhausted) {
  // 64x64 RGB is 12288 bytes: every codec refuses it under a 12000-byte limit, before decoding. (The PNM
  // is gray, so that its stream stays under the limit too.)
  const Bytes rgb(64 * 64 * 3, 77);
  const Bytes png = EncodePng(64, 64, rgb), jpeg = EncodeJpeg(64, 64, rgb);
  uint8_t* webp = nullptr;
  const size_t webp_size = WebPEncodeLosslessRGB(rgb.data(), 64, 64, 64 * 3, &webp);
  const Bytes webp_stream(webp, webp + webp_size);
  WebPFree(webp);
  Bytes pgm = Text("P5 64 64 255\n");
  pgm.insert(pgm.end(), 64 * 64, 77);
  ScopedSizeLimits limits(12000);
  for (const Bytes* stream : std::vector<const Bytes*>{&png, &jpeg, &webp_stream, &pgm}) {
    ExpectCode(Decode(*stream), absl::StatusCode::kResourceExhausted, "image of 64x64");
  }
}

TEST(ImageDecoderTest, Jpeg2000OfThreeOrFourComponentsDecodesToItsFirstThree) {
  for (const std::vector<int>& values : {std::vector<int>{200, 100, 50}, std::vector<int>{200, 100, 50, 255}}) {
    auto out = Decode(EncodeJpeg2000(8, 4, values));
    ASSERT_TRUE(out.ok()) << values.size() << " components: " << out.status();
    Bytes rgb;
    for (int i = 0; i < 8 * 4; ++i) rgb.insert(rgb.end(), {200, 100, 50});
    EXPECT_TRUE(TensorsClose(Image(4, 8, 3, rgb), (*out)[0])) << values.size() << " components";
  }
}

// A stream of thousands of components (each a few bytes of empty packets) had OpenJPEG decode every one of
// them, 4 bytes a sample, for planes never read; more than four are refused before decoding.
TEST(ImageDecoderTest, Jpeg2000OfMoreThanFourComponentsIsRefused) {
  ExpectCode(Decode(EncodeJpeg2000(8, 4, {1, 2, 3, 4, 5})), absl::StatusCode::kInvalidArgument,
             "JPEG 2000 image of 5 components");
}

// OpenJPEG's planes are charged to the run while they live: 64x64 RGB takes 48 KiB of them (12 of output),
// which a 32 KiB budget refuses and a 128 KiB one takes.
TEST(ImageDecoderTest, Jpeg2000PlanesCountAgainstTheBudget) {
  const Bytes stream = EncodeJpeg2000(64, 64, {10, 20, 30});
  const auto decode = [&](int64_t budget) {
    return OpTest("ImageDecoder", 20)
        .Input("encoded_stream", Tensor::FromVector<uint8_t>({static_cast<int64_t>(stream.size())}, stream))
        .Output("image")
        .MemoryBudget(budget)
        .Run();
  };
  auto refused = decode(32 << 10);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  auto decoded = decode(128 << 10);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ((*decoded)[0].shape(), (Shape{64, 64, 3}));
}

// libtiff reads a strip of every sample: a stream of a few KB declaring thousands of extra samples of
// deflated zeros took gigabytes outside the run's budget. More than four are refused; four are read.
TEST(ImageDecoderTest, TiffOfMoreThanFourSamplesPerPixelIsRefused) {
  auto four = Decode(TiffWithExtraSamples(8, 4));
  ASSERT_TRUE(four.ok()) << four.status();
  EXPECT_TRUE(TensorsClose(Image(1, 8, 3, Bytes(8 * 3, 0)), (*four)[0]));
  ExpectCode(Decode(TiffWithExtraSamples(8, 5)), absl::StatusCode::kInvalidArgument,
             "TIFF image of 5 samples per pixel");
}

TEST(ImageDecoderTest, BadPixelFormatOrInputIsAnError) {
  ExpectCode(Decode(Text("P1 1 1 0"), "YUV"), absl::StatusCode::kInvalidArgument, "pixel_format");
  auto out = OpTest("ImageDecoder", 20)
                 .Input("encoded_stream", Tensor::FromVector<uint8_t>({1, 2}, {'P', '1'}))
                 .Output("image").Run();
  ExpectCode(out, absl::StatusCode::kInvalidArgument, "1-D uint8");
}

// Every format, with bytes flipped, runs cut short and lengths pumped up: each decode returns an image or
// one of the errors a bad stream may give, and never crashes (the sanitizer build runs this too).
TEST(ImageDecoderTest, MutatedStreamsDecodeOrFailCleanly) {
  const Bytes rgb(8 * 8 * 3, 123);
  uint8_t* webp = nullptr;
  const size_t webp_size = WebPEncodeLosslessRGB(rgb.data(), 8, 8, 8 * 3, &webp);
  const Bytes webp_stream(webp, webp + webp_size);
  WebPFree(webp);
  Bytes ppm = Text("P6 8 8 255\n");
  ppm.insert(ppm.end(), rgb.begin(), rgb.end());
  const std::vector<Bytes> streams = {EncodePng(8, 8, rgb), EncodeJpeg(8, 8, rgb), webp_stream, ppm,
                                      Bmp(8, 8, 24, {}, Bytes(8 * 8 * 3, 50)), GrayTiff(8, 8, Bytes(64, 9))};
  std::mt19937 random(12);
  for (const Bytes& original : streams) {
    for (int trial = 0; trial < 300; ++trial) {
      Bytes stream = original;
      const size_t at = random() % stream.size();
      switch (trial % 3) {
        case 0: stream[at] = static_cast<uint8_t>(random()); break;
        case 1: stream.resize(std::max<size_t>(at, 4)); break;
        default: stream[at] = 0xFF, stream[(at + 1) % stream.size()] = 0xFF; break;
      }
      auto out = Decode(stream);
      if (out.ok()) continue;
      const absl::StatusCode code = out.status().code();
      EXPECT_TRUE(code == absl::StatusCode::kInvalidArgument || code == absl::StatusCode::kResourceExhausted ||
                  code == absl::StatusCode::kUnimplemented)
          << out.status();
    }
  }
}

}  // namespace
}  // namespace onnxserve

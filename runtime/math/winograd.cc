#include "runtime/math/winograd.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <vector>

#include "absl/functional/function_ref.h"
#include "runtime/core/memory_budget.h"
#include "runtime/core/run_limits.h"
#include "runtime/math/isa.h"
#include "runtime/math/scratch.h"
#include "runtime/math/vector_kernels.h"

// The transforms work on a whole row of tiles at a time, each step a loop over the row's tiles that the
// compiler vectorizes; as AVX2 code (its callers need PackedGemmSupported(), so AVX2 at least), without
// -mavx2 on the file, whose other code (std templates shared with every other file) must stay portable.
#define ONNXSERVE_WINOGRAD_AVX2 __attribute__((target("avx2,fma")))

namespace onnxserve {
namespace {

constexpr int kPlanes = 16;  // a 4x4 input patch per 2x2 output tile

// Each pass's two buffers of 16 planes stay under 2^22 floats (16 MB) whatever the image, so a hostile
// image size costs passes, not memory; a shape one row of tiles of which exceeds it runs another way.
constexpr int64_t kMaxPassFloats = int64_t{1} << 22;
// A pass that runs whole on one thread keeps its two buffers within 2^18 floats (1 MiB), in L2. ResNet-50's
// 56x56 x 64-channel 3x3s (passes of 4 rows of tiles; in-process alternation, AVX2) took 0.91 of the time
// of one whole-image pass on one thread; on two, against each phase split, 0.81-0.92 while the VM's cores
// were slow to share lines and 0.99-1.07 when not. At 28x28 x 128 and 14x14 x 256, whose weights outweigh
// the image, passes spread that way took 0.97-1.8 of it, so those keep their phases split.
constexpr int64_t kMaxSpreadPassFloats = int64_t{1} << 18;

int64_t TilesAcross(int64_t extent) { return (extent + 1) / 2; }

// How many passes cover `tiles_h` rows of tiles, at most `max_rows` each. Spread passes come in an even
// number: two threads' halves of them then hold the same rows. ResNet-50's 56x56 maps made 7 passes of 4
// rows, 4 of them on one thread and 3 on the other, which bounded the two threads to 1.75 times one; in 8
// passes of 3-4 rows those layers took 0.78 of their time on two AVX2 threads (whole binaries alternated,
// per-node medians of 3 rounds) and 1.02-1.03 on one, within the rounds' spread.
int64_t PassCount(int64_t tiles_h, int64_t max_rows, bool spread) {
  const int64_t passes = (tiles_h + max_rows - 1) / max_rows;
  return spread && passes % 2 == 1 && passes < tiles_h ? passes + 1 : passes;
}

// The first row of tiles of pass `pass` of `passes` over `tiles_h` rows: floor(pass * tiles_h / passes), so
// that passes differ by at most one row and the longer ones are spread among the shorter.
int64_t PassStart(int64_t pass, int64_t passes, int64_t tiles_h) {
  return static_cast<int64_t>(static_cast<unsigned __int128>(pass) * static_cast<unsigned __int128>(tiles_h) /
                              static_cast<unsigned __int128>(passes));
}

// fn(0, n) split over `pool`, or on the calling thread when there is none.
void SplitOver(ThreadPool* pool, int64_t n, absl::FunctionRef<void(int64_t, int64_t)> fn) {
  if (pool == nullptr) {
    fn(0, n);
  } else {
    pool->ParallelFor(n, 1, fn);
  }
}

// Row `row` of `plane` split into its pixels at even and odd offsets from -pad_left: even[i] is column
// 2i - pad_left, odd[i] column 2i + 1 - pad_left, zero outside the image; tiles_w + 1 of each.
void SplitRow(const float* plane, int64_t height, int64_t width, int64_t row, int64_t pad_left, int64_t tiles_w,
              float* even, float* odd) {
  const bool inside_rows = row >= 0 && row < height;
  const float* line = plane + row * width;
  for (int64_t i = 0; i <= tiles_w; ++i) {
    const int64_t e = 2 * i - pad_left, o = e + 1;
    even[i] = inside_rows && e >= 0 && e < width ? line[e] : 0.0f;
    odd[i] = inside_rows && o >= 0 && o < width ? line[o] : 0.0f;
  }
}

// B^T d B of every tile of one row of tiles: `even` and `odd` hold the patch rows split (SplitRow); the
// 16 planes of the result go to v[p * plane_stride + tw]. B^T is [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
// (interpolation points 0, 1, -1), applied along the rows, then down the columns.
ONNXSERVE_WINOGRAD_AVX2 void TransformInputRow(const float* const even[4], const float* const odd[4],
                                               int64_t tiles_w, float* __restrict h, float* __restrict v,
                                               int64_t plane_stride) {
  // h[(r * 4 + j) * tiles_w + tw]: patch row r, after the step along the row.
  for (int r = 0; r < 4; ++r) {
    const float* __restrict e = even[r];
    const float* __restrict o = odd[r];
    float* __restrict h0 = h + (r * 4 + 0) * tiles_w;
    float* __restrict h1 = h + (r * 4 + 1) * tiles_w;
    float* __restrict h2 = h + (r * 4 + 2) * tiles_w;
    float* __restrict h3 = h + (r * 4 + 3) * tiles_w;
    for (int64_t t = 0; t < tiles_w; ++t) {
      h0[t] = e[t] - e[t + 1];
      h1[t] = o[t] + e[t + 1];
      h2[t] = e[t + 1] - o[t];
      h3[t] = o[t] - o[t + 1];
    }
  }
  for (int j = 0; j < 4; ++j) {
    const float* __restrict r0 = h + (0 * 4 + j) * tiles_w;
    const float* __restrict r1 = h + (1 * 4 + j) * tiles_w;
    const float* __restrict r2 = h + (2 * 4 + j) * tiles_w;
    const float* __restrict r3 = h + (3 * 4 + j) * tiles_w;
    float* __restrict v0 = v + (0 * 4 + j) * plane_stride;
    float* __restrict v1 = v + (1 * 4 + j) * plane_stride;
    float* __restrict v2 = v + (2 * 4 + j) * plane_stride;
    float* __restrict v3 = v + (3 * 4 + j) * plane_stride;
    for (int64_t t = 0; t < tiles_w; ++t) {
      v0[t] = r0[t] - r2[t];
      v1[t] = r1[t] + r2[t];
      v2[t] = r2[t] - r1[t];
      v3[t] = r1[t] - r3[t];
    }
  }
}

// A^T m A of every tile of one row of tiles, m's 16 planes at m[p * plane_stride + tw]: output row r
// (0 or 1) of each tile, its left pixels in even[tw], its right ones in odd[tw]. A^T is [1 1 1 0; 0 1 -1 -1].
ONNXSERVE_WINOGRAD_AVX2 void TransformOutputRow(const float* m, int64_t plane_stride, int64_t tiles_w, int r,
                                                float* __restrict s, float* __restrict even,
                                                float* __restrict odd) {
  // s[j * tiles_w + tw]: column j of the tile after the step down the columns, for output row r.
  for (int j = 0; j < 4; ++j) {
    const float* __restrict m0 = m + (0 * 4 + j) * plane_stride;
    const float* __restrict m1 = m + (1 * 4 + j) * plane_stride;
    const float* __restrict m2 = m + (2 * 4 + j) * plane_stride;
    const float* __restrict m3 = m + (3 * 4 + j) * plane_stride;
    float* __restrict sj = s + j * tiles_w;
    if (r == 0) {
      for (int64_t t = 0; t < tiles_w; ++t) sj[t] = m0[t] + m1[t] + m2[t];
    } else {
      for (int64_t t = 0; t < tiles_w; ++t) sj[t] = m1[t] - m2[t] - m3[t];
    }
  }
  const float* __restrict s0 = s;
  const float* __restrict s1 = s + tiles_w;
  const float* __restrict s2 = s + 2 * tiles_w;
  const float* __restrict s3 = s + 3 * tiles_w;
  for (int64_t t = 0; t < tiles_w; ++t) {
    even[t] = s0[t] + s1[t] + s2[t];
    odd[t] = s1[t] - s2[t] - s3[t];
  }
}

// One output row from its tiles' left and right pixels, plus bias and Z, Relu when asked; false when a value
// before the Relu is infinite or NaN. The transforms add and subtract neighbouring pixels before any
// weight scales them down, so huge or infinite inputs make infinities and NaNs (inf - inf) there where the
// direct convolution's sums stay finite or infinite: such a row is not to be trusted.
ONNXSERVE_WINOGRAD_AVX2 bool StoreRow(const float* even, const float* odd, int64_t width, float bias,
                                      const float* z, bool relu, float* y) {
  constexpr int32_t kInfinityBits = 0x7f800000;  // and above, less the sign: infinite or NaN
  int32_t largest_bits = 0;
  for (int64_t x = 0; x < width; ++x) {
    float value = ((x & 1) == 0 ? even[x / 2] : odd[x / 2]) + bias + (z != nullptr ? z[x] : 0.0f);
    largest_bits = std::max(largest_bits, std::bit_cast<int32_t>(value) & 0x7fffffff);
    if (relu) value = std::max(value, 0.0f);
    y[x] = value;
  }
  return largest_bits < kInfinityBits;
}

// G g for one column g of a 3x3 kernel, in double: done once at load. G is [1 0 0; 1/2 1/2 1/2;
// 1/2 -1/2 1/2; 0 0 1].
void WeightStep(const double g[3], double out[4]) {
  out[0] = g[0];
  out[1] = (g[0] + g[1] + g[2]) / 2.0;
  out[2] = (g[0] - g[1] + g[2]) / 2.0;
  out[3] = g[2];
}

// G g G^T of each (map, channel) of the weights `w` [maps, channels, 3, 3], as 16 planes of [maps x
// channels]. Model state that every later run reads, like the initializers it comes from: not charged to
// the run that happens to need it first, which would keep it charged to that run's account after the run.
std::vector<PackedRows> TransformWeights(const float* w, int64_t maps, int64_t channels) {
  const ScopedMemoryAccount model_state(nullptr);
  const int64_t pairs = maps * channels;
  std::vector<float> u(static_cast<size_t>(kPlanes * pairs));
  for (int64_t pair = 0; pair < pairs; ++pair) {
    const float* g = w + pair * 9;
    double columns[4][3];
    for (int j = 0; j < 3; ++j) {
      const double column[3] = {g[j], g[3 + j], g[6 + j]};
      double out[4];
      WeightStep(column, out);
      for (int i = 0; i < 4; ++i) columns[i][j] = out[i];
    }
    for (int i = 0; i < 4; ++i) {
      double out[4];
      WeightStep(columns[i], out);
      for (int j = 0; j < 4; ++j) u[static_cast<size_t>((i * 4 + j) * pairs + pair)] = static_cast<float>(out[j]);
    }
  }
  std::vector<PackedRows> planes;
  planes.reserve(kPlanes);
  for (int p = 0; p < kPlanes; ++p) planes.emplace_back(u.data() + p * pairs, maps, channels, channels);
  return planes;
}

}  // namespace

bool WinogradConvolutionsWin() { return ActiveIsa() == Isa::kAvx2; }

bool Winograd3x3::Fits(const ConvShape2D& shape) const {
  // In double: a hostile model's channels times a hostile request's width need not fit in int64.
  return static_cast<double>(kPlanes) * static_cast<double>(std::max(maps_, channels_)) *
             static_cast<double>(TilesAcross(shape.out_w)) <= static_cast<double>(kMaxPassFloats);
}

const std::vector<PackedRows>& Winograd3x3::TransformedWeights() const {
  // Assigned whole, so that a first use that throws (memory) leaves none made for the next to build on.
  std::call_once(transformed_once_, [&] { u_ = TransformWeights(w_, maps_, channels_); });
  return u_;
}

bool Winograd3x3::SpreadsPasses(const ConvShape2D& shape) const {
  const auto [x, y] = FloatsOfImage(shape, channels_, maps_);
  return static_cast<double>(kPlanes) * static_cast<double>(maps_) * static_cast<double>(channels_) <= x + y;
}

bool Winograd3x3::Run(const ConvShape2D& shape, const float* x, const WinogradEpilogue& epilogue, float* y,
                      ThreadPool& pool) const {
  const int64_t tiles_h = TilesAcross(shape.out_h), tiles_w = TilesAcross(shape.out_w);
  const bool spread = SpreadsPasses(shape);
  const int64_t row_floats = kPlanes * (spread ? maps_ + channels_ : std::max(maps_, channels_)) * tiles_w;
  const int64_t pass_floats = spread ? kMaxSpreadPassFloats : kMaxPassFloats;
  const int64_t passes = PassCount(tiles_h, std::clamp<int64_t>(pass_floats / row_floats, 1, tiles_h), spread);
  const int64_t in_image = channels_ * shape.in_h * shape.in_w, out_image = maps_ * shape.out_h * shape.out_w;
  for (int64_t n = 0; n < shape.batch; ++n) {
    WinogradEpilogue image_epilogue = epilogue;
    if (epilogue.z != nullptr) image_epilogue.z = epilogue.z + n * out_image;
    std::atomic<bool> finite{true};
    auto run_passes = [&](int64_t begin, int64_t end) {
      for (int64_t pass = begin; pass < end && finite.load(std::memory_order_relaxed); ++pass) {
        const int64_t first = PassStart(pass, passes, tiles_h);
        if (!RunTileRows(shape, x + n * in_image, first, PassStart(pass + 1, passes, tiles_h) - first, image_epilogue,
                         y + n * out_image, spread ? nullptr : &pool)) {
          finite.store(false, std::memory_order_relaxed);
        }
      }
    };
    SplitOver(spread ? &pool : nullptr, passes, run_passes);
    if (!finite.load(std::memory_order_relaxed)) return false;
  }
  if (!AppliedAfterStore(epilogue.activation)) return true;
  const int64_t planes = shape.batch * maps_, pixels = shape.out_h * shape.out_w;
  pool.ParallelFor(planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      StopIfRunEnded(pixels);
      ApplyActivation(vec::Kernels(), epilogue.activation, y + plane * pixels, pixels);
    }
  });
  return true;
}

bool Winograd3x3::RunTileRows(const ConvShape2D& shape, const float* x, int64_t first_row, int64_t rows,
                              const WinogradEpilogue& epilogue, float* y, ThreadPool* pool) const {
  const std::vector<PackedRows>& u = TransformedWeights();
  const int64_t tiles_w = TilesAcross(shape.out_w), tiles = rows * tiles_w, plane = shape.in_h * shape.in_w;
  float* v = ThreadScratch(ScratchSlot::kWinogradInput, kPlanes * channels_ * tiles);
  float* m = ThreadScratch(ScratchSlot::kWinogradProduct, kPlanes * maps_ * tiles);
  SplitOver(pool, channels_, [&](int64_t begin, int64_t end) {
    std::vector<float> split(static_cast<size_t>(8 * (tiles_w + 1))), h(static_cast<size_t>(16 * tiles_w));
    for (int64_t c = begin; c < end; ++c) {
      StopIfRunEnded(WorkOf({tiles, kPlanes}));
      for (int64_t tr = 0; tr < rows; ++tr) {
        const float* even[4];
        const float* odd[4];
        for (int r = 0; r < 4; ++r) {
          float* e = split.data() + (2 * r) * (tiles_w + 1);
          float* o = e + tiles_w + 1;
          SplitRow(x + c * plane, shape.in_h, shape.in_w, 2 * (first_row + tr) + r - shape.pad_top, shape.pad_left,
                   tiles_w, e, o);
          even[r] = e;
          odd[r] = o;
        }
        TransformInputRow(even, odd, tiles_w, h.data(), v + c * tiles + tr * tiles_w, channels_ * tiles);
      }
    }
  });
  SplitOver(pool, kPlanes, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      StopIfRunEnded(WorkOf({maps_, channels_, tiles}));
      PackedGemm(u[static_cast<size_t>(p)], tiles, v + p * channels_ * tiles, tiles, m + p * maps_ * tiles, tiles,
                 GemmEpilogue{}, nullptr);
    }
  });
  const bool relu = epilogue.activation.kind == ActivationKind::kRelu;
  std::atomic<bool> finite{true};
  SplitOver(pool, maps_, [&](int64_t begin, int64_t end) {
    std::vector<float> s(static_cast<size_t>(4 * tiles_w)), halves(static_cast<size_t>(2 * tiles_w));
    for (int64_t k = begin; k < end; ++k) {
      StopIfRunEnded(WorkOf({tiles, kPlanes}));
      const float bias = epilogue.bias != nullptr ? epilogue.bias[k] : 0.0f;
      for (int64_t tr = 0; tr < rows; ++tr) {
        for (int r = 0; r < 2; ++r) {
          const int64_t out_row = 2 * (first_row + tr) + r;
          if (out_row >= shape.out_h) break;
          TransformOutputRow(m + k * tiles + tr * tiles_w, maps_ * tiles, tiles_w, r, s.data(), halves.data(),
                             halves.data() + tiles_w);
          const int64_t at = (k * shape.out_h + out_row) * shape.out_w;
          if (!StoreRow(halves.data(), halves.data() + tiles_w, shape.out_w, bias,
                        epilogue.z != nullptr ? epilogue.z + at : nullptr, relu, y + at)) {
            finite.store(false, std::memory_order_relaxed);
          }
        }
      }
    }
  });
  return finite.load(std::memory_order_relaxed);
}

}  // namespace onnxserve

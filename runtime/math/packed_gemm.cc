#include "runtime/math/packed_gemm.h"

#include <algorithm>

#include "runtime/core/run_limits.h"
#include "runtime/math/isa.h"
#include "runtime/math/packed_gemm_kernels.h"
#include "runtime/math/scratch.h"
#include "runtime/math/vector_kernels.h"

namespace onnxserve {
namespace {

using packed::kPanelAlignment;
using packed::kPanelColumns;
using packed::kPanelRows;

// The active instruction set's micro-kernels; only called once PackedGemmSupported() said yes.
const packed::MicroKernels& Kernels() {
  static const packed::MicroKernels& kKernels =
      ActiveIsa() == Isa::kAvx512 ? packed::kAvx512Kernels : packed::kAvx2Kernels;
  return kKernels;
}

// Depth per block: C is read and written once per block, so deeper blocks save C traffic; a B panel's
// block (256 x 48 floats, 48 KiB) is then about L1's size. 128, 192 and 256 measured alike on ResNet-50.
constexpr int64_t kMaxDepthBlock = 256;
// A packed B block (depth block x columns) stays in L2 while every A panel multiplies it.
constexpr int64_t kColumnBlockBytes = int64_t{1} << 20;
// A panels that pass each B panel in a row (64 rows of C), in depth blocks of at least kMinDepthForPasses.
constexpr int64_t kPanelsPerPass = 8;
constexpr int64_t kMinDepthForPasses = 128;
// Below this many multiply-adds (some 10 us of work on AVX-512, 20 on AVX2) a GEMM is not worth splitting:
// handing a share to another thread, which then fetches its operands from the first one's cache and
// leaves its share of C in its own, costs several microseconds where a cache line takes 280 ns to cross
// between cores (a 2-vCPU EPYC VM: 570 ns a round trip). At 2^18 the keyword spotter's pointwise layers
// (64 x 64 x 125, 0.5 M) split and took 1.4-1.9 times as long on two threads as on one.
constexpr int64_t kMinParallelWork = int64_t{1} << 20;
// A matrix-vector product of a weight this large (256 KiB) takes as long as streaming the weight from
// memory, however little arithmetic there is (an MLP at batch 1, 0.4 M multiply-adds for 1.6 MB; a
// squeeze-and-excite 1x1 Conv on a 1x1 map, 13-28 us for 324-920 KB), and two cores stream it twice as
// fast. Its column panels split the same way on every call, so when the weight is reused (a large LSTM's
// steps) each core's L2 keeps its own half. A caller whose weight already sits in its core's L2 (a small
// LSTM's steps, runtime/ops/nn/rnn.cc) passes no pool.
constexpr int64_t kMinParallelWeights = int64_t{1} << 16;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The floats per k of a packed panel of `columns` (at most kPanelColumns) columns.
int64_t PanelWidth(int64_t columns) { return CeilDiv(columns, kPanelAlignment) * kPanelAlignment; }

// Whether MultiplyRange reads a stored B where it lies instead of packing it: when all of B fits in L1
// (a pointwise Conv of a small map: the keyword spotter's 64 x 125), every A panel finds it there either
// way, and packing it cost nearly a tenth of the multiplication. A B that lives in L2 (MobileNet's 96 x
// 196) was no faster unpacked: a row's 48 floats then take four cache lines instead of three.
constexpr int64_t kMaxInPlaceDepth = 128;
constexpr int64_t kMaxInPlaceFloats = int64_t{1} << 13;
bool ReadsInPlace(int64_t depth, int64_t columns) {
  return depth <= kMaxInPlaceDepth && depth * columns <= kMaxInPlaceFloats;
}

// Floats a packed [depth x n] block of B takes: each panel's width rounded up to kPanelAlignment.
int64_t PackedColumnsSize(int64_t depth, int64_t n) { return depth * CeilDiv(n, kPanelAlignment) * kPanelAlignment; }

// Splits `depth` into equal blocks of at most kMaxDepthBlock: 288 + 288, not 256 + 256 + 64, so C is
// revisited as few times as possible and no block is too thin to amortize its C traffic.
int64_t DepthBlock(int64_t depth) {
  return depth == 0 ? 1 : CeilDiv(depth, CeilDiv(depth, kMaxDepthBlock));
}

int64_t ColumnBlock(int64_t depth_block) {
  const int64_t columns = kColumnBlockBytes / (depth_block * static_cast<int64_t>(sizeof(float)));
  return std::max<int64_t>(kPanelColumns, columns / kPanelColumns * kPanelColumns);
}

// The work of chunk [begin, end) of `size` rows or columns split in panels of `panel`: the partial last
// panel costs its width rounded up to `unit` (whole vectors of columns, a whole panel of rows), as the
// micro-kernels run it.
int64_t ChunkWork(int64_t begin, int64_t end, int64_t size, int64_t panel, int64_t unit) {
  end = std::min(end, size);
  const int64_t tail = end == size ? size % panel : 0;
  return end - begin - tail + CeilDiv(tail, unit) * unit;
}

// How much longer than an even share the biggest chunk is when ParallelFor splits `size` rows or columns
// over `threads` in panels of `panel`: chunk c of p panels over t threads is panels [c * p / t,
// (c + 1) * p / t), so 196 columns split 96 + 100 over two threads, not 144 + 52.
double Imbalance(int64_t size, int64_t panel, int64_t unit, int threads) {
  const int64_t panels = CeilDiv(size, panel), chunks = std::min<int64_t>(threads, panels);
  int64_t biggest = 0;
  for (int64_t c = 0; c < chunks; ++c) {
    biggest = std::max(biggest, ChunkWork(c * panels / chunks * panel, (c + 1) * panels / chunks * panel, size,
                                          panel, unit));
  }
  return static_cast<double>(biggest * threads) / static_cast<double>(ChunkWork(0, size, size, panel, unit));
}

// Whether an [m x n] product splits over its column panels (else its row panels). Columns are
// preferred (a row split has each thread pack or stream all of B) unless rows share out clearly more
// evenly, as with a 7x7 map's 49 columns (48 + 1). A B that every thread reads where it lies, in L1,
// costs a row split nothing: the even split wins (the keyword spotter's 125 columns go 48 + 77, its 64
// rows 32 + 32). `column_unit` is what a share of columns is made of: whole panels, or (B packed at load)
// whole vectors.
bool SplitColumns(int64_t m, int64_t n, int threads, int64_t column_unit, bool b_read_in_place) {
  const double column_preference = b_read_in_place ? 1.0 : 1.25;
  return Imbalance(n, column_unit, kPanelAlignment, threads) <=
         column_preference * Imbalance(m, kPanelRows, kPanelRows, threads);
}

// The activations the micro-kernels apply in their registers (PanelOutput); MultiplyTile applies the
// others (the transcendental ones, whose cost dwarfs a pass over a tile in L1).
bool AppliedInRegisters(const Activation& a) {
  switch (a.kind) {
    case ActivationKind::kRelu:
    case ActivationKind::kClip:
    case ActivationKind::kLeakyRelu:
    case ActivationKind::kHardSigmoid:
    case ActivationKind::kHardSwish:
      return true;
    default:
      return false;
  }
}

// Where the tile of C at (row, column) goes in a depth block: the first block writes the product with bias
// and Z, later ones add to it, and the last applies the activation when the micro-kernels can.
packed::PanelOutput OutputAt(float* c, int64_t ldc, int64_t row, int64_t column, const GemmEpilogue& epilogue,
                             bool first, bool last) {
  return {
      .c = c + row * ldc + column,
      .ldc = ldc,
      .accumulate = !first,
      .bias = first && epilogue.bias != nullptr ? epilogue.bias + row : nullptr,
      .z = first && epilogue.z != nullptr ? epilogue.z + row * epilogue.ldz + column : nullptr,
      .ldz = epilogue.ldz,
      .activation = last && AppliedInRegisters(epilogue.activation) ? epilogue.activation : Activation{},
  };
}

// A packed panel's rows as the micro-kernels read them.
packed::RowsOfA PanelRows(const float* panel) { return {.data = panel, .packed = true, .row_stride = 1, .k_stride = kPanelRows}; }

// Multiplies one tile of C and, in the last depth block, applies the activations the micro-kernels leave
// to the caller, while the tile (at most 8 x 48 floats) is still in L1.
void MultiplyTile(const packed::RowsOfA& a, const float* b_panel, int64_t b_stride, int64_t depth, int64_t columns,
                  int rows, const packed::PanelOutput& out, const GemmEpilogue& epilogue, bool last) {
  Kernels().multiply_tile(a, b_panel, b_stride, depth, columns, rows, out);
  if (last && epilogue.activation.kind != ActivationKind::kNone && !AppliedInRegisters(epilogue.activation)) {
    ApplyActivationToRows(vec::Kernels(), epilogue.activation, out.c, rows, columns, out.ldc);
  }
}

// B as stored (b, ldb), or made row by row by `make`.
struct ColumnSource {
  const float* b = nullptr;
  int64_t ldb = 0;
  const ColumnRowFn* make = nullptr;
};

// Packs B's rows [k, k + block_depth) x columns [column, column + columns) into `packed`, from B as stored
// or made row by row into `made`.
void PackBlock(const ColumnSource& source, int64_t k, int64_t block_depth, int64_t column, int64_t columns,
               float* made, float* packed) {
  if (source.make == nullptr) {
    return Kernels().pack_columns(source.b + k * source.ldb + column, source.ldb, block_depth, columns, packed);
  }
  for (int64_t row = 0; row < block_depth; ++row) {
    (*source.make)(k + row, column, columns, made);
    Kernels().pack_columns_row(made, columns, block_depth, row, packed);
  }
}

// A depth block of B as the micro-kernels read it: packed panels (ldb 0), or B's rows where they lie.
struct BlockOfB {
  const float* data = nullptr;  // the packed block, or B at the block's first row and column
  int64_t ldb = 0;
  const float* Panel(int64_t j, int64_t block_depth) const { return ldb == 0 ? data + j * block_depth : data + j; }
  int64_t Stride(int64_t tile_columns) const { return ldb == 0 ? PanelWidth(tile_columns) : ldb; }
};

// C rows [panel_begin * 8, panel_end * 8) x columns [column, column + columns) += depth block [k, k +
// block_depth) of the product.
void MultiplyBlock(const PackedRows& a, int64_t panel_begin, int64_t panel_end, int64_t k, int64_t block_depth,
                   int64_t column, int64_t columns, const BlockOfB& b, float* c, int64_t ldc,
                   const GemmEpilogue& epilogue) {
  StopIfRunEnded(block_depth * columns * (panel_end - panel_begin) * kPanelRows);
  const bool first = k == 0, last = k + block_depth == a.depth();
  // A few A panels at a time: each B panel (block_depth x 48) stays in L1 while they pass it, and the
  // C rows they write stay few enough for the cache and the TLB. A shallow block does little work per
  // tile of C, so C's traffic matters more: one A panel at a time then walks C row by row.
  const int64_t panels_per_pass = block_depth >= kMinDepthForPasses ? kPanelsPerPass : 1;
  for (int64_t p_begin = panel_begin; p_begin < panel_end; p_begin += panels_per_pass) {
    const int64_t p_end = std::min(panel_end, p_begin + panels_per_pass);
    for (int64_t j = 0; j < columns; j += kPanelColumns) {
      const int64_t tile_columns = std::min<int64_t>(kPanelColumns, columns - j);
      for (int64_t p = p_begin; p < p_end; ++p) {
        const int64_t row = p * kPanelRows;
        const int rows = static_cast<int>(std::min<int64_t>(kPanelRows, a.rows() - row));
        MultiplyTile(PanelRows(a.panel(p, k)), b.Panel(j, block_depth), b.Stride(tile_columns), block_depth,
                     tile_columns, rows, OutputAt(c, ldc, row, column + j, epilogue, first, last), epilogue, last);
      }
    }
  }
}

// Calls fn(k, block_depth) for each depth block of `depth`: at least one, even of depth 0, so that C =
// bias + z still gets written.
template <typename Fn>
void ForEachDepthBlock(int64_t depth, Fn fn) {
  const int64_t depth_block = DepthBlock(depth);
  int64_t k = 0;
  do {
    const int64_t block_depth = std::min(depth_block, depth - k);
    fn(k, block_depth);
    k += block_depth;
  } while (k < depth);
}

// A product of a packed W and 1 to 8 columns of a stored B (a squeeze-and-excitation 1x1 Conv on a 1x1
// map) streams W and takes as long as that stream; B, packed to a vector a row, took 16 times its size.
// Read where it lies (a 960-deep column: 4 KiB, in L1), with W one stream in memory order (PackedRows),
// MobileNet's 240 x 960 SE Convs took 40% less time. B must lie compact for that: rows at most a vector
// apart, and no deeper than kMaxThinDepth.
constexpr int64_t kMaxThinDepth = 4096;

bool IsThin(const ColumnSource& source, int64_t columns, int64_t depth) {
  return source.make == nullptr && source.ldb <= kPanelAlignment && columns <= packed::kMaxNarrowColumns &&
         depth > DepthBlock(depth) && depth <= kMaxThinDepth;
}

// C rows [panel_begin * 8, panel_end * 8) x columns [column_begin, column_end), each block of B packed
// by the calling thread just before it is multiplied.
void MultiplyRange(const PackedRows& a, int64_t panel_begin, int64_t panel_end, int64_t column_begin,
                   int64_t column_end, const ColumnSource& source, float* c, int64_t ldc,
                   const GemmEpilogue& epilogue) {
  const int64_t depth_block = DepthBlock(a.depth()), column_block = ColumnBlock(depth_block);
  const bool in_place = source.make == nullptr && (ReadsInPlace(a.depth(), column_end - column_begin) ||
                                                   IsThin(source, column_end - column_begin, a.depth()));
  float* packed =
      in_place ? nullptr : ThreadScratch(ScratchSlot::kPackedBlock, PackedColumnsSize(depth_block, column_block));
  float* made = source.make != nullptr ? ThreadScratch(ScratchSlot::kMadeRow, column_block) : nullptr;
  for (int64_t column = column_begin; column < column_end; column += column_block) {
    const int64_t columns = std::min(column_block, column_end - column);
    ForEachDepthBlock(a.depth(), [&](int64_t k, int64_t block_depth) {
      if (in_place) {
        const BlockOfB stored{.data = source.b + k * source.ldb + column, .ldb = source.ldb};
        return MultiplyBlock(a, panel_begin, panel_end, k, block_depth, column, columns, stored, c, ldc, epilogue);
      }
      PackBlock(source, k, block_depth, column, columns, made, packed);
      MultiplyBlock(a, panel_begin, panel_end, k, block_depth, column, columns, {.data = packed}, c, ldc, epilogue);
    });
  }
}

// Most floats of B a row split packs once for all threads (4 MiB, which the calling thread then keeps as
// scratch; a 7x7 map's 3x3 Conv of 512 channels takes 1.2 MiB); a bigger B is packed block by block by
// each thread.
constexpr int64_t kMaxSharedColumnFloats = int64_t{1} << 20;
// Fewer floats than this (a 1x1 map's squeeze-and-excite vector) pack faster than a second hand-off.
constexpr int64_t kMinSharedColumnFloats = int64_t{1} << 15;

// Whether a row split packs all of B once, shared, instead of each thread packing all of it: B fits in
// one column block (so the threads' blocks are the very ones a lone thread packs) and is worth a hand-off.
bool PacksColumnsOnce(int64_t depth, int64_t n) {
  if (n > ColumnBlock(DepthBlock(depth))) return false;
  const int64_t floats = PackedColumnsSize(depth, n);  // at most 2^18 columns of a depth that W's size bounds
  return floats >= kMinSharedColumnFloats && floats <= kMaxSharedColumnFloats;
}

// The row split of a product whose B all threads multiply (PacksColumnsOnce, so depth > 0): the pool packs
// B's depth blocks once, each block by one thread, into the caller's scratch, then splits A's row panels
// over the packed blocks. Each thread made and packed all of a 7x7 map's im2col before, some tenth of the
// 3x3 Conv's time.
void MultiplyRowsOfSharedColumns(const PackedRows& a, int64_t n, const ColumnSource& source, float* c, int64_t ldc,
                                 const GemmEpilogue& epilogue, ThreadPool& pool) {
  const int64_t depth = a.depth(), depth_block = DepthBlock(depth);
  float* packed = ThreadScratch(ScratchSlot::kSharedColumns, PackedColumnsSize(depth, n));
  pool.ParallelFor(CeilDiv(depth, depth_block), 1, [&](int64_t begin, int64_t end) {
    float* made = source.make != nullptr ? ThreadScratch(ScratchSlot::kMadeRow, n) : nullptr;
    for (int64_t block = begin; block < end; ++block) {
      const int64_t k = block * depth_block;
      PackBlock(source, k, std::min(depth_block, depth - k), 0, n, made, packed + PackedColumnsSize(k, n));
    }
  });
  pool.ParallelFor(CeilDiv(a.rows(), kPanelRows), 1, [&](int64_t begin, int64_t end) {
    ForEachDepthBlock(depth, [&](int64_t k, int64_t block_depth) {
      MultiplyBlock(a, begin, end, k, block_depth, 0, n, {.data = packed + PackedColumnsSize(k, n)}, c, ldc,
                    epilogue);
    });
  });
}

void MultiplyOverPool(const PackedRows& a, int64_t n, const ColumnSource& b, float* c, int64_t ldc,
                      const GemmEpilogue& epilogue, ThreadPool* pool) {
  const int64_t panels = CeilDiv(a.rows(), kPanelRows);
  if (panels == 0 || n == 0) return;
  const int64_t column_panels = CeilDiv(n, kPanelColumns);
  const int threads = pool != nullptr ? pool->num_threads() : 1;
  const int64_t weights = a.rows() * a.depth();
  if (threads == 1 || (weights * n < kMinParallelWork && weights < kMinParallelWeights)) {
    return MultiplyRange(a, 0, panels, 0, n, b, c, ldc, epilogue);
  }
  // Columns split best (each thread packs only its own B), unless rows share out more evenly (a 7x7
  // map's 2 column panels, 48 + 1 columns): B is then packed once for all threads when it is big enough
  // to be worth it, else by each thread.
  const bool b_read_in_place = b.make == nullptr && ReadsInPlace(a.depth(), n);
  if (SplitColumns(a.rows(), n, threads, kPanelColumns, b_read_in_place)) {
    pool->ParallelFor(column_panels, 1, [&](int64_t begin, int64_t end) {
      MultiplyRange(a, 0, panels, begin * kPanelColumns, std::min(n, end * kPanelColumns), b, c, ldc, epilogue);
    });
  } else if (PacksColumnsOnce(a.depth(), n)) {
    MultiplyRowsOfSharedColumns(a, n, b, c, ldc, epilogue, *pool);
  } else {
    pool->ParallelFor(panels, 1, [&](int64_t begin, int64_t end) {
      MultiplyRange(a, begin, end, 0, n, b, c, ldc, epilogue);
    });
  }
}

// Calls fn(column, columns) for each tile of C's columns [column_begin, column_end) when B was packed at
// load: a tile never crosses a panel, so a range that starts inside one (512 columns split 256 + 256 over
// 48-column panels) starts with that panel's rest.
template <typename Fn>
void ForEachColumnTile(int64_t column_begin, int64_t column_end, Fn fn) {
  for (int64_t column = column_begin, columns = 0; column < column_end; column += columns) {
    const int64_t panel = column / kPanelColumns * kPanelColumns;
    columns = std::min(panel + kPanelColumns, column_end) - column;
    fn(column, columns);
  }
}

// Whether MultiplyColumnRange reads A where it lies instead of packing its rows: the wide micro-kernels
// broadcast A's values from any layout at the same speed, so packing (2-3% of an MLP's time) only pays
// for the narrow kernel, which loads a packed panel's 8 rows as one vector.
bool ReadsRowsInPlace(int64_t column_begin, int64_t column_end) {
  bool narrow = false;
  ForEachColumnTile(column_begin, column_end,
                    [&](int64_t, int64_t columns) { narrow = narrow || columns <= packed::kMaxNarrowColumns; });
  return !narrow;
}

// C rows [row_begin, row_end) x columns [column_begin, column_end) (column_begin a multiple of
// kPanelAlignment), B packed at load. Per depth block, each B panel's slice stays in L1/L2 while every
// panel of A's rows passes; A's rows are read where they lie, or packed once per block for narrow tiles.
//
// A matrix-vector product (one panel of rows, read where they lie) instead runs panel by panel over every
// depth block: B, which it only streams, is then read in memory order, one run the prefetchers keep, where
// block by block it was short runs a panel apart (MobileNet's 1280 x 1000 classifier). Each element of C
// still sums its depth blocks in order, through the same tile calls.
void MultiplyColumnRange(const float* a, int64_t lda, bool transposed_a, int64_t row_begin, int64_t row_end,
                         const PackedColumns& b, int64_t column_begin, int64_t column_end, float* c, int64_t ldc,
                         const GemmEpilogue& epilogue) {
  const int64_t depth = b.depth(), depth_block = DepthBlock(depth);
  const int64_t row_panels = CeilDiv(row_end - row_begin, kPanelRows);
  const bool in_place = ReadsRowsInPlace(column_begin, column_end);
  float* packed = in_place ? nullptr : ThreadScratch(ScratchSlot::kPackedBlock, row_panels * kPanelRows * depth_block);
  const int64_t row_stride = transposed_a ? 1 : lda, k_stride = transposed_a ? lda : 1;
  const auto rows_at = [&](int64_t k) { return a + row_begin * row_stride + k * k_stride; };  // A's rows from k
  // The tiles of depth block [k, k + block_depth) in columns [column, column + columns), one per panel of rows.
  const auto multiply = [&](int64_t k, int64_t block_depth, int64_t column, int64_t columns) {
    const bool first = k == 0, last = k + block_depth == depth;
    const int64_t panel = column / kPanelColumns * kPanelColumns;
    const int64_t width = PanelWidth(std::min<int64_t>(kPanelColumns, b.columns() - panel));
    const float* b_tile = b.data() + panel * depth + k * width + (column - panel);
    const float* block = rows_at(k);
    for (int64_t p = 0; p < row_panels; ++p) {
      const int64_t row = row_begin + p * kPanelRows;
      const int rows = static_cast<int>(std::min<int64_t>(kPanelRows, row_end - row));
      const packed::RowsOfA rows_of_a =
          in_place ? packed::RowsOfA{.data = block + p * kPanelRows * row_stride,
                                     .packed = false,
                                     .row_stride = row_stride,
                                     .k_stride = k_stride}
                   : PanelRows(packed + p * kPanelRows * block_depth);
      MultiplyTile(rows_of_a, b_tile, width, block_depth, columns, rows,
                   OutputAt(c, ldc, row, column, epilogue, first, last), epilogue, last);
    }
  };
  if (in_place && row_panels == 1) {
    return ForEachColumnTile(column_begin, column_end, [&](int64_t column, int64_t columns) {
      ForEachDepthBlock(depth, [&](int64_t k, int64_t block_depth) {
        StopIfRunEnded(block_depth * (row_end - row_begin) * columns);
        multiply(k, block_depth, column, columns);
      });
    });
  }
  ForEachDepthBlock(depth, [&](int64_t k, int64_t block_depth) {
    if (!in_place) {
      Kernels().pack_rows(rows_at(k), lda, transposed_a, row_end - row_begin, block_depth, packed);
    }
    StopIfRunEnded(block_depth * (row_end - row_begin) * (column_end - column_begin));
    ForEachColumnTile(column_begin, column_end,
                      [&](int64_t column, int64_t columns) { multiply(k, block_depth, column, columns); });
  });
}

}  // namespace

bool PackedGemmSupported() { return ActiveIsa() >= Isa::kAvx2; }

void GatherRow(const float* src, int64_t stride, int64_t n, float* dst) { Kernels().gather_row(src, stride, n, dst); }

PackedRows::PackedRows(const float* a, int64_t rows, int64_t depth, int64_t lda)
    : rows_(rows),
      depth_(depth),
      panels_(CeilDiv(rows, kPanelRows)),
      depth_block_(DepthBlock(depth)),
      data_(DataType::kFloat, {panels_ * kPanelRows * depth}) {
  float* out = data_.data<float>();
  ForEachDepthBlock(depth_, [&](int64_t k_begin, int64_t block_depth) {
    for (int64_t row = 0; row < rows_; row += kPanelRows) {
      for (int64_t k = k_begin; k < k_begin + block_depth; ++k) {
        for (int64_t r = row; r < row + kPanelRows; ++r) *out++ = r < rows_ ? a[r * lda + k] : 0.0f;
      }
    }
  });
}

const float* PackedRows::panel(int64_t p, int64_t k) const {
  const int64_t block_depth = std::min(depth_block_, depth_ - k);
  return data_.data<float>() + (k * panels_ + p * block_depth) * kPanelRows;
}

void PackedGemm(const PackedRows& a, int64_t n, const float* b, int64_t ldb, float* c, int64_t ldc,
                const GemmEpilogue& epilogue, ThreadPool* pool) {
  MultiplyOverPool(a, n, {.b = b, .ldb = ldb}, c, ldc, epilogue, pool);
}

void PackedGemm(const PackedRows& a, int64_t n, ColumnRowFn rows, float* c, int64_t ldc,
                const GemmEpilogue& epilogue, ThreadPool* pool) {
  MultiplyOverPool(a, n, {.make = &rows}, c, ldc, epilogue, pool);
}

PackedColumns::PackedColumns(const float* b, int64_t depth, int64_t columns, int64_t ldb, bool transposed,
                             float scale)
    : depth_(depth), columns_(columns), data_(DataType::kFloat, {depth * CeilDiv(columns, kPanelAlignment) * kPanelAlignment}) {
  float* out = data_.data<float>();
  for (int64_t column = 0; column < columns; column += kPanelColumns) {
    const int64_t width = std::min<int64_t>(kPanelColumns, CeilDiv(columns - column, kPanelAlignment) * kPanelAlignment);
    for (int64_t k = 0; k < depth; ++k) {
      for (int64_t j = column; j < column + width; ++j) {
        *out++ = j >= columns ? 0.0f : scale * (transposed ? b[j * ldb + k] : b[k * ldb + j]);
      }
    }
  }
}

void PackedGemm(const float* a, int64_t m, int64_t lda, bool transposed_a, const PackedColumns& b, float* c,
                int64_t ldc, const GemmEpilogue& epilogue, ThreadPool* pool) {
  const int64_t n = b.columns(), row_panels = CeilDiv(m, kPanelRows);
  if (m == 0 || n == 0) return;
  const int threads = pool != nullptr ? pool->num_threads() : 1;
  const int64_t weights = n * b.depth();
  if (threads == 1 || (m * weights < kMinParallelWork && weights < kMinParallelWeights)) {
    return MultiplyColumnRange(a, lda, transposed_a, 0, m, b, 0, n, c, ldc, epilogue);
  }
  // B's columns split best (each thread streams only its share of the weights), in whole vectors rather
  // than panels (an MLP's 512 columns go 256 + 256, not 240 + 272), unless rows share out more evenly. The
  // last share takes the columns past the last whole vector: cut off alone, a few would go to the narrow
  // kernel, whose separate sums change the last bits against one thread's.
  if (SplitColumns(m, n, threads, kPanelAlignment, /*b_read_in_place=*/false)) {
    const int64_t vectors = std::max<int64_t>(1, n / kPanelAlignment);
    pool->ParallelFor(vectors, 1, [&](int64_t begin, int64_t end) {
      MultiplyColumnRange(a, lda, transposed_a, 0, m, b, begin * kPanelAlignment,
                          end == vectors ? n : end * kPanelAlignment, c, ldc, epilogue);
    });
  } else {
    pool->ParallelFor(row_panels, 1, [&](int64_t begin, int64_t end) {
      MultiplyColumnRange(a, lda, transposed_a, begin * kPanelRows, std::min(m, end * kPanelRows), b, 0, n, c,
                          ldc, epilogue);
    });
  }
}

}  // namespace onnxserve

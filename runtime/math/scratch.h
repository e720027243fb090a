// Per-thread scratch memory for the math kernels, kept across calls: a run multiplies and convolves many
// blocks of one size, so after the first block of a size no call allocates.
#pragma once

#include <cstdint>

namespace onnxserve {

// Who uses a scratch buffer; each has its own per thread, so one caller's buffer survives another's use.
enum class ScratchSlot {
  kPackedBlock,
  kMadeRow,
  kSharedColumns,
  kGroupPlanes,
  kFlatMap,
  kDnnlSource,       // a band of X in oneDNN's layout (dnnl_conv.cc)
  kDnnlDestination,  // its output band before the reorder into Y
  kDnnlScratchpad,   // the primitive's own scratchpad
  kWinogradInput,    // transformed input patches (winograd.cc)
  kWinogradProduct,  // their products with the transformed weights
  kPrologueWindow,   // a band's window of a prologue's output (nhwc_conv.cc)
  kCount
};

// At least `floats` floats (at most 2^60), 64-byte aligned, owned by the calling thread and valid until its
// next call with the same slot. Contents are unspecified. Throws std::bad_alloc when memory runs out.
float* ThreadScratch(ScratchSlot slot, int64_t floats);

}  // namespace onnxserve

// The size limits every fuzz target runs under. The server's defaults (2^32 elements, 16 GiB a tensor) are
// meant for real machines; under ASan a fuzzer that reached them would spend its time in page faults or die
// of the RSS limit. With the limits lowered, a hostile shape still goes through exactly the checks it meets
// in production (CheckedElementCount, Tensor::Create, the kernels' own checks), only with a smaller bound,
// so the fuzzers see every input and skip none.
#pragma once

#include <cstdint>
#include <cstdlib>

#include "runtime/core/checked_size.h"

namespace onnxserve::fuzz {

inline constexpr SizeLimits kFuzzSizeLimits{.max_elements = int64_t{1} << 24, .max_bytes = int64_t{1} << 28};

// Sets kFuzzSizeLimits once per process; call it at the top of LLVMFuzzerTestOneInput (the replay tests call
// that function without libFuzzer's LLVMFuzzerInitialize).
inline void UseFuzzSizeLimits() {
  static const bool applied = SetSizeLimits(kFuzzSizeLimits).ok();
  if (!applied) std::abort();
}

}  // namespace onnxserve::fuzz

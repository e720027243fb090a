// Which x86-64 instruction set the hand-written kernels use. The CPU decides, once per process; the
// environment variable ONNXSERVE_ISA (baseline, avx2 or avx512) may lower it, so that every path can be
// tested and measured on one machine. A value naming more than the CPU has is capped at what it has.
#pragma once

#include <optional>
#include <string_view>

namespace onnxserve {

// Ordered: each level includes the ones below it.
enum class Isa { kBaseline, kAvx2, kAvx512 };

// The best level this CPU runs: kAvx512 needs AVX-512F, kAvx2 needs AVX2 and FMA.
Isa DetectedIsa();

// The level kernels dispatch on: DetectedIsa(), lowered by ONNXSERVE_ISA when it is set.
Isa ActiveIsa();

std::string_view IsaName(Isa isa);
std::optional<Isa> ParseIsa(std::string_view name);

}  // namespace onnxserve

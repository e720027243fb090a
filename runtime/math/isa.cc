#include "runtime/math/isa.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace onnxserve {
namespace {

Isa ChooseIsa() {
  const Isa detected = DetectedIsa();
  const char* forced = std::getenv("ONNXSERVE_ISA");
  if (forced == nullptr || *forced == '\0') return detected;
  const std::optional<Isa> parsed = ParseIsa(forced);
  if (!parsed) {
    std::fprintf(stderr, "onnxserve: ignoring ONNXSERVE_ISA=%s (expected baseline, avx2 or avx512)\n", forced);
    return detected;
  }
  return std::min(*parsed, detected);
}

}  // namespace

Isa DetectedIsa() {
  static const Isa kDetected = __builtin_cpu_supports("avx512f")                                    ? Isa::kAvx512
                               : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? Isa::kAvx2
                                                                                                 : Isa::kBaseline;
  return kDetected;
}

Isa ActiveIsa() {
  static const Isa kActive = ChooseIsa();
  return kActive;
}

std::string_view IsaName(Isa isa) {
  switch (isa) {
    case Isa::kBaseline:
      return "baseline";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "unknown";
}

std::optional<Isa> ParseIsa(std::string_view name) {
  for (Isa isa : {Isa::kBaseline, Isa::kAvx2, Isa::kAvx512}) {
    if (name == IsaName(isa)) return isa;
  }
  return std::nullopt;
}

}  // namespace onnxserve

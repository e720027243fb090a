#include "runtime/math/vector_kernels.h"

#include "runtime/math/isa.h"

namespace onnxserve::vec {

const VectorKernels& Kernels() {
  static const VectorKernels& kActive = KernelsFor(ActiveIsa());
  return kActive;
}

const VectorKernels& KernelsFor(Isa isa) {
  switch (isa < DetectedIsa() ? isa : DetectedIsa()) {
    case Isa::kAvx512:
      return kAvx512Kernels;
    case Isa::kAvx2:
      return kAvx2Kernels;
    case Isa::kBaseline:
      break;
  }
  return kBaselineKernels;
}

}  // namespace onnxserve::vec

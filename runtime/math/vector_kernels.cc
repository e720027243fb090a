#include "runtime/math/vector_kernels.h"

#include "runtime/math/isa.h"

namespace onnxserve::vec {

const VectorKernels& Kernels() {
  static const VectorKernels& kActive = ActiveIsa() == Isa::kAvx512 ? kAvx512Kernels
                                        : ActiveIsa() == Isa::kAvx2 ? kAvx2Kernels
                                                                    : kBaselineKernels;
  return kActive;
}

}  // namespace onnxserve::vec

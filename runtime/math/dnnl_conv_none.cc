// Built without oneDNN: every convolution stays on our kernels.
#include "runtime/math/dnnl_conv.h"

namespace onnxserve {

std::unique_ptr<DnnlConv> DnnlConv::Create(const DnnlConvWeights&) { return nullptr; }

}  // namespace onnxserve

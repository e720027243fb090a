#include "runtime/math/dnnl_common.h"

#include <algorithm>

#include "runtime/math/isa.h"

namespace onnxserve {

bool LimitDnnlIsaOnce() {
  static const bool kLimited = [] {
    try {
      dnnl::set_max_cpu_isa(ActiveIsa() == Isa::kAvx512 ? dnnl::cpu_isa::avx512_core : dnnl::cpu_isa::avx2);
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return kLimited;
}

dnnl::memory::desc PlainWindow(int64_t channels, int64_t rows, int64_t cols, int64_t height, int64_t width) {
  return dnnl::memory::desc({1, channels, rows, cols}, dnnl::memory::data_type::f32,
                            dnnl::memory::dims{channels * height * width, height * width, width, 1});
}

RowWindow WindowOf(int64_t r0, int64_t rows, int64_t in, int64_t stride, int64_t dilation, int64_t kernel,
                   int64_t pad) {
  const int64_t first = r0 * stride - pad, last = (r0 + rows - 1) * stride - pad + (kernel - 1) * dilation + 1;
  return {std::max<int64_t>(first, 0), std::min(last, in), std::max<int64_t>(-first, 0),
          std::max<int64_t>(last - in, 0)};
}

dnnl::memory ReorderedWeights(const dnnl::memory::desc& desc, const dnnl::memory::desc& plain, const float* w,
                              const dnnl::engine& engine) {
  dnnl::memory weights(desc, engine);
  dnnl::memory source(plain, engine, const_cast<float*>(w));
  dnnl::stream stream(engine);
  dnnl::reorder(source, weights).execute(stream, source, weights);
  stream.wait();
  return weights;
}

}  // namespace onnxserve

#include "runtime/math/scratch.h"

#include <cstdlib>

namespace onnxserve {
namespace {

struct Buffer {
  float* data = nullptr;
  int64_t size = 0;
  ~Buffer() { std::free(data); }
};

}  // namespace

float* ThreadScratch(ScratchSlot slot, int64_t floats) {
  thread_local Buffer buffers[static_cast<int>(ScratchSlot::kCount)];
  Buffer& buffer = buffers[static_cast<int>(slot)];
  if (buffer.size < floats) {
    std::free(buffer.data);
    const size_t bytes = static_cast<size_t>(floats) * sizeof(float);
    buffer.data = static_cast<float*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
    buffer.size = floats;
  }
  return buffer.data;
}

}  // namespace onnxserve

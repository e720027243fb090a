#include "runtime/math/scratch.h"

#include <cstdlib>
#include <new>

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
    const size_t bytes = static_cast<size_t>(floats) * sizeof(float);
    // Thrown, not returned as null: ParallelFor hands it to the caller, whose run then fails, and the
    // buffer keeps the size it has.
    auto* data = static_cast<float*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
    if (data == nullptr) throw std::bad_alloc();
    std::free(buffer.data);
    buffer.data = data;
    buffer.size = floats;
  }
  return buffer.data;
}

}  // namespace onnxserve

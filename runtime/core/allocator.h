// Aligned buffers for tensor storage, recycled so that steady-state inference with known shapes allocates
// nothing from the system: a buffer released after its last use is handed to a later request of its size or
// a little smaller (within a run, or in the next run), the most recently released first.
#pragma once

#include <cstddef>
#include <memory>

namespace onnxserve {

inline constexpr size_t kTensorAlignment = 64;

// Returns uninitialized storage of at least `bytes`, aligned to kTensorAlignment, owned by the shared_ptr.
// Thread-safe. The cache holds at most CachedBytesLimit() of free buffers; past that they go back to the
// system. Inside a budgeted run the buffer's rounded size is charged to the run's account until the buffer
// is freed, and a buffer past the budget throws MemoryBudgetExceeded (runtime/core/memory_budget.h).
std::shared_ptr<void> AllocateBuffer(size_t bytes);

size_t CachedBytesLimit();

}  // namespace onnxserve

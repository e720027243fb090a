// Concatenation shared by Concat and ConcatFromSequence.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "runtime/core/tensor.h"
#include "runtime/core/thread_pool.h"

namespace onnxserve {

// Joins `inputs` (at least one, of one type and rank, equal in every dim but `axis`) along `axis`, in
// [-rank, rank). Errors name the input that does not fit; the output's size is checked before allocating.
absl::StatusOr<Tensor> ConcatAlongAxis(const std::vector<const Tensor*>& inputs, int64_t axis, ThreadPool& pool);

}  // namespace onnxserve

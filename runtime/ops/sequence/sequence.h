// What the sequence and optional kernels share: reading a sequence input, a position, and keeping one
// element type per sequence.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "runtime/core/value.h"
#include "runtime/registry/kernel.h"

namespace onnxserve {

// Input i as a sequence: an error naming it when it is omitted or of another kind.
absl::StatusOr<const Value*> SequenceInput(const KernelContext& ctx, int i);

// Input i as a position (SequenceAt, SequenceInsert, SequenceErase): an int32 or int64 scalar (or 1-element
// 1-D tensor); nullopt when the input is omitted.
absl::StatusOr<std::optional<int64_t>> PositionInput(const KernelContext& ctx, int i);

// The element type a sequence's tensors share: its own, else its first element's; kUndefined for an empty
// sequence that knows none.
DataType SequenceElementType(const Value& sequence);

// RESOURCE_EXHAUSTED when a sequence of `length` values would pass kMaxSequenceLength.
absl::Status CheckSequenceLength(int64_t length);

// `tensor` may join a sequence whose tensors are of `elem_type` (kUndefined: any).
absl::Status CheckJoins(DataType elem_type, const Tensor& tensor, const char* what);

}  // namespace onnxserve

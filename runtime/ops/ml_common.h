// What the ai.onnx.ml models share: score post-transforms and attributes given either as a list of floats or,
// from ai.onnx.ml opset 3, as a double-precision tensor (`*_as_tensor`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/registry/kernel.h"

namespace onnxserve {

// What happens to a row of scores before it is written (named in the attributes as "NONE", "SOFTMAX", ...;
// TreeEnsemble-5 numbers them in this order).
enum class PostTransform { kNone, kSoftmax, kLogistic, kSoftmaxZero, kProbit };

absl::StatusOr<PostTransform> ParsePostTransform(const std::string& name);
absl::StatusOr<PostTransform> PostTransformFromIndex(int64_t index);
// Applies `transform` to one row of scores in place. SOFTMAX_ZERO leaves exact zeros at zero and normalizes
// the rest; PROBIT is the inverse of the standard normal CDF.
void ApplyPostTransform(PostTransform transform, absl::Span<double> scores);

// The elements of a floating-point tensor as doubles; an error naming `what` for other types.
absl::StatusOr<std::vector<double>> FloatingValues(const Tensor& t, const std::string& what);
// The attribute `name` as doubles: `name_as_tensor` (a tensor of any float type) when the node has it, else
// the float list `name`, else empty.
absl::StatusOr<std::vector<double>> DoublesAttr(const KernelInfo& info, const std::string& name);

}  // namespace onnxserve

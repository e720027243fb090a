#include "cli/limit_options.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "runtime/core/checked_size.h"

namespace onnxserve::cli {

OptionTable TensorLimitOptions() {
  const SizeLimits defaults;
  return {
      {.name = "max-tensor-elements", .kind = ValueKind::kInt, .value_name = "N",
       .help = "most elements one tensor may have, from an input or computed by a model; past it the run or "
               "request fails (RESOURCE_EXHAUSTED)",
       .default_value = absl::StrCat(defaults.max_elements), .min = 1, .max = kMaxSettableElements},
      {.name = "max-tensor-bytes", .kind = ValueKind::kInt, .value_name = "N",
       .help = "most bytes of storage one tensor may take", .default_value = absl::StrCat(defaults.max_bytes),
       .min = 1, .max = INT64_MAX},
  };
}

absl::Status ApplyTensorLimits(const Args& args) {
  return SetSizeLimits({args.Int("max-tensor-elements"), args.Int("max-tensor-bytes")});
}

}  // namespace onnxserve::cli

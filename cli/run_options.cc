#include "cli/run_options.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "runtime/core/checked_size.h"
#include "runtime/core/status_macros.h"

namespace onnxserve::cli {

OptionTable RunOptions() {
  const SizeLimits defaults;
  return {
      {.name = "threads", .kind = ValueKind::kInt, .value_name = "N", .help = "intra-op threads",
       .default_value = "1", .min = 1, .max = 256},
      {.name = "max-tensor-elements", .kind = ValueKind::kInt, .value_name = "N",
       .help = "most elements one tensor may have", .default_value = absl::StrCat(defaults.max_elements), .min = 1,
       .max = kMaxSettableElements},
      {.name = "max-tensor-bytes", .kind = ValueKind::kInt, .value_name = "N",
       .help = "most bytes of storage one tensor may take", .default_value = absl::StrCat(defaults.max_bytes),
       .min = 1, .max = INT64_MAX},
      {.name = "memory-budget-bytes", .kind = ValueKind::kInt, .value_name = "N",
       .help = "most bytes of tensors one run may hold at once; 0: no budget", .default_value = "0", .min = 0,
       .max = INT64_MAX},
  };
}

absl::StatusOr<SessionOptions> ApplyRunOptions(const Args& args) {
  RETURN_IF_ERROR(SetSizeLimits({args.Int("max-tensor-elements"), args.Int("max-tensor-bytes")}));
  SessionOptions options;
  options.intra_op_threads = static_cast<int>(args.Int("threads"));
  options.memory_budget_bytes = args.Int("memory-budget-bytes");
  return options;
}

}  // namespace onnxserve::cli

#include "cli/run_options.h"

#include <cstdint>

#include "cli/limit_options.h"
#include "runtime/core/status_macros.h"

namespace onnxserve::cli {

OptionTable RunOptions() {
  return Join(TensorLimitOptions(),
              {
                  {.name = "threads", .kind = ValueKind::kInt, .value_name = "N", .help = "intra-op threads",
                   .default_value = "1", .min = 1, .max = 256},
                  {.name = "memory-budget-bytes", .kind = ValueKind::kInt, .value_name = "N",
                   .help = "most bytes of tensors one run may hold at once; 0: no budget", .default_value = "0",
                   .min = 0, .max = INT64_MAX},
              });
}

absl::StatusOr<SessionOptions> ApplyRunOptions(const Args& args) {
  RETURN_IF_ERROR(ApplyTensorLimits(args));
  SessionOptions options;
  options.intra_op_threads = static_cast<int>(args.Int("threads"));
  options.memory_budget_bytes = args.Int("memory-budget-bytes");
  return options;
}

}  // namespace onnxserve::cli

#include "cli/run_options.h"

#include <cstdint>

#include "runtime/core/checked_size.h"
#include "runtime/core/status_macros.h"

namespace onnxserve::cli {

std::vector<std::string> RunOptionNames() {
  return {"threads", "max-tensor-elements", "max-tensor-bytes", "memory-budget-bytes"};
}

absl::StatusOr<SessionOptions> ApplyRunOptions(const Args& args) {
  const SizeLimits defaults;
  SizeLimits limits;
  ASSIGN_OR_RETURN(limits.max_elements,
                   args.GetInt("max-tensor-elements", defaults.max_elements, 1, kMaxSettableElements));
  ASSIGN_OR_RETURN(limits.max_bytes, args.GetInt("max-tensor-bytes", defaults.max_bytes, 1, INT64_MAX));
  RETURN_IF_ERROR(SetSizeLimits(limits));
  SessionOptions options;
  ASSIGN_OR_RETURN(int64_t threads, args.GetInt("threads", 1, 1, 256));
  options.intra_op_threads = static_cast<int>(threads);
  ASSIGN_OR_RETURN(options.memory_budget_bytes, args.GetInt("memory-budget-bytes", 0, 0, INT64_MAX));
  return options;
}

}  // namespace onnxserve::cli

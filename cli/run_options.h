// The options run and bench share: intra-op threads and what one run may allocate. They carry the names of
// serve's flags (--max-tensor-elements, --max-tensor-bytes), so that a model can be tried locally under the
// limits it will be served with.
#pragma once

#include "absl/status/statusor.h"
#include "cli/args.h"
#include "runtime/exec/session.h"

namespace onnxserve::cli {

// --threads, --max-tensor-elements, --max-tensor-bytes, --memory-budget-bytes.
OptionTable RunOptions();

// Sets the process-wide per-tensor limits from --max-tensor-elements and --max-tensor-bytes (before the model
// loads: they bound loading too) and returns the session options from --threads and --memory-budget-bytes.
absl::StatusOr<SessionOptions> ApplyRunOptions(const Args& args);

}  // namespace onnxserve::cli

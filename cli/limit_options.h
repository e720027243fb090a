// --max-tensor-elements and --max-tensor-bytes, the process-wide per-tensor limits, as serve, run and bench
// spell them: a model is tried locally under the limits it will be served with.
#pragma once

#include "absl/status/status.h"
#include "cli/args.h"

namespace onnxserve::cli {

OptionTable TensorLimitOptions();

// Sets the process-wide limits from a command line parsed with TensorLimitOptions(). Runs before any model
// loads: the limits also bound what loading allocates (initializers, constant folding).
absl::Status ApplyTensorLimits(const Args& args);

}  // namespace onnxserve::cli

// Triton's model_warmup: sample requests a model version runs after it loads and before it is published,
// so that it answers READY (ModelReady, health, RepositoryIndex) only once warm, and a reload keeps the old
// version serving until the new one is. The instances of a version share one Session, so one pass warms
// them all.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "model_config.pb.h"
#include "server/servable/servable.h"

namespace onnxserve::server {

// Runs every model_warmup sample of the completed `config` `count` times (at least once) on `model`, one run
// at a time, each bounded as the model bounds its runs. A sample must give each model input exactly once, with
// the config's data_type and concrete dims that fit the config's, zero_data or random_data (input_data_file is
// not supported), a batch_size of 1 to max_batch_size (1 without batching), a count of at most 1000, and
// inputs of at most `max_sample_bytes` in all (what a request may carry: the server's --max-request-bytes).
// Errors name the sample and the input; a failed run fails the warmup.
absl::Status Warmup(const inference::ModelConfig& config, Servable& model, int64_t max_sample_bytes = 64 << 20);

}  // namespace onnxserve::server

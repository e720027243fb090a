// Fuzz target: one byte picking a model version (batched or not) + a serialized ModelInferRequest -> the
// server's decode step (names, types, shapes, batch size, raw and typed payloads) -> a run of what decodes.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/protocol/infer_codec.h"
#include "server/serving/config.h"
#include "tests/fuzz/fuzz_limits.h"
#include "tests/fuzz/fuzz_models.h"

namespace onnxserve::server {
namespace {

// What the repository builds for a loaded version, minus the scheduler: the decode step needs the completed
// config and the specs derived from it.
std::unique_ptr<ModelVersion> MakeVersion(bool batching) {
  auto mv = std::make_unique<ModelVersion>();
  mv->name = "mixed";
  mv->version = 1;
  mv->version_str = absl::StrCat(mv->version);  // not = "1": g++ 12 warns (-Wrestrict) on that assignment here
  mv->session = fuzz::MixedSession();
  if (mv->session == nullptr) std::abort();
  // Without a config.pbtxt the server turns batching on (every first dim is dynamic); an empty file keeps it off.
  if (!CompleteModelConfig(mv->name, *mv->session, /*from_file=*/!batching, mv->config).ok()) std::abort();
  mv->inputs = InputSpecs(mv->config);
  mv->outputs = OutputSpecs(mv->config);
  return mv;
}

int RunOne(const uint8_t* data, size_t size) {
  static const std::unique_ptr<ModelVersion> unbatched = MakeVersion(false);
  static const std::unique_ptr<ModelVersion> batched = MakeVersion(true);
  if (size == 0) return 0;
  const ModelVersion& mv = (data[0] & 1) ? *batched : *unbatched;
  auto wire = std::make_shared<inference::ModelInferRequest>();
  if (!wire->ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
  ServableRequest request;
  if (!DecodeInputs(mv, wire, request).ok()) return 0;
  if (request.rows < 0 || (mv.config.max_batch_size() > 0 && request.rows > mv.config.max_batch_size())) {
    __builtin_trap();  // the decoder let through a batch the scheduler cannot hold
  }
  // What the batcher would run: every decoded input by name, in the model's order.
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (size_t k = 0; k < mv.inputs.size(); ++k) feeds.emplace_back(mv.inputs[k].name, request.inputs[k]);
  auto outputs = mv.session->Run(feeds);
  if (!outputs.ok()) __builtin_trap();  // decoded inputs must fit the model they were checked against
  return 0;
}

}  // namespace
}  // namespace onnxserve::server

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnxserve::fuzz::UseFuzzSizeLimits();
  return onnxserve::server::RunOne(data, size);
}

// ModelInfer's request and response (the KServe v2 wire form, gRPC's and REST's alike) translated to and from
// what a model version's servable runs. Decoding is the one validation of a request: after it, nothing checks
// the inputs, the requested outputs, the priority or the deadline again.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpc_service.pb.h"
#include "server/serving/repository.h"
#include "server/servable/servable.h"

namespace onnxserve::server {

// Fills `request.inputs` (in the model's input order) and `request.rows` from the wire request, checking
// names, types, shapes, batch size and payload sizes against the version's completed config. Numbers in
// raw_input_contents are not copied: their tensors read the message's bytes in place and share its ownership,
// so it lives as long as any of them does (TensorFromRaw). Exposed so that tests/fuzz/infer_request_fuzz.cc
// can drive it without gRPC.
absl::Status DecodeInputs(const ModelVersion& mv, const std::shared_ptr<const inference::ModelInferRequest>& wire,
                          ServableRequest& request);

// A wire request decoded against the version it names: what its servable runs, and the outputs (indices into
// the version's) its response carries.
struct DecodedInfer {
  ServableRequest request;
  std::vector<size_t> outputs;
};

// DecodeInputs, then the requested outputs (all when none is named, each at most once), the priority level and
// the deadline: the earliest of `control.deadline` and the level's queue timeout from `arrival`.
// INVALID_ARGUMENT names what is wrong.
absl::StatusOr<DecodedInfer> DecodeInfer(const ModelVersion& mv,
                                         const std::shared_ptr<const inference::ModelInferRequest>& wire,
                                         CallControl control, absl::Time arrival);

// Fills `response` with the `picked` outputs (DecodedInfer::outputs) of `outputs` (every output of `mv`, in its
// order) as raw contents. RESOURCE_EXHAUSTED, `response` left empty, when they would take more than
// `max_bytes` (checked before they are copied) or raw form cannot hold one (AppendRaw).
absl::Status EncodeInferResponse(const ModelVersion& mv, const std::string& id, const std::vector<size_t>& picked,
                                 const std::vector<Tensor>& outputs, size_t max_bytes,
                                 inference::ModelInferResponse& response);

}  // namespace onnxserve::server

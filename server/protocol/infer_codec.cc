#include "server/protocol/infer_codec.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/core/status_macros.h"
#include "server/serving/datatype.h"
#include "server/serving/request_parameters.h"

namespace onnxserve::server {
namespace {

using inference::ModelInferRequest;
using inference::ModelInferResponse;

std::string Described(const TensorSpec& spec) {
  const char* type = KServeDataType(spec.dtype);
  return absl::StrCat(type ? type : "?", " ", ShapeToString(spec.dims));
}

bool ShapeMatches(const Shape& expected, const Shape& got) {
  if (expected.size() != got.size()) return false;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] < 0 || (expected[i] >= 0 && expected[i] != got[i])) return false;
  }
  return true;
}

// Decodes one request input into the tensor its spec expects.
absl::StatusOr<Tensor> DecodeInput(const ModelVersion& mv, const TensorSpec& spec,
                                   const ModelInferRequest::InferInputTensor& input, const std::string* raw,
                                   const std::shared_ptr<const ModelInferRequest>& wire) {
  const Shape shape(input.shape().begin(), input.shape().end());
  auto dtype = DataTypeFromKServe(input.datatype());
  if (!dtype.ok() || *dtype != spec.dtype || !ShapeMatches(spec.dims, shape)) {
    return absl::InvalidArgumentError(absl::StrCat("input \"", spec.name, "\": expected ", Described(spec),
                                                   ", got ", input.datatype(), " ", ShapeToString(shape)));
  }
  const int64_t max_batch = mv.config.max_batch_size();
  if (max_batch > 0 && shape[0] > max_batch) {
    return absl::InvalidArgumentError(absl::StrCat("input \"", spec.name, "\": batch size ", shape[0],
                                                   " exceeds max_batch_size ", max_batch, " of model \"",
                                                   mv.name, "\""));
  }
  if (raw != nullptr) {
    if (input.has_contents()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input \"", spec.name, "\": has both contents and raw_input_contents; send one form"));
    }
    return TensorFromRaw(spec.name, *dtype, shape, *raw, wire);
  }
  return TensorFromContents(spec.name, *dtype, shape, input.contents());
}


// Why `name` is not among the served outputs: not an output of the model, or one that is not a tensor.
absl::Status UnservedOutput(const ModelVersion& mv, const std::string& name) {
  const Session& session = *mv.session;
  for (size_t i = 0; i < session.outputs().size(); ++i) {
    if (session.outputs()[i].name == name && !session.outputs()[i].is_tensor) {
      return absl::InvalidArgumentError(absl::StrCat("output \"", name, "\" of model \"", mv.name, "\" is ",
                                                     session.output_types()[i].DebugString(),
                                                     ", not a tensor: the server serves tensor outputs only"));
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown output \"", name, "\" requested from model \"", mv.name, "\""));
}

// Indices (into the model's outputs) of the requested outputs; all of them when none is named.
absl::StatusOr<std::vector<size_t>> RequestedOutputs(const ModelVersion& mv, const ModelInferRequest& wire) {
  std::vector<size_t> picked;
  for (const auto& out : wire.outputs()) {
    // gRPC and REST alike (REST copies output parameters into the wire request): a parameter that would change
    // the answer is never silently dropped.
    if (out.parameters().contains("classification")) {
      return absl::UnimplementedError("the classification extension is not supported");
    }
    size_t k = 0;
    while (k < mv.outputs.size() && mv.outputs[k].name != out.name()) ++k;
    if (k == mv.outputs.size()) return UnservedOutput(mv, out.name());
    // Each copy would cost the response the output's bytes again: a few bytes of names could ask for
    // gigabytes (REST answers have no size bound but the outputs'), as Triton refuses.
    if (std::find(picked.begin(), picked.end(), k) != picked.end()) {
      return absl::InvalidArgumentError(absl::StrCat("output \"", out.name(), "\" is requested twice"));
    }
    picked.push_back(k);
  }
  if (picked.empty()) {
    for (size_t k = 0; k < mv.outputs.size(); ++k) picked.push_back(k);
  }
  return picked;
}

// The earliest of the client's deadline and the timeout of the request's priority level (QueueTimeout).
absl::StatusOr<absl::Time> DeadlineOf(const ModelVersion& mv, const ModelInferRequest& wire, uint32_t level,
                                      absl::Time client_deadline, absl::Time arrival) {
  ASSIGN_OR_RETURN(absl::Duration timeout,
                   QueueTimeout(QueuePolicyOf(mv.config.dynamic_batching(), level), wire.parameters()));
  return std::min(client_deadline, arrival + timeout);
}

}  // namespace

absl::Status DecodeInputs(const ModelVersion& mv, const std::shared_ptr<const ModelInferRequest>& shared_wire,
                          ServableRequest& request) {
  const ModelInferRequest& wire = *shared_wire;
  const int raw_count = wire.raw_input_contents_size();
  if (raw_count != 0 && raw_count != wire.inputs_size()) {
    return absl::InvalidArgumentError(absl::StrCat("raw_input_contents has ", raw_count, " entries for ",
                                                   wire.inputs_size(), " inputs; expected one per input"));
  }
  request.inputs.assign(mv.inputs.size(), Tensor());
  for (int i = 0; i < wire.inputs_size(); ++i) {
    const auto& input = wire.inputs(i);
    size_t k = 0;
    while (k < mv.inputs.size() && mv.inputs[k].name != input.name()) ++k;
    if (k == mv.inputs.size()) {
      std::vector<std::string> names;
      for (const auto& spec : mv.inputs) names.push_back(spec.name);
      return absl::InvalidArgumentError(absl::StrCat("unknown input \"", input.name(), "\": model \"", mv.name,
                                                     "\" has inputs ", absl::StrJoin(names, ", ")));
    }
    if (request.inputs[k].defined()) {
      return absl::InvalidArgumentError(absl::StrCat("input \"", input.name(), "\" is given twice"));
    }
    ASSIGN_OR_RETURN(request.inputs[k], DecodeInput(mv, mv.inputs[k], input,
                                                    raw_count ? &wire.raw_input_contents(i) : nullptr, shared_wire));
  }
  for (size_t k = 0; k < mv.inputs.size(); ++k) {
    if (!request.inputs[k].defined()) {
      return absl::InvalidArgumentError(absl::StrCat("missing input \"", mv.inputs[k].name, "\": model \"",
                                                     mv.name, "\" expects ", Described(mv.inputs[k])));
    }
  }
  request.rows = 1;
  if (mv.config.max_batch_size() > 0 && !request.inputs.empty()) {
    request.rows = request.inputs[0].dim(0);
    for (size_t k = 1; k < request.inputs.size(); ++k) {
      if (request.inputs[k].dim(0) != request.rows) {
        return absl::InvalidArgumentError(absl::StrCat(
            "inputs disagree on the batch size: \"", mv.inputs[0].name, "\" has ", request.rows, ", \"",
            mv.inputs[k].name, "\" has ", request.inputs[k].dim(0)));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<DecodedInfer> DecodeInfer(const ModelVersion& mv,
                                         const std::shared_ptr<const ModelInferRequest>& shared_wire,
                                         CallControl control, absl::Time arrival) {
  const ModelInferRequest& wire = *shared_wire;
  DecodedInfer decoded;
  ServableRequest& request = decoded.request;
  RETURN_IF_ERROR(DecodeInputs(mv, shared_wire, request));
  ASSIGN_OR_RETURN(decoded.outputs, RequestedOutputs(mv, wire));
  ASSIGN_OR_RETURN(request.priority_level, PriorityLevel(mv.config.dynamic_batching(), wire.parameters()));
  ASSIGN_OR_RETURN(control.deadline, DeadlineOf(mv, wire, request.priority_level, control.deadline, arrival));
  request.arrival = arrival;
  request.control = std::move(control);
  return decoded;
}

namespace {

// The bytes `tensor` takes in raw form (a BYTES element: its 4-byte length, then its characters).
size_t RawBytes(const Tensor& tensor) {
  if (tensor.dtype() != DataType::kString) return static_cast<size_t>(tensor.ByteSize());
  size_t bytes = 0;
  for (const auto& s : tensor.values<std::string>()) bytes += 4 + s.size();
  return bytes;
}

absl::Status TooLargeToSend(size_t bytes, size_t max_bytes) {
  return absl::ResourceExhaustedError(absl::StrCat(
      "the response takes ", bytes, " bytes, more than the ", max_bytes,
      " one response of this protocol can carry; ask for fewer outputs, or over REST with binary data"));
}

}  // namespace

absl::Status EncodeInferResponse(const ModelVersion& mv, const std::string& id, const std::vector<size_t>& picked,
                                 const std::vector<Tensor>& outputs, size_t max_bytes,
                                 ModelInferResponse& response) {
  size_t raw_bytes = 0;
  for (size_t k : picked) {
    raw_bytes += RawBytes(outputs[k]);  // each within the tensor limits, so the sum cannot wrap
    if (raw_bytes > max_bytes) return TooLargeToSend(raw_bytes, max_bytes);
  }
  response.set_model_name(mv.name);
  response.set_model_version(mv.version_str);
  response.set_id(id);
  for (size_t k : picked) {
    const Tensor& tensor = outputs[k];
    auto* out = response.add_outputs();
    out->set_name(mv.outputs[k].name);
    out->set_datatype(KServeDataType(tensor.dtype()));
    for (int64_t d : tensor.shape()) out->add_shape(d);
    if (absl::Status appended = AppendRaw(tensor, *response.add_raw_output_contents()); !appended.ok()) {
      response.Clear();
      return appended;
    }
  }
  // Names, shapes and the client's id come on top of the raw contents.
  if (const size_t bytes = response.ByteSizeLong(); bytes > max_bytes) {
    response.Clear();
    return TooLargeToSend(bytes, max_bytes);
  }
  return absl::OkStatus();
}

}  // namespace onnxserve::server

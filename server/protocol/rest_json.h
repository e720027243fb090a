// The KServe v2 REST forms of inference requests and responses (JSON tensors, and Triton's binary tensor data
// extension) as conversions to and from the gRPC messages. Decode and encode only: a REST request becomes a
// ModelInferRequest that InferenceService::Infer validates, batches and limits exactly as a gRPC one, and its
// ModelInferResponse becomes the REST answer. Nothing here throws on bad input; callers still catch
// std::bad_alloc, as every request path does.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "grpc_service.pb.h"

namespace onnxserve::server {

// A decoded REST inference request: the gRPC request (every input in raw_input_contents, whether it came as
// JSON data or binary data) and how the client wants each output back.
struct RestInferRequest {
  inference::ModelInferRequest wire;  // model_name and model_version are the caller's (they are in the URL)
  std::map<std::string, bool> binary_outputs;  // outputs[i].parameters.binary_data, by output name
  bool binary_by_default = false;              // parameters.binary_data_output: for outputs not in the map

  bool OutputIsBinary(const std::string& name) const;
};

// `body` is the whole request body; `header_length` the Inference-Header-Content-Length header when the
// request has one: the JSON is then that many leading bytes, and the binary data of the inputs with a
// `binary_data_size` parameter follows in input order. INVALID_ARGUMENT names what is malformed: bad JSON,
// a header length past the body, an element count that disagrees with the shape (checked before any tensor
// is built), a value that does not fit its datatype, binary data that is short or left over. FP16 and BF16
// inputs must come as binary data, as in Triton.
absl::StatusOr<RestInferRequest> DecodeRestInferRequest(std::string_view body,
                                                        std::optional<std::string_view> header_length);

// A REST answer's body; json_bytes is set when binary output data follows the JSON (the value of the
// Inference-Header-Content-Length response header).
struct RestBody {
  std::string body;
  std::optional<size_t> json_bytes;
};

// `response` as KServe v2 JSON: outputs whose `request` asks for binary data are appended after the JSON in
// output order (their `parameters.binary_data_size` says how much), the others carry their elements flat in
// `data`. FP16 and BF16 outputs must be asked for as binary data (INVALID_ARGUMENT otherwise), as in Triton.
absl::StatusOr<RestBody> EncodeRestInferResponse(const inference::ModelInferResponse& response,
                                                 const RestInferRequest& request);

// The client side: `request` (every input in raw_input_contents) as a REST request body. With `binary_data`
// the inputs go as Triton's binary tensor data and every output is asked for as binary data
// (parameters.binary_data_output); otherwise the inputs go as JSON and the outputs come back as JSON.
absl::StatusOr<RestBody> EncodeRestInferRequest(const inference::ModelInferRequest& request, bool binary_data);

// A message as JSON as Triton's REST API writes it: field names as in the .proto, fields at their default
// values included, 64-bit integers as JSON numbers (protobuf's JSON mapping writes them as strings).
nlohmann::json ProtoToJson(const google::protobuf::Message& message);

// `value` as text; strings that are not valid UTF-8 (a BYTES element, a name from a client) get U+FFFD for
// the bad bytes instead of failing.
std::string DumpJson(const nlohmann::json& value);

}  // namespace onnxserve::server

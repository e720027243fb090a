#include "server/protocol/rest_json.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "runtime/core/checked_size.h"
#include "runtime/core/status_macros.h"
#include "server/protocol/rest_json_data.h"
#include "server/serving/datatype.h"

namespace onnxserve::server {
namespace {

using nlohmann::json;

absl::Status Invalid(absl::string_view what) { return absl::InvalidArgumentError(what); }

// The member `key` of `object`, or nullptr when it has none.
const json* Member(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// The JSON part of the body: all of it, or the Inference-Header-Content-Length leading bytes.
absl::StatusOr<size_t> JsonHeaderBytes(size_t body_bytes, std::optional<std::string_view> header_length) {
  if (!header_length) return body_bytes;
  uint64_t bytes = 0;
  if (!absl::SimpleAtoi(std::string(*header_length), &bytes) || bytes > body_bytes) {
    return Invalid(absl::StrCat("Inference-Header-Content-Length must be a byte count within the body of ",
                                body_bytes, " bytes"));
  }
  return static_cast<size_t>(bytes);
}

// The bytes to reserve for the raw form of an input's JSON `data` of `elements` scalars (the first pass's
// count), once that count matches `shape`: checked before the second pass writes any element.
absl::StatusOr<size_t> CheckJsonData(const std::string& name, DataType type, const std::string& datatype,
                                     absl::Span<const int64_t> shape, int64_t elements) {
  if (type == DataType::kFloat16 || type == DataType::kBFloat16) {
    return Invalid(absl::StrCat("input \"", name, "\": ", datatype,
                                " data cannot be sent as JSON; send it as binary data (binary_data_size)"));
  }
  ASSIGN_OR_RETURN(int64_t expected, CheckedElementCount(shape));
  if (elements != expected) {
    return Invalid(absl::StrCat("input \"", name, "\": data has ", elements, " elements, the shape ",
                                ShapeToString(Shape(shape.begin(), shape.end())), " holds ", expected));
  }
  return type == DataType::kString ? 0 : static_cast<size_t>(elements) * ElementSize(type);
}

// ---- the request ------------------------------------------------------------------------------------------

// A request or input parameter as the gRPC message carries it.
absl::StatusOr<inference::InferParameter> ParameterFromJson(const std::string& key, const json& value) {
  inference::InferParameter parameter;
  if (value.is_boolean()) {
    parameter.set_bool_param(value.get<bool>());
  } else if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      parameter.set_int64_param(static_cast<int64_t>(u));
    } else {
      parameter.set_uint64_param(u);
    }
  } else if (value.is_number_integer()) {
    parameter.set_int64_param(value.get<int64_t>());
  } else if (value.is_number_float()) {
    parameter.set_double_param(value.get<double>());
  } else if (value.is_string()) {
    parameter.set_string_param(value.get<std::string>());
  } else {
    return Invalid(absl::StrCat("parameter \"", key, "\" must be a bool, a number or a string"));
  }
  return parameter;
}

// Copies `parameters` (a JSON object, when present) into `out`, leaving out the binary data extension's own
// keys, which only this side reads.
absl::Status CopyParameters(const json* parameters, google::protobuf::Map<std::string, inference::InferParameter>& out) {
  if (parameters == nullptr) return absl::OkStatus();
  if (!parameters->is_object()) return Invalid("parameters must be a JSON object");
  for (const auto& item : parameters->items()) {
    if (item.key() == "binary_data_size" || item.key() == "binary_data_output" || item.key() == "binary_data") {
      continue;
    }
    ASSIGN_OR_RETURN(out[item.key()], ParameterFromJson(item.key(), item.value()));
  }
  return absl::OkStatus();
}

// The boolean parameter `key` of `parameters`, or `fallback` when it is absent.
absl::StatusOr<bool> BoolParameter(const json* parameters, const char* key, bool fallback) {
  if (parameters == nullptr || !parameters->is_object()) return fallback;
  const json* value = Member(*parameters, key);
  if (value == nullptr) return fallback;
  if (!value->is_boolean()) return Invalid(absl::StrCat("parameter \"", key, "\" must be true or false"));
  return value->get<bool>();
}

// The shape of an input: non-negative integers, as many as a tensor may have.
absl::StatusOr<std::vector<int64_t>> ShapeFromJson(const std::string& name, const json* shape) {
  if (shape == nullptr || !shape->is_array() || shape->size() > static_cast<size_t>(kMaxDataDepth)) {
    return Invalid(absl::StrCat("input \"", name, "\": shape must be an array of at most ", kMaxDataDepth,
                                " dims"));
  }
  std::vector<int64_t> dims;
  for (const json& dim : *shape) {
    if (!dim.is_number_unsigned() || dim.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Invalid(absl::StrCat("input \"", name, "\": shape must hold integers >= 0"));
    }
    dims.push_back(static_cast<int64_t>(dim.get<uint64_t>()));
  }
  return dims;
}

// The binary data of an input: the next `size` bytes of `binary`, which then starts past them.
absl::StatusOr<std::string_view> TakeBinary(const std::string& name, const json& size, std::string_view& binary) {
  if (!size.is_number_unsigned()) {
    return Invalid(absl::StrCat("input \"", name, "\": binary_data_size must be an integer >= 0"));
  }
  const uint64_t bytes = size.get<uint64_t>();
  if (bytes > binary.size()) {
    return Invalid(absl::StrCat("input \"", name, "\": binary_data_size ", bytes, " is past the ", binary.size(),
                                " bytes of binary data left in the body"));
  }
  std::string_view taken = binary.substr(0, bytes);
  binary.remove_prefix(bytes);
  return taken;
}

// One element of `inputs`, whose JSON data the first pass counted `data_elements` scalars of: into wire.inputs
// and wire.raw_input_contents. Returns where the second pass writes its JSON data; nullopt for binary data.
absl::StatusOr<std::optional<DataTarget>> DecodeInput(const json& input, int64_t data_elements,
                                                      std::string_view& binary, inference::ModelInferRequest& wire) {
  if (!input.is_object()) return Invalid("every element of inputs must be a JSON object");
  const json* name = Member(input, "name");
  const json* datatype = Member(input, "datatype");
  if (name == nullptr || !name->is_string() || datatype == nullptr || !datatype->is_string()) {
    return Invalid("every input needs a string name and a string datatype");
  }
  auto* tensor = wire.add_inputs();
  tensor->set_name(name->get<std::string>());
  tensor->set_datatype(datatype->get<std::string>());
  ASSIGN_OR_RETURN(std::vector<int64_t> shape, ShapeFromJson(tensor->name(), Member(input, "shape")));
  for (int64_t dim : shape) tensor->add_shape(dim);
  const json* parameters = Member(input, "parameters");
  RETURN_IF_ERROR(CopyParameters(parameters, *tensor->mutable_parameters()));
  const json* binary_size = parameters != nullptr && parameters->is_object()
                                ? Member(*parameters, "binary_data_size") : nullptr;
  const json* data = Member(input, "data");
  if ((binary_size == nullptr) == (data == nullptr)) {
    return Invalid(absl::StrCat("input \"", tensor->name(),
                                "\": give either data or parameters.binary_data_size, not both or neither"));
  }
  if (binary_size != nullptr) {
    ASSIGN_OR_RETURN(std::string_view raw, TakeBinary(tensor->name(), *binary_size, binary));
    wire.add_raw_input_contents(raw.data(), raw.size());  // the service checks its size against the shape
    return std::nullopt;
  }
  ASSIGN_OR_RETURN(DataType type, DataTypeFromKServe(tensor->datatype()));
  ASSIGN_OR_RETURN(const size_t bytes, CheckJsonData(tensor->name(), type, tensor->datatype(), shape, data_elements));
  std::string* raw = wire.add_raw_input_contents();  // stays in place as more are added
  raw->reserve(bytes);
  return DataTarget{tensor->name(), tensor->datatype(), type, raw};
}

// `outputs`: the names the reply is limited to, and which of them come back as binary data.
absl::Status DecodeRequestedOutputs(const json* outputs, RestInferRequest& request) {
  if (outputs == nullptr) return absl::OkStatus();
  if (!outputs->is_array()) return Invalid("outputs must be a JSON array");
  for (const json& output : *outputs) {
    const json* name = output.is_object() ? Member(output, "name") : nullptr;
    if (name == nullptr || !name->is_string()) return Invalid("every requested output needs a string name");
    // Its other parameters travel on to the codec, which refuses the classification extension for both
    // protocols (infer_codec.cc).
    const json* parameters = Member(output, "parameters");
    ASSIGN_OR_RETURN(bool binary, BoolParameter(parameters, "binary_data", request.binary_by_default));
    request.binary_outputs[name->get<std::string>()] = binary;
    auto* wanted = request.wire.add_outputs();
    wanted->set_name(name->get<std::string>());
    RETURN_IF_ERROR(CopyParameters(parameters, *wanted->mutable_parameters()));
  }
  return absl::OkStatus();
}

// ---- the response -----------------------------------------------------------------------------------------

template <typename T>
T ReadElement(const char* bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof(T));
  return value;
}

// The elements of a raw BYTES tensor as JSON strings.
absl::StatusOr<json> StringsToJson(const std::string& name, std::string_view raw) {
  json data = json::array();
  while (!raw.empty()) {
    if (raw.size() < 4) return absl::InternalError(absl::StrCat("output \"", name, "\": truncated BYTES element"));
    const uint32_t length = ReadElement<uint32_t>(raw.data());
    raw.remove_prefix(4);
    if (length > raw.size()) return absl::InternalError(absl::StrCat("output \"", name, "\": truncated BYTES element"));
    data.push_back(std::string(raw.substr(0, length)));
    raw.remove_prefix(length);
  }
  return data;
}

template <typename T>
json ElementsToJson(std::string_view raw) {
  json data = json::array();
  for (size_t offset = 0; offset + sizeof(T) <= raw.size(); offset += sizeof(T)) {
    data.push_back(ReadElement<T>(raw.data() + offset));
  }
  return data;
}

// The elements of raw tensor `name`, flat, as Triton writes them.
absl::StatusOr<json> RawToJsonData(const std::string& name, const std::string& datatype, std::string_view raw) {
  ASSIGN_OR_RETURN(DataType type, DataTypeFromKServe(datatype));
  switch (type) {
    case DataType::kBool: {
      json data = json::array();
      for (char byte : raw) data.push_back(byte != 0);
      return data;
    }
    case DataType::kUint8: return ElementsToJson<uint8_t>(raw);
    case DataType::kUint16: return ElementsToJson<uint16_t>(raw);
    case DataType::kUint32: return ElementsToJson<uint32_t>(raw);
    case DataType::kUint64: return ElementsToJson<uint64_t>(raw);
    case DataType::kInt8: return ElementsToJson<int8_t>(raw);
    case DataType::kInt16: return ElementsToJson<int16_t>(raw);
    case DataType::kInt32: return ElementsToJson<int32_t>(raw);
    case DataType::kInt64: return ElementsToJson<int64_t>(raw);
    case DataType::kFloat: return ElementsToJson<float>(raw);
    case DataType::kDouble: return ElementsToJson<double>(raw);
    case DataType::kString: return StringsToJson(name, raw);
    default:
      return Invalid(absl::StrCat("tensor \"", name, "\": ", datatype,
                                  " data cannot be sent as JSON; send it as binary data (binary_data)"));
  }
}

// Rewrites the 64-bit integer fields of `object` (a message of `type` in protobuf's JSON form) as numbers.
void Int64FieldsAsNumbers(const google::protobuf::Descriptor& type, json& object);

void Int64ValueAsNumber(const google::protobuf::FieldDescriptor& field, json& value) {
  using google::protobuf::FieldDescriptor;
  if (!value.is_string() && field.cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) return;
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT64: {
      int64_t number = 0;
      if (absl::SimpleAtoi(value.get_ref<const std::string&>(), &number)) value = number;
      break;
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      uint64_t number = 0;
      if (absl::SimpleAtoi(value.get_ref<const std::string&>(), &number)) value = number;
      break;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE: Int64FieldsAsNumbers(*field.message_type(), value); break;
    default: break;
  }
}

void Int64FieldsAsNumbers(const google::protobuf::Descriptor& type, json& object) {
  if (!object.is_object()) return;
  for (int i = 0; i < type.field_count(); ++i) {
    const google::protobuf::FieldDescriptor& field = *type.field(i);
    auto it = object.find(field.name());
    if (it == object.end()) continue;
    if (field.is_map()) {
      for (auto& entry : it->items()) Int64ValueAsNumber(*field.message_type()->map_value(), entry.value());
    } else if (field.is_repeated()) {
      for (json& element : *it) Int64ValueAsNumber(field, element);
    } else {
      Int64ValueAsNumber(field, *it);
    }
  }
}

// A tensor (an input of a request or an output of a response) as REST JSON: its elements in `data`, or, when
// `as_binary`, appended to `binary` with their size in parameters.binary_data_size.
template <typename Tensor>
absl::StatusOr<json> EncodeTensor(const Tensor& tensor, const std::string& raw, bool as_binary, std::string& binary) {
  json encoded = {{"name", tensor.name()}, {"datatype", tensor.datatype()},
                  {"shape", std::vector<int64_t>(tensor.shape().begin(), tensor.shape().end())}};
  if (as_binary) {
    encoded["parameters"] = {{"binary_data_size", raw.size()}};
    binary += raw;
  } else {
    ASSIGN_OR_RETURN(encoded["data"], RawToJsonData(tensor.name(), tensor.datatype(), raw));
  }
  return encoded;
}

// An element written as JSON costs the server a document node (16 bytes) and up to 25 bytes of text, where
// binary data costs it 1 to 8: a request asking for a model's large output as JSON (a uint8 mask of 1 G
// elements: some 40 GB) could exhaust the server's memory. Past this many JSON elements per response the
// outputs must be asked for as binary data.
constexpr int64_t kMaxJsonOutputElements = int64_t{1} << 24;

// Adds `output`'s elements to `total`; RESOURCE_EXHAUSTED once that passes kMaxJsonOutputElements.
absl::Status CountJsonElements(const inference::ModelInferResponse::InferOutputTensor& output, int64_t& total) {
  const absl::StatusOr<int64_t> elements = CheckedElementCount(output.shape(), kMaxJsonOutputElements);
  if (elements.ok() && *elements <= kMaxJsonOutputElements - total) {
    total += *elements;
    return absl::OkStatus();
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "output \"", output.name(), "\" brings the elements answered as JSON past ", kMaxJsonOutputElements,
      "; ask for it as binary data (parameters binary_data_output or binary_data)"));
}

// `doc` as text, followed by `binary` when some tensor went as binary data (even an empty one: the reader then
// still gets the Inference-Header-Content-Length it looks for).
RestBody JoinBody(const json& doc, const std::string& binary, bool any_binary) {
  RestBody out;
  out.body = DumpJson(doc);
  if (any_binary) {
    out.json_bytes = out.body.size();
    out.body += binary;
  }
  return out;
}

}  // namespace

bool RestInferRequest::OutputIsBinary(const std::string& name) const {
  auto it = binary_outputs.find(name);
  return it == binary_outputs.end() ? binary_by_default : it->second;
}

absl::StatusOr<RestInferRequest> DecodeRestInferRequest(std::string_view body,
                                                        std::optional<std::string_view> header_length) {
  ASSIGN_OR_RETURN(size_t json_bytes, JsonHeaderBytes(body.size(), header_length));
  const std::string_view text = body.substr(0, json_bytes);
  ASSIGN_OR_RETURN(const RequestDocument parsed, ParseRequestDocument(text));
  const json& doc = parsed.document;
  if (!doc.is_object()) return Invalid("the request is not a JSON object");
  RestInferRequest request;
  if (const json* id = Member(doc, "id"); id != nullptr) {
    if (!id->is_string()) return Invalid("id must be a string");
    request.wire.set_id(id->get<std::string>());
  }
  const json* parameters = Member(doc, "parameters");
  ASSIGN_OR_RETURN(request.binary_by_default, BoolParameter(parameters, "binary_data_output", false));
  RETURN_IF_ERROR(CopyParameters(parameters, *request.wire.mutable_parameters()));
  const json* inputs = Member(doc, "inputs");
  if (inputs == nullptr || !inputs->is_array()) return Invalid("inputs must be a JSON array");
  std::string_view binary = body.substr(json_bytes);
  std::vector<std::optional<DataTarget>> targets;
  for (size_t i = 0; i < inputs->size(); ++i) {
    const int64_t data_elements = i < parsed.data_elements.size() ? parsed.data_elements[i] : 0;
    ASSIGN_OR_RETURN(std::optional<DataTarget> target, DecodeInput((*inputs)[i], data_elements, binary, request.wire));
    targets.push_back(std::move(target));
  }
  if (!binary.empty()) {
    return Invalid(absl::StrCat(binary.size(), " bytes of binary data follow the inputs' binary_data_size total"));
  }
  RETURN_IF_ERROR(ReadRequestData(text, targets));
  RETURN_IF_ERROR(DecodeRequestedOutputs(Member(doc, "outputs"), request));
  return request;
}

absl::StatusOr<RestBody> EncodeRestInferResponse(const inference::ModelInferResponse& response,
                                                 const RestInferRequest& request) {
  json doc = {{"model_name", response.model_name()}, {"model_version", response.model_version()}};
  if (!response.id().empty()) doc["id"] = response.id();
  json outputs = json::array();
  std::string binary;
  bool any_binary = false;
  int64_t json_elements = 0;
  for (int i = 0; i < response.outputs_size(); ++i) {
    const auto& output = response.outputs(i);
    const bool as_binary = request.OutputIsBinary(output.name());
    any_binary |= as_binary;
    if (!as_binary) RETURN_IF_ERROR(CountJsonElements(output, json_elements));
    ASSIGN_OR_RETURN(json encoded, EncodeTensor(output, response.raw_output_contents(i), as_binary, binary));
    outputs.push_back(std::move(encoded));
  }
  doc["outputs"] = std::move(outputs);
  return JoinBody(doc, binary, any_binary);
}

absl::StatusOr<RestBody> EncodeRestInferRequest(const inference::ModelInferRequest& request, bool binary_data) {
  if (request.raw_input_contents_size() != request.inputs_size()) {
    return Invalid("a REST request is encoded from raw_input_contents, one for each input");
  }
  json inputs = json::array();
  std::string binary;
  for (int i = 0; i < request.inputs_size(); ++i) {
    ASSIGN_OR_RETURN(json encoded, EncodeTensor(request.inputs(i), request.raw_input_contents(i), binary_data, binary));
    inputs.push_back(std::move(encoded));
  }
  json doc = {{"inputs", std::move(inputs)}};
  if (binary_data) doc["parameters"] = {{"binary_data_output", true}};
  return JoinBody(doc, binary, binary_data && request.inputs_size() > 0);
}

nlohmann::json ProtoToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string text;
  if (!google::protobuf::util::MessageToJsonString(message, &text, options).ok()) return json::object();
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return json::object();
  Int64FieldsAsNumbers(*message.GetDescriptor(), doc);
  return doc;
}

std::string DumpJson(const nlohmann::json& value) {
  return value.dump(-1, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace);
}

}  // namespace onnxserve::server

// The KServe v2 REST JSON <-> gRPC message conversion (server/protocol/rest_json.h): every datatype's JSON elements
// against their little-endian bytes written out by hand, nested and flat data, the binary tensor data
// extension in both directions, and Triton's JSON form of metadata and statistics.
#include "server/protocol/rest_json.h"

#include <gtest/gtest.h>

#include "server/protocol/rest_api.h"

#include <string>

namespace onnxserve::server {
namespace {

using nlohmann::json;

// Bytes from a literal that may hold NULs.
template <size_t N>
std::string Bytes(const char (&text)[N]) {
  return std::string(text, N - 1);
}

// The raw bytes the REST request {"inputs": [{name x, datatype, shape, data}]} decodes to.
absl::StatusOr<std::string> RawOf(const std::string& datatype, const std::string& shape, const std::string& data) {
  const std::string body = R"({"inputs":[{"name":"x","datatype":")" + datatype + R"(","shape":)" + shape +
                           R"(,"data":)" + data + "}]}";
  auto request = DecodeRestInferRequest(body, std::nullopt);
  if (!request.ok()) return request.status();
  if (request->wire.raw_input_contents_size() != 1) return absl::InternalError("not one raw input");
  return request->wire.raw_input_contents(0);
}

TEST(RestJsonTest, NestedAndFlatDataGiveTheSameRowMajorBytes) {
  const std::string expected = Bytes("\x01\0\0\0\x02\0\0\0\x03\0\0\0\x04\0\0\0");
  EXPECT_EQ(RawOf("INT32", "[2,2]", "[[1,2],[3,4]]").value(), expected);
  EXPECT_EQ(RawOf("INT32", "[2,2]", "[1,2,3,4]").value(), expected);
}

TEST(RestJsonTest, ElementCountMustMatchTheShape) {
  auto raw = RawOf("INT32", "[2,2]", "[[1,2],[3]]");
  ASSERT_FALSE(raw.ok());
  EXPECT_EQ(raw.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(raw.status().message().find("data has 3 elements, the shape [2,2] holds 4"), std::string::npos)
      << raw.status();
}

TEST(RestJsonTest, ShapesTooLargeToAllocateAreRefusedBeforeCounting) {
  auto raw = RawOf("FP32", "[4294967296,4294967296]", "[1]");
  ASSERT_FALSE(raw.ok());
  EXPECT_EQ(raw.status().code(), absl::StatusCode::kResourceExhausted) << raw.status();
}

TEST(RestJsonTest, EveryIntegerTypeIsLittleEndianAndRangeChecked) {
  EXPECT_EQ(RawOf("UINT8", "[2]", "[0,255]").value(), Bytes("\x00\xff"));
  EXPECT_EQ(RawOf("INT8", "[2]", "[-128,127]").value(), Bytes("\x80\x7f"));
  EXPECT_EQ(RawOf("UINT16", "[1]", "[65534]").value(), Bytes("\xfe\xff"));
  EXPECT_EQ(RawOf("INT16", "[1]", "[-2]").value(), Bytes("\xfe\xff"));
  EXPECT_EQ(RawOf("UINT32", "[1]", "[4294967295]").value(), Bytes("\xff\xff\xff\xff"));
  EXPECT_EQ(RawOf("INT32", "[1]", "[-2147483648]").value(), Bytes("\0\0\0\x80"));
  EXPECT_EQ(RawOf("INT64", "[1]", "[-1]").value(), Bytes("\xff\xff\xff\xff\xff\xff\xff\xff"));
  EXPECT_EQ(RawOf("UINT64", "[1]", "[18446744073709551615]").value(), Bytes("\xff\xff\xff\xff\xff\xff\xff\xff"));
  EXPECT_EQ(RawOf("INT64", "[1]", "[258]").value(), Bytes("\x02\x01\0\0\0\0\0\0"));

  EXPECT_FALSE(RawOf("UINT8", "[1]", "[256]").ok());
  EXPECT_FALSE(RawOf("INT8", "[1]", "[-129]").ok());
  EXPECT_FALSE(RawOf("UINT32", "[1]", "[-1]").ok());
  EXPECT_FALSE(RawOf("INT32", "[1]", "[2147483648]").ok());
  EXPECT_FALSE(RawOf("INT32", "[1]", "[1.5]").ok());
  EXPECT_FALSE(RawOf("INT32", "[1]", "[true]").ok());
  EXPECT_FALSE(RawOf("INT64", "[1]", R"(["1"])").ok());
}

TEST(RestJsonTest, FloatsBoolsAndBytes) {
  EXPECT_EQ(RawOf("FP32", "[2]", "[1.5,-2]").value(), Bytes("\x00\x00\xc0\x3f\x00\x00\x00\xc0"));
  EXPECT_EQ(RawOf("FP64", "[1]", "[-2.0]").value(), Bytes("\0\0\0\0\0\0\0\xc0"));
  EXPECT_EQ(RawOf("BOOL", "[3]", "[true,false,true]").value(), Bytes("\x01\x00\x01"));
  EXPECT_EQ(RawOf("BYTES", "[2]", R"(["ab",""])").value(), Bytes("\x02\0\0\0ab\0\0\0\0"));
  EXPECT_FALSE(RawOf("BOOL", "[1]", "[1]").ok());
  EXPECT_FALSE(RawOf("BYTES", "[1]", "[1]").ok());
  EXPECT_FALSE(RawOf("FP32", "[1]", R"(["1.5"])").ok());
}

TEST(RestJsonTest, HalfPrecisionMustComeAsBinaryDataAsInTriton) {
  for (const char* type : {"FP16", "BF16"}) {
    auto raw = RawOf(type, "[1]", "[1.0]");
    ASSERT_FALSE(raw.ok()) << type;
    EXPECT_NE(raw.status().message().find("binary"), std::string::npos) << raw.status();
  }
}

TEST(RestJsonTest, MalformedRequestsAreInvalidArguments) {
  for (const char* body : {"", "{", "[]", R"({"inputs":{}})", R"({"inputs":[{"name":"x","shape":[1],"data":[1]}]})",
                           R"({"inputs":[{"name":"x","datatype":"FP32","shape":[-1],"data":[1]}]})",
                           R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1]}]})",
                           R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[[[[1]]]]}],"id":7})"}) {
    auto request = DecodeRestInferRequest(body, std::nullopt);
    ASSERT_FALSE(request.ok()) << body;
    EXPECT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument) << body;
  }
}

TEST(RestJsonTest, DataNestedPastTheDepthBoundIsRefused) {
  const std::string data = std::string(100, '[') + "1" + std::string(100, ']');
  auto raw = RawOf("FP32", "[1]", data);
  ASSERT_FALSE(raw.ok());
  EXPECT_NE(raw.status().message().find("nested deeper"), std::string::npos) << raw.status();
}

// Data is read apart from the document (rest_json_data.h): what the document would have settled (an object
// where elements go, a repeated key whose last value wins) is refused rather than read two ways.
TEST(RestJsonTest, DataThatIsNotArraysOfScalarsOrIsGivenTwiceIsRefused) {
  const std::pair<std::string, std::string> cases[] = {
      {R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[{"v":1}]}]})", "data holds a JSON object"},
      {R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1],"data":[2]}]})",
       "\"data\" is given twice"},
      {R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1]}],"inputs":[]})",
       "\"inputs\" is given twice"},
      {R"({"inputs":[{"name":"x","datatype":"FP32","shape":[2],"data":[1,"2"]}]})",
       "input \"x\": data holds a value that is not FP32 (a number)"},
  };
  for (const auto& [body, message] : cases) {
    auto request = DecodeRestInferRequest(body, std::nullopt);
    EXPECT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_NE(request.status().message().find(message), std::string::npos) << body << ": " << request.status();
  }
}

// Values outside the inputs' data become a document of 16 to 100 bytes each: a body of "{}," (3 bytes each)
// or "0," is refused past a bound no model's request comes near, rather than held at many times its size.
TEST(RestJsonTest, ADocumentOfMoreValuesThanAnyRequestNeedsIsRefused) {
  std::string junk = "[";
  for (int i = 0; i < (1 << 17); ++i) junk += i == 0 ? "{}" : ",{}";
  junk += "]";
  auto request = DecodeRestInferRequest(
      R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1]}],"junk":)" + junk + "}", std::nullopt);
  EXPECT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument) << request.status();
  EXPECT_NE(request.status().message().find("more than 65536 JSON values"), std::string::npos) << request.status();
}

TEST(RestJsonTest, IdParametersAndRequestedOutputsCarryOver) {
  const std::string body = R"({"id":"r1","parameters":{"timeout":100,"flag":true,"s":"x","d":0.5,
      "binary_data_output":true},"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1]}],
      "outputs":[{"name":"a","parameters":{"binary_data":false}},{"name":"b"}]})";
  auto request = DecodeRestInferRequest(body, std::nullopt);
  ASSERT_TRUE(request.ok()) << request.status();
  const auto& wire = request->wire;
  EXPECT_EQ(wire.id(), "r1");
  EXPECT_EQ(wire.parameters().at("timeout").int64_param(), 100);
  EXPECT_TRUE(wire.parameters().at("flag").bool_param());
  EXPECT_EQ(wire.parameters().at("s").string_param(), "x");
  EXPECT_EQ(wire.parameters().at("d").double_param(), 0.5);
  EXPECT_EQ(wire.parameters().count("binary_data_output"), 0u);  // the extension's own, read here
  ASSERT_EQ(wire.outputs_size(), 2);
  EXPECT_EQ(wire.outputs(0).name(), "a");
  EXPECT_FALSE(request->OutputIsBinary("a"));
  EXPECT_TRUE(request->OutputIsBinary("b"));        // the request-level default
  EXPECT_TRUE(request->OutputIsBinary("unnamed"));  // outputs not requested by name: the default too
}

TEST(RestJsonTest, BinaryInputsFollowTheJsonHeaderInInputOrder) {
  const std::string json_part =
      R"({"inputs":[{"name":"a","datatype":"INT32","shape":[1],"parameters":{"binary_data_size":4}},)"
      R"({"name":"b","datatype":"INT32","shape":[1],"data":[7]},)"
      R"({"name":"c","datatype":"BYTES","shape":[1],"parameters":{"binary_data_size":6}}]})";
  const std::string binary = Bytes("\x05\0\0\0\x02\0\0\0hi");
  const std::string body = json_part + binary;
  auto request = DecodeRestInferRequest(body, std::to_string(json_part.size()));
  ASSERT_TRUE(request.ok()) << request.status();
  ASSERT_EQ(request->wire.raw_input_contents_size(), 3);
  EXPECT_EQ(request->wire.raw_input_contents(0), Bytes("\x05\0\0\0"));
  EXPECT_EQ(request->wire.raw_input_contents(1), Bytes("\x07\0\0\0"));
  EXPECT_EQ(request->wire.raw_input_contents(2), Bytes("\x02\0\0\0hi"));
  EXPECT_EQ(request->wire.inputs(0).parameters().count("binary_data_size"), 0u);

  // Binary data short of what the inputs claim, left over, or a header length past the body.
  EXPECT_FALSE(DecodeRestInferRequest(json_part + binary.substr(0, 9), std::to_string(json_part.size())).ok());
  EXPECT_FALSE(DecodeRestInferRequest(body + "x", std::to_string(json_part.size())).ok());
  EXPECT_FALSE(DecodeRestInferRequest(body, std::to_string(body.size() + 1)).ok());
  EXPECT_FALSE(DecodeRestInferRequest(body, "-1").ok());
  EXPECT_FALSE(DecodeRestInferRequest(body, std::nullopt).ok());  // the binary tail is not JSON
}

inference::ModelInferResponse SampleResponse() {
  inference::ModelInferResponse response;
  response.set_model_name("m");
  response.set_model_version("3");
  response.set_id("r1");
  auto add = [&response](const char* name, const char* datatype, std::initializer_list<int64_t> shape,
                         const std::string& raw) {
    auto* out = response.add_outputs();
    out->set_name(name);
    out->set_datatype(datatype);
    for (int64_t d : shape) out->add_shape(d);
    response.add_raw_output_contents(raw);
  };
  add("f", "FP32", {1, 2}, Bytes("\x00\x00\xc0\x3f\x00\x00\x00\xc0"));
  add("s", "BYTES", {2}, Bytes("\x02\0\0\0ab\x00\0\0\0"));
  add("b", "BOOL", {2}, Bytes("\x01\x00"));
  add("u", "UINT64", {1}, Bytes("\xff\xff\xff\xff\xff\xff\xff\xff"));
  return response;
}

TEST(RestJsonTest, ResponsesAsJsonCarryFlatData) {
  RestInferRequest request;
  auto encoded = EncodeRestInferResponse(SampleResponse(), request);
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  EXPECT_FALSE(encoded->json_bytes);
  const json expected = json::parse(R"({"model_name":"m","model_version":"3","id":"r1","outputs":[
      {"name":"f","datatype":"FP32","shape":[1,2],"data":[1.5,-2.0]},
      {"name":"s","datatype":"BYTES","shape":[2],"data":["ab",""]},
      {"name":"b","datatype":"BOOL","shape":[2],"data":[true,false]},
      {"name":"u","datatype":"UINT64","shape":[1],"data":[18446744073709551615]}]})");
  EXPECT_EQ(json::parse(encoded->body), expected) << encoded->body;
}

TEST(RestJsonTest, BinaryOutputsFollowTheJsonInOutputOrder) {
  RestInferRequest request;
  request.binary_by_default = true;
  request.binary_outputs["b"] = false;
  auto encoded = EncodeRestInferResponse(SampleResponse(), request);
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  ASSERT_TRUE(encoded->json_bytes);
  const json header = json::parse(encoded->body.substr(0, *encoded->json_bytes));
  EXPECT_EQ(header["outputs"][0]["parameters"]["binary_data_size"], 8);
  EXPECT_FALSE(header["outputs"][0].contains("data"));
  EXPECT_EQ(header["outputs"][1]["parameters"]["binary_data_size"], 10);
  EXPECT_EQ(header["outputs"][2]["data"], json::parse("[true,false]"));
  EXPECT_EQ(encoded->body.substr(*encoded->json_bytes),
            Bytes("\x00\x00\xc0\x3f\x00\x00\x00\xc0\x02\0\0\0ab\x00\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff"));
}

// As JSON each element costs the server a document node and its text, some 40 times a uint8's byte: past
// 2^24 elements per response the answer must be asked for as binary data, which carries it as it is.
TEST(RestJsonTest, OutputsTooLargeForJsonMustBeAskedForAsBinary) {
  inference::ModelInferResponse response;
  auto* out = response.add_outputs();
  out->set_name("mask");
  out->set_datatype("UINT8");
  out->add_shape((int64_t{1} << 24) + 1);
  response.add_raw_output_contents(std::string((size_t{1} << 24) + 1, '\1'));
  RestInferRequest request;
  const absl::StatusOr<RestBody> as_json = EncodeRestInferResponse(response, request);
  EXPECT_EQ(as_json.status().code(), absl::StatusCode::kResourceExhausted) << as_json.status();
  EXPECT_NE(as_json.status().message().find("binary data"), std::string::npos) << as_json.status();
  request.binary_outputs["mask"] = true;
  const absl::StatusOr<RestBody> as_binary = EncodeRestInferResponse(response, request);
  ASSERT_TRUE(as_binary.ok()) << as_binary.status();
  EXPECT_EQ(as_binary->body.size() - *as_binary->json_bytes, (size_t{1} << 24) + 1);
}

TEST(RestJsonTest, HalfPrecisionOutputsMustBeAskedForAsBinary) {
  inference::ModelInferResponse response;
  auto* out = response.add_outputs();
  out->set_name("h");
  out->set_datatype("FP16");
  out->add_shape(1);
  response.add_raw_output_contents(Bytes("\x00\x3c"));
  RestInferRequest request;
  EXPECT_EQ(EncodeRestInferResponse(response, request).status().code(), absl::StatusCode::kInvalidArgument);
  request.binary_outputs["h"] = true;
  auto encoded = EncodeRestInferResponse(response, request);
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  EXPECT_EQ(encoded->body.substr(*encoded->json_bytes), Bytes("\x00\x3c"));
}

TEST(RestJsonTest, ProtoToJsonWritesSixtyFourBitIntegersAsNumbersAsTritonDoes) {
  inference::ModelMetadataResponse metadata;
  metadata.set_name("digits");
  auto* input = metadata.add_inputs();
  input->set_name("pixels");
  input->set_datatype("FP32");
  input->add_shape(-1);
  input->add_shape(64);
  const json doc = ProtoToJson(metadata);
  EXPECT_EQ(doc["inputs"][0]["shape"], json::parse("[-1,64]"));
  EXPECT_EQ(doc["platform"], "");  // fields at their defaults are written too
  EXPECT_EQ(doc["versions"], json::array());

  inference::ModelStatisticsResponse stats;
  auto* model = stats.add_model_stats();
  model->set_name("digits");
  model->set_inference_count(18446744073709551615ull);
  model->mutable_inference_stats()->mutable_success()->set_count(3);
  const json stats_doc = ProtoToJson(stats);
  EXPECT_EQ(stats_doc["model_stats"][0]["inference_count"].get<uint64_t>(), 18446744073709551615ull);
  EXPECT_EQ(stats_doc["model_stats"][0]["inference_stats"]["success"]["count"], 3);
  EXPECT_EQ(stats_doc["model_stats"][0]["inference_stats"]["success"]["ns"], 0);  // a default, written as 0
}

TEST(RestJsonTest, DumpJsonReplacesInvalidUtf8) {
  EXPECT_EQ(DumpJson(json{{"e", Bytes("a\xff")}}), "{\"e\":\"a\xef\xbf\xbd\"}");
}

TEST(RestErrorsTest, ErrorsAreJsonWithTheHttpStatusOfTheirCode) {
  const struct {
    absl::Status status;
    unsigned http;
  } cases[] = {
      {absl::InvalidArgumentError("bad \"x\""), 400}, {absl::NotFoundError("m"), 404},
      {absl::PermissionDeniedError("p"), 403},          {absl::ResourceExhaustedError("q"), 429},
      {absl::UnimplementedError("u"), 501},             {absl::UnavailableError("a"), 503},
      {absl::DeadlineExceededError("d"), 504},          {absl::InternalError("i"), 500},
  };
  for (const auto& c : cases) {
    const HttpReply reply = ErrorReply(c.status);
    EXPECT_EQ(reply.code, c.http) << c.status;
    EXPECT_EQ(reply.content_type, "application/json");
    EXPECT_EQ(json::parse(reply.body), (json{{"error", std::string(c.status.message())}})) << reply.body;
  }
  EXPECT_EQ(ErrorReply(absl::InvalidArgumentError("bad \"x\"")).body, R"({"error":"bad \"x\""})");
}

// The client side (onnxserve load --protocol http): what it encodes, the server's decoder reads back.
inference::ModelInferRequest SampleRequest() {
  inference::ModelInferRequest request;
  auto* f = request.add_inputs();
  f->set_name("f");
  f->set_datatype("FP32");
  f->add_shape(2);
  request.add_raw_input_contents(Bytes("\x00\x00\xc0\x3f\x00\x00\x00\xc0"));  // 1.5, -2
  auto* i = request.add_inputs();
  i->set_name("i");
  i->set_datatype("INT64");
  i->add_shape(1);
  request.add_raw_input_contents(Bytes("\xff\xff\xff\xff\xff\xff\xff\xff"));  // -1
  return request;
}

TEST(RestJsonTest, RequestsEncodedAsJsonDecodeToTheSameRawInputs) {
  auto encoded = EncodeRestInferRequest(SampleRequest(), /*binary_data=*/false);
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  EXPECT_FALSE(encoded->json_bytes);
  EXPECT_EQ(json::parse(encoded->body), json::parse(R"({"inputs":[
      {"name":"f","datatype":"FP32","shape":[2],"data":[1.5,-2.0]},
      {"name":"i","datatype":"INT64","shape":[1],"data":[-1]}]})"));
  auto decoded = DecodeRestInferRequest(encoded->body, std::nullopt);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->wire.raw_input_contents(0), SampleRequest().raw_input_contents(0));
  EXPECT_EQ(decoded->wire.raw_input_contents(1), SampleRequest().raw_input_contents(1));
  EXPECT_FALSE(decoded->binary_by_default);
}

TEST(RestJsonTest, RequestsEncodedAsBinaryDataAskForBinaryOutputs) {
  auto encoded = EncodeRestInferRequest(SampleRequest(), /*binary_data=*/true);
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  ASSERT_TRUE(encoded->json_bytes);
  const json header = json::parse(encoded->body.substr(0, *encoded->json_bytes));
  EXPECT_EQ(header["inputs"][0]["parameters"]["binary_data_size"], 8);
  EXPECT_EQ(header["parameters"]["binary_data_output"], true);
  const std::string length = std::to_string(*encoded->json_bytes);
  auto decoded = DecodeRestInferRequest(encoded->body, length);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->wire.raw_input_contents(0), SampleRequest().raw_input_contents(0));
  EXPECT_EQ(decoded->wire.raw_input_contents(1), SampleRequest().raw_input_contents(1));
  EXPECT_TRUE(decoded->binary_by_default);
}

TEST(RestJsonTest, RequestsWithoutRawContentsAreNotEncoded) {
  inference::ModelInferRequest request = SampleRequest();
  request.clear_raw_input_contents();
  EXPECT_EQ(EncodeRestInferRequest(request, false).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace onnxserve::server

// Fuzz target: encoded image bytes -> ImageDecoder (every codec behind it: libjpeg-turbo, libpng, libtiff,
// libwebp, OpenJPEG, and our BMP and PNM parsers). A decode gives a uint8 [H,W,3] image or one of the
// errors a bad stream may give; anything else (a crash, another status) is a finding.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "onnx/onnx_pb.h"
#include "runtime/exec/session.h"
#include "tests/fuzz/fuzz_limits.h"

namespace onnxserve {
namespace {

// One ImageDecoder node (opset 20) reading a 1-D uint8 input of any length.
std::unique_ptr<Session> MakeSession() {
  onnx::ModelProto model;
  model.set_ir_version(9);
  model.add_opset_import()->set_version(20);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("image_fuzz");
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type("ImageDecoder");
  node->add_input("stream");
  node->add_output("image");
  onnx::ValueInfoProto* input = graph->add_input();
  input->set_name("stream");
  input->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::UINT8);
  input->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param("n");
  graph->add_output()->set_name("image");
  auto loaded = Model::FromProto(std::move(model), "");
  if (!loaded.ok()) __builtin_trap();
  auto session = Session::Create(*std::move(loaded));
  if (!session.ok()) __builtin_trap();
  return *std::move(session);
}

int RunOne(const uint8_t* data, size_t size) {
  fuzz::UseFuzzSizeLimits();
  static const std::unique_ptr<Session> session = MakeSession();
  const std::vector<uint8_t> bytes(data, data + size);
  auto out = session->Run({{"stream", Tensor::FromVector<uint8_t>({static_cast<int64_t>(size)}, bytes)}});
  if (out.ok()) {
    const Tensor& image = (*out)[0];
    if (image.dtype() != DataType::kUint8 || image.rank() != 3 || image.dim(2) != 3) __builtin_trap();
    return 0;
  }
  const absl::StatusCode code = out.status().code();
  if (code != absl::StatusCode::kInvalidArgument && code != absl::StatusCode::kResourceExhausted &&
      code != absl::StatusCode::kUnimplemented) {
    __builtin_trap();
  }
  return 0;
}

}  // namespace
}  // namespace onnxserve

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return onnxserve::RunOne(data, size); }

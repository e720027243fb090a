#include "cli/tensor_files.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "runtime/model/tensor_proto.h"

namespace onnxserve::cli {

absl::StatusOr<onnx::TensorProto> ReadTensorProtoFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::stringstream bytes;
  bytes << in.rdbuf();
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes.str())) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not a serialized onnx.TensorProto"));
  }
  return proto;
}

absl::StatusOr<Tensor> ReadTensorFile(const std::string& path) {
  auto proto = ReadTensorProtoFile(path);
  if (!proto.ok()) return proto.status();
  auto tensor = TensorFromProto(*proto);
  if (!tensor.ok()) {
    return absl::Status(tensor.status().code(), absl::StrCat(path, ": ", tensor.status().message()));
  }
  return tensor;
}

absl::Status WriteTensorFile(const std::string& path, const Tensor& tensor, const std::string& name) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !TensorToProto(tensor, name).SerializeToOstream(&out)) {
    return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}

}  // namespace onnxserve::cli

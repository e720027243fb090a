#include "cli/tensor_files.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/model/value_proto.h"

namespace onnxserve::cli {

absl::StatusOr<Value> ReadValueFile(const std::string& path, Value::Kind declared) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::stringstream bytes;
  bytes << in.rdbuf();
  auto value = ParseValue(bytes.str(), declared);
  if (!value.ok()) return absl::Status(value.status().code(), absl::StrCat(path, ": ", value.status().message()));
  return value;
}

absl::StatusOr<Tensor> ReadTensorFile(const std::string& path) {
  ASSIGN_OR_RETURN(Value value, ReadValueFile(path, Value::Kind::kTensor));
  return *value.tensor();
}

absl::Status WriteValueFile(const std::string& path, const Value& value, Value::Kind declared, const std::string& name) {
  ASSIGN_OR_RETURN(const std::string bytes, SerializeValue(value, declared, name));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()))) {
    return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}

}  // namespace onnxserve::cli

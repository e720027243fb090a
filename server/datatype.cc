#include "server/datatype.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace onnxserve::server {
namespace {

struct TypeNames {
  DataType type;
  const char* kserve;
  inference::DataType config;
};

constexpr TypeNames kTypes[] = {
    {DataType::kBool, "BOOL", inference::TYPE_BOOL},
    {DataType::kUint8, "UINT8", inference::TYPE_UINT8},
    {DataType::kUint16, "UINT16", inference::TYPE_UINT16},
    {DataType::kUint32, "UINT32", inference::TYPE_UINT32},
    {DataType::kUint64, "UINT64", inference::TYPE_UINT64},
    {DataType::kInt8, "INT8", inference::TYPE_INT8},
    {DataType::kInt16, "INT16", inference::TYPE_INT16},
    {DataType::kInt32, "INT32", inference::TYPE_INT32},
    {DataType::kInt64, "INT64", inference::TYPE_INT64},
    {DataType::kFloat16, "FP16", inference::TYPE_FP16},
    {DataType::kFloat, "FP32", inference::TYPE_FP32},
    {DataType::kDouble, "FP64", inference::TYPE_FP64},
    {DataType::kString, "BYTES", inference::TYPE_STRING},
    {DataType::kBFloat16, "BF16", inference::TYPE_BF16},
};

}  // namespace

absl::StatusOr<DataType> DataTypeFromKServe(std::string_view name) {
  for (const auto& t : kTypes) {
    if (name == t.kserve) return t.type;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown datatype \"", std::string(name), "\": expected BOOL, UINT8..UINT64, INT8..INT64, FP16, BF16, ",
      "FP32, FP64 or BYTES"));
}

const char* KServeDataType(DataType type) {
  for (const auto& t : kTypes) {
    if (type == t.type) return t.kserve;
  }
  return nullptr;
}

absl::StatusOr<DataType> DataTypeFromConfig(inference::DataType type) {
  for (const auto& t : kTypes) {
    if (type == t.config) return t.type;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported data_type ", inference::DataType_Name(type)));
}

inference::DataType ConfigDataType(DataType type) {
  for (const auto& t : kTypes) {
    if (type == t.type) return t.config;
  }
  return inference::TYPE_INVALID;
}

}  // namespace onnxserve::server

#include "server/serving/datatype.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/core/checked_size.h"
#include "runtime/core/status_macros.h"

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

namespace onnxserve::server {
namespace {

std::string Described(DataType type, const Shape& shape) {
  const char* name = KServeDataType(type);
  return absl::StrCat(name ? name : DataTypeName(type), " ", ShapeToString(shape));
}

absl::Status AboutInput(const std::string& name, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat("input \"", name, "\": ", status.message()));
}

// The elements a request input declares, within the runtime's size limits. The shape is the client's:
// nothing is allocated for it until the payload has been checked against this count, so 30 bytes that
// declare 2^27 elements cost nothing.
absl::StatusOr<int64_t> DeclaredElements(const std::string& name, const Shape& shape) {
  absl::StatusOr<int64_t> count = CheckedElementCount(shape);
  if (!count.ok()) return AboutInput(name, count.status());
  return count;
}

// True when the elements of `type` may be read in place at `p`.
bool AlignedFor(DataType type, const void* p) {
  const size_t size = ElementSize(type);
  return size != 0 && reinterpret_cast<uintptr_t>(p) % size == 0;
}

absl::StatusOr<Tensor> AllocateInput(const std::string& name, DataType type, const Shape& shape) {
  absl::StatusOr<Tensor> tensor = Tensor::Create(type, shape);
  if (!tensor.ok()) return AboutInput(name, tensor.status());
  return tensor;
}

// A BOOL element is a byte holding 0 or 1: kernels read any other as neither (Not of 2 is 3, Cast of 255 is
// 255.0), and reading one as a bool is undefined behaviour.
absl::Status CheckBoolBytes(const std::string& name, std::string_view raw) {
  const int64_t i = FirstNonBoolByte(raw.data(), static_cast<int64_t>(raw.size()));
  if (i < 0) return absl::OkStatus();
  const int byte = static_cast<unsigned char>(raw[i]);
  return absl::InvalidArgumentError(
      absl::StrCat("input \"", name, "\": BOOL element ", i, " is byte ", byte, ", expected 0 or 1"));
}

// Every BYTES element takes at least its 4-byte length prefix.
constexpr size_t kBytesPrefixSize = 4;

absl::StatusOr<Tensor> StringsFromRaw(const std::string& name, const Shape& shape, std::string_view raw) {
  ASSIGN_OR_RETURN(const int64_t count, DeclaredElements(name, shape));
  if (static_cast<uint64_t>(count) > raw.size() / kBytesPrefixSize) {
    return absl::InvalidArgumentError(absl::StrCat("input \"", name, "\": raw content of ", raw.size(),
                                                   " bytes cannot hold the ", count, " BYTES elements of ",
                                                   Described(DataType::kString, shape)));
  }
  ASSIGN_OR_RETURN(Tensor tensor, AllocateInput(name, DataType::kString, shape));
  std::string* out = tensor.data<std::string>();
  size_t pos = 0;
  for (int64_t i = 0; i < tensor.NumElements(); ++i) {
    if (raw.size() - pos < kBytesPrefixSize) {
      return absl::InvalidArgumentError(absl::StrCat("input \"", name, "\": raw content holds ", i,
                                                     " BYTES elements, expected ", tensor.NumElements(),
                                                     " for ", Described(DataType::kString, shape)));
    }
    const auto* p = reinterpret_cast<const unsigned char*>(raw.data() + pos);
    const uint32_t length = p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
    pos += kBytesPrefixSize;
    if (raw.size() - pos < length) {
      return absl::InvalidArgumentError(absl::StrCat("input \"", name, "\": BYTES element ", i, " claims ",
                                                     length, " bytes but only ", raw.size() - pos, " remain"));
    }
    out[i].assign(raw.data() + pos, length);
    pos += length;
  }
  if (pos != raw.size()) {
    return absl::InvalidArgumentError(absl::StrCat("input \"", name, "\": raw content has ", raw.size() - pos,
                                                   " bytes after the ", tensor.NumElements(), " elements of ",
                                                   Described(DataType::kString, shape)));
  }
  return tensor;
}

template <typename T, typename Field>
absl::StatusOr<Tensor> FromField(const std::string& name, DataType type, const Shape& shape, const Field& field) {
  ASSIGN_OR_RETURN(const int64_t count, DeclaredElements(name, shape));
  if (static_cast<int64_t>(field.size()) != count) {
    return absl::InvalidArgumentError(absl::StrCat("input \"", name, "\": contents hold ", field.size(),
                                                   " values, expected ", count, " for ", Described(type, shape)));
  }
  ASSIGN_OR_RETURN(Tensor tensor, AllocateInput(name, type, shape));
  T* out = tensor.data<T>();
  for (int i = 0; i < field.size(); ++i) {
    const auto& value = field.Get(i);
    // int_contents and uint_contents are 32-bit for the narrower types too: a value out of range is refused
    // (as in REST JSON), not cut to its low bits.
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (!std::in_range<T>(value)) {
        return absl::InvalidArgumentError(absl::StrCat("input \"", name, "\": contents value ", value,
                                                       " at element ", i, " does not fit ", KServeDataType(type)));
      }
    }
    out[i] = static_cast<T>(value);
  }
  return tensor;
}

}  // namespace

absl::StatusOr<Tensor> TensorFromRaw(const std::string& name, DataType type, const Shape& shape,
                                     std::string_view raw, std::shared_ptr<const void> owner) {
  if (type == DataType::kString) return StringsFromRaw(name, shape, raw);
  absl::StatusOr<int64_t> bytes = CheckedByteSize(type, shape);
  if (!bytes.ok()) return AboutInput(name, bytes.status());
  if (raw.size() != static_cast<uint64_t>(*bytes)) {
    return absl::InvalidArgumentError(absl::StrCat("input \"", name, "\": raw content is ", raw.size(),
                                                   " bytes, expected ", *bytes, " for ", Described(type, shape)));
  }
  if (type == DataType::kBool) RETURN_IF_ERROR(CheckBoolBytes(name, raw));
  if (owner != nullptr && AlignedFor(type, raw.data())) {
    // Nothing writes through a tensor it was given (tensor.h), so read-only bytes may back one.
    return Tensor::Wrap(type, shape, std::const_pointer_cast<void>(std::move(owner)), const_cast<char*>(raw.data()));
  }
  ASSIGN_OR_RETURN(Tensor tensor, AllocateInput(name, type, shape));
  if (!raw.empty()) std::memcpy(tensor.raw_data(), raw.data(), raw.size());
  return tensor;
}

absl::StatusOr<Tensor> TensorFromContents(const std::string& name, DataType type, const Shape& shape,
                                          const inference::InferTensorContents& c) {
  switch (type) {
    case DataType::kBool: return FromField<bool>(name, type, shape, c.bool_contents());
    case DataType::kInt8: return FromField<int8_t>(name, type, shape, c.int_contents());
    case DataType::kInt16: return FromField<int16_t>(name, type, shape, c.int_contents());
    case DataType::kInt32: return FromField<int32_t>(name, type, shape, c.int_contents());
    case DataType::kInt64: return FromField<int64_t>(name, type, shape, c.int64_contents());
    case DataType::kUint8: return FromField<uint8_t>(name, type, shape, c.uint_contents());
    case DataType::kUint16: return FromField<uint16_t>(name, type, shape, c.uint_contents());
    case DataType::kUint32: return FromField<uint32_t>(name, type, shape, c.uint_contents());
    case DataType::kUint64: return FromField<uint64_t>(name, type, shape, c.uint64_contents());
    case DataType::kFloat: return FromField<float>(name, type, shape, c.fp32_contents());
    case DataType::kDouble: return FromField<double>(name, type, shape, c.fp64_contents());
    case DataType::kString: return FromField<std::string>(name, type, shape, c.bytes_contents());
    default:
      return absl::InvalidArgumentError(absl::StrCat("input \"", name, "\": ", Described(type, shape),
                                                     " has no typed contents field; send it in raw_input_contents"));
  }
}

absl::Status AppendRaw(const Tensor& tensor, std::string& out) {
  if (tensor.dtype() != DataType::kString) {
    out.append(static_cast<const char*>(tensor.raw_data()), tensor.ByteSize());
    return absl::OkStatus();
  }
  const auto strings = tensor.values<std::string>();
  for (const auto& s : strings) {
    if (s.size() > std::numeric_limits<uint32_t>::max()) {
      return absl::ResourceExhaustedError(absl::StrCat("a BYTES element of ", s.size(),
                                                       " bytes is longer than its 4-byte length can say"));
    }
  }
  for (const auto& s : strings) {
    const uint32_t n = static_cast<uint32_t>(s.size());
    const char length[4] = {static_cast<char>(n), static_cast<char>(n >> 8), static_cast<char>(n >> 16),
                            static_cast<char>(n >> 24)};
    out.append(length, 4);
    out.append(s);
  }
  return absl::OkStatus();
}

}  // namespace onnxserve::server

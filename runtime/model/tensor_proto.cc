#include "runtime/model/tensor_proto.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "runtime/core/checked_size.h"
#include "runtime/core/path.h"
#include "runtime/core/status_macros.h"

namespace onnxserve {
namespace {

namespace fs = std::filesystem;

std::string Describe(const onnx::TensorProto& proto) {
  return proto.name().empty() ? std::string("tensor") : absl::StrCat("tensor \"", proto.name(), "\"");
}

absl::Status CheckCount(const onnx::TensorProto& proto, int64_t got, int64_t want) {
  if (got != want) {
    return absl::InvalidArgumentError(absl::StrCat(Describe(proto), ": holds ", got,
                                                   " values but its shape needs ", want));
  }
  return absl::OkStatus();
}

// Copies typed-field values (each field element widened or packed per the ONNX spec) into `out`.
template <typename Field>
absl::Status CopyTyped(const onnx::TensorProto& proto, const Field& field, Tensor& out) {
  RETURN_IF_ERROR(CheckCount(proto, field.size(), out.NumElements()));
  bool ok = DispatchNumeric(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* dst = out.data<T>();
    for (int64_t i = 0; i < out.NumElements(); ++i) {
      if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
        dst[i] = T::FromBits(static_cast<uint16_t>(field.Get(static_cast<int>(i))));
      } else {
        dst[i] = static_cast<T>(field.Get(static_cast<int>(i)));
      }
    }
  });
  if (!ok) return absl::InternalError("typed field for a non-numeric type");
  return absl::OkStatus();
}

// Bytes `tensor` takes in the ONNX wire format: 4- and 2-bit types are packed (2 or 4 per byte), the rest
// are stored as in memory.
size_t WireByteSize(const Tensor& tensor) {
  const size_t per_byte = static_cast<size_t>(ElementsPerWireByte(tensor.dtype()));
  if (per_byte == 1) return tensor.ByteSize();
  return (static_cast<size_t>(tensor.NumElements()) + per_byte - 1) / per_byte;
}

// Spreads packed sub-byte elements (the first in the least significant bits) one per byte into `out`.
void UnpackSubByte(const uint8_t* packed, Tensor& out) {
  const int per_byte = ElementsPerWireByte(out.dtype());
  const int bits = 8 / per_byte;
  DispatchLowPrecision(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* dst = out.data<T>();
    for (int64_t i = 0; i < out.NumElements(); ++i) {
      const int shift = static_cast<int>(i % per_byte) * bits;
      dst[i] = T::FromBits(static_cast<uint8_t>(packed[i / per_byte] >> shift));
    }
  });
}

// The inverse of UnpackSubByte; unused high bits of the last byte are zero.
std::string PackSubByte(const Tensor& tensor) {
  const int per_byte = ElementsPerWireByte(tensor.dtype());
  const int bits = 8 / per_byte;
  std::string packed(WireByteSize(tensor), '\0');
  DispatchLowPrecision(tensor.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = tensor.data<T>();
    for (int64_t i = 0; i < tensor.NumElements(); ++i) {
      const int shift = static_cast<int>(i % per_byte) * bits;
      packed[static_cast<size_t>(i / per_byte)] |= static_cast<char>(src[i].ToBits() << shift);
    }
  });
  return packed;
}

// Wire bytes (raw_data, external data, or int32_data narrowed to bytes) into `out`.
void CopyWireBytes(const uint8_t* bytes, Tensor& out) {
  if (ElementsPerWireByte(out.dtype()) > 1) {
    UnpackSubByte(bytes, out);
  } else if (out.ByteSize() > 0) {
    std::memcpy(out.raw_data(), bytes, out.ByteSize());
  }
}

absl::Status CopyRaw(const onnx::TensorProto& proto, const std::string& bytes, Tensor& out) {
  if (bytes.size() != WireByteSize(out)) {
    return absl::InvalidArgumentError(absl::StrCat(Describe(proto), ": raw data has ", bytes.size(),
                                                   " bytes but ", out.DebugString(), " needs ",
                                                   WireByteSize(out)));
  }
  CopyWireBytes(reinterpret_cast<const uint8_t*>(bytes.data()), out);
  return absl::OkStatus();
}

// Low-precision types in int32_data: one byte of wire data per field element (a float8 bit pattern, or two
// 4-bit / four 2-bit elements packed low bits first).
absl::Status CopyLowPrecisionInt32Data(const onnx::TensorProto& proto, Tensor& out) {
  RETURN_IF_ERROR(CheckCount(proto, proto.int32_data_size(), static_cast<int64_t>(WireByteSize(out))));
  std::vector<uint8_t> bytes(proto.int32_data().begin(), proto.int32_data().end());
  CopyWireBytes(bytes.data(), out);
  return absl::OkStatus();
}

// The external data file named by `location`, resolved: it must stay inside the model folder after
// symlinks too, or a model could read any file the server can (a link to /etc/passwd).
absl::StatusOr<fs::path> ResolveExternalPath(const onnx::TensorProto& proto, const std::string& location,
                                             const std::string& model_dir) {
  if (model_dir.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Describe(proto), ": external data \"", location, "\" without a model folder"));
  }
  const fs::path rel(location);
  if (location.empty() || rel.is_absolute()) {
    return absl::InvalidArgumentError(absl::StrCat(
        Describe(proto), ": external data location \"", location, "\" must be a relative path"));
  }
  for (const auto& part : rel) {
    if (part == "..") {
      return absl::InvalidArgumentError(absl::StrCat(
          Describe(proto), ": external data location \"", location, "\" escapes the model folder"));
    }
  }
  auto resolved = ResolveInside(model_dir, rel);
  if (absl::IsNotFound(resolved.status())) {
    return absl::NotFoundError(absl::StrCat(Describe(proto), ": cannot open external data file ",
                                            (fs::path(model_dir) / rel).string()));
  }
  if (!resolved.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(Describe(proto), ": external data location \"", location,
                                                   "\" escapes the model folder through a symlink"));
  }
  std::error_code ec;
  if (!fs::is_regular_file(*resolved, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat(Describe(proto), ": external data location \"", location, "\" is not a regular file"));
  }
  return resolved;
}

// An external data "offset" or "length": a whole decimal number >= 0.
absl::StatusOr<int64_t> ParseExternalSize(const onnx::TensorProto& proto, const std::string& key,
                                          const std::string& value) {
  int64_t size = 0;
  if (!absl::SimpleAtoi(value, &size) || size < 0) {
    return absl::InvalidArgumentError(absl::StrCat(Describe(proto), ": external data ", key, " \"", value,
                                                   "\" is not a whole number >= 0"));
  }
  return size;
}

struct ExternalData {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;  // -1: not given
};

absl::StatusOr<ExternalData> ParseExternalData(const onnx::TensorProto& proto) {
  ExternalData data;
  for (const auto& entry : proto.external_data()) {
    if (entry.key() == "location") {
      data.location = entry.value();
    } else if (entry.key() == "offset") {
      ASSIGN_OR_RETURN(data.offset, ParseExternalSize(proto, entry.key(), entry.value()));
    } else if (entry.key() == "length") {
      ASSIGN_OR_RETURN(data.length, ParseExternalSize(proto, entry.key(), entry.value()));
    }
  }
  return data;
}

absl::Status ReadExternal(const onnx::TensorProto& proto, const std::string& model_dir, Tensor& out) {
  ASSIGN_OR_RETURN(const ExternalData data, ParseExternalData(proto));
  ASSIGN_OR_RETURN(fs::path path, ResolveExternalPath(proto, data.location, model_dir));
  const int64_t want = static_cast<int64_t>(WireByteSize(out));
  if (data.length >= 0 && data.length != want) {
    return absl::InvalidArgumentError(absl::StrCat(Describe(proto), ": external data length ", data.length,
                                                   " but ", out.DebugString(), " needs ", want));
  }
  std::error_code ec;
  const auto file_size = static_cast<int64_t>(fs::file_size(path, ec));
  // Compared without adding, so an offset near INT64_MAX cannot overflow.
  if (ec || data.offset > file_size || want > file_size - data.offset) {
    return absl::InvalidArgumentError(absl::StrCat(Describe(proto), ": external data file ", path.string(),
                                                   " is too short for offset ", data.offset, " + ", want,
                                                   " bytes"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat(Describe(proto), ": cannot open external data file ", path.string()));
  }
  in.seekg(data.offset);
  // Packed sub-byte data goes through a buffer; everything else is read straight into the tensor.
  const bool packed = ElementsPerWireByte(out.dtype()) > 1;
  std::string buffer(packed ? static_cast<size_t>(want) : 0, '\0');
  in.read(packed ? buffer.data() : static_cast<char*>(out.raw_data()), want);
  if (in.gcount() != want) {
    return absl::DataLossError(absl::StrCat(Describe(proto), ": external data file ", path.string(),
                                            " changed while it was read"));
  }
  if (packed) UnpackSubByte(reinterpret_cast<const uint8_t*>(buffer.data()), out);
  return absl::OkStatus();
}

// A BOOL tensor's bytes as the wire gave them: any byte but 0 or 1 read as a bool is undefined behaviour
// (Not of a 2 answered 3, a Cast to float 2.0), so such a tensor is refused, as requests' are.
absl::Status CheckBoolBytes(const onnx::TensorProto& proto, const Tensor& out) {
  if (out.dtype() != DataType::kBool) return absl::OkStatus();
  const int64_t i = FirstNonBoolByte(out.raw_data(), out.NumElements());
  if (i < 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(Describe(proto), ": BOOL element ", i, " is byte ",
                                                 static_cast<int>(static_cast<const uint8_t*>(out.raw_data())[i]),
                                                 ", expected 0 or 1"));
}

}  // namespace

absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto, const std::string& model_dir) {
  auto type_or = DataTypeFromOnnx(proto.data_type());
  if (!type_or.ok()) {
    return absl::Status(type_or.status().code(),
                        absl::StrCat(Describe(proto), ": ", type_or.status().message()));
  }
  const DataType type = *type_or;
  // Checked before anything is allocated: dims whose product wraps would otherwise pass the payload size
  // checks below with a tiny buffer.
  Shape shape(proto.dims().begin(), proto.dims().end());
  if (absl::Status fits = CheckedByteSize(type, shape).status(); !fits.ok()) {
    return absl::Status(fits.code(), absl::StrCat(Describe(proto), ": ", fits.message()));
  }
  // A string tensor's elements are constructed when it is made, so its count is compared first: a 54-byte
  // model declaring 100 M strings and holding none had the server build 3 GB of empty strings.
  if (type == DataType::kString && proto.data_location() != onnx::TensorProto::EXTERNAL) {
    RETURN_IF_ERROR(CheckCount(proto, proto.string_data_size(), *CheckedElementCount(shape)));
  }
  absl::StatusOr<Tensor> created = Tensor::Create(type, std::move(shape));
  if (!created.ok()) {
    return absl::Status(created.status().code(), absl::StrCat(Describe(proto), ": ", created.status().message()));
  }
  Tensor out = *std::move(created);
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    if (type == DataType::kString) {
      return absl::InvalidArgumentError(absl::StrCat(Describe(proto), ": string tensors cannot be external"));
    }
    RETURN_IF_ERROR(ReadExternal(proto, model_dir, out));
    RETURN_IF_ERROR(CheckBoolBytes(proto, out));
    return out;
  }
  if (type == DataType::kString) {
    for (int i = 0; i < proto.string_data_size(); ++i) out.data<std::string>()[i] = proto.string_data(i);
    return out;
  }
  if (proto.has_raw_data()) {
    RETURN_IF_ERROR(CopyRaw(proto, proto.raw_data(), out));
    RETURN_IF_ERROR(CheckBoolBytes(proto, out));
    return out;
  }
  if (IsLowPrecision(type)) {
    RETURN_IF_ERROR(CopyLowPrecisionInt32Data(proto, out));
    return out;
  }
  switch (type) {
    case DataType::kFloat: RETURN_IF_ERROR(CopyTyped(proto, proto.float_data(), out)); break;
    case DataType::kDouble: RETURN_IF_ERROR(CopyTyped(proto, proto.double_data(), out)); break;
    case DataType::kInt64: RETURN_IF_ERROR(CopyTyped(proto, proto.int64_data(), out)); break;
    case DataType::kUint32:
    case DataType::kUint64: RETURN_IF_ERROR(CopyTyped(proto, proto.uint64_data(), out)); break;
    default: RETURN_IF_ERROR(CopyTyped(proto, proto.int32_data(), out)); break;
  }
  return out;
}

onnx::TensorProto TensorToProto(const Tensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(static_cast<int32_t>(tensor.dtype()));
  for (int64_t d : tensor.shape()) proto.add_dims(d);
  if (tensor.dtype() == DataType::kString) {
    for (const std::string& s : tensor.values<std::string>()) proto.add_string_data(s);
  } else if (ElementsPerWireByte(tensor.dtype()) > 1) {
    proto.set_raw_data(PackSubByte(tensor));
  } else {
    proto.set_raw_data(tensor.raw_data(), tensor.ByteSize());
  }
  return proto;
}

}  // namespace onnxserve

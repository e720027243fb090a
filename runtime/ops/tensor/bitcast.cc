// BitCast (opset 26): the same bits read as another type of the same width, float32 <-> int32 and the like.
// Elements of 8 bits and more are copied byte for byte (little-endian, as this machine and the spec are).
// The 4- and 2-bit types are stored one element per byte and sign-extended, so they go through their bit
// patterns instead. A bool has two valid bytes: any other byte bitcast to bool is an error, since storing it
// would make a bool that is neither true nor false.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// Width of one element as the spec counts it; 0 for string.
int BitWidth(DataType type) {
  switch (type) {
    case DataType::kInt4: case DataType::kUint4: case DataType::kFloat4E2M1: return 4;
    case DataType::kInt2: case DataType::kUint2: return 2;
    default: return static_cast<int>(ElementSize(type)) * 8;
  }
}

// x and y are sub-byte types of one width (int4, uint4, float4e2m1; or int2, uint2).
void BitCastSubByte(const Tensor& x, Tensor& y) {
  DispatchLowPrecision(x.dtype(), [&](auto from) {
    DispatchLowPrecision(y.dtype(), [&](auto to) {
      using From = decltype(from);
      using To = decltype(to);
      const From* in = x.data<From>();
      To* out = y.data<To>();
      for (int64_t i = 0; i < x.NumElements(); ++i) out[i] = To::FromBits(in[i].ToBits());
    });
  });
}

absl::Status RequireBoolBytes(const Tensor& x) {
  const int64_t i = FirstNonBoolByte(x.raw_data(), x.NumElements());
  if (i < 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("element ", i, " of input ", x.DebugString(), " is the byte ",
                                                 static_cast<int>(static_cast<const uint8_t*>(x.raw_data())[i]),
                                                 ", which is no bool (only 0 and 1 are)"));
}

class BitCast final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const int64_t to, info.Attr<int64_t>("to"));
    absl::StatusOr<DataType> type = DataTypeFromOnnx(static_cast<int32_t>(to));
    if (!type.ok()) {
      return absl::Status(type.status().code(), absl::StrCat("attribute to: ", type.status().message()));
    }
    if (*type == DataType::kString) return absl::InvalidArgumentError("attribute to: cannot bitcast to string");
    to_ = *type;
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    if (x.dtype() == DataType::kString) {
      return absl::InvalidArgumentError(absl::StrCat("cannot bitcast the string input ", x.DebugString()));
    }
    if (BitWidth(x.dtype()) != BitWidth(to_)) {
      return absl::InvalidArgumentError(absl::StrCat("input ", x.DebugString(), " has ", BitWidth(x.dtype()),
                                                     "-bit elements, ", DataTypeName(to_), " has ",
                                                     BitWidth(to_), ": BitCast needs equal widths"));
    }
    if (to_ == DataType::kBool && x.dtype() != DataType::kBool) RETURN_IF_ERROR(RequireBoolBytes(x));
    Tensor& y = ctx.Output(0, to_, x.shape());
    if (BitWidth(to_) < 8) {
      BitCastSubByte(x, y);
    } else if (x.ByteSize() != 0) {
      std::memcpy(y.raw_data(), x.raw_data(), x.ByteSize());
    }
    return absl::OkStatus();
  }

 private:
  DataType to_ = DataType::kUndefined;
};

// Every type but string.
constexpr DataType kBitCastTypes[] = {
    DataType::kFloat, DataType::kDouble, DataType::kFloat16, DataType::kBFloat16, DataType::kInt8,
    DataType::kInt16, DataType::kInt32, DataType::kInt64, DataType::kUint8, DataType::kUint16,
    DataType::kUint32, DataType::kUint64, DataType::kBool, DataType::kFloat8E4M3FN, DataType::kFloat8E4M3FNUZ,
    DataType::kFloat8E5M2, DataType::kFloat8E5M2FNUZ, DataType::kFloat8E8M0, DataType::kFloat4E2M1,
    DataType::kInt4, DataType::kUint4, DataType::kInt2, DataType::kUint2};

}  // namespace

REGISTER_KERNEL(kOnnx, "BitCast", 26, kLatest, kBitCastTypes, BitCast);

}  // namespace onnxserve

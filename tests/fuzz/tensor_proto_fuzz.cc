// Fuzz target: onnx.TensorProto bytes -> Tensor (typed fields, raw_data, packed low-precision types), and for
// what decodes, the round trip through TensorToProto must give the same tensor back.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "runtime/model/tensor_proto.h"
#include "tests/fuzz/fuzz_limits.h"

namespace onnxserve {
namespace {

// Same type, shape and elements (bitwise for numbers, so NaNs compare equal to themselves).
bool SameTensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.dtype() == DataType::kString) {
    const auto x = a.values<std::string>();
    const auto y = b.values<std::string>();
    return std::equal(x.begin(), x.end(), y.begin(), y.end());
  }
  return a.ByteSize() == b.ByteSize() && (a.ByteSize() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.ByteSize()) == 0);
}

int RunOne(const uint8_t* data, size_t size) {
  onnx::TensorProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  // No model folder: external data must be refused, never read.
  auto tensor = TensorFromProto(proto, "");
  if (!tensor.ok()) return 0;
  (void)tensor->DebugString();
  auto again = TensorFromProto(TensorToProto(*tensor, proto.name()), "");
  if (!again.ok() || !SameTensor(*tensor, *again)) __builtin_trap();
  return 0;
}

}  // namespace
}  // namespace onnxserve

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // No try/catch: a model load decodes its initializers through the same function, so an exception out of it
  // would be one out of a load.
  onnxserve::fuzz::UseFuzzSizeLimits();
  return onnxserve::RunOne(data, size);
}

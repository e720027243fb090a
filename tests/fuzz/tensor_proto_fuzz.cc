// Fuzz target: onnx.TensorProto bytes -> Tensor (typed fields, raw_data, packed low-precision types), and for
// what decodes, the round trip through TensorToProto must give the same tensor back.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>

#include "runtime/model/tensor_proto.h"
#include "tests/fuzz/size_filter.h"

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
  if (fuzz::HugeTensor(proto)) return 0;
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
  // Large dims under the filter's limit may still fail to allocate (allocator_may_return_null in
  // scripts/fuzz.sh): a size limit (branch hard-sizes), not memory corruption.
  try {
    return onnxserve::RunOne(data, size);
  } catch (const std::bad_alloc&) {
    return 0;
  }
}

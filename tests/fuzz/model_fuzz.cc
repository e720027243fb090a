// Fuzz target: ONNX model bytes -> ModelProto -> Model -> Session (planning, kernel lookup, load-time passes), then, when the
// model compiles, one run on generated inputs of the declared types with small shapes and a short deadline.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "runtime/core/run_limits.h"
#include "runtime/exec/session.h"
#include "tests/fuzz/fuzz_limits.h"

namespace onnxserve {
namespace {

constexpr int64_t kDynamicDim = 2;       // what a dynamic input dimension gets
constexpr int64_t kMaxDim = 64;          // a model declaring a larger fixed dimension is not run
constexpr int64_t kMaxElements = 4096;   // per input
constexpr absl::Duration kDeadline = absl::Milliseconds(200);

// Small, varied, deterministic values: -3..3, so indices and shapes read from inputs stay small too.
Tensor MakeInput(const ValueInfo& info) {
  Shape shape;
  for (int64_t d : info.dims) shape.push_back(d < 0 ? kDynamicDim : d);
  Tensor tensor(info.dtype, shape);
  if (info.dtype == DataType::kString) {
    for (auto& s : tensor.mutable_values<std::string>()) s = "ab";
    return tensor;
  }
  const bool numeric = DispatchNumeric(info.dtype, [&](auto zero) {
    using T = decltype(zero);
    T* out = tensor.data<T>();
    for (int64_t i = 0; i < tensor.NumElements(); ++i) {
      const int v = static_cast<int>(i % 7) - 3;
      if constexpr (std::is_same_v<T, bool>) {
        out[i] = v > 0;
      } else if constexpr (std::is_unsigned_v<T>) {
        out[i] = static_cast<T>(i % 4);
      } else {
        out[i] = T(static_cast<float>(v));
      }
    }
  });
  if (!numeric && tensor.ByteSize() > 0) std::memset(tensor.raw_data(), 0x11, tensor.ByteSize());
  return tensor;
}

bool Runnable(const ValueInfo& info) {
  if (!info.is_tensor || info.dtype == DataType::kUndefined || !IsSupported(info.dtype)) return false;
  int64_t elements = 1;
  for (int64_t d : info.dims) {
    const int64_t n = d < 0 ? kDynamicDim : d;
    if (n > kMaxDim) return false;
    elements *= n;
  }
  return elements <= kMaxElements;
}

int RunOne(std::string_view bytes) {
  onnx::ModelProto proto;
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return 0;
  auto model = Model::FromProto(std::move(proto), "");
  if (!model.ok()) return 0;
  auto session = Session::Create(*std::move(model));
  if (!session.ok()) return 0;
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const ValueInfo& info : (*session)->inputs()) {
    if (!Runnable(info)) return 0;
    feeds.emplace_back(info.name, MakeInput(info));
  }
  (void)(*session)->Run(feeds, {}, RunLimits(absl::Now() + kDeadline));
  return 0;
}

}  // namespace
}  // namespace onnxserve

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // No try/catch: loading and running catch what kernels throw (CatchExceptions), so an exception that
  // reaches this frame would have reached a server thread too, and libFuzzer reports it as the crash it is.
  onnxserve::fuzz::UseFuzzSizeLimits();
  return onnxserve::RunOne(std::string_view(reinterpret_cast<const char*>(data), size));
}

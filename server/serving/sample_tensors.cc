#include "server/serving/sample_tensors.h"

#include <cstring>
#include <type_traits>

#include "runtime/core/status_macros.h"

namespace onnxserve::server {

absl::StatusOr<Tensor> ZeroTensor(DataType type, Shape shape) {
  ASSIGN_OR_RETURN(Tensor tensor, Tensor::Create(type, std::move(shape)));
  if (type != DataType::kString) std::memset(tensor.raw_data(), 0, tensor.ByteSize());
  return tensor;
}

absl::StatusOr<Tensor> RandomTensor(DataType type, Shape shape, std::mt19937& rng) {
  ASSIGN_OR_RETURN(Tensor tensor, ZeroTensor(type, std::move(shape)));
  std::uniform_real_distribution<float> uniform(0.f, 1.f);
  DispatchNumeric(type, [&](auto tag) {
    using T = decltype(tag);
    for (T& v : tensor.mutable_values<T>()) {
      if constexpr (std::is_integral_v<T>) {
        v = static_cast<T>(rng() % 2);
      } else {
        v = static_cast<T>(uniform(rng));
      }
    }
  });
  return tensor;
}

}  // namespace onnxserve::server

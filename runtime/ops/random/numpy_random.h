// NumpyRandom: the stream of numpy's legacy np.random.RandomState, the generator ONNX's reference
// implementation draws from (onnx/reference/ops: RandomState(seed).rand / .randn / .binomial), so that a
// seeded op here gives exactly what RandomState(seed) gives there and tests can take their expected values
// from numpy.
//
// The generator is MT19937 (std::mt19937; numpy's integer seeding is the standard init_genrand). On top:
//   Uniform()    random_sample: 53 bits from two 32-bit draws, (a >> 5) * 2^26 + (b >> 6), over 2^53.
//   Gauss()      legacy_gauss: Marsaglia's polar method on two Uniform()s, the second normal of each pair
//                kept for the next call.
//   Bernoulli(p) legacy binomial(1, p): the inversion algorithm on one Uniform(), p > 0.5 drawn as
//                1 - binomial(1, 1 - p).
// One stream, drawn in element order: a kernel's values depend on its seed only, never on the thread count.
// Not thread-safe; kernels make one per run.
#pragma once

#include <cstdint>
#include <optional>
#include <random>

#include "absl/status/statusor.h"
#include "runtime/registry/kernel.h"

namespace onnxserve {

class NumpyRandom {
 public:
  // RandomState(seed) when seeded; otherwise seeded from std::random_device, fresh on each construction.
  explicit NumpyRandom(std::optional<uint32_t> seed);

  double Uniform();
  double Gauss();
  // 1 with probability p, else 0. p must be in [0, 1].
  int Bernoulli(double p);

 private:
  std::mt19937 mt_;
  bool has_gauss_ = false;
  double gauss_ = 0;
};

// The `seed` attribute of the random ops (a float by the spec; an int is taken too): nullopt when absent or
// NaN (the reference implementation's "no seed"). The seed is truncated toward zero as numpy's int(seed) is;
// seeds in [0, 2^32) are numpy's, others wrap modulo 2^32. INVALID_ARGUMENT past +-2^63.
absl::StatusOr<std::optional<uint32_t>> SeedAttr(const KernelInfo& info);

// The `dtype` attribute (an onnx.TensorProto.DataType number) as a DataType; nullopt when absent. Each op
// checks the type against its own output types.
absl::StatusOr<std::optional<DataType>> DtypeAttr(const KernelInfo& info);

}  // namespace onnxserve

#include "runtime/ops/random/numpy_random.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/ir/attribute.h"

namespace onnxserve {

NumpyRandom::NumpyRandom(std::optional<uint32_t> seed) : mt_(seed ? *seed : std::random_device{}()) {}

double NumpyRandom::Uniform() {
  const uint32_t a = mt_() >> 5;
  const uint32_t b = mt_() >> 6;
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

double NumpyRandom::Gauss() {
  if (has_gauss_) {
    has_gauss_ = false;
    return gauss_;
  }
  double x1, x2, r2;
  do {
    x1 = 2.0 * Uniform() - 1.0;
    x2 = 2.0 * Uniform() - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  const double f = std::sqrt(-2.0 * std::log(r2) / r2);
  gauss_ = f * x1;
  has_gauss_ = true;
  return f * x2;
}

int NumpyRandom::Bernoulli(double p) {
  // numpy inverts the smaller of p and 1 - p; for n = 1 its bound on the count is 1. Every p draws, 0
  // included (the legacy stream has no shortcut for it).
  const bool flipped = p > 0.5;
  const double pp = flipped ? 1.0 - p : p;
  const double q = 1.0 - pp;
  const double qn = std::exp(std::log(q));
  int x = 0;
  double px = qn;
  double u = Uniform();
  while (u > px) {
    if (++x > 1) {
      x = 0;
      px = qn;
      u = Uniform();
    } else {
      u -= px;
      px = (pp * px) / q;
    }
  }
  return flipped ? 1 - x : x;
}

absl::StatusOr<std::optional<uint32_t>> SeedAttr(const KernelInfo& info) {
  const ir::Attribute* attr = info.FindAttr("seed");
  if (attr == nullptr) return std::nullopt;
  double seed;
  if (attr->type == ir::AttributeType::kFloat) {
    seed = attr->f;
  } else if (attr->type == ir::AttributeType::kInt) {
    seed = static_cast<double>(attr->i);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute \"seed\" must be a FLOAT, got ", ir::AttributeTypeName(attr->type)));
  }
  if (std::isnan(seed)) return std::nullopt;
  seed = std::trunc(seed);
  if (!(std::abs(seed) < 9223372036854775808.0)) {
    return absl::InvalidArgumentError(absl::StrCat("attribute \"seed\" is out of range: ", seed));
  }
  return static_cast<uint32_t>(static_cast<uint64_t>(static_cast<int64_t>(seed)));
}

absl::StatusOr<std::optional<DataType>> DtypeAttr(const KernelInfo& info) {
  if (!info.HasAttr("dtype")) return std::nullopt;
  ASSIGN_OR_RETURN(int64_t number, info.Attr<int64_t>("dtype"));
  if (number < 0 || number > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat("attribute \"dtype\" is not a data type: ", number));
  }
  return DataTypeFromOnnx(static_cast<int32_t>(number));
}

}  // namespace onnxserve

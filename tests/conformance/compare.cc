#include "tests/conformance/compare.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace onnxserve::conformance {
namespace {

bool IsFloating(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 || t == DataType::kBFloat16 ||
         t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E4M3FNUZ || t == DataType::kFloat8E5M2 ||
         t == DataType::kFloat8E5M2FNUZ || t == DataType::kFloat8E8M0 || t == DataType::kFloat4E2M1;
}

template <typename T>
bool ExactEqual(const Tensor& a, const Tensor& b, int64_t i) {
  return a.data<T>()[i] == b.data<T>()[i];
}

std::string CompareTensorTypes(const Tensor& expected, const Tensor& actual) {
  if (expected.dtype() != actual.dtype()) {
    return absl::StrCat("dtype: expected ", DataTypeName(expected.dtype()), ", got ",
                        DataTypeName(actual.dtype()));
  }
  if (expected.shape() != actual.shape()) {
    return absl::StrCat("shape: expected ", ShapeToString(expected.shape()), ", got ",
                        ShapeToString(actual.shape()));
  }
  return "";
}

}  // namespace

std::string CompareTypeAndShape(const Value& expected, const Value& actual) {
  if (!expected.is_tensor() || !actual.is_tensor()) {
    return absl::StrCat("expected a tensor like ", expected.DebugString(), ", got ", actual.DebugString());
  }
  return CompareTensorTypes(*expected.tensor(), *actual.tensor());
}

std::string CompareTensors(const Tensor& expected, const Tensor& actual, double rtol, double atol) {
  if (std::string diff = CompareTensorTypes(expected, actual); !diff.empty()) return diff;
  int64_t mismatches = 0;
  std::string first;
  for (int64_t i = 0; i < expected.NumElements(); ++i) {
    bool ok;
    std::string e_str, a_str;
    if (expected.dtype() == DataType::kString) {
      ok = ExactEqual<std::string>(expected, actual, i);
      e_str = expected.data<std::string>()[i];
      a_str = actual.data<std::string>()[i];
    } else if (IsFloating(expected.dtype())) {
      const double e = expected.GetAsDouble(i), a = actual.GetAsDouble(i);
      ok = (std::isnan(e) && std::isnan(a)) || e == a ||
           (std::isfinite(e) && std::abs(a - e) <= atol + rtol * std::abs(e));
      e_str = absl::StrCat(e);
      a_str = absl::StrCat(a);
    } else {
      ok = false;
      auto exact_equal = [&](auto tag) {
        using T = decltype(tag);
        ok = ExactEqual<T>(expected, actual, i);
      };
      DispatchNumeric(expected.dtype(), exact_equal) || DispatchLowPrecision(expected.dtype(), exact_equal);
      e_str = absl::StrCat(expected.GetAsInt64(i));
      a_str = absl::StrCat(actual.GetAsInt64(i));
    }
    if (!ok && mismatches++ == 0) first = absl::StrCat("element ", i, ": expected ", e_str, ", got ", a_str);
  }
  if (mismatches == 0) return "";
  return absl::StrCat(mismatches, " of ", expected.NumElements(), " elements differ (", first, ")");
}

namespace {

std::string CompareElements(const std::vector<Value>& expected, const std::vector<Value>& actual, double rtol,
                            double atol) {
  if (expected.size() != actual.size()) {
    return absl::StrCat("length: expected ", expected.size(), ", got ", actual.size());
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    std::string diff = CompareValues(expected[i], actual[i], rtol, atol);
    if (!diff.empty()) return absl::StrCat("element ", i, ": ", diff);
  }
  return "";
}

}  // namespace

std::string CompareValues(const Value& expected, const Value& actual, double rtol, double atol) {
  if (expected.is_optional() && !actual.is_optional() && expected.has_element()) {
    return CompareValues(expected.element(), actual, rtol, atol);
  }
  if (expected.kind() != actual.kind()) {
    return absl::StrCat("expected ", expected.DebugString(), ", got ", actual.DebugString());
  }
  switch (expected.kind()) {
    case Value::Kind::kTensor: return CompareTensors(*expected.tensor(), *actual.tensor(), rtol, atol);
    case Value::Kind::kSequence: return CompareElements(expected.elements(), actual.elements(), rtol, atol);
    case Value::Kind::kMap: {
      std::string diff = CompareTensors(expected.keys(), actual.keys(), 0, 0);
      if (!diff.empty()) return absl::StrCat("keys: ", diff);
      return CompareElements(expected.elements(), actual.elements(), rtol, atol);
    }
    case Value::Kind::kOptional:
      if (expected.has_element() != actual.has_element()) {
        return absl::StrCat("expected ", expected.DebugString(), ", got ", actual.DebugString());
      }
      return expected.has_element() ? CompareValues(expected.element(), actual.element(), rtol, atol) : "";
    case Value::Kind::kNone: return "";
  }
  return "";
}

}  // namespace onnxserve::conformance

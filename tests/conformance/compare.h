// The comparison the ONNX backend runner makes: numpy.testing.assert_allclose(expected, actual, rtol, atol)
// after checking that dtype and shape match exactly; NaN equals NaN.
#pragma once

#include <string>

#include "runtime/core/tensor.h"
#include "runtime/core/value.h"

namespace onnxserve::conformance {

// Empty when they match, else the reason ("element 3: expected 1.5, got 1.25", "dtype float vs double").
std::string CompareTensors(const Tensor& expected, const Tensor& actual, double rtol, double atol);

// Empty when both are tensors of one dtype and shape, whatever their elements: for outputs that are draws
// of a random op.
std::string CompareTypeAndShape(const Value& expected, const Value& actual);

// CompareTensors through sequences (same length, element by element), maps (same keys) and optionals (both
// empty or both holding matching elements). An expected optional matches its element given bare, as an
// output declared optional may be.
std::string CompareValues(const Value& expected, const Value& actual, double rtol, double atol);

}  // namespace onnxserve::conformance

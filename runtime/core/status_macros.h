// Status propagation helpers: Abseil keeps these internal, so onnxserve defines its own.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define ONNXSERVE_CONCAT_INNER(a, b) a##b
#define ONNXSERVE_CONCAT(a, b) ONNXSERVE_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                  \
  do {                                         \
    ::absl::Status _status = (expr);           \
    if (!_status.ok()) return _status;         \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)  \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return std::move(tmp).status(); \
  lhs = std::move(tmp).value()

// ASSIGN_OR_RETURN(auto x, MaybeX()); declares x from the value or returns the error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(ONNXSERVE_CONCAT(_statusor_, __LINE__), lhs, expr)

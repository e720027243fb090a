#include "server/observability/trace_context.h"

#include <algorithm>

namespace onnxserve::server {
namespace {

constexpr size_t kTraceIdDigits = 32, kSpanIdDigits = 16;
// "00-" + trace-id + "-" + parent-id + "-" + flags
constexpr size_t kHeaderBytes = 3 + kTraceIdDigits + 1 + kSpanIdDigits + 1 + 2;

bool IsLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// `field` is `digits` lowercase hex digits, not all '0' (the specification's invalid value), when `nonzero`.
bool IsHexField(std::string_view field, bool nonzero) {
  if (!std::all_of(field.begin(), field.end(), IsLowerHex)) return false;
  return !nonzero || field.find_first_not_of('0') != std::string_view::npos;
}

}  // namespace

std::optional<TraceContext> ParseTraceparent(std::string_view header) {
  if (header.size() != kHeaderBytes || header.substr(0, 3) != "00-") return std::nullopt;
  const std::string_view trace_id = header.substr(3, kTraceIdDigits);
  const size_t span_at = 3 + kTraceIdDigits + 1;
  const std::string_view span_id = header.substr(span_at, kSpanIdDigits);
  const size_t flags_at = span_at + kSpanIdDigits + 1;
  if (header[span_at - 1] != '-' || header[flags_at - 1] != '-') return std::nullopt;
  if (!IsHexField(trace_id, true) || !IsHexField(span_id, true) || !IsHexField(header.substr(flags_at), false)) {
    return std::nullopt;
  }
  return TraceContext{std::string(trace_id), std::string(span_id)};
}

}  // namespace onnxserve::server

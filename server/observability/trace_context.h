// W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` header a caller sends so that
// the server's log line of a request joins the caller's trace.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace onnxserve::server {

// The metadata key (gRPC) and header name (HTTP, matched case-insensitively) that carry it.
inline constexpr char kTraceparentHeader[] = "traceparent";

struct TraceContext {
  std::string trace_id;  // 32 lowercase hex digits, not all zero
  std::string span_id;   // 16 lowercase hex digits (the caller's parent-id), not all zero
};

// Parses version 00 of the header, `00-<32 hex>-<16 hex>-<2 hex flags>`, exactly 55 bytes, lowercase hex as
// the specification requires. Anything else (another version, upper case, an all-zero id, extra bytes) is
// nullopt: a bad header is ignored, never an error, and what is returned is bounded hex, safe to log.
std::optional<TraceContext> ParseTraceparent(std::string_view header);

}  // namespace onnxserve::server

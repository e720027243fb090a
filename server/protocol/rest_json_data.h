// The JSON part of a KServe v2 REST inference request read in two passes over its text, so that its inputs'
// `data` never becomes a document: in nlohmann's document a scalar costs 16 bytes and a nested array a heap
// container per row, and a body of 16 MB of [[0],[0],...] held 440 MB while it was decoded (a flat one some
// 20 times its size), where the rows' values need 4 bytes each. The first pass builds the document without
// them and counts each input's elements; once the caller has checked those against the inputs' shapes, the
// second writes them straight into raw form. Part of rest_json.cc's decoding; nothing here throws on bad input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/core/data_type.h"

namespace onnxserve::server {

// Nested `data` arrays deeper than this are refused: more than any tensor's rank.
inline constexpr int kMaxDataDepth = 64;

// Values a request's document may hold outside its inputs' data: a few per input, output and parameter are
// enough for any model, and each costs the document some 16 to 100 bytes.
inline constexpr int64_t kMaxDocumentValues = int64_t{1} << 16;

struct RequestDocument {
  // The request, with the `data` of each element of "inputs" null where it has one.
  nlohmann::json document;
  // Per element of "inputs": the scalars of its data (itself, or the leaves of its nested arrays), 0 without.
  std::vector<int64_t> data_elements;
};

// The first pass. INVALID_ARGUMENT for text that is not JSON, data nested deeper than kMaxDataDepth or
// holding an object, or a document of more than kMaxDocumentValues values.
absl::StatusOr<RequestDocument> ParseRequestDocument(std::string_view text);

// Where the second pass writes the data of one element of "inputs".
struct DataTarget {
  std::string name;      // the input's, for errors
  std::string datatype;  // as the request names it, for errors
  DataType type = DataType::kUndefined;
  std::string* raw = nullptr;  // reserved by the caller for the elements the first pass counted
};

// The second pass over the same `text`: the scalars of the data of "inputs"[i] appended, in raw form, to
// targets[i]->raw (inputs without a target, nullopt, are skipped). INVALID_ARGUMENT naming the input at the
// first scalar that is not an element of its datatype.
absl::Status ReadRequestData(std::string_view text, absl::Span<const std::optional<DataTarget>> targets);

}  // namespace onnxserve::server

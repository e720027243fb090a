#include "server/protocol/rest_json_data.h"

#include <cstring>
#include <functional>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"

namespace onnxserve::server {
namespace {

using nlohmann::json;

// ---- JSON values to raw little-endian elements ------------------------------------------------------------
// The host is little-endian (x86-64, as the whole runtime assumes), so an element's bytes are its memory.

template <typename T>
void AppendBytes(T value, std::string& raw) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  raw.append(bytes, sizeof(T));
}

// An integer element: a JSON integer within T's range (1.0 or true are not integers).
template <typename T>
bool AppendInteger(const json& value, std::string& raw) {
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) return false;
    AppendBytes(static_cast<T>(u), raw);
    return true;
  }
  if (value.is_number_integer()) {
    const int64_t i = value.get<int64_t>();  // negative here: non-negative integers parse as unsigned
    if constexpr (std::is_unsigned_v<T>) {
      return false;
    } else {
      if (i < static_cast<int64_t>(std::numeric_limits<T>::min())) return false;
      AppendBytes(static_cast<T>(i), raw);
      return true;
    }
  }
  return false;
}

// One element of a `type` tensor; false when `value` is not one (the caller names the input).
bool AppendElement(const json& value, DataType type, std::string& raw) {
  switch (type) {
    case DataType::kBool:
      if (!value.is_boolean()) return false;
      raw.push_back(value.get<bool>() ? 1 : 0);
      return true;
    case DataType::kUint8: return AppendInteger<uint8_t>(value, raw);
    case DataType::kUint16: return AppendInteger<uint16_t>(value, raw);
    case DataType::kUint32: return AppendInteger<uint32_t>(value, raw);
    case DataType::kUint64: return AppendInteger<uint64_t>(value, raw);
    case DataType::kInt8: return AppendInteger<int8_t>(value, raw);
    case DataType::kInt16: return AppendInteger<int16_t>(value, raw);
    case DataType::kInt32: return AppendInteger<int32_t>(value, raw);
    case DataType::kInt64: return AppendInteger<int64_t>(value, raw);
    case DataType::kFloat:
      if (!value.is_number()) return false;
      AppendBytes(static_cast<float>(value.get<double>()), raw);
      return true;
    case DataType::kDouble:
      if (!value.is_number()) return false;
      AppendBytes(value.get<double>(), raw);
      return true;
    case DataType::kString: {
      if (!value.is_string()) return false;
      const std::string& text = value.get_ref<const std::string&>();
      if (text.size() > std::numeric_limits<uint32_t>::max()) return false;
      AppendBytes(static_cast<uint32_t>(text.size()), raw);
      raw += text;
      return true;
    }
    default: return false;  // FP16, BF16: refused before any element is read
  }
}

// ---- the request's text as SAX events ---------------------------------------------------------------------

// nlohmann's SAX events of a request's text, with the `data` of each element of the root's "inputs" taken
// apart: its scalars go to `leaf` (the input's index, the scalar), its arrays only bound the nesting. The rest
// goes into `document` when there is one (the first pass), and is only followed when not (the second).
class RequestSax {
 public:
  using Leaf = std::function<absl::Status(size_t input, const json& scalar)>;

  RequestSax(json* document, Leaf leaf) : document_(document), leaf_(std::move(leaf)) {}

  bool null() { return Scalar(json(nullptr)); }
  bool boolean(bool value) { return Scalar(json(value)); }
  bool number_integer(json::number_integer_t value) { return Scalar(json(value)); }
  bool number_unsigned(json::number_unsigned_t value) { return Scalar(json(value)); }
  bool number_float(json::number_float_t value, const json::string_t& /*text*/) { return Scalar(json(value)); }
  bool string(json::string_t& value) { return Scalar(json(std::move(value))); }
  bool binary(json::binary_t& value) { return Scalar(json::binary(std::move(value))); }

  bool start_object(size_t /*elements*/) {
    if (InData()) return Fail(absl::StrCat("inputs[", DataInput(), "]: data holds a JSON object"));
    return Open(json::object());
  }
  bool end_object() { return Close(); }

  bool start_array(size_t /*elements*/) {
    if (!InData()) return Open(json::array());
    if (data_depth_ == 0) StartData();
    if (++data_depth_ > kMaxDataDepth) return Fail(absl::StrCat("data is nested deeper than ", kMaxDataDepth));
    return true;
  }
  bool end_array() {
    if (data_depth_ == 0) return Close();
    --data_depth_;
    return true;
  }

  bool key(json::string_t& name) {
    Frame& object = frames_.back();
    // JSON lets a key repeat and the document keeps its last value, where the passes would count the data
    // of every "inputs" array and every "data" of an input.
    if ((frames_.size() == 1 && name == "inputs") || (InInputObject() && name == "data")) {
      if (object.named_once) return Fail(absl::StrCat("\"", name, "\" is given twice in one object"));
      object.named_once = true;
    }
    object.key = name;
    return true;
  }

  template <typename Exception>
  bool parse_error(size_t /*position*/, const std::string& /*token*/, const Exception& /*error*/) {
    return Fail("the request is not a JSON object");
  }

  const absl::Status& error() const { return error_; }

 private:
  struct Frame {
    json* container;  // in the document; null without one
    bool object;
    std::string key;  // an object's latest key
    size_t elements = 0;  // values opened in it so far
    bool named_once = false;  // the root has "inputs", an input's object "data"
  };

  // The object of an element of the root's "inputs" is the innermost container.
  bool InInputObject() const {
    return frames_.size() == 3 && frames_[0].object && frames_[0].key == "inputs" && !frames_[1].object &&
           frames_[2].object;
  }
  // The next value, or the one being read, belongs to an input's data.
  bool InData() const { return data_depth_ > 0 || (InInputObject() && frames_[2].key == "data"); }
  size_t DataInput() const { return data_depth_ > 0 ? data_input_ : frames_[1].elements - 1; }

  // An input's data begins: the document holds null in its place, so that the input is seen to have some.
  void StartData() {
    data_input_ = frames_[1].elements - 1;
    Add(json(nullptr));
  }

  bool Scalar(json value) {
    if (!InData()) {
      if (!Counted()) return false;
      Add(std::move(value));
      return true;
    }
    if (data_depth_ == 0) StartData();
    absl::Status taken = leaf_(DataInput(), value);
    return taken.ok() || Fail(std::move(taken));
  }

  bool Open(json container) {
    if (!Counted()) return false;
    const bool object = container.is_object();
    json* added = Add(std::move(container));
    frames_.push_back(Frame{added, object, "", 0, false});
    return true;
  }
  bool Close() {
    frames_.pop_back();
    return true;
  }

  // Puts `value` where the parse stands: the root, the next element of an array, an object's latest key.
  // Pointers to open containers stay valid: their parent gets no other element until they close.
  json* Add(json value) {
    if (!frames_.empty()) ++frames_.back().elements;
    if (document_ == nullptr) return nullptr;
    if (frames_.empty()) return &(*document_ = std::move(value));
    json& parent = *frames_.back().container;
    if (frames_.back().object) return &(parent[frames_.back().key] = std::move(value));
    parent.push_back(std::move(value));
    return &parent.back();
  }

  bool Counted() {
    if (++values_ <= kMaxDocumentValues) return true;
    return Fail(absl::StrCat("the request holds more than ", kMaxDocumentValues,
                             " JSON values besides its inputs' data"));
  }

  bool Fail(absl::Status status) {
    if (error_.ok()) error_ = std::move(status);
    return false;
  }
  bool Fail(absl::string_view message) { return Fail(absl::InvalidArgumentError(message)); }

  json* const document_;
  const Leaf leaf_;
  std::vector<Frame> frames_;
  int data_depth_ = 0;
  size_t data_input_ = 0;
  int64_t values_ = 0;
  absl::Status error_;
};

absl::Status Parse(std::string_view text, RequestSax& sax) {
  if (json::sax_parse(text, &sax) && sax.error().ok()) return absl::OkStatus();
  return sax.error().ok() ? absl::InvalidArgumentError("the request is not a JSON object") : sax.error();
}

// The error of a scalar in `target`'s data that is not an element of its datatype.
absl::Status NotAnElement(const DataTarget& target) {
  const DataType type = target.type;
  const char* expected = type == DataType::kBool                                 ? " (true or false)"
                         : type == DataType::kString                             ? " (a string)"
                         : type == DataType::kFloat || type == DataType::kDouble ? " (a number)"
                                                                                 : " (an integer in its range)";
  return absl::InvalidArgumentError(
      absl::StrCat("input \"", target.name, "\": data holds a value that is not ", target.datatype, expected));
}

}  // namespace

absl::StatusOr<RequestDocument> ParseRequestDocument(std::string_view text) {
  RequestDocument parsed;
  RequestSax sax(&parsed.document, [&parsed](size_t input, const json&) {
    if (parsed.data_elements.size() <= input) parsed.data_elements.resize(input + 1, 0);
    ++parsed.data_elements[input];
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(Parse(text, sax));
  return parsed;
}

absl::Status ReadRequestData(std::string_view text, absl::Span<const std::optional<DataTarget>> targets) {
  RequestSax sax(nullptr, [targets](size_t input, const json& scalar) {
    if (input >= targets.size() || !targets[input]) return absl::OkStatus();
    const DataTarget& target = *targets[input];
    return AppendElement(scalar, target.type, *target.raw) ? absl::OkStatus() : NotAnElement(target);
  });
  return Parse(text, sax);
}

}  // namespace onnxserve::server

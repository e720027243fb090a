// String operators of ai.onnx: StringNormalizer (10: drop stopwords, change case), StringConcat (20:
// elementwise with broadcasting), StringSplit (20: substrings padded to the longest split, plus counts) and
// RegexFullMatch (20: RE2 syntax). They are the text front end of exported scikit-learn and TF Text
// pipelines, usually ahead of a TfIdfVectorizer (tfidf.cc). Elements are UTF-8 byte strings; only case
// changes and whitespace detection look at code points.
#include <locale.h>
#include <wctype.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "re2/re2.h"
#include "runtime/core/run_limits.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

constexpr DataType kStringType[] = {DataType::kString};

// ---- UTF-8 ----

// Decodes the code point starting at s[i] into `cp`; returns its length in bytes, or 0 when the bytes there
// are not well-formed UTF-8 (a stray continuation byte, a truncated or overlong sequence, a surrogate or a
// value above U+10FFFF).
size_t DecodeUtf8(absl::string_view s, size_t i, char32_t& cp) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) {
    cp = lead;
    return 1;
  }
  size_t len;
  char32_t min;
  if ((lead & 0xE0) == 0xC0) {
    len = 2, min = 0x80, cp = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    len = 3, min = 0x800, cp = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    len = 4, min = 0x10000, cp = lead & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

int64_t Utf8Length(char32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

void AppendUtf8(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// ---- StringNormalizer ----

enum class CaseChange { kNone, kLower, kUpper };

// Unicode's simple (one code point to one) case mappings, from glibc's C.UTF-8 locale. Its LC_CTYPE tables
// are the ones en_US.UTF-8 uses too, and unlike en_US it ships in every Debian system (libc-bin is
// essential). Created once per process and never freed; towupper_l/towlower_l on it are thread-safe.
absl::StatusOr<locale_t> UnicodeCaseLocale() {
  static const locale_t locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(0));
  if (locale == static_cast<locale_t>(0)) {
    return absl::FailedPreconditionError(
        "changing case needs the C.UTF-8 locale (glibc's libc-bin), which this system does not have");
  }
  return locale;
}

// The locales whose case rules are Unicode's default ones, which is what we apply. Others (Turkish dotted
// and dotless i, say) would need tailored mappings we do not have.
bool IsDefaultLocale(const std::string& locale) {
  for (const char* name : {"", "en_US", "en_US.UTF-8", "en_US.utf8", "en-US", "C.UTF-8", "C.utf8"}) {
    if (locale == name) return true;
  }
  return false;
}

// Calls emit(cp) for each code point of `in` with its case changed: ASCII directly, others through the
// locale. False when `in` is not well-formed UTF-8.
template <typename Emit>
bool ForEachChangedCodePoint(absl::string_view in, CaseChange change, locale_t locale, const Emit& emit) {
  const bool upper = change == CaseChange::kUpper;
  for (size_t i = 0; i < in.size();) {
    const unsigned char c = static_cast<unsigned char>(in[i]);
    if (c < 0x80) {
      const bool lower_letter = c >= 'a' && c <= 'z', upper_letter = c >= 'A' && c <= 'Z';
      emit(static_cast<char32_t>(upper && lower_letter ? c - 32 : !upper && upper_letter ? c + 32 : c));
      ++i;
      continue;
    }
    char32_t cp = 0;
    const size_t len = DecodeUtf8(in, i, cp);
    if (len == 0) return false;
    const wint_t mapped = upper ? towupper_l(static_cast<wint_t>(cp), locale)
                                : towlower_l(static_cast<wint_t>(cp), locale);
    emit(static_cast<char32_t>(mapped));
    i += len;
  }
  return true;
}

// Writes `in` with its case changed to `out` (replacing its contents). False when `in` is not well-formed
// UTF-8.
bool ChangeCase(absl::string_view in, CaseChange change, locale_t locale, std::string& out) {
  out.clear();
  out.reserve(in.size());
  return ForEachChangedCodePoint(in, change, locale, [&](char32_t cp) { AppendUtf8(cp, out); });
}

// The bytes of `in` with its case changed, which need not be its own: a code point and its other case can
// differ in UTF-8 length (U+023F is 2 bytes, its uppercase U+2C7E 3). Nullopt when `in` is not UTF-8.
std::optional<int64_t> ChangedCaseLength(absl::string_view in, CaseChange change, locale_t locale) {
  int64_t length = 0;
  if (!ForEachChangedCodePoint(in, change, locale, [&](char32_t cp) { length += Utf8Length(cp); })) {
    return std::nullopt;
  }
  return length;
}

// Y = the elements of X that are not stopwords, in order, with their case changed. X is [C] or [1, C]; when
// every element is a stopword (or X is empty) Y is [1] or [1, 1] holding "". Unless is_case_sensitive,
// elements and stopwords compare uppercased when case_change_action is UPPER and lowercased otherwise, as
// ONNX Runtime compares them. Empty strings in X are elements like any other.
class StringNormalizer final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const std::string action, info.Attr<std::string>("case_change_action", "NONE"));
    if (action == "LOWER") {
      case_change_ = CaseChange::kLower;
    } else if (action == "UPPER") {
      case_change_ = CaseChange::kUpper;
    } else if (action != "NONE") {
      return absl::InvalidArgumentError(
          absl::StrCat("case_change_action \"", action, "\" is not one of LOWER, UPPER, NONE"));
    }
    ASSIGN_OR_RETURN(const int64_t case_sensitive, info.Attr<int64_t>("is_case_sensitive", 0));
    case_sensitive_ = case_sensitive != 0;
    ASSIGN_OR_RETURN(const std::string locale, info.Attr<std::string>("locale", ""));
    if (!IsDefaultLocale(locale)) {
      return absl::InvalidArgumentError(
          absl::StrCat("locale \"", locale, "\" is not supported: onnxserve changes case by Unicode's default "
                       "mappings, those of en_US (the default; \"en_US\", \"en_US.UTF-8\" or unset)"));
    }
    ASSIGN_OR_RETURN(const auto stopwords, info.Attr<std::vector<std::string>>("stopwords", {}));
    if (case_change_ != CaseChange::kNone || (!case_sensitive_ && !stopwords.empty())) {
      ASSIGN_OR_RETURN(locale_, UnicodeCaseLocale());
    }
    if (!case_sensitive_) compare_case_ = case_change_ == CaseChange::kUpper ? CaseChange::kUpper : CaseChange::kLower;
    std::string folded;
    for (const std::string& word : stopwords) {
      if (case_sensitive_) {
        stopwords_.insert(word);
      } else if (ChangeCase(word, compare_case_, locale_, folded)) {
        stopwords_.insert(folded);
      } else {
        return absl::InvalidArgumentError(absl::StrCat("stopword \"", word, "\" is not valid UTF-8"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    if (x.rank() != 1 && !(x.rank() == 2 && x.dim(0) == 1)) {
      return absl::InvalidArgumentError(absl::StrCat("X must be [C] or [1, C], got ", x.DebugString()));
    }
    const auto in = x.values<std::string>();
    std::vector<int64_t> kept;
    kept.reserve(in.size());
    std::string folded;  // reused for every element
    for (size_t i = 0; i < in.size(); ++i) {
      if (stopwords_.empty()) {
        kept.push_back(static_cast<int64_t>(i));
        continue;
      }
      const std::string* key = &in[i];
      if (!case_sensitive_) {
        if (!ChangeCase(in[i], compare_case_, locale_, folded)) return NotUtf8(i);
        key = &folded;
      }
      if (!stopwords_.contains(*key)) kept.push_back(static_cast<int64_t>(i));
    }
    RETURN_IF_ERROR(CheckOutputChars(in, kept));
    const int64_t count = std::max<int64_t>(static_cast<int64_t>(kept.size()), 1);
    Tensor& y = ctx.Output(0, DataType::kString, x.rank() == 1 ? Shape{count} : Shape{1, count});
    std::string* out = y.data<std::string>();
    for (size_t k = 0; k < kept.size(); ++k) {
      const std::string& element = in[kept[k]];
      if (case_change_ == CaseChange::kNone) {
        out[k] = element;
      } else if (!ChangeCase(element, case_change_, locale_, out[k])) {
        return NotUtf8(kept[k]);
      }
    }
    return absl::OkStatus();
  }

 private:
  // The kept elements' characters after the case change, against the limits, before Y is built.
  absl::Status CheckOutputChars(absl::Span<const std::string> in, const std::vector<int64_t>& kept) const {
    int64_t chars = 0;
    for (const int64_t i : kept) {
      if (case_change_ == CaseChange::kNone) {
        chars += static_cast<int64_t>(in[i].size());
        continue;
      }
      const std::optional<int64_t> length = ChangedCaseLength(in[i], case_change_, locale_);
      if (!length) return NotUtf8(i);
      chars += *length;
    }
    return CheckStringChars(chars);
  }

  static absl::Status NotUtf8(int64_t i) {
    return absl::InvalidArgumentError(absl::StrCat("element ", i, " of X is not valid UTF-8"));
  }

  CaseChange case_change_ = CaseChange::kNone;
  bool case_sensitive_ = false;
  CaseChange compare_case_ = CaseChange::kNone;  // how elements meet stopwords: kNone when case-sensitive
  locale_t locale_ = static_cast<locale_t>(0);   // set when case matters
  absl::flat_hash_set<std::string> stopwords_;   // in compare_case_
};

// ---- StringConcat ----

// Z = X + Y per element, with multidirectional broadcasting.
class StringConcat final : public OpKernel {
 public:
  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& x = *ctx.Input(0);
    const Tensor& y = *ctx.Input(1);
    if (y.dtype() != DataType::kString) {
      return absl::InvalidArgumentError(absl::StrCat("Y must be a string tensor like X, got ", y.DebugString()));
    }
    auto shape = BroadcastShapes(x.shape(), y.shape());
    if (!shape.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("X ", x.DebugString(), " and Y ", y.DebugString(), " do not broadcast"));
    }
    Tensor& z = ctx.Output(0, DataType::kString, *shape);
    RETURN_IF_ERROR(CheckBroadcastStrings({&x, &y}, z.NumElements()));
    const std::string* a = x.data<std::string>();
    const std::string* b = y.data<std::string>();
    std::string* out = z.data<std::string>();
    ForEachBroadcast<2>(*shape, {BroadcastStrides(x.shape(), *shape), BroadcastStrides(y.shape(), *shape)},
                        [&](int64_t i, const std::array<int64_t, 2>& at) {
                          out[i].reserve(a[at[0]].size() + b[at[1]].size());
                          out[i].append(a[at[0]]).append(b[at[1]]);
                        });
    return absl::OkStatus();
  }
};

// ---- StringSplit ----

// The length of the whitespace character at s[i], 0 when there is none. Whitespace is what Python's
// str.split() splits on, as the ONNX reference implementation does: Unicode's White_Space characters plus
// the ASCII information separators U+001C..U+001F.
size_t WhitespaceAt(absl::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) ? 1 : 0;
  char32_t cp = 0;
  const size_t len = DecodeUtf8(s, i, cp);
  const bool space = cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
                     cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
  return len > 0 && space ? len : 0;
}

// Y = X's elements split on `delimiter` (or on runs of whitespace when it is unset or ""), at most
// `maxsplit` times from the left, padded with "" to the most substrings of any element; Z = the count of
// each. Splitting follows Python's str.split, which the spec's examples and reference use. With a
// delimiter, neighbouring delimiters delimit "" and an empty element gives [""]. On whitespace, leading and
// trailing whitespace gives nothing, an empty or blank element gives [], and the unsplit rest after
// maxsplit splits keeps its trailing whitespace. A negative maxsplit means no limit, as in Python.
class StringSplit final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(delimiter_, info.Attr<std::string>("delimiter", ""));
    ASSIGN_OR_RETURN(maxsplit_, info.Attr<int64_t>("maxsplit", -1));
    if (maxsplit_ < 0) maxsplit_ = std::numeric_limits<int64_t>::max();
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    const std::string* in = x.data<std::string>();
    const int64_t n = x.NumElements();
    // Z, or scratch for the counts when the node leaves Z out.
    Tensor scratch;
    int64_t* count = ctx.num_outputs() > 1 ? ctx.Output(1, DataType::kInt64, x.shape()).data<int64_t>()
                                           : (scratch = Tensor(DataType::kInt64, x.shape())).data<int64_t>();
    int64_t widest = 0;
    for (int64_t i = 0; i < n; ++i) {
      count[i] = Split(in[i], [](absl::string_view) {});
      widest = std::max(widest, count[i]);
    }
    Shape shape = x.shape();
    shape.push_back(widest);
    Tensor& y = ctx.Output(0, DataType::kString, shape);
    std::string* out = y.data<std::string>();
    for (int64_t i = 0; i < n; ++i) {
      std::string* row = out + i * widest;
      Split(in[i], [&](absl::string_view piece) { (row++)->assign(piece.data(), piece.size()); });
    }
    return absl::OkStatus();
  }

 private:
  // Calls emit(piece) for each substring of s in order; returns how many there are.
  template <typename Emit>
  int64_t Split(absl::string_view s, Emit&& emit) const {
    int64_t pieces = 0;
    if (!delimiter_.empty()) {
      size_t begin = 0;
      for (size_t at; pieces < maxsplit_ && (at = FindDelimiter(s, begin)) != absl::string_view::npos;) {
        emit(s.substr(begin, at - begin));
        ++pieces;
        begin = at + delimiter_.size();
      }
      emit(s.substr(begin));
      return pieces + 1;
    }
    for (size_t i = 0;;) {
      for (size_t w; i < s.size() && (w = WhitespaceAt(s, i)) > 0;) i += w;
      if (i == s.size()) return pieces;
      if (pieces == maxsplit_) {
        emit(s.substr(i));
        return pieces + 1;
      }
      const size_t begin = i;
      while (i < s.size() && WhitespaceAt(s, i) == 0) ++i;
      emit(s.substr(begin, i - begin));
      ++pieces;
    }
  }

  // The first delimiter in s at or after `from`. A search compares up to the delimiter's length at each
  // position, both from outside (a request's element, a model's delimiter): it goes a window of positions at
  // a time, each counted towards StopIfRunEnded.
  size_t FindDelimiter(absl::string_view s, size_t from) const {
    const size_t length = delimiter_.size();
    for (size_t window = from; window < s.size() && s.size() - window >= length; window += kSearchWindow) {
      // Positions [window, window + kSearchWindow): the text up to the last one's possible end.
      const size_t end = std::min(s.size(), window + kSearchWindow + length - 1);
      const size_t at = s.substr(0, end).find(delimiter_, window);
      if (at != absl::string_view::npos) return at;
      StopIfRunEnded(WorkOf({kSearchWindow, static_cast<int64_t>(length)}));
    }
    return absl::string_view::npos;
  }

  static constexpr int64_t kSearchWindow = 4096;

  std::string delimiter_;
  int64_t maxsplit_ = 0;
};

// ---- RegexFullMatch ----

// Y = whether each element of X matches `pattern` (RE2 syntax, UTF-8) as a whole. The pattern compiles
// once, at load; a compiled RE2 is safe to match from many threads.
class RegexFullMatch final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const std::string pattern, info.Attr<std::string>("pattern"));
    RE2::Options options;
    options.set_log_errors(false);  // the error goes into the status instead of stderr
    regex_ = std::make_unique<RE2>(pattern, options);
    if (!regex_->ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("pattern \"", pattern, "\" is not valid RE2 syntax: ", regex_->error()));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    Tensor& y = ctx.Output(0, DataType::kBool, x.shape());
    const std::string* in = x.data<std::string>();
    bool* out = y.data<bool>();
    for (int64_t i = 0; i < x.NumElements(); ++i) out[i] = RE2::FullMatch(in[i], *regex_);
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<RE2> regex_;
};

}  // namespace

REGISTER_KERNEL(kOnnx, "StringNormalizer", 10, kLatest, kStringType, StringNormalizer);
REGISTER_KERNEL(kOnnx, "StringConcat", 20, kLatest, kStringType, StringConcat);
REGISTER_KERNEL(kOnnx, "StringSplit", 20, kLatest, kStringType, StringSplit);
REGISTER_KERNEL(kOnnx, "RegexFullMatch", 20, kLatest, kStringType, RegexFullMatch);

}  // namespace onnxserve

// String operators: StringNormalizer-10 (stopwords, case, locale, output shapes), StringConcat-20
// (broadcasting), StringSplit-20 (delimiters, whitespace, maxsplit, padding, counts) and RegexFullMatch-20
// (RE2, compiled at load). Expected values are worked out from the spec by hand.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "runtime/core/tensor.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;
using Strings = std::vector<std::string>;

Tensor Str(Shape shape, const Strings& v) { return Tensor::FromVector<std::string>(std::move(shape), v); }
Tensor Str(const Strings& v) { return Str({static_cast<int64_t>(v.size())}, v); }

absl::StatusOr<Tensor> RunOne(OpTest test, Tensor x) {
  test.Input("X", std::move(x)).Output("Y");
  auto out = test.Run();
  if (!out.ok()) return out.status();
  return (*out)[0];
}

void ExpectError(const absl::Status& status, const std::string& fragment) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find(fragment), std::string::npos) << status;
}

// ---- StringNormalizer ----

OpTest Normalizer() { return OpTest("StringNormalizer", 10); }

TEST(StringNormalizerTest, CaseSensitiveStopwordsThenLowercase) {
  // "MONDAY" is not the stopword "monday" when case matters; it is lowercased after the filter.
  auto y = RunOne(Normalizer().Attr("stopwords", Strings{"monday"}).Attr("is_case_sensitive", int64_t{1})
                      .Attr("case_change_action", std::string("LOWER")),
                  Str({"monday", "Tuesday", "MONDAY"}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Str({"tuesday", "monday"}), *y));
}

TEST(StringNormalizerTest, CaseInsensitiveStopwordsKeepTheRowShape) {
  // Case-insensitive is the default; [1, C] stays [1, kept].
  auto y = RunOne(Normalizer().Attr("stopwords", Strings{"Monday", "ÉTÉ"}).Attr("case_change_action",
                                                                                 std::string("UPPER")),
                  Str({1, 5}, {"MONDAY", "tuesday", "monday", "été", "café"}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Str({1, 2}, {"TUESDAY", "CAFÉ"}), *y));
}

TEST(StringNormalizerTest, CaseInsensitiveMatchingUsesTheTargetCase) {
  // The Kelvin sign K (U+212A) lowercases to k but uppercases to itself, so it meets the stopword "k" when
  // comparing lowercased (LOWER, NONE) and not when comparing uppercased (UPPER), as in ONNX Runtime.
  const std::string kelvin = "\xe2\x84\xaa";
  auto y = RunOne(Normalizer().Attr("stopwords", Strings{"k"}).Attr("case_change_action", std::string("UPPER")),
                  Str({kelvin, "K", "x"}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Str({kelvin, "X"}), *y));

  y = RunOne(Normalizer().Attr("stopwords", Strings{"k"}), Str({kelvin, "K", "x"}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Str({"x"}), *y));
}

TEST(StringNormalizerTest, NoStopwordsNoCaseChangeKeepsEverythingEvenEmptyStrings) {
  auto y = RunOne(Normalizer(), Str({"Mon", "", "tue"}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Str({"Mon", "", "tue"}), *y));
}

TEST(StringNormalizerTest, AllStopwordsGiveOneEmptyString) {
  const OpTest test = Normalizer().Attr("stopwords", Strings{"a", "b"});
  auto y = RunOne(test, Str({"a", "B", "a"}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Str({""}), *y));

  y = RunOne(test, Str({1, 2}, {"b", "A"}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Str({1, 1}, {""}), *y));

  y = RunOne(test, Str({0}, {}));  // nothing left of nothing either
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Str({""}), *y));
}

TEST(StringNormalizerTest, ChangesCaseByUnicodeSimpleMappings) {
  // ß has no one-letter uppercase and stays; ÿ (U+00FF) -> Ÿ (U+0178); ǆ (U+01C6) -> Ǆ (U+01C4).
  auto y = RunOne(Normalizer().Attr("case_change_action", std::string("UPPER")), Str({"straße", "ÿ ǆ", "x1!"}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Str({"STRAßE", "Ÿ Ǆ", "X1!"}), *y));

  // Σ lowercases to σ everywhere (no final-sigma context); Cyrillic and Greek change too.
  y = RunOne(Normalizer().Attr("case_change_action", std::string("LOWER")).Attr("locale", std::string("en_US")),
             Str({"ΣΑΣ", "ПРИВЕТ", "ÀÉÎ"}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Str({"σασ", "привет", "àéî"}), *y));
}

// A case change can lengthen a string: U+023F (2 bytes in UTF-8) uppercases to U+2C7E (3 bytes). X's 840 KiB
// (320 x 2 KiB of U+023F, 200 KiB of 'a') fit a 1 MiB limit, and so does its lowercase (U+023F is lowercase
// already), but its uppercase is 1160 KiB: the output's characters are counted after the change.
TEST(StringNormalizerTest, RefusesACaseChangeThatGrowsPastTheByteLimit) {
  testing::ScopedSizeLimits limits(int64_t{1} << 20);
  std::string grows;
  for (int i = 0; i < 1024; ++i) grows += "\u023F";  // 2 KiB
  Strings x(320, grows);
  x.push_back(std::string(200 * 1024, 'a'));
  auto upper = RunOne(Normalizer().Attr("case_change_action", std::string("UPPER")), Str(x));
  EXPECT_EQ(upper.status().code(), absl::StatusCode::kResourceExhausted) << upper.status();
  auto lower = RunOne(Normalizer().Attr("case_change_action", std::string("LOWER")), Str(x));
  ASSERT_TRUE(lower.ok()) << lower.status();
  EXPECT_EQ(lower->values<std::string>()[0], grows);
}

TEST(StringNormalizerTest, RejectsWhatItCannotHonour) {
  ExpectError(RunOne(Normalizer().Attr("locale", std::string("tr_TR")), Str({"i"})).status(), "locale \"tr_TR\"");
  ExpectError(RunOne(Normalizer().Attr("case_change_action", std::string("TITLE")), Str({"i"})).status(),
              "case_change_action \"TITLE\" is not one of LOWER, UPPER, NONE");
  ExpectError(RunOne(Normalizer(), Str({2, 2}, {"a", "b", "c", "d"})).status(), "X must be [C] or [1, C]");
  ExpectError(RunOne(Normalizer().Attr("case_change_action", std::string("UPPER")), Str({"ok", "\xff"})).status(),
              "element 1 of X is not valid UTF-8");
  ExpectError(RunOne(Normalizer().Attr("stopwords", Strings{"\xc3"}), Str({"a"})).status(),
              "is not valid UTF-8");
}

// ---- StringConcat ----

absl::StatusOr<Tensor> Concat(Tensor x, Tensor y) {
  OpTest test("StringConcat", 20);
  test.Input("X", std::move(x)).Input("Y", std::move(y)).Output("Z");
  auto out = test.Run();
  if (!out.ok()) return out.status();
  return (*out)[0];
}

TEST(StringConcatTest, BroadcastsLikeNumpy) {
  auto z = Concat(Str({2, 1}, {"a", "b"}), Str({"1", "2", ""}));
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_TRUE(TensorsClose(Str({2, 3}, {"a1", "a2", "a", "b1", "b2", "b"}), *z));

  z = Concat(Tensor::Scalar(std::string("日")), Tensor::Scalar(std::string("本")));
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_TRUE(TensorsClose(Tensor::Scalar(std::string("日本")), *z));
}

TEST(StringConcatTest, RejectsShapesThatDoNotBroadcastAndNonStrings) {
  ExpectError(Concat(Str({"a", "b"}), Str({"a", "b", "c"})).status(), "do not broadcast");
  ExpectError(Concat(Str({"a"}), Tensor::FromVector<int64_t>({1}, {1})).status(), "Y must be a string tensor");
}

// ---- StringSplit ----

struct Split {
  Tensor y, z;
};

absl::StatusOr<Split> RunSplit(OpTest test, Tensor x) {
  test.Input("X", std::move(x)).Output("Y").Output("Z");
  auto out = test.Run();
  if (!out.ok()) return out.status();
  return Split{(*out)[0], (*out)[1]};
}

Tensor Counts(Shape shape, const std::vector<int64_t>& v) { return Tensor::FromVector<int64_t>(std::move(shape), v); }

TEST(StringSplitTest, EveryDelimiterSplitsAndRowsArePadded) {
  auto s = RunSplit(OpTest("StringSplit", 20).Attr("delimiter", std::string(",")), Str({"a,b,,c", "", "x"}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(TensorsClose(Str({3, 4}, {"a", "b", "", "c", "", "", "", "", "x", "", "", ""}), s->y));
  EXPECT_TRUE(TensorsClose(Counts({3}, {4, 1, 1}), s->z));  // "" is one empty substring

  s = RunSplit(OpTest("StringSplit", 20).Attr("delimiter", std::string("ab")), Str({"xabyabab"}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(TensorsClose(Str({1, 4}, {"x", "y", "", ""}), s->y));
  EXPECT_TRUE(TensorsClose(Counts({1}, {4}), s->z));
}

// Long elements are searched 4096 positions at a time: a delimiter is found wherever it lies against those
// windows, across the end of one (at 4095) and at the first position of one (at 8193, a window after the
// search resumed at 4097).
TEST(StringSplitTest, DelimitersAcrossLongElementsAreAllFound) {
  const std::string first(4095, 'x'), second(4096, 'y');
  auto s = RunSplit(OpTest("StringSplit", 20).Attr("delimiter", std::string("ab")),
                    Str({first + "ab" + second + "ab" + "z"}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(TensorsClose(Str({1, 3}, {first, second, "z"}), s->y));
  EXPECT_TRUE(TensorsClose(Counts({1}, {3}), s->z));
}

TEST(StringSplitTest, MaxsplitKeepsTheRest) {
  auto s = RunSplit(OpTest("StringSplit", 20).Attr("delimiter", std::string("-")).Attr("maxsplit", int64_t{1}),
                    Str({2, 1}, {"a-b-c", "abc"}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(TensorsClose(Str({2, 1, 2}, {"a", "b-c", "abc", ""}), s->y));
  EXPECT_TRUE(TensorsClose(Counts({2, 1}, {2, 1}), s->z));

  s = RunSplit(OpTest("StringSplit", 20).Attr("delimiter", std::string("-")).Attr("maxsplit", int64_t{0}),
               Str({"a-b"}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(TensorsClose(Str({1, 1}, {"a-b"}), s->y));

  s = RunSplit(OpTest("StringSplit", 20).Attr("delimiter", std::string("-")).Attr("maxsplit", int64_t{-1}),
               Str({"a-b-c"}));  // negative: no limit, as in Python
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(TensorsClose(Str({1, 3}, {"a", "b", "c"}), s->y));
}

TEST(StringSplitTest, NoDelimiterSplitsOnRunsOfWhitespace) {
  auto s = RunSplit(OpTest("StringSplit", 20), Str({"  a\tb\n", "", "   ", "a\xc2\xa0" "b\xe3\x80\x80" "c"}));
  ASSERT_TRUE(s.ok()) << s.status();
  // U+00A0 and U+3000 are whitespace too; whitespace-only and empty strings give no substrings.
  EXPECT_TRUE(TensorsClose(Str({4, 3}, {"a", "b", "", "", "", "", "", "", "", "a", "b", "c"}), s->y));
  EXPECT_TRUE(TensorsClose(Counts({4}, {2, 0, 0, 3}), s->z));

  // After maxsplit splits, the rest starts at its first non-space and keeps its trailing whitespace.
  s = RunSplit(OpTest("StringSplit", 20).Attr("delimiter", std::string("")).Attr("maxsplit", int64_t{1}),
               Str({" a  b  c  "}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(TensorsClose(Str({1, 2}, {"a", "b  c  "}), s->y));
  EXPECT_TRUE(TensorsClose(Counts({1}, {2}), s->z));
}

TEST(StringSplitTest, EmptyInputGivesAnEmptyLastAxisAndZIsOptional) {
  auto s = RunSplit(OpTest("StringSplit", 20), Str({2, 0}, {}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(TensorsClose(Str({2, 0, 0}, {}), s->y));
  EXPECT_TRUE(TensorsClose(Counts({2, 0}, {}), s->z));

  auto y = RunOne(OpTest("StringSplit", 20).Attr("delimiter", std::string("/")), Str({"p/q"}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Str({1, 2}, {"p", "q"}), *y));
}

// ---- RegexFullMatch ----

OpTest Regex(const std::string& pattern) { return OpTest("RegexFullMatch", 20).Attr("pattern", pattern); }

Tensor Bools(Shape shape, const std::vector<bool>& v) {
  Tensor t(DataType::kBool, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) t.data<bool>()[i] = v[i];
  return t;
}

TEST(RegexFullMatchTest, MatchesTheWholeString) {
  auto y = RunOne(Regex("a+b"), Str({2, 2}, {"aab", "aabc", "b", "xaab"}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Bools({2, 2}, {true, false, false, false}), *y));

  y = RunOne(Regex("caf."), Str({"café", "cafés"}));  // . is one code point, é two bytes
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Bools({2}, {true, false}), *y));

  y = RunOne(Regex("x*"), Str({0}, {}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Bools({0}, {}), *y));
}

TEST(RegexFullMatchTest, BadPatternsFailAtLoadNamingThePattern) {
  ExpectError(RunOne(Regex("(ab"), Str({"ab"})).status(), "pattern \"(ab\" is not valid RE2 syntax: missing )");
  ExpectError(RunOne(Regex("a(?=b)"), Str({"ab"})).status(), "pattern \"a(?=b)\"");  // no lookahead in RE2
  EXPECT_FALSE(RunOne(OpTest("RegexFullMatch", 20), Str({"ab"})).ok());           // pattern is required
}

// A string's characters are not in a tensor's byte size: a 4 MB string concatenated with a million empty
// ones asked for 4 TB. At a 1 MiB limit, a 4 KiB string against 512 empty ones (2 MiB) is refused, against
// 200 (800 KiB) it is not: the count is of the characters broadcast, not of the longest string per element.
TEST(StringConcatTest, RefusesOutputsWhoseCharactersPassTheByteLimit) {
  testing::ScopedSizeLimits limits(int64_t{1} << 20);
  const Tensor long_string = Str({std::string(4096, 'a')});
  auto too_long = Concat(long_string, Str(Strings(512)));
  EXPECT_EQ(too_long.status().code(), absl::StatusCode::kResourceExhausted) << too_long.status();
  auto within = Concat(Str(Strings(200)), long_string);
  ASSERT_TRUE(within.ok()) << within.status();
  EXPECT_EQ(within->values<std::string>()[199].size(), 4096u);
}

}  // namespace
}  // namespace onnxserve

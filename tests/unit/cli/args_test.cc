// The option-table parser every subcommand uses: spellings, values checked against their row, errors that name
// the option as typed, and --help generated from the table.
#include "cli/args.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace onnxserve::cli {
namespace {

const OptionTable kTable = {
    {.name = "model", .value_name = "NAME", .help = "model to call", .required = true},
    {.name = "concurrency", .kind = ValueKind::kInt, .value_name = "N", .help = "calls in flight",
     .default_value = "1", .short_name = 'c', .min = 1, .max = 100},
    {.name = "duration", .kind = ValueKind::kNumber, .value_name = "SECONDS", .help = "how long",
     .short_name = 'z', .max = 600},
    {.name = "use-ssl", .kind = ValueKind::kBool, .help = "TLS"},
    {.name = "cert", .kind = ValueKind::kFile, .value_name = "FILE", .help = "certificate"},
    {.name = "metadata", .value_name = "K=V", .help = "sent along", .repeatable = true},
};

absl::StatusOr<Args> Parse(std::vector<std::string> words) {
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  return ParseArgs(kTable, static_cast<int>(argv.size()), argv.data(), 0);
}

std::string ErrorOf(std::vector<std::string> words) {
  auto args = Parse(std::move(words));
  EXPECT_FALSE(args.ok());
  return args.ok() ? "" : std::string(args.status().message());
}

TEST(ArgsTest, LongShortAndEqualsSpellingsWithPositionals) {
  auto args = Parse({"in.onnx", "--model", "m", "-c", "8", "--duration=2.5", "--metadata=a=1", "--metadata", "b=2",
                     "out"});
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->positional, (std::vector<std::string>{"in.onnx", "out"}));
  EXPECT_EQ(args->Get("model"), "m");
  EXPECT_EQ(args->Int("concurrency"), 8);
  EXPECT_DOUBLE_EQ(args->Number("duration"), 2.5);
  EXPECT_EQ(args->All("metadata"), (std::vector<std::string>{"a=1", "b=2"}));
  EXPECT_TRUE(args->Has("duration"));
  EXPECT_FALSE(args->Has("cert"));
}

TEST(ArgsTest, DefaultsAndLastValueWins) {
  auto args = Parse({"--model", "a", "--model=b"});
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->Get("model"), "b");
  EXPECT_EQ(args->Int("concurrency"), 1);
  EXPECT_FALSE(args->Has("concurrency"));
  EXPECT_FALSE(args->Bool("use-ssl"));
}

TEST(ArgsTest, BooleansAloneOrWithAValueAndUnderscoresReadAsHyphens) {
  for (const auto& words : std::vector<std::vector<std::string>>{
           {"--use-ssl"}, {"--use-ssl", "true"}, {"--use-ssl=1"}, {"--use_ssl"}}) {
    auto with_model = words;
    with_model.insert(with_model.end(), {"--model", "m"});
    auto args = Parse(with_model);
    ASSERT_TRUE(args.ok()) << args.status();
    EXPECT_TRUE(args->Bool("use-ssl")) << words[0];
  }
  auto off = Parse({"--use-ssl", "false", "--model", "m"});
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->Bool("use-ssl"));
  auto followed = Parse({"--use-ssl", "model.onnx", "--model", "m"});  // not a boolean word: a positional
  ASSERT_TRUE(followed.ok()) << followed.status();
  EXPECT_TRUE(followed->Bool("use-ssl"));
  EXPECT_EQ(followed->positional, std::vector<std::string>{"model.onnx"});
}

TEST(ArgsTest, ErrorsNameTheOptionAsTyped) {
  EXPECT_EQ(ErrorOf({"--model", "m", "--bogus", "1"}), "unknown option --bogus");
  EXPECT_EQ(ErrorOf({"--model", "m", "-x"}), "unknown option -x");
  EXPECT_EQ(ErrorOf({"--model"}), "--model needs a value");
  EXPECT_EQ(ErrorOf({"--model", "m", "-c", "0"}), "-c must be an integer in [1, 100], got \"0\"");
  EXPECT_EQ(ErrorOf({"--model", "m", "--concurrency=1x"}), "--concurrency must be an integer in [1, 100], got \"1x\"");
  EXPECT_EQ(ErrorOf({"--model", "m", "-z", "0"}), "-z must be a number in (0, 600], got \"0\"");
  EXPECT_EQ(ErrorOf({"--model", "m", "--use-ssl=maybe"}), "--use-ssl: expected true or false, got \"maybe\"");
  EXPECT_EQ(ErrorOf({"--model", "m", "--cert="}), "--cert: expected a file name");
  EXPECT_EQ(ErrorOf({"-c", "2"}), "--model is required");
}

TEST(ArgsTest, HelpStopsParsingAndIsPrintedFromTheTable) {
  auto args = Parse({"--bogus", "--help"});
  EXPECT_FALSE(args.ok()) << "an unknown option before --help is still an error";
  args = Parse({"-h", "--bogus"});
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_TRUE(args->help);
  const std::string help = OptionsHelp(kTable);
  EXPECT_NE(help.find("  -c, --concurrency N"), std::string::npos) << help;
  EXPECT_NE(help.find("calls in flight (default 1)\n"), std::string::npos) << help;
  EXPECT_NE(help.find("  --metadata K=V"), std::string::npos) << help;
  EXPECT_NE(help.find("sent along; repeatable\n"), std::string::npos) << help;
  EXPECT_EQ(help.find("(default false)"), std::string::npos) << help;
}

}  // namespace
}  // namespace onnxserve::cli

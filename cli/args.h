// The one command-line parser of every onnxserve subcommand. A subcommand declares its options in a table
// (name, value kind, default, help line, range); the parser reads "--name value", "--name=value", short
// aliases ("-c 8"), booleans ("--flag", "--flag=false", Triton's "--flag true") and positionals, checks every
// value against its row, and --help is printed from the same table. Tables compose: the TLS and access-control
// rows are shared by serve, probe and load.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace onnxserve::cli {

enum class ValueKind {
  kString,
  kFile,    // a non-empty string
  kInt,     // an integer in [min, max]
  kNumber,  // a real number in (min, max]
  kBool,    // "--name" alone is true; also "--name=false" or "--name false"
};

struct Option {
  std::string name;  // the long name without "--"; "grpc_port" on the command line is read as "grpc-port"
  ValueKind kind = ValueKind::kString;
  std::string value_name{};   // what the value is, for --help: "N", "FILE", "HOST:PORT"
  std::string help{};         // one line
  std::string default_value{};  // "" when the option has none
  char short_name = 0;        // 'c' for "-c"
  int64_t min = 0, max = 0;   // range of kInt and kNumber
  bool repeatable = false;    // every value is kept (Args::All); otherwise the last one wins
  bool required = false;
};

using OptionTable = std::vector<Option>;

// What a command line said. Values are checked against their table row by ParseArgs, so the typed getters
// cannot fail; an option that was not given reads as its default.
class Args {
 public:
  std::vector<std::string> positional;
  bool help = false;  // --help or -h was given; nothing else was checked

  bool Has(const std::string& name) const { return given_.contains(name); }
  std::string Get(const std::string& name) const;
  int64_t Int(const std::string& name) const;
  double Number(const std::string& name) const;
  bool Bool(const std::string& name) const;
  // Every value of a repeatable option, in command-line order.
  std::vector<std::string> All(const std::string& name) const;

 private:
  friend absl::StatusOr<Args> ParseArgs(const OptionTable&, int, char**, int);
  std::map<std::string, std::vector<std::string>> given_;
  std::map<std::string, std::string> defaults_;
};

// Parses argv[first..] against `table`. Errors name the option as it was typed: unknown options, missing
// values, values out of their range, a required option not given.
absl::StatusOr<Args> ParseArgs(const OptionTable& table, int argc, char** argv, int first);

// `a` followed by `b`.
OptionTable Join(OptionTable a, const OptionTable& b);

// One line per option for --help: "  -c, --concurrency N   calls in flight (default 1)".
std::string OptionsHelp(const OptionTable& table);

}  // namespace onnxserve::cli

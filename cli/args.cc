#include "cli/args.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace onnxserve::cli {
namespace {

// Help lines start their text in this column; a longer option name puts its text on the next line.
constexpr size_t kHelpColumn = 28;

const Option* FindLong(const OptionTable& table, const std::string& name) {
  for (const Option& option : table) {
    if (option.name == name) return &option;
  }
  return nullptr;
}

const Option* FindShort(const OptionTable& table, char name) {
  for (const Option& option : table) {
    if (option.short_name != 0 && option.short_name == name) return &option;
  }
  return nullptr;
}

// `flag` is the option as typed ("-c", "--concurrency"), for the message.
absl::Status CheckValue(const Option& option, const std::string& flag, const std::string& value) {
  switch (option.kind) {
    case ValueKind::kString:
      return absl::OkStatus();
    case ValueKind::kFile:
      if (value.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, ": expected a file name"));
      return absl::OkStatus();
    case ValueKind::kInt: {
      int64_t n = 0;
      if (absl::SimpleAtoi(value, &n) && n >= option.min && n <= option.max) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat(flag, " must be an integer in [", option.min, ", ", option.max,
                                                     "], got \"", value, "\""));
    }
    case ValueKind::kNumber: {
      double x = 0;
      if (absl::SimpleAtod(value, &x) && x > static_cast<double>(option.min) &&
          x <= static_cast<double>(option.max)) {
        return absl::OkStatus();
      }
      return absl::InvalidArgumentError(absl::StrCat(flag, " must be a number in (", option.min, ", ", option.max,
                                                     "], got \"", value, "\""));
    }
    case ValueKind::kBool: {
      bool b = false;
      if (absl::SimpleAtob(value, &b)) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat(flag, ": expected true or false, got \"", value, "\""));
    }
  }
  return absl::OkStatus();
}

bool IsBoolWord(const std::string& word) {
  bool ignored = false;
  return absl::SimpleAtob(word, &ignored);
}

}  // namespace

std::string Args::Get(const std::string& name) const {
  if (auto it = given_.find(name); it != given_.end()) return it->second.back();
  auto it = defaults_.find(name);
  return it == defaults_.end() ? "" : it->second;
}

int64_t Args::Int(const std::string& name) const {
  int64_t n = 0;
  return absl::SimpleAtoi(Get(name), &n) ? n : 0;
}

double Args::Number(const std::string& name) const {
  double x = 0;
  return absl::SimpleAtod(Get(name), &x) ? x : 0;
}

bool Args::Bool(const std::string& name) const {
  bool b = false;
  return absl::SimpleAtob(Get(name), &b) && b;
}

std::vector<std::string> Args::All(const std::string& name) const {
  auto it = given_.find(name);
  return it == given_.end() ? std::vector<std::string>() : it->second;
}

absl::StatusOr<Args> ParseArgs(const OptionTable& table, int argc, char** argv, int first) {
  Args args;
  for (const Option& option : table) {
    if (!option.default_value.empty()) args.defaults_[option.name] = option.default_value;
  }
  for (int i = first; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      args.help = true;
      return args;
    }
    const bool is_long = arg.rfind("--", 0) == 0;
    const bool is_short = !is_long && arg.size() == 2 && arg[0] == '-';
    if (!is_long && !is_short) {
      args.positional.push_back(arg);
      continue;
    }
    const size_t eq = is_long ? arg.find('=') : std::string::npos;
    std::string flag = arg.substr(0, eq);
    if (is_long) std::replace(flag.begin() + 2, flag.end(), '_', '-');
    const Option* option = is_long ? FindLong(table, flag.substr(2)) : FindShort(table, arg[1]);
    if (option == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown option ", flag));
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (option->kind == ValueKind::kBool) {
      // A boolean word right after a boolean option is its value (Triton writes "--grpc-use-ssl true").
      value = i + 1 < argc && IsBoolWord(argv[i + 1]) ? argv[++i] : "true";
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat(flag, " needs a value"));
    }
    if (absl::Status status = CheckValue(*option, flag, value); !status.ok()) return status;
    std::vector<std::string>& values = args.given_[option->name];
    if (!option->repeatable) values.clear();
    values.push_back(std::move(value));
  }
  for (const Option& option : table) {
    if (option.required && !args.Has(option.name)) {
      return absl::InvalidArgumentError(absl::StrCat("--", option.name, " is required"));
    }
  }
  return args;
}

OptionTable Join(OptionTable a, const OptionTable& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string OptionsHelp(const OptionTable& table) {
  std::string help;
  for (const Option& option : table) {
    std::string names = option.short_name != 0 ? absl::StrCat("  -", std::string(1, option.short_name), ", --")
                                               : std::string("  --");
    absl::StrAppend(&names, option.name, option.value_name.empty() ? "" : " ", option.value_name);
    names += names.size() + 1 < kHelpColumn ? std::string(kHelpColumn - names.size(), ' ')
                                            : "\n" + std::string(kHelpColumn, ' ');
    const bool show_default = !option.default_value.empty() && option.default_value != "false";
    absl::StrAppend(&help, names, option.help, option.repeatable ? "; repeatable" : "",
                    show_default ? absl::StrCat(" (default ", option.default_value, ")") : "", "\n");
  }
  return help;
}

}  // namespace onnxserve::cli

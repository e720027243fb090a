#include "cli/args.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace onnxserve::cli {

std::string Args::Get(const std::string& name, const std::string& fallback) const {
  auto it = options.find(name);
  return it == options.end() ? fallback : it->second;
}

absl::StatusOr<int64_t> Args::GetInt(const std::string& name, int64_t fallback, int64_t min,
                                     int64_t max) const {
  auto it = options.find(name);
  if (it == options.end()) return fallback;
  int64_t value;
  if (!absl::SimpleAtoi(it->second, &value) || value < min || value > max) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, " must be an integer in [", min, ", ", max,
                                                   "], got \"", it->second, "\""));
  }
  return value;
}

absl::StatusOr<Args> ParseArgs(int argc, char** argv, int first, const std::vector<std::string>& known,
                               const std::vector<std::string>& switches) {
  Args args;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) {
      args.positional.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    if (std::find(switches.begin(), switches.end(), name) != switches.end()) {
      args.options[name] = "true";
      continue;
    }
    std::string value;
    const size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat("option --", name, " needs a value"));
    }
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown option --", name));
    }
    args.options[name] = value;
  }
  return args;
}

}  // namespace onnxserve::cli

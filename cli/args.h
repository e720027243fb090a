// Command-line parsing for onnxserve's subcommands: "--name value", "--name=value" and positionals, with a
// clear error for unknown or malformed options.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace onnxserve::cli {

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;  // without the leading "--"

  std::string Get(const std::string& name, const std::string& fallback = "") const;
  // Integer option within [min, max], or `fallback` when absent.
  absl::StatusOr<int64_t> GetInt(const std::string& name, int64_t fallback, int64_t min, int64_t max) const;
};

// Parses argv[first..]; every option must be in `known` (and takes a value) or in `switches` (and takes
// none: its value is "true").
absl::StatusOr<Args> ParseArgs(int argc, char** argv, int first, const std::vector<std::string>& known,
                               const std::vector<std::string>& switches = {});

}  // namespace onnxserve::cli

#include "server/client_options.h"

#include "absl/strings/str_cat.h"

namespace onnxserve::server {

cli::Option MetadataOption(std::string help) {
  return {.name = "metadata", .value_name = "KEY=VALUE", .help = std::move(help), .repeatable = true};
}

absl::StatusOr<Metadata> MetadataFromArgs(const cli::Args& args) {
  Metadata metadata;
  for (const std::string& value : args.All("metadata")) {
    const size_t eq = value.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(absl::StrCat("--metadata must be KEY=VALUE, got \"", value, "\""));
    }
    metadata.emplace_back(value.substr(0, eq), value.substr(eq + 1));
  }
  return metadata;
}

}  // namespace onnxserve::server

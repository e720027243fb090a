// The options probe and load share as gRPC clients: metadata sent with every call, beside TLS (tls.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/args.h"

namespace onnxserve::server {

using Metadata = std::vector<std::pair<std::string, std::string>>;

// --metadata KEY=VALUE, repeatable; `help` says what it is for in this command.
cli::Option MetadataOption(std::string help);

// The --metadata values split at their first '='; an error names a value without '=' or without a key.
absl::StatusOr<Metadata> MetadataFromArgs(const cli::Args& args);

}  // namespace onnxserve::server

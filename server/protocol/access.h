// Access control by API group, with Triton's flags and groups: `--grpc-restricted-protocol` and
// `--http-restricted-api`, each "<group>[,<group>...]:<key>=<value>". A restricted group answers only requests
// that carry the header `<prefix><key>` with exactly `<value>` (gRPC: prefix "triton-grpc-protocol-";
// HTTP: no prefix); the other groups stay open. The value is a shared secret, compared in constant time.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace onnxserve::server {

// The groups, as Triton names them. trace, logging and shared-memory have no endpoint in onnxserve yet; they
// are accepted so that a Triton command line starts, and restricting them has no effect.
#define ONNXSERVE_API_GROUPS(X)            \
  X(kHealth, "health")                     \
  X(kMetadata, "metadata")                 \
  X(kInference, "inference")               \
  X(kSharedMemory, "shared-memory")        \
  X(kModelConfig, "model-config")          \
  X(kModelRepository, "model-repository")  \
  X(kStatistics, "statistics")             \
  X(kTrace, "trace")                       \
  X(kLogging, "logging")

enum class ApiGroup {
#define ONNXSERVE_API_GROUP_ENUM(id, name) id,
  ONNXSERVE_API_GROUPS(ONNXSERVE_API_GROUP_ENUM)
#undef ONNXSERVE_API_GROUP_ENUM
};
#define ONNXSERVE_API_GROUP_COUNT(id, name) +1
inline constexpr size_t kNumApiGroups = 0 ONNXSERVE_API_GROUPS(ONNXSERVE_API_GROUP_COUNT);
#undef ONNXSERVE_API_GROUP_COUNT

absl::string_view ApiGroupName(ApiGroup group);

// The header a restricted group asks for, and the value it must carry.
struct Restriction {
  std::string key;    // lowercase: HTTP header names are case-insensitive and gRPC metadata keys lowercase
  std::string value;
};

// Looks a request header up by name: its value, or nullopt when the request has none.
using HeaderLookup = absl::FunctionRef<std::optional<absl::string_view>(absl::string_view name)>;

// The restrictions of one protocol. Immutable once the flags are parsed; thread-safe to read.
class AccessRules {
 public:
  AccessRules() = default;  // HTTP: keys are header names as they are
  // `header_prefix` goes before every key on the wire ("triton-grpc-protocol-" for gRPC).
  explicit AccessRules(std::string header_prefix) : header_prefix_(std::move(header_prefix)) {}

  // Adds one value of `flag` ("--grpc-restricted-protocol"), "<group>[,<group>...]:<key>=<value>". An unknown
  // group, a group restricted twice (by this or an earlier value), or an empty group list, key or value is
  // an error naming the flag.
  absl::Status Add(absl::string_view flag, absl::string_view spec);

  const std::optional<Restriction>& restriction(ApiGroup group) const {
    return rules_[static_cast<size_t>(group)];
  }
  bool empty() const;

  // OK when `group` is open or the request carries its header with its value; otherwise PERMISSION_DENIED
  // naming the header (and never the value, nor whether the header was missing or wrong).
  absl::Status Check(ApiGroup group, HeaderLookup header) const;

 private:
  std::string header_prefix_;
  std::array<std::optional<Restriction>, kNumApiGroups> rules_;
};

// a == b in time that depends on the length of `expected` only, never on where the inputs differ.
bool ConstantTimeEquals(absl::string_view given, absl::string_view expected);

}  // namespace onnxserve::server

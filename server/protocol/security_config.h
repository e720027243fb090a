// The serve flags that decide who may reach what: TLS and mutual TLS per listener, access control by API
// group, gRPC reflection, and a listener of its own for /metrics. They are parsed here, apart from the other
// serve flags (absl flags in serve.cc), because two of them repeat and carry commas, which absl's list flags
// would split, and because a misconfigured deployment meets these errors first: each names its flag.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/protocol/access.h"
#include "server/protocol/tls.h"

namespace onnxserve::server {

// What Triton's gRPC clients prefix a restricted group's key with in their metadata.
inline constexpr char kGrpcRestrictedHeaderPrefix[] = "triton-grpc-protocol-";

struct SecurityConfig {
  ServerTlsFlags grpc_tls;  // --grpc-use-ssl, --grpc-use-ssl-mutual, --grpc-server-cert/-key, --grpc-root-cert
  ServerTlsFlags http_tls;  // the same with --http-; also applies to the metrics listener
  AccessRules grpc_access{kGrpcRestrictedHeaderPrefix};  // --grpc-restricted-protocol (repeatable)
  AccessRules http_access;                               // --http-restricted-api (repeatable)
  bool grpc_reflection = true;                           // --grpc-reflection
  // --metrics-port N (0 picks a free port): /metrics has a listener of its own on --metrics-address (default:
  // --address), 8002 as in Triton. -1 serves it on the HTTP port instead.
  int metrics_port = 8002;
  std::string metrics_address;
};

// Removes the flags above from `args` (the serve command line without the program name and subcommand) and
// parses them; the rest stays for absl. Flags take "--name=value" or "--name value"; a boolean also takes
// "--name" alone. Underscores in names are read as hyphens, as for the other serve flags.
absl::StatusOr<SecurityConfig> TakeSecurityFlags(std::vector<std::string>& args);

// The flags above for --help, one per line.
std::string SecurityFlagsUsage();

}  // namespace onnxserve::server

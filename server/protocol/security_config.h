// The serve options that decide who may reach what: TLS and mutual TLS per listener, access control by API
// group, gRPC reflection, and a listener of its own for /metrics. Their rows and their checks live here, apart
// from serve's other options, because a misconfigured deployment meets these errors first: each names its
// option.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "cli/args.h"
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

// The rows of the options above; booleans also take Triton's "--grpc-use-ssl true".
cli::OptionTable SecurityOptions();

// The options above from a command line parsed with SecurityOptions(), checked for consistency (TLS files
// without TLS, mutual TLS without a CA, a group restricted twice, ...).
absl::StatusOr<SecurityConfig> SecurityConfigFromArgs(const cli::Args& args);

}  // namespace onnxserve::server

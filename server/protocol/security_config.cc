#include "server/protocol/security_config.h"

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"

namespace onnxserve::server {
namespace {

using cli::ValueKind;

// --grpc-use-ssl ... --grpc-root-cert for `listener` "grpc" (`label` "gRPC"), and the same for "http".
cli::OptionTable ServerTlsOptions(const std::string& listener, const std::string& label) {
  const std::string flag = "--" + listener;
  return {
      {.name = listener + "-use-ssl", .kind = ValueKind::kBool,
       .help = absl::StrCat("serve ", label, " over TLS (needs ", flag, "-server-cert and ", flag, "-server-key)")},
      {.name = listener + "-use-ssl-mutual", .kind = ValueKind::kBool,
       .help = absl::StrCat(label, " over mutual TLS: clients need a certificate signed by ", flag, "-root-cert")},
      {.name = listener + "-server-cert", .kind = ValueKind::kFile, .value_name = "FILE",
       .help = absl::StrCat("the ", label, " server's certificate chain (PEM)")},
      {.name = listener + "-server-key", .kind = ValueKind::kFile, .value_name = "FILE",
       .help = "its private key (PEM, unencrypted)"},
      {.name = listener + "-root-cert", .kind = ValueKind::kFile, .value_name = "FILE",
       .help = absl::StrCat("CA certificate(s) that ", label, " client certificates must chain to (PEM)")},
  };
}

ServerTlsFlags ServerTlsFromArgs(const cli::Args& args, const std::string& listener) {
  return {.enabled = args.Bool(listener + "-use-ssl"), .mutual = args.Bool(listener + "-use-ssl-mutual"),
          .cert_file = args.Get(listener + "-server-cert"), .key_file = args.Get(listener + "-server-key"),
          .root_file = args.Get(listener + "-root-cert")};
}

// Each value of the repeatable option `name` added to `rules`; an error names the option and its value.
absl::Status AddRestrictions(const cli::Args& args, const std::string& name, AccessRules& rules) {
  for (const std::string& value : args.All(name)) RETURN_IF_ERROR(rules.Add("--" + name, value));
  return absl::OkStatus();
}

absl::Status CheckConsistency(const SecurityConfig& config) {
  RETURN_IF_ERROR(CheckServerTlsFlags("--grpc", config.grpc_tls));
  RETURN_IF_ERROR(CheckServerTlsFlags("--http", config.http_tls));
  if (!config.metrics_address.empty() && config.metrics_port < 0) {
    return absl::InvalidArgumentError("--metrics-address needs a metrics listener: not --metrics-port -1");
  }
  return absl::OkStatus();
}

}  // namespace

cli::OptionTable SecurityOptions() {
  cli::OptionTable table = cli::Join(ServerTlsOptions("grpc", "gRPC"), ServerTlsOptions("http", "HTTP"));
  return cli::Join(std::move(table), {
      {.name = "grpc-restricted-protocol", .value_name = "<group>[,<group>...]:<key>=<value>",
       .help = "those groups' calls need the metadata triton-grpc-protocol-<key>: <value>", .repeatable = true},
      {.name = "http-restricted-api", .value_name = "<group>[,<group>...]:<key>=<value>",
       .help = "those groups' endpoints need the header <key>: <value>", .repeatable = true},
      {.name = "grpc-reflection", .kind = ValueKind::kBool, .help = "serve gRPC server reflection",
       .default_value = "true"},
      {.name = "metrics-port", .kind = ValueKind::kInt, .value_name = "N",
       .help = "port of the /metrics listener; 0 picks a free port; -1 serves /metrics on the HTTP port instead",
       .default_value = "8002", .min = -1, .max = 65535},
      {.name = "metrics-address", .value_name = "HOST",
       .help = "interface of the --metrics-port listener (default: --address)"},
  });
}

absl::StatusOr<SecurityConfig> SecurityConfigFromArgs(const cli::Args& args) {
  SecurityConfig config;
  config.grpc_tls = ServerTlsFromArgs(args, "grpc");
  config.http_tls = ServerTlsFromArgs(args, "http");
  RETURN_IF_ERROR(AddRestrictions(args, "grpc-restricted-protocol", config.grpc_access));
  RETURN_IF_ERROR(AddRestrictions(args, "http-restricted-api", config.http_access));
  config.grpc_reflection = args.Bool("grpc-reflection");
  config.metrics_port = static_cast<int>(args.Int("metrics-port"));
  config.metrics_address = args.Get("metrics-address");
  RETURN_IF_ERROR(CheckConsistency(config));
  return config;
}

}  // namespace onnxserve::server

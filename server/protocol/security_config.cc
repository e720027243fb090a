#include "server/protocol/security_config.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"

namespace onnxserve::server {
namespace {

using Setter = absl::Status (*)(const std::string& flag, const std::string& value, SecurityConfig& config);

absl::Status SetBool(const std::string& flag, const std::string& value, bool& out) {
  if (!absl::SimpleAtob(value, &out)) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": expected true or false, got \"", value, "\""));
  }
  return absl::OkStatus();
}

absl::Status SetFile(const std::string& flag, const std::string& value, std::string& out) {
  if (value.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, ": expected a file name"));
  out = value;
  return absl::OkStatus();
}

struct FlagSpec {
  const char* name;
  const char* value;  // what the value is, for --help; "" for a boolean, which may go without one
  const char* help;
  Setter set;
  bool boolean() const { return *value == '\0'; }
};

// Every flag this file owns: name, value, help line and where the value goes.
const FlagSpec kFlags[] = {
    {"--grpc-use-ssl", "", "serve gRPC over TLS (needs --grpc-server-cert and --grpc-server-key)",
     [](const std::string& f, const std::string& v, SecurityConfig& c) { return SetBool(f, v, c.grpc_tls.enabled); }},
    {"--grpc-use-ssl-mutual", "", "gRPC over mutual TLS: clients need a certificate signed by --grpc-root-cert",
     [](const std::string& f, const std::string& v, SecurityConfig& c) { return SetBool(f, v, c.grpc_tls.mutual); }},
    {"--grpc-server-cert", "FILE", "the gRPC server's certificate chain (PEM)",
     [](const std::string& f, const std::string& v, SecurityConfig& c) { return SetFile(f, v, c.grpc_tls.cert_file); }},
    {"--grpc-server-key", "FILE", "its private key (PEM, unencrypted)",
     [](const std::string& f, const std::string& v, SecurityConfig& c) { return SetFile(f, v, c.grpc_tls.key_file); }},
    {"--grpc-root-cert", "FILE", "CA certificate(s) that gRPC client certificates must chain to (PEM)",
     [](const std::string& f, const std::string& v, SecurityConfig& c) { return SetFile(f, v, c.grpc_tls.root_file); }},
    {"--http-use-ssl", "", "serve HTTP over TLS (needs --http-server-cert and --http-server-key)",
     [](const std::string& f, const std::string& v, SecurityConfig& c) { return SetBool(f, v, c.http_tls.enabled); }},
    {"--http-use-ssl-mutual", "", "HTTP over mutual TLS: clients need a certificate signed by --http-root-cert",
     [](const std::string& f, const std::string& v, SecurityConfig& c) { return SetBool(f, v, c.http_tls.mutual); }},
    {"--http-server-cert", "FILE", "the HTTP server's certificate chain (PEM)",
     [](const std::string& f, const std::string& v, SecurityConfig& c) { return SetFile(f, v, c.http_tls.cert_file); }},
    {"--http-server-key", "FILE", "its private key (PEM, unencrypted)",
     [](const std::string& f, const std::string& v, SecurityConfig& c) { return SetFile(f, v, c.http_tls.key_file); }},
    {"--http-root-cert", "FILE", "CA certificate(s) that HTTP client certificates must chain to (PEM)",
     [](const std::string& f, const std::string& v, SecurityConfig& c) { return SetFile(f, v, c.http_tls.root_file); }},
    {"--grpc-restricted-protocol", "<group>[,<group>...]:<key>=<value>",
     "repeatable: those groups' calls need the metadata "
     "triton-grpc-protocol-<key>: <value>",
     [](const std::string& f, const std::string& v, SecurityConfig& c) { return c.grpc_access.Add(f, v); }},
    {"--http-restricted-api", "<group>[,<group>...]:<key>=<value>",
     "repeatable: those groups' endpoints need the header <key>: <value>",
     [](const std::string& f, const std::string& v, SecurityConfig& c) { return c.http_access.Add(f, v); }},
    {"--grpc-reflection", "", "serve gRPC server reflection (default true)",
     [](const std::string& f, const std::string& v, SecurityConfig& c) { return SetBool(f, v, c.grpc_reflection); }},
    {"--metrics-port", "N", "port of the /metrics listener (default 8002; 0 picks a free port; -1 serves /metrics "
                            "on the HTTP port instead)",
     [](const std::string& f, const std::string& v, SecurityConfig& c) {
       if (!absl::SimpleAtoi(v, &c.metrics_port) || c.metrics_port < -1 || c.metrics_port > 65535) {
         return absl::InvalidArgumentError(absl::StrCat(f, ": expected a port in [0, 65535] or -1, got \"", v, "\""));
       }
       return absl::OkStatus();
     }},
    {"--metrics-address", "HOST", "interface of the --metrics-port listener (default: --address)",
     [](const std::string& f, const std::string& v, SecurityConfig& c) { return SetFile(f, v, c.metrics_address); }},
};

const FlagSpec* FindFlag(const std::string& name) {
  for (const FlagSpec& flag : kFlags) {
    if (name == flag.name) return &flag;
  }
  return nullptr;
}

// "--grpc_use_ssl=1" -> "--grpc-use-ssl"; "" when `arg` is not a flag.
std::string FlagName(const std::string& arg) {
  if (arg.rfind("--", 0) != 0) return "";
  std::string name = arg.substr(0, arg.find('='));
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
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

absl::StatusOr<SecurityConfig> TakeSecurityFlags(std::vector<std::string>& args) {
  SecurityConfig config;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string name = FlagName(args[i]);
    const FlagSpec* flag = FindFlag(name);
    if (flag == nullptr) {
      rest.push_back(std::move(args[i]));
      continue;
    }
    std::string value;
    bool ignored = false;
    if (const size_t eq = args[i].find('='); eq != std::string::npos) {
      value = args[i].substr(eq + 1);
    } else if (flag->boolean()) {
      // Triton spells booleans "--grpc-use-ssl true"; serve takes no positional arguments, so a boolean word
      // after a boolean flag can only be its value.
      const bool next_is_bool = i + 1 < args.size() && absl::SimpleAtob(args[i + 1], &ignored);
      value = next_is_bool ? args[++i] : "true";
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat(flag->name, " needs a value"));
    }
    RETURN_IF_ERROR(flag->set(flag->name, value, config));
  }
  RETURN_IF_ERROR(CheckConsistency(config));
  args = std::move(rest);
  return config;
}

std::string SecurityFlagsUsage() {
  std::string usage;
  for (const FlagSpec& flag : kFlags) {
    absl::StrAppend(&usage, "  ", flag.name, flag.boolean() ? "" : " ", flag.value, ": ", flag.help, "\n");
  }
  return usage;
}

}  // namespace onnxserve::server

// onnxserve probe: a grpc.health.v1.Health/Check client for Docker HEALTHCHECK and Kubernetes exec probes.
// Prints the serving status and exits 0 only when it is SERVING.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "health.grpc.pb.h"
#include "server/commands.h"
#include "server/protocol/tls.h"

namespace onnxserve::server {
namespace {

constexpr char kUsage[] = R"(usage: onnxserve probe [--addr HOST:PORT] [--model NAME] [--timeout-ms N]
                       [--metadata KEY=VALUE] [--tls-ca-cert FILE [--tls-client-cert FILE --tls-client-key FILE]]
Asks a server's grpc.health.v1 service whether it is serving; exits 0 when SERVING, 1 otherwise.
  --addr HOST:PORT         server address (default 127.0.0.1:8001)
  --model NAME             the model's status instead of the whole server's (the health service name)
  --timeout-ms N           deadline of the check (default 2000)
  --metadata KEY=VALUE     gRPC metadata to send, repeatable; e.g. triton-grpc-protocol-KEY=VALUE for a
                           server that restricts the health group (--grpc-restricted-protocol)
)";

struct ProbeOptions {
  std::string addr = "127.0.0.1:8001";
  std::string service;  // "" = the server as a whole
  int64_t timeout_ms = 2000;
  std::vector<std::pair<std::string, std::string>> metadata;
  ClientTlsFlags tls;
};

// "KEY=VALUE" -> metadata; false when there is no '=' or no key.
bool AddMetadata(const std::string& value, std::vector<std::pair<std::string, std::string>>& metadata) {
  const size_t eq = value.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  metadata.emplace_back(value.substr(0, eq), value.substr(eq + 1));
  return true;
}

// False when `name` is no option or `value` does not suit it.
bool SetProbeOption(const std::string& name, const std::string& value, ProbeOptions& options) {
  if (name == "--addr") {
    options.addr = value;
    return true;
  }
  if (name == "--model") {
    options.service = value;
    return true;
  }
  if (name == "--metadata") return AddMetadata(value, options.metadata);
  if (name == "--timeout-ms") return absl::SimpleAtoi(value, &options.timeout_ms) && options.timeout_ms >= 1;
  return SetClientTlsFlag(name, value, options.tls);
}

// "--name value" or "--name=value"; false (with a message on stderr) on anything else.
bool ParseProbeOptions(int argc, char** argv, ProbeOptions& options) {
  for (int i = 2; i < argc; ++i) {
    std::string name = argv[i], value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      std::cerr << "onnxserve probe: option " << name << " needs a value\n" << kUsage;
      return false;
    }
    if (!SetProbeOption(name, value, options)) {
      std::cerr << "onnxserve probe: bad option " << name << " " << value << "\n" << kUsage << kClientTlsUsage;
      return false;
    }
  }
  return true;
}

// SERVING, NOT_SERVING, ... or the gRPC error that prevented an answer; `serving` tells whether to exit 0.
std::string Check(const ProbeOptions& options, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
                  bool& serving) {
  using grpc::health::v1::HealthCheckResponse;
  auto stub = grpc::health::v1::Health::NewStub(grpc::CreateChannel(options.addr, credentials));
  grpc::ClientContext context;
  for (const auto& [key, value] : options.metadata) context.AddMetadata(key, value);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(options.timeout_ms));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(options.service);
  HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  serving = false;
  if (!status.ok()) {
    // absl::StatusCode and grpc::StatusCode share google.rpc.Code numbering (asserted in status.cc).
    return absl::StrCat(absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())), ": ",
                        status.error_message());
  }
  serving = response.status() == HealthCheckResponse::SERVING;
  return HealthCheckResponse::ServingStatus_Name(response.status());
}

}  // namespace

int ProbeCommand(int argc, char** argv) {
  if (argc > 2 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h")) {
    std::cout << kUsage << kClientTlsUsage;
    return 0;
  }
  ProbeOptions options;
  if (!ParseProbeOptions(argc, argv, options)) return 2;
  auto credentials = GrpcChannelCredentials(options.tls);
  if (!credentials.ok()) {
    std::cerr << "onnxserve probe: " << credentials.status().message() << "\n";
    return 2;
  }
  bool serving = false;
  const std::string answer = Check(options, *credentials, serving);
  std::cout << options.addr << (options.service.empty() ? "" : " model " + options.service) << ": " << answer
            << "\n";
  return serving ? 0 : 1;
}

}  // namespace onnxserve::server

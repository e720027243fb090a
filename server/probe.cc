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
#include "absl/strings/str_cat.h"
#include "health.grpc.pb.h"
#include "runtime/core/status_macros.h"
#include "server/client_options.h"
#include "server/commands.h"
#include "server/protocol/tls.h"

namespace onnxserve::server {
namespace {

constexpr char kUsage[] = R"(usage: onnxserve probe [options]
Asks a server's grpc.health.v1 service whether it is serving; exits 0 when SERVING, 1 otherwise.
)";

struct ProbeOptions {
  std::string addr;
  std::string service;  // "" = the server as a whole
  int64_t timeout_ms = 0;
  Metadata metadata;
  ClientTlsFlags tls;
};

cli::OptionTable ProbeOptionTable() {
  using cli::ValueKind;
  return cli::Join(
      {
          {.name = "addr", .value_name = "HOST:PORT", .help = "server address", .default_value = "127.0.0.1:8001"},
          {.name = "model", .value_name = "NAME",
           .help = "the model's status instead of the whole server's (the health service name)"},
          {.name = "timeout-ms", .kind = ValueKind::kInt, .value_name = "N", .help = "deadline of the check",
           .default_value = "2000", .min = 1, .max = 3600000},
          MetadataOption("gRPC metadata to send; e.g. triton-grpc-protocol-KEY=VALUE for a server that restricts "
                         "the health group (--grpc-restricted-protocol)"),
      },
      ClientTlsOptions());
}

absl::StatusOr<ProbeOptions> ProbeOptionsFromArgs(const cli::Args& args) {
  if (!args.positional.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", args.positional[0], "\""));
  }
  ProbeOptions options;
  options.addr = args.Get("addr");
  options.service = args.Get("model");
  options.timeout_ms = args.Int("timeout-ms");
  ASSIGN_OR_RETURN(options.metadata, MetadataFromArgs(args));
  options.tls = ClientTlsFromArgs(args);
  return options;
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
  const cli::OptionTable table = ProbeOptionTable();
  auto args = cli::ParseArgs(table, argc, argv, 2);
  if (args.ok() && args->help) {
    std::cout << kUsage << cli::OptionsHelp(table);
    return 0;
  }
  auto parsed = args.ok() ? ProbeOptionsFromArgs(*args) : args.status();
  if (!parsed.ok()) {
    std::cerr << "onnxserve probe: " << parsed.status().message() << "\n" << kUsage << cli::OptionsHelp(table);
    return 2;
  }
  const ProbeOptions& options = *parsed;
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

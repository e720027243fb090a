// onnxserve probe: a grpc.health.v1.Health/Check client for Docker HEALTHCHECK and Kubernetes exec probes.
// Prints the serving status and exits 0 only when it is SERVING.
//
// Neither gRPC nor Debian installs health.proto or code generated from it, so the probe builds the two
// message types at run time from their descriptor (the schema below is grpc/health/v1/health.proto's) and
// calls the method through gRPC's generic stub.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/text_format.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/proto_utils.h>  // SerializationTraits for protobuf messages

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/commands.h"
#include "server/tls.h"

namespace onnxserve::server {
namespace {

namespace pb = google::protobuf;

constexpr char kHealthProto[] = R"pb(
  name: "grpc/health/v1/health.proto"
  package: "grpc.health.v1"
  syntax: "proto3"
  message_type {
    name: "HealthCheckRequest"
    field { name: "service" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
  }
  message_type {
    name: "HealthCheckResponse"
    field {
      name: "status"
      number: 1
      label: LABEL_OPTIONAL
      type: TYPE_ENUM
      type_name: ".grpc.health.v1.HealthCheckResponse.ServingStatus"
    }
    enum_type {
      name: "ServingStatus"
      value { name: "UNKNOWN" number: 0 }
      value { name: "SERVING" number: 1 }
      value { name: "NOT_SERVING" number: 2 }
      value { name: "SERVICE_UNKNOWN" number: 3 }
    }
  }
)pb";
constexpr char kCheckMethod[] = "/grpc.health.v1.Health/Check";
constexpr int kServing = 1;

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

// The health messages, built once per process from kHealthProto.
class HealthMessages {
 public:
  HealthMessages() {
    pb::FileDescriptorProto file;
    pb::TextFormat::ParseFromString(kHealthProto, &file);
    pool_.BuildFile(file);
  }
  std::unique_ptr<pb::Message> New(const std::string& type) {
    return std::unique_ptr<pb::Message>(
        factory_.GetPrototype(pool_.FindMessageTypeByName("grpc.health.v1." + type))->New());
  }

 private:
  pb::DescriptorPool pool_;
  pb::DynamicMessageFactory factory_{&pool_};
};

// SERVING, NOT_SERVING, ... or the gRPC error that prevented an answer; `serving` tells whether to exit 0.
std::string Check(const ProbeOptions& options, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
                  bool& serving) {
  HealthMessages messages;
  std::unique_ptr<pb::Message> request = messages.New("HealthCheckRequest");
  std::unique_ptr<pb::Message> response = messages.New("HealthCheckResponse");
  request->GetReflection()->SetString(request.get(), request->GetDescriptor()->FindFieldByName("service"),
                                      options.service);

  grpc::TemplatedGenericStub<pb::Message, pb::Message> stub(grpc::CreateChannel(options.addr, credentials));
  grpc::ClientContext context;
  for (const auto& [key, value] : options.metadata) context.AddMetadata(key, value);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(options.timeout_ms));
  grpc::CompletionQueue cq;
  auto call = stub.PrepareUnaryCall(&context, kCheckMethod, *request, &cq);
  call->StartCall();
  grpc::Status status;
  call->Finish(response.get(), &status, &cq);
  void* tag;
  bool ok;
  cq.Next(&tag, &ok);

  serving = false;
  if (!status.ok()) {
    // absl::StatusCode and grpc::StatusCode share google.rpc.Code numbering (asserted in status.cc).
    return absl::StrCat(absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())), ": ",
                        status.error_message());
  }
  const pb::EnumValueDescriptor* value = response->GetReflection()->GetEnum(
      *response, response->GetDescriptor()->FindFieldByName("status"));
  serving = value->number() == kServing;
  return value->name();
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

// The serve flags for TLS, access control, reflection and the metrics listener: what a misconfigured
// deployment meets first, so every error must name the flag at fault. Also the access decision itself and
// the table of gRPC methods it is made for.
#include "server/protocol/security_config.h"

#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "grpc_service.pb.h"
#include "gtest/gtest.h"
#include "server/protocol/grpc_access.h"

namespace onnxserve::server {
namespace {

absl::StatusOr<SecurityConfig> Parse(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  auto parsed = cli::ParseArgs(SecurityOptions(), static_cast<int>(argv.size()), argv.data(), 0);
  if (!parsed.ok()) return parsed.status();
  return SecurityConfigFromArgs(*parsed);
}

// The error of parsing `args`, which must fail with INVALID_ARGUMENT.
std::string ErrorOf(std::vector<std::string> args) {
  auto config = Parse(args);
  EXPECT_FALSE(config.ok()) << "parsed: " << args.size() << " args";
  if (config.ok()) return "";
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << config.status();
  return std::string(config.status().message());
}

#define EXPECT_CONTAINS(haystack, needle) EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

TEST(SecurityFlagsTest, DefaultsAreOpenPlaintextWithReflectionAndMetricsOnTritonsMetricsPort) {
  auto config = Parse({});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->grpc_tls.enabled);
  EXPECT_FALSE(config->http_tls.enabled);
  EXPECT_TRUE(config->grpc_reflection);
  EXPECT_EQ(config->metrics_port, 8002);
  EXPECT_TRUE(config->grpc_access.empty());
  EXPECT_TRUE(config->http_access.empty());
}

TEST(SecurityFlagsTest, TakesBothValueSpellings) {
  auto config = Parse({"--grpc-use-ssl", "--grpc-server-cert", "c.pem", "--grpc-server-key=k.pem"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->grpc_tls.enabled);
  EXPECT_EQ(config->grpc_tls.cert_file, "c.pem");
  EXPECT_EQ(config->grpc_tls.key_file, "k.pem");
}

TEST(SecurityFlagsTest, BooleansTakeTritonsSpellingsAndUnderscores) {
  const std::vector<std::vector<std::string>> on = {
      {"--grpc-reflection"}, {"--grpc-reflection=true"}, {"--grpc-reflection", "true"}, {"--grpc_reflection=1"}};
  for (const auto& args : on) {
    auto config = Parse(args);
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_TRUE(config->grpc_reflection) << args[0];
  }
  for (const auto& args : std::vector<std::vector<std::string>>{{"--grpc-reflection=false"},
                                                                {"--grpc-reflection", "false"}}) {
    auto config = Parse(args);
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_FALSE(config->grpc_reflection);
  }
  EXPECT_CONTAINS(ErrorOf({"--grpc-reflection=maybe"}), "--grpc-reflection: expected true or false");
}

TEST(SecurityFlagsTest, MutualImpliesTls) {
  auto config = Parse({"--http-use-ssl-mutual", "--http-server-cert", "c", "--http-server-key", "k",
                       "--http-root-cert", "ca"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->http_tls.mutual);
  EXPECT_EQ(config->http_tls.root_file, "ca");
}

TEST(SecurityFlagsTest, InconsistentTlsFlagsAreErrorsNamingThem) {
  EXPECT_CONTAINS(ErrorOf({"--grpc-use-ssl"}), "--grpc-use-ssl needs --grpc-server-cert and --grpc-server-key");
  EXPECT_CONTAINS(ErrorOf({"--http-use-ssl", "--http-server-cert", "c"}), "--http-server-key");
  EXPECT_CONTAINS(ErrorOf({"--grpc-use-ssl-mutual", "--grpc-server-cert", "c", "--grpc-server-key", "k"}),
                  "--grpc-use-ssl-mutual needs --grpc-root-cert");
  EXPECT_CONTAINS(ErrorOf({"--grpc-server-cert", "c", "--grpc-server-key", "k"}),
                  "--grpc-server-cert is given but TLS is off: add --grpc-use-ssl");
  EXPECT_CONTAINS(ErrorOf({"--http-use-ssl", "--http-server-cert", "c", "--http-server-key", "k",
                           "--http-root-cert", "ca"}),
                  "--http-root-cert verifies client certificates, which only --http-use-ssl-mutual asks for");
  EXPECT_CONTAINS(ErrorOf({"--grpc-server-cert"}), "--grpc-server-cert needs a value");
  EXPECT_CONTAINS(ErrorOf({"--grpc-server-cert="}), "--grpc-server-cert: expected a file name");
}

TEST(SecurityFlagsTest, RestrictionsRepeatAndKeepCommasInTheGroupList) {
  auto config = Parse({"--grpc-restricted-protocol=health,metadata:Admin-Key=s3cr:t=",
                       "--grpc-restricted-protocol", "model-repository:other=x", "--http-restricted-api",
                       "statistics,shared-memory:k=v"});
  ASSERT_TRUE(config.ok()) << config.status();
  const auto& health = config->grpc_access.restriction(ApiGroup::kHealth);
  ASSERT_TRUE(health.has_value());
  EXPECT_EQ(health->key, "admin-key");     // lowercased: gRPC metadata keys are lowercase
  EXPECT_EQ(health->value, "s3cr:t=");     // split at the first ':' and the first '=' only
  EXPECT_TRUE(config->grpc_access.restriction(ApiGroup::kMetadata).has_value());
  EXPECT_EQ(config->grpc_access.restriction(ApiGroup::kModelRepository)->key, "other");
  EXPECT_FALSE(config->grpc_access.restriction(ApiGroup::kInference).has_value());
  EXPECT_TRUE(config->http_access.restriction(ApiGroup::kStatistics).has_value());
  EXPECT_FALSE(config->http_access.restriction(ApiGroup::kHealth).has_value());
}

TEST(SecurityFlagsTest, BadRestrictionsAreErrorsNamingTheFlag) {
  const std::string twice = ErrorOf({"--grpc-restricted-protocol=health:a=1", "--grpc-restricted-protocol=inference,health:b=2"});
  EXPECT_CONTAINS(twice, "--grpc-restricted-protocol=inference,health:b=2");
  EXPECT_CONTAINS(twice, "group \"health\" is already restricted");
  const std::string unknown = ErrorOf({"--http-restricted-api=helth:a=1"});
  EXPECT_CONTAINS(unknown, "--http-restricted-api=helth:a=1: unknown group \"helth\"");
  EXPECT_CONTAINS(unknown, "health, metadata, inference");
  EXPECT_CONTAINS(ErrorOf({"--http-restricted-api=:a=1"}), "the group list is empty");
  EXPECT_CONTAINS(ErrorOf({"--http-restricted-api=health,:a=1"}), "unknown group \"\"");
  EXPECT_CONTAINS(ErrorOf({"--http-restricted-api=health:=1"}), "the key must be non-empty");
  EXPECT_CONTAINS(ErrorOf({"--http-restricted-api=health:a="}), "the value must be non-empty");
  EXPECT_CONTAINS(ErrorOf({"--http-restricted-api=health:a=two words"}), "without spaces");
  EXPECT_CONTAINS(ErrorOf({"--http-restricted-api=health:a b=1"}), "the key must");
  EXPECT_CONTAINS(ErrorOf({"--http-restricted-api=health"}), "no ':' after the group list");
  EXPECT_CONTAINS(ErrorOf({"--http-restricted-api=health:a"}), "no '=' between the key and the value");
}

TEST(SecurityFlagsTest, MetricsListenerFlags) {
  auto config = Parse({"--metrics-port", "0", "--metrics-address=127.0.0.1"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->metrics_port, 0);
  EXPECT_EQ(config->metrics_address, "127.0.0.1");
  EXPECT_CONTAINS(ErrorOf({"--metrics-port=70000"}), "--metrics-port must be an integer in [-1, 65535], got \"70000\"");
  EXPECT_CONTAINS(ErrorOf({"--metrics-port=-2"}), "--metrics-port");
  auto on_http_port = Parse({"--metrics-port=-1"});  // /metrics back on the HTTP port
  ASSERT_TRUE(on_http_port.ok()) << on_http_port.status();
  EXPECT_EQ(on_http_port->metrics_port, -1);
  EXPECT_CONTAINS(ErrorOf({"--metrics-port=-1", "--metrics-address=127.0.0.1"}),
                  "--metrics-address needs a metrics listener");
}

TEST(SecurityFlagsTest, UsageListsEveryFlag) {
  const std::string usage = cli::OptionsHelp(SecurityOptions());
  for (const char* flag : {"--grpc-use-ssl", "--grpc-use-ssl-mutual", "--grpc-server-cert", "--grpc-server-key",
                           "--grpc-root-cert", "--http-use-ssl", "--http-use-ssl-mutual", "--http-server-cert",
                           "--http-server-key", "--http-root-cert", "--grpc-restricted-protocol",
                           "--http-restricted-api", "--grpc-reflection", "--metrics-port", "--metrics-address"}) {
    EXPECT_CONTAINS(usage, "  " + std::string(flag));
  }
}

// ---- The decision --------------------------------------------------------------------------------------

TEST(AccessRulesTest, ARestrictedGroupNeedsItsHeaderWithTheExactValue) {
  AccessRules rules(kGrpcRestrictedHeaderPrefix);
  ASSERT_TRUE(rules.Add("--grpc-restricted-protocol", "inference:key=right").ok());
  std::optional<std::string> sent;
  const auto lookup = [&sent](absl::string_view name) -> std::optional<absl::string_view> {
    if (name != "triton-grpc-protocol-key" || !sent) return std::nullopt;
    return absl::string_view(*sent);
  };
  EXPECT_TRUE(rules.Check(ApiGroup::kHealth, lookup).ok());  // not restricted
  for (const char* wrong : {"", "righ", "rightt", "RIGHT", "wrong"}) {
    sent = wrong;
    const absl::Status status = rules.Check(ApiGroup::kInference, lookup);
    EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << wrong;
    EXPECT_CONTAINS(std::string(status.message()), "\"triton-grpc-protocol-key\"");
    EXPECT_EQ(std::string(status.message()).find("right"), std::string::npos) << "the value leaked";
  }
  sent.reset();
  EXPECT_EQ(rules.Check(ApiGroup::kInference, lookup).code(), absl::StatusCode::kPermissionDenied);
  sent = "right";
  EXPECT_TRUE(rules.Check(ApiGroup::kInference, lookup).ok());
}

TEST(AccessRulesTest, ConstantTimeEqualsIsEquality) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("ab", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abcd", "abc"));
  EXPECT_FALSE(ConstantTimeEquals(std::string("ab\0", 3), "ab"));
  EXPECT_FALSE(ConstantTimeEquals("", "a"));
}

TEST(GrpcAccessTest, EveryKServeMethodHasAGroup) {
  const auto* service = inference::ServerLiveRequest::descriptor()->file()->FindServiceByName("GRPCInferenceService");
  ASSERT_NE(service, nullptr);
  for (int i = 0; i < service->method_count(); ++i) {
    const std::string method = "/" + service->full_name() + "/" + service->method(i)->name();
    EXPECT_TRUE(GrpcMethodGroup(method).has_value()) << method;
  }
  EXPECT_EQ(GrpcMethodGroup("/grpc.health.v1.Health/Check"), ApiGroup::kHealth);
  EXPECT_EQ(GrpcMethodGroup("/grpc.health.v1.Health/Watch"), ApiGroup::kHealth);
  EXPECT_EQ(GrpcMethodGroup("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"), ApiGroup::kMetadata);
  EXPECT_EQ(GrpcMethodGroup("/inference.GRPCInferenceService/ModelStreamInfer"), ApiGroup::kInference);
  EXPECT_EQ(GrpcMethodGroup("/inference.GRPCInferenceService/RepositoryModelLoad"), ApiGroup::kModelRepository);
  EXPECT_FALSE(GrpcMethodGroup("/inference.GRPCInferenceService/NoSuchMethod").has_value());
}

// ---- TLS files -----------------------------------------------------------------------------------------

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name + "." + std::to_string(getpid());
  std::ofstream(path) << text;
  return path;
}

TEST(ServerTlsTest, FileErrorsNameTheFlagAndTheFile) {
  ServerTlsFlags flags;
  flags.enabled = true;
  flags.cert_file = "/nonexistent/server.pem";
  flags.key_file = "/nonexistent/server.key";
  auto tls = LoadServerTls("--grpc", flags);
  ASSERT_FALSE(tls.ok());
  EXPECT_CONTAINS(std::string(tls.status().message()), "--grpc-server-cert /nonexistent/server.pem: cannot read");

  flags.cert_file = WriteTemp("garbage.pem", "not a certificate\n");
  tls = LoadServerTls("--http", flags);
  ASSERT_FALSE(tls.ok());
  EXPECT_CONTAINS(std::string(tls.status().message()), "--http-server-cert " + flags.cert_file + ": not a PEM certificate");
  unlink(flags.cert_file.c_str());
}

TEST(ServerTlsTest, TlsOffLoadsNothing) {
  auto tls = LoadServerTls("--grpc", ServerTlsFlags());
  ASSERT_TRUE(tls.ok()) << tls.status();
  EXPECT_FALSE(tls->has_value());
}

TEST(ClientTlsTest, ClientFlagsMustAgree) {
  ClientTlsFlags flags;
  EXPECT_TRUE(GrpcChannelCredentials(flags).ok());  // plaintext
  flags.cert_file = "c.pem";
  EXPECT_CONTAINS(std::string(GrpcChannelCredentials(flags).status().message()), "need --tls-ca-cert");
  flags.ca_file = "/nonexistent/ca.pem";
  EXPECT_CONTAINS(std::string(GrpcChannelCredentials(flags).status().message()), "go together");
  flags.key_file = "k.pem";
  EXPECT_CONTAINS(std::string(GrpcChannelCredentials(flags).status().message()),
                  "--tls-ca-cert /nonexistent/ca.pem: cannot read");
}

}  // namespace
}  // namespace onnxserve::server

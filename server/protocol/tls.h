// TLS for the listeners (gRPC and HTTP) and for the clients (onnxserve probe and load): the PEM files the
// flags name, read and checked with GnuTLS at startup so that a bad file is an error naming its flag, not a
// listener that fails to start for a reason nobody logged.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include "absl/status/statusor.h"
#include "cli/args.h"

namespace onnxserve::server {

// One listener's TLS flags as given, e.g. for gRPC --grpc-use-ssl, --grpc-use-ssl-mutual, --grpc-server-cert,
// --grpc-server-key, --grpc-root-cert. `mutual` implies `enabled` (as in Triton).
struct ServerTlsFlags {
  bool enabled = false;
  bool mutual = false;    // require a client certificate signed by `root_file`
  std::string cert_file;  // the server's certificate chain, PEM
  std::string key_file;   // its private key, PEM
  std::string root_file;  // the CA(s) client certificates must chain to, PEM; mutual TLS only
};

// A listener's TLS material, read and checked.
struct ServerTls {
  std::string cert_pem;
  std::string key_pem;
  std::string root_pem;  // "" unless mutual
  bool mutual = false;
};

// Checks that the flags of the listener `prefix` ("--grpc" or "--http") agree with each other: TLS on needs a
// certificate and key, mutual TLS a root certificate, and files given with TLS off are an error rather than
// silently plaintext.
absl::Status CheckServerTlsFlags(const std::string& prefix, const ServerTlsFlags& flags);

// Reads and checks the files (PEM that parses; the key matches the certificate); nullopt when TLS is off.
// Errors name the flag and the file.
absl::StatusOr<std::optional<ServerTls>> LoadServerTls(const std::string& prefix, const ServerTlsFlags& flags);

// Insecure credentials when `tls` is nullopt; otherwise TLS, requiring and verifying a client certificate when
// tls->mutual.
std::shared_ptr<grpc::ServerCredentials> GrpcServerCredentials(const std::optional<ServerTls>& tls);

// The client side: --tls-ca-cert turns TLS on and names the CA that signed the server's certificate;
// --tls-client-cert and --tls-client-key (both or neither) present a client certificate for mutual TLS.
struct ClientTlsFlags {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

// The rows of the options above, shared by probe and load, and what a command line set in them.
cli::OptionTable ClientTlsOptions();
ClientTlsFlags ClientTlsFromArgs(const cli::Args& args);

// Insecure credentials when no CA is given; otherwise TLS, with the client certificate when given.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> GrpcChannelCredentials(const ClientTlsFlags& flags);

// PEM files are a few kilobytes; a bigger file is not read.
inline constexpr size_t kMaxPemBytes = 1 << 20;

}  // namespace onnxserve::server

#include "server/protocol/tls.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"

namespace onnxserve::server {
namespace {

// A flag and the file it names, for error messages: `--grpc-server-cert /etc/tls/server.pem`.
std::string Named(const std::string& flag, const std::string& file) { return absl::StrCat(flag, " ", file); }

absl::StatusOr<std::string> ReadPem(const std::string& flag, const std::string& file) {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(file, ec);
  if (ec) return absl::NotFoundError(absl::StrCat(Named(flag, file), ": cannot read: ", ec.message()));
  if (size > kMaxPemBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(Named(flag, file), ": ", size, " bytes, more than the ", kMaxPemBytes, " a PEM file may have"));
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(Named(flag, file), ": cannot open"));
  std::stringstream pem;
  pem << in.rdbuf();
  return pem.str();
}

gnutls_datum_t Datum(const std::string& pem) {
  return {reinterpret_cast<unsigned char*>(const_cast<char*>(pem.data())), static_cast<unsigned>(pem.size())};
}

// At least one X.509 certificate in PEM.
absl::Status CheckCertificates(const std::string& flag, const std::string& file, const std::string& pem) {
  gnutls_x509_crt_t* certs = nullptr;
  unsigned count = 0;
  const gnutls_datum_t data = Datum(pem);
  const int rc = gnutls_x509_crt_list_import2(&certs, &count, &data, GNUTLS_X509_FMT_PEM, 0);
  for (unsigned i = 0; i < count; ++i) gnutls_x509_crt_deinit(certs[i]);
  gnutls_free(certs);
  if (rc < 0 || count == 0) {
    return absl::InvalidArgumentError(absl::StrCat(Named(flag, file), ": not a PEM certificate (",
                                                   rc < 0 ? gnutls_strerror(rc) : "none found", ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckPrivateKey(const std::string& flag, const std::string& file, const std::string& pem) {
  gnutls_x509_privkey_t key = nullptr;
  gnutls_x509_privkey_init(&key);
  const gnutls_datum_t data = Datum(pem);
  const int rc = gnutls_x509_privkey_import2(key, &data, GNUTLS_X509_FMT_PEM, nullptr, 0);
  gnutls_x509_privkey_deinit(key);
  if (rc < 0) {
    return absl::InvalidArgumentError(absl::StrCat(Named(flag, file), ": not an unencrypted PEM private key (",
                                                   gnutls_strerror(rc), ")"));
  }
  return absl::OkStatus();
}

// GnuTLS refuses a key that does not belong to the first certificate of the chain.
absl::Status CheckKeyMatches(const std::string& cert_flag, const std::string& cert_file, const std::string& cert_pem,
                             const std::string& key_flag, const std::string& key_file, const std::string& key_pem) {
  gnutls_certificate_credentials_t credentials = nullptr;
  gnutls_certificate_allocate_credentials(&credentials);
  const gnutls_datum_t cert = Datum(cert_pem), key = Datum(key_pem);
  const int rc = gnutls_certificate_set_x509_key_mem2(credentials, &cert, &key, GNUTLS_X509_FMT_PEM, nullptr, 0);
  gnutls_certificate_free_credentials(credentials);
  if (rc < 0) {
    return absl::InvalidArgumentError(absl::StrCat(Named(key_flag, key_file), " does not go with ",
                                                   Named(cert_flag, cert_file), " (", gnutls_strerror(rc), ")"));
  }
  return absl::OkStatus();
}

// A certificate and its key, both checked: the server's (--grpc-server-cert/-key) or a client's.
absl::Status LoadKeyPair(const std::string& cert_flag, const std::string& cert_file, const std::string& key_flag,
                         const std::string& key_file, std::string& cert_pem, std::string& key_pem) {
  ASSIGN_OR_RETURN(cert_pem, ReadPem(cert_flag, cert_file));
  RETURN_IF_ERROR(CheckCertificates(cert_flag, cert_file, cert_pem));
  ASSIGN_OR_RETURN(key_pem, ReadPem(key_flag, key_file));
  RETURN_IF_ERROR(CheckPrivateKey(key_flag, key_file, key_pem));
  return CheckKeyMatches(cert_flag, cert_file, cert_pem, key_flag, key_file, key_pem);
}

absl::StatusOr<std::string> LoadCertificates(const std::string& flag, const std::string& file) {
  ASSIGN_OR_RETURN(std::string pem, ReadPem(flag, file));
  RETURN_IF_ERROR(CheckCertificates(flag, file, pem));
  return pem;
}

}  // namespace

absl::Status CheckServerTlsFlags(const std::string& prefix, const ServerTlsFlags& flags) {
  const bool on = flags.enabled || flags.mutual;
  const std::pair<const char*, const std::string*> files[] = {
      {"-server-cert", &flags.cert_file}, {"-server-key", &flags.key_file}, {"-root-cert", &flags.root_file}};
  if (!on) {
    for (const auto& [suffix, file] : files) {
      if (!file->empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(prefix, suffix, " is given but TLS is off: add ", prefix, "-use-ssl"));
      }
    }
    return absl::OkStatus();
  }
  if (flags.cert_file.empty() || flags.key_file.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "-use-ssl needs ", prefix, "-server-cert and ", prefix, "-server-key"));
  }
  if (flags.mutual && flags.root_file.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "-use-ssl-mutual needs ", prefix,
                                                   "-root-cert, the CA that client certificates must chain to"));
  }
  if (!flags.mutual && !flags.root_file.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "-root-cert verifies client certificates, which only ",
                                                   prefix, "-use-ssl-mutual asks for"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<ServerTls>> LoadServerTls(const std::string& prefix, const ServerTlsFlags& flags) {
  RETURN_IF_ERROR(CheckServerTlsFlags(prefix, flags));
  if (!flags.enabled && !flags.mutual) return std::nullopt;
  ServerTls tls;
  tls.mutual = flags.mutual;
  RETURN_IF_ERROR(LoadKeyPair(prefix + "-server-cert", flags.cert_file, prefix + "-server-key", flags.key_file,
                              tls.cert_pem, tls.key_pem));
  if (flags.mutual) {
    ASSIGN_OR_RETURN(tls.root_pem, LoadCertificates(prefix + "-root-cert", flags.root_file));
  }
  return tls;
}

std::shared_ptr<grpc::ServerCredentials> GrpcServerCredentials(const std::optional<ServerTls>& tls) {
  if (!tls) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(tls->mutual ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                                        : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  options.pem_root_certs = tls->root_pem;
  options.pem_key_cert_pairs.push_back({tls->key_pem, tls->cert_pem});
  return grpc::SslServerCredentials(options);
}

cli::OptionTable ClientTlsOptions() {
  using cli::ValueKind;
  return {
      {.name = "tls-ca-cert", .kind = ValueKind::kFile, .value_name = "FILE",
       .help = "speak TLS, trusting the CA certificate(s) in FILE (PEM)"},
      {.name = "tls-client-cert", .kind = ValueKind::kFile, .value_name = "FILE",
       .help = "client certificate for mutual TLS (PEM; with --tls-client-key)"},
      {.name = "tls-client-key", .kind = ValueKind::kFile, .value_name = "FILE", .help = "its private key (PEM)"},
  };
}

ClientTlsFlags ClientTlsFromArgs(const cli::Args& args) {
  return {.ca_file = args.Get("tls-ca-cert"), .cert_file = args.Get("tls-client-cert"),
          .key_file = args.Get("tls-client-key")};
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> GrpcChannelCredentials(const ClientTlsFlags& flags) {
  const bool has_pair = !flags.cert_file.empty() || !flags.key_file.empty();
  if (flags.ca_file.empty()) {
    if (has_pair) return absl::InvalidArgumentError("--tls-client-cert and --tls-client-key need --tls-ca-cert");
    return grpc::InsecureChannelCredentials();
  }
  if (has_pair && (flags.cert_file.empty() || flags.key_file.empty())) {
    return absl::InvalidArgumentError("--tls-client-cert and --tls-client-key go together");
  }
  grpc::SslCredentialsOptions options;
  ASSIGN_OR_RETURN(options.pem_root_certs, LoadCertificates("--tls-ca-cert", flags.ca_file));
  if (has_pair) {
    RETURN_IF_ERROR(LoadKeyPair("--tls-client-cert", flags.cert_file, "--tls-client-key", flags.key_file,
                                options.pem_cert_chain, options.pem_private_key));
  }
  return grpc::SslCredentials(options);
}

}  // namespace onnxserve::server

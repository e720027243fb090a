// The HTTP side of the server: GET /metrics and the KServe v2 health endpoints, served by GNU libmicrohttpd.
//
// This port faces the same clients as the gRPC one, so it is built for hostile input:
// - one route table decides every answer: an unknown path gets 404 and a known path with another method 405,
//   both with a JSON body, before any request body is read;
// - connections are event-driven (epoll, a small thread pool), so a slow or half-open client costs a socket
//   and not a thread, and health probes keep being answered;
// - idle connections time out, connections are capped in total and per client address, and request bodies
//   are capped (HttpLimits in metrics.h);
// - with TLS, GnuTLS inside MHD does the handshake; with mutual TLS MHD only asks for a client certificate,
//   so every request's is verified here (403 without one that chains to the root certificate);
// - each route belongs to an API group, which --http-restricted-api may restrict (403 without its header).
// More routes (the KServe REST protocol, POST with JSON bodies) are added as rows of Routes() below.
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "runtime/core/status_macros.h"
#include "server/log.h"
#include "server/metrics.h"

namespace onnxserve::server {
namespace {

constexpr char kPrometheusContentType[] = "text/plain; version=0.0.4; charset=utf-8";
constexpr char kJsonContentType[] = "application/json";

struct Reply {
  unsigned code = MHD_HTTP_OK;
  std::string content_type = "text/plain";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // beyond Content-Type
};

// A request as a route's handler sees it.
struct Request {
  std::vector<std::string> params;  // the path segments the route's "{name}" segments matched, in order
  std::string body;                 // at most HttpLimits::max_body_bytes
};

// One endpoint. `pattern` is a path whose segments are literal or "{name}"; a "{name}" segment matches any
// non-empty segment. The path is the URL-decoded path without the query string.
struct Route {
  absl::string_view method;
  absl::string_view pattern;
  ApiGroup group;  // what --http-restricted-api names it by
  std::function<Reply(const Request&)> handler;
};

// KServe's REST error shape. `message` is one of our constants, or an access refusal that quotes a header key
// (checked to be [a-z0-9-_.] at startup): client input is never echoed back, and printable ASCII needs only
// its quotes and backslashes escaped to be a JSON string.
Reply JsonError(unsigned code, absl::string_view message) {
  Reply reply;
  reply.code = code;
  reply.content_type = kJsonContentType;
  reply.body = R"({"error":")";
  for (char c : message) {
    if (c == '"' || c == '\\') reply.body += '\\';
    reply.body += c;
  }
  reply.body += R"("})";
  return reply;
}

// KServe v2 health replies carry no body: the status code is the answer. A missing probe answers "not ready".
Reply ProbeReply(bool ok) {
  Reply reply;
  reply.code = ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE;
  return reply;
}

// The parameters `path` binds in `pattern`, or nullopt when it does not match.
std::optional<std::vector<std::string>> MatchPath(absl::string_view pattern, absl::string_view path) {
  const std::vector<absl::string_view> want = absl::StrSplit(pattern, '/');
  const std::vector<absl::string_view> got = absl::StrSplit(path, '/');
  if (want.size() != got.size()) return std::nullopt;
  std::vector<std::string> params;
  for (size_t i = 0; i < want.size(); ++i) {
    if (absl::StartsWith(want[i], "{")) {
      if (got[i].empty()) return std::nullopt;
      params.emplace_back(got[i]);
    } else if (want[i] != got[i]) {
      return std::nullopt;
    }
  }
  return params;
}

// Where the route table sends a request: a route with its parameters, else the methods the path does have
// (405 when there are some, 404 when there are none).
struct Dispatch {
  const Route* route = nullptr;
  std::vector<std::string> params;
  std::string allowed_methods;
};

Dispatch Resolve(const std::vector<Route>& routes, absl::string_view method, absl::string_view path) {
  Dispatch dispatch;
  for (const Route& route : routes) {
    std::optional<std::vector<std::string>> params = MatchPath(route.pattern, path);
    if (!params) continue;
    if (route.method == method) {
      dispatch.route = &route;
      dispatch.params = *std::move(params);
      return dispatch;
    }
    absl::StrAppend(&dispatch.allowed_methods, dispatch.allowed_methods.empty() ? "" : ", ", route.method);
  }
  return dispatch;
}

Reply NoRoute(const Dispatch& dispatch) {
  if (dispatch.allowed_methods.empty()) return JsonError(MHD_HTTP_NOT_FOUND, "no such endpoint");
  Reply reply = JsonError(MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed on this endpoint");
  reply.headers.emplace_back(MHD_HTTP_HEADER_ALLOW, dispatch.allowed_methods);
  return reply;
}

// The body length the client announced; 0 for a chunked body (capped as it arrives instead). MHD has already
// rejected a malformed Content-Length by the time handlers run.
uint64_t DeclaredBodyBytes(MHD_Connection* connection) {
  const char* header = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  uint64_t bytes = 0;
  if (header == nullptr || !absl::SimpleAtoi(header, &bytes)) return 0;
  return bytes;
}

MHD_Result Send(MHD_Connection* connection, const Reply& reply) {
  std::unique_ptr<MHD_Response, decltype(&MHD_destroy_response)> response(
      MHD_create_response_from_buffer(reply.body.size(), const_cast<char*>(reply.body.data()),
                                      MHD_RESPMEM_MUST_COPY),
      &MHD_destroy_response);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response.get(), MHD_HTTP_HEADER_CONTENT_TYPE, reply.content_type.c_str());
  MHD_add_response_header(response.get(), MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  for (const auto& [name, value] : reply.headers) MHD_add_response_header(response.get(), name.c_str(), value.c_str());
  return MHD_queue_response(connection, reply.code, response.get());
}

// The socket addresses `host` names, best first: an IPv4 or IPv6 literal, the latter also in brackets ("[::1]",
// the form the gRPC listener takes), or a host name such as "localhost".
absl::StatusOr<std::vector<sockaddr_storage>> ListenAddresses(absl::string_view host, int port) {
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("HTTP port ", port, ": not in [0, 65535]"));
  }
  const std::string name(absl::StripSuffix(absl::StripPrefix(host, "["), "]"));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int error = getaddrinfo(name.c_str(), absl::StrCat(port).c_str(), &hints, &found); error != 0) {
    return absl::InvalidArgumentError(absl::StrCat("HTTP address \"", host, "\": ", gai_strerror(error)));
  }
  std::vector<sockaddr_storage> addresses;
  for (const addrinfo* info = found; info != nullptr; info = info->ai_next) {
    if (info->ai_family != AF_INET && info->ai_family != AF_INET6) continue;
    sockaddr_storage address{};
    std::memcpy(&address, info->ai_addr, info->ai_addrlen);
    addresses.push_back(address);
  }
  freeaddrinfo(found);
  return addresses;
}

// Whether the client presented a certificate that chains to the daemon's trusted roots (MHD_OPTION_HTTPS_MEM_TRUST).
// GnuTLS caches nothing between calls, so this verifies the chain again for each request: a few signature
// checks, cheap beside a TLS connection, and it keeps no per-connection state to get wrong.
bool HasTrustedClientCertificate(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (info == nullptr || info->tls_session == nullptr) return false;
  unsigned status = 0;
  const int rc = gnutls_certificate_verify_peers2(static_cast<gnutls_session_t>(info->tls_session), &status);
  return rc == GNUTLS_E_SUCCESS && status == 0;  // no certificate is GNUTLS_E_NO_CERTIFICATE_FOUND
}

// MHD's diagnostics (a port in use, accept() failing under fd exhaustion) as log lines.
void LogMhdError(void*, const char* format, va_list args) {
  char message[512];
  std::vsnprintf(message, sizeof(message), format, args);
  Log(LogLevel::kWarning, "http_error", {{"message", std::string(absl::StripTrailingAsciiWhitespace(message))}});
}

class MhdHttpServer final : public HttpServer {
 public:
  MhdHttpServer(const ServerMetrics& metrics, HealthProbes probes, const HttpLimits& limits, HttpOptions options)
      : metrics_(metrics), probes_(std::move(probes)), limits_(limits), options_(std::move(options)),
        routes_(Routes()) {}

  // Listens on the first of `host`'s addresses that can be bound.
  absl::Status Start(absl::string_view host, int port) {
    ASSIGN_OR_RETURN(const std::vector<sockaddr_storage> addresses, ListenAddresses(host, port));
    for (const sockaddr_storage& address : addresses) {
      daemon_.reset(StartDaemon(address, port));
      if (daemon_ != nullptr) break;
    }
    if (daemon_ == nullptr) {
      return absl::UnavailableError(absl::StrCat("HTTP server cannot listen on ", host, " port ", port));
    }
    port_ = MHD_get_daemon_info(daemon_.get(), MHD_DAEMON_INFO_BIND_PORT)->port;
    return absl::OkStatus();
  }

  int port() const override { return port_; }

 private:
  // The endpoints options_ selects; the others answer 404 as any unknown path does.
  std::vector<Route> Routes() {
    std::vector<Route> routes;
    if (options_.serve_metrics) {
      routes.push_back({"GET", "/metrics", ApiGroup::kStatistics, [this](const Request&) {
                          Reply reply;
                          reply.content_type = kPrometheusContentType;
                          reply.body = metrics_.Expose();
                          return reply;
                        }});
    }
    if (options_.serve_health) {
      routes.push_back({"GET", "/v2/health/live", ApiGroup::kHealth,
                        [this](const Request&) { return ProbeReply(probes_.live && probes_.live()); }});
      routes.push_back({"GET", "/v2/health/ready", ApiGroup::kHealth,
                        [this](const Request&) { return ProbeReply(probes_.ready && probes_.ready()); }});
      routes.push_back({"GET", "/v2/models/{model}/ready", ApiGroup::kHealth,
                        [this](const Request& r) { return ModelReady(r.params[0], ""); }});
      routes.push_back({"GET", "/v2/models/{model}/versions/{version}/ready", ApiGroup::kHealth,
                        [this](const Request& r) { return ModelReady(r.params[0], r.params[1]); }});
    }
    return routes;
  }

  Reply ModelReady(const std::string& model, const std::string& version) const {
    return ProbeReply(probes_.model_ready && probes_.model_ready(model, version));
  }

  // MHD's TLS options (the PEMs are NUL-terminated strings that options_ keeps alive), ending with MHD_OPTION_END.
  std::vector<MHD_OptionItem> TlsOptions() const {
    std::vector<MHD_OptionItem> items;
    if (options_.tls) {
      const auto pem = [](const std::string& text) { return static_cast<void*>(const_cast<char*>(text.c_str())); };
      items.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, pem(options_.tls->cert_pem)});
      items.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, pem(options_.tls->key_pem)});
      // With trusted roots MHD asks clients for a certificate; OnHeaders refuses requests without a good one.
      if (options_.tls->mutual) items.push_back({MHD_OPTION_HTTPS_MEM_TRUST, 0, pem(options_.tls->root_pem)});
    }
    items.push_back({MHD_OPTION_END, 0, nullptr});
    return items;
  }

  MHD_Daemon* StartDaemon(const sockaddr_storage& address, int port) {
    const unsigned family_flag = address.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0;
    const unsigned tls_flag = options_.tls ? MHD_USE_TLS : 0;
    std::vector<MHD_OptionItem> tls_options = TlsOptions();
    return MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG | family_flag | tls_flag,
        static_cast<uint16_t>(port),  // only named in MHD's messages: the address carries it too
        /*apc=*/nullptr, nullptr, &MhdHttpServer::OnRequest, this,
        // First, or MHD prints what comes before it to stderr itself.
        MHD_OPTION_EXTERNAL_LOGGER, &LogMhdError, nullptr,
        MHD_OPTION_SOCK_ADDR, reinterpret_cast<const sockaddr*>(&address),
        MHD_OPTION_THREAD_POOL_SIZE, limits_.threads,
        MHD_OPTION_CONNECTION_TIMEOUT, limits_.idle_timeout_secs,
        MHD_OPTION_CONNECTION_LIMIT, limits_.max_connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, limits_.max_connections_per_ip,
        MHD_OPTION_NOTIFY_COMPLETED, &MhdHttpServer::OnCompleted, nullptr,
        MHD_OPTION_ARRAY, tls_options.data(),
        MHD_OPTION_END);
  }

  // What MHD keeps for us (in *request_state) between the calls for one request.
  struct Pending {
    const Route* route;
    Request request;
  };

  // MHD calls this once the headers are in (*request_state is null), once per piece of body, and once more
  // when the body is complete (*body_bytes == 0). Runs on a pool thread; handlers may run concurrently.
  static MHD_Result OnRequest(void* self, MHD_Connection* connection, const char* path, const char* method,
                              const char* /*version*/, const char* body, size_t* body_bytes,
                              void** request_state) {
    auto& server = *static_cast<MhdHttpServer*>(self);
    auto* pending = static_cast<Pending*>(*request_state);
    if (pending == nullptr) return server.OnHeaders(connection, path, method, request_state);
    if (*body_bytes == 0) return Send(connection, pending->route->handler(pending->request));
    // A chunked body has no announced length, so the cap is enforced here; the connection is dropped.
    if (pending->request.body.size() + *body_bytes > server.limits_.max_body_bytes) return MHD_NO;
    pending->request.body.append(body, *body_bytes);
    *body_bytes = 0;
    return MHD_YES;
  }

  // Errors are answered right away, so MHD never reads the body of a request that cannot be served. Under
  // mutual TLS a client without a trusted certificate learns nothing, not even which paths exist.
  MHD_Result OnHeaders(MHD_Connection* connection, const char* path, const char* method, void** request_state) {
    if (options_.tls && options_.tls->mutual && !HasTrustedClientCertificate(connection)) {
      return Send(connection, JsonError(MHD_HTTP_FORBIDDEN, "a client certificate signed by the server's root "
                                                            "certificate is required"));
    }
    Dispatch dispatch = Resolve(routes_, method, path);
    if (dispatch.route == nullptr) return Send(connection, NoRoute(dispatch));
    const absl::Status allowed = options_.access.Check(
        dispatch.route->group, [connection](absl::string_view name) -> std::optional<absl::string_view> {
          const char* value = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, std::string(name).c_str());
          if (value == nullptr) return std::nullopt;
          return value;
        });
    if (!allowed.ok()) return Send(connection, JsonError(MHD_HTTP_FORBIDDEN, allowed.message()));
    if (DeclaredBodyBytes(connection) > limits_.max_body_bytes) {
      return Send(connection, JsonError(MHD_HTTP_CONTENT_TOO_LARGE, "request body too large"));
    }
    *request_state = new Pending{dispatch.route, Request{std::move(dispatch.params), ""}};
    return MHD_YES;
  }

  static void OnCompleted(void*, MHD_Connection*, void** request_state, MHD_RequestTerminationCode) {
    delete static_cast<Pending*>(*request_state);
    *request_state = nullptr;
  }

  const ServerMetrics& metrics_;
  const HealthProbes probes_;
  const HttpLimits limits_;
  const HttpOptions options_;
  const std::vector<Route> routes_;
  int port_ = 0;
  // Last, so it stops (finishing in-flight requests) before the routes and probes it calls are destroyed.
  std::unique_ptr<MHD_Daemon, decltype(&MHD_stop_daemon)> daemon_{nullptr, &MHD_stop_daemon};
};

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> StartHttpServer(const std::string& address, int port,
                                                            const ServerMetrics& metrics, HealthProbes probes,
                                                            const HttpLimits& limits, HttpOptions options) {
  auto server = std::make_unique<MhdHttpServer>(metrics, std::move(probes), limits, std::move(options));
  RETURN_IF_ERROR(server->Start(address, port));
  return server;
}

}  // namespace onnxserve::server

// The HTTP side of the server: GET /metrics, the KServe v2 health endpoints and, with HttpOptions::rest, the
// KServe v2 REST protocol (rest_api.h), served by GNU libmicrohttpd.
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
// - each route belongs to an API group, which --http-restricted-api may restrict (403 without its header);
// - a route that answers later (inference, model loads) suspends its connection, so no MHD thread waits on
//   a batch; the answer resumes it (see SuspendedRequests for the lifetimes).
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <unordered_map>
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
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "runtime/core/status_macros.h"
#include "server/observability/log.h"
#include "server/observability/metrics.h"
#include "server/observability/trace_context.h"
#include "server/protocol/http.h"
#include "server/protocol/rest_api.h"

namespace onnxserve::server {
namespace {

constexpr char kPrometheusContentType[] = "text/plain; version=0.0.4; charset=utf-8";
constexpr char kJsonContentType[] = "application/json";
// Triton's binary tensor data extension: the length of the JSON part of a body that binary data follows.
constexpr char kInferenceHeaderLength[] = "Inference-Header-Content-Length";

using Reply = HttpReply;
using Done = std::function<void(Reply)>;

// A request as a route's handler sees it.
struct Request {
  std::vector<std::string> params;  // the path segments the route's "{name}" segments matched, in order
  std::string body;                 // at most the route's body limit
  std::optional<std::string> inference_header_length;  // the Inference-Header-Content-Length header
  std::optional<TraceContext> trace;                   // the traceparent header, when valid
};

// One endpoint. `pattern` is a path whose segments are literal or "{name}"; a "{name}" segment matches any
// non-empty segment. The path is the URL-decoded path without the query string. A route has `handler`, which
// answers at once, or `later`, which answers through `done` from any thread (the request is valid only until
// `later` returns: it copies what it keeps); `abandoned` turns true when the server stops before the answer
// came, or the client closed its connection, so that work for it may stop.
struct Route {
  absl::string_view method;
  absl::string_view pattern;
  ApiGroup group;  // what --http-restricted-api names it by
  std::function<Reply(const Request&)> handler;
  std::function<void(const Request&, std::function<bool()> abandoned, Done done)> later = nullptr;
  bool large_body = false;  // takes HttpLimits::max_infer_body_bytes instead of max_body_bytes
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

// MHD's URL decoding, except that "%00" stays as written: decoded, its NUL ended the C string MHD hands on, so
// "/v2/models/m%00/infer" was routed as "/v2/models/m". Left encoded, it names no model and no endpoint.
size_t UnescapeKeepingNul(void* /*cls*/, MHD_Connection* /*connection*/, char* text) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  char* out = text;
  for (const char* in = text; *in != '\0'; ++out) {
    const int high = in[0] == '%' ? hex(in[1]) : -1;
    const int low = high >= 0 ? hex(in[2]) : -1;
    if (low < 0 || (high | low) == 0) {
      *out = *in++;
      continue;
    }
    *out = static_cast<char>(high * 16 + low);
    in += 3;
  }
  *out = '\0';
  return static_cast<size_t>(out - text);
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

// The requests whose connections are suspended until their answer comes from another thread. Three parties
// hold a request: MHD (the connection, until the request completes), the work that answers it (a batch
// worker, the load thread: it may finish after the client left, or after this server is gone) and this list.
// So the list is shared (the work holds it with its request), an answer is stored and its connection resumed
// under mu_, only while the request is listed, and Close() answers every listed request with 503, resumes its
// connection and refuses new ones before MHD stops: MHD must not stop with suspended connections, and a late
// answer then finds its request unlisted and touches nothing.
class SuspendedRequests {
 public:
  static constexpr absl::Duration kClientLookInterval = absl::Milliseconds(1);

  struct Entry {
    MHD_Connection* connection;
    int fd = -1;                         // the connection's socket, looked at only while it is listed
    std::optional<Reply> reply;          // set once, under mu_
    std::atomic<bool> abandoned{false};  // Close() answered it, or its client left: the work for it may stop
    std::atomic<int64_t> last_look_ns{0};  // when ClientLeft last looked at the socket
  };

  // Whether the work for `entry` may stop: Close() answered it, or its client closed the connection. MHD does
  // not watch a suspended connection ("While a connection is suspended, MHD will not detect disconnects by the
  // client", its manual says), so this peeks at the socket: end of stream is the client's close. A client that
  // only half-closes, or whose next pipelined request or TLS alert is already in the socket, is not seen to
  // leave. Polled from batch workers between plan steps: it looks at the socket at most once per
  // kClientLookInterval and remembers a close.
  bool Abandoned(Entry& entry) {
    if (entry.abandoned.load()) return true;
    const int64_t now = absl::GetCurrentTimeNanos();
    int64_t last = entry.last_look_ns.load();
    if (now - last < absl::ToInt64Nanoseconds(kClientLookInterval) ||
        !entry.last_look_ns.compare_exchange_strong(last, now)) {
      return false;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (entries_.count(&entry) == 0) return entry.abandoned.load();  // answered: its socket is MHD's again
    char byte;
    const ssize_t got = recv(entry.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) entry.abandoned = true;
    return entry.abandoned.load();
  }

  // Lists `entry` and suspends its connection; false once Close() has begun (the caller answers at once).
  bool Suspend(const std::shared_ptr<Entry>& entry) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return false;
    const MHD_ConnectionInfo* info = MHD_get_connection_info(entry->connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    entry->fd = info != nullptr ? info->connect_fd : -1;
    entries_.emplace(entry.get(), entry);
    MHD_suspend_connection(entry->connection);
    return true;
  }

  // Stores the answer of `entry` and resumes its connection, unless it was answered already. Any thread.
  void Answer(Entry& entry, Reply reply) {
    std::lock_guard<std::mutex> lock(mu_);
    if (entries_.erase(&entry) == 0) return;
    entry.reply = std::move(reply);
    MHD_resume_connection(entry.connection);
    if (entries_.empty()) drained_.notify_all();
  }

  // The answer stored for the resumed connection's handler; nullopt when there was none.
  std::optional<Reply> TakeAnswer(Entry& entry) {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(entry.reply, std::nullopt);
  }

  // Refuses new requests, waits until `deadline` for the listed ones to be answered, then answers the rest
  // with 503 and marks them abandoned.
  void Close(absl::Time deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    closing_ = true;
    if (deadline > absl::Now()) {
      drained_.wait_until(lock, absl::ToChronoTime(deadline), [this] { return entries_.empty(); });
    }
    for (auto& [raw, entry] : entries_) {
      entry->abandoned = true;
      entry->reply = JsonError(MHD_HTTP_SERVICE_UNAVAILABLE, "server shutting down");
      MHD_resume_connection(entry->connection);
    }
    entries_.clear();
  }

 private:
  std::mutex mu_;
  std::condition_variable drained_;
  bool closing_ = false;
  std::unordered_map<Entry*, std::shared_ptr<Entry>> entries_;
};

class MhdHttpServer final : public HttpServer {
 public:
  MhdHttpServer(const ServerMetrics& metrics, HealthProbes probes, const HttpLimits& limits, HttpOptions options)
      : metrics_(metrics), probes_(std::move(probes)), limits_(limits), options_(std::move(options)),
        routes_(Routes()) {}

  // Answers the suspended requests before MHD stops (which finishes in-flight handlers).
  ~MhdHttpServer() override {
    suspended_->Close(absl::InfinitePast());
    daemon_.reset();
  }

  void Drain(absl::Time deadline) override { suspended_->Close(deadline); }

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
    if (options_.rest != nullptr) AddRestRoutes(*options_.rest, routes);
    return routes;
  }

  // The KServe v2 REST protocol. "/v2/models/stats" comes before "/v2/models/{model}", as in Triton (a model
  // named "stats" has no metadata endpoint).
  static void AddRestRoutes(RestApi& rest, std::vector<Route>& routes) {
    routes.push_back({"GET", "/v2", ApiGroup::kMetadata, [&rest](const Request&) { return rest.ServerMetadata(); }});
    routes.push_back({"GET", "/v2/models/stats", ApiGroup::kStatistics,
                      [&rest](const Request&) { return rest.ModelStatistics("", ""); }});
    // A model's endpoints, for its newest ready version and for a version the URL names.
    struct ModelPaths {
      absl::string_view metadata, config, stats, infer;
    };
    static constexpr ModelPaths kModelPaths[] = {
        {"/v2/models/{model}", "/v2/models/{model}/config", "/v2/models/{model}/stats", "/v2/models/{model}/infer"},
        {"/v2/models/{model}/versions/{version}", "/v2/models/{model}/versions/{version}/config",
         "/v2/models/{model}/versions/{version}/stats", "/v2/models/{model}/versions/{version}/infer"},
    };
    const auto version = [](const Request& r) { return r.params.size() > 1 ? r.params[1] : std::string(); };
    for (const ModelPaths& paths : kModelPaths) {
      routes.push_back({"GET", paths.metadata, ApiGroup::kMetadata, [&rest, version](const Request& r) {
                          return rest.ModelMetadata(r.params[0], version(r));
                        }});
      routes.push_back({"GET", paths.config, ApiGroup::kModelConfig, [&rest, version](const Request& r) {
                          return rest.ModelConfig(r.params[0], version(r));
                        }});
      routes.push_back({"GET", paths.stats, ApiGroup::kStatistics, [&rest, version](const Request& r) {
                          return rest.ModelStatistics(r.params[0], version(r));
                        }});
      Route infer{"POST", paths.infer, ApiGroup::kInference, nullptr};
      infer.later = [&rest, version](const Request& r, std::function<bool()> abandoned, Done done) {
        rest.Infer(r.params[0], version(r), r.body, r.inference_header_length, r.trace, std::move(abandoned),
                   std::move(done));
      };
      infer.large_body = true;
      routes.push_back(std::move(infer));
    }
    routes.push_back({"POST", "/v2/repository/index", ApiGroup::kModelRepository,
                      [&rest](const Request& r) { return rest.RepositoryIndex(r.body); }});
    Route load{"POST", "/v2/repository/models/{model}/load", ApiGroup::kModelRepository, nullptr};
    load.later = [&rest](const Request& r, std::function<bool()>, Done done) {
      rest.LoadModel(r.params[0], r.body, std::move(done));
    };
    routes.push_back(std::move(load));
    routes.push_back({"POST", "/v2/repository/models/{model}/unload", ApiGroup::kModelRepository,
                      [&rest](const Request& r) { return rest.UnloadModel(r.params[0], r.body); }});
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
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME |
            family_flag | tls_flag,
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
        MHD_OPTION_UNESCAPE_CALLBACK, &UnescapeKeepingNul, nullptr,
        MHD_OPTION_ARRAY, tls_options.data(),
        MHD_OPTION_END);
  }

  // What MHD keeps for us (in *request_state) between the calls for one request.
  struct Pending {
    const Route* route;
    Request request;
    std::shared_ptr<SuspendedRequests::Entry> suspended;  // set once a `later` route has started
  };

  size_t BodyLimit(const Route& route) const {
    return route.large_body ? limits_.max_infer_body_bytes : limits_.max_body_bytes;
  }

  // Runs a `later` route: suspends the connection until its answer comes (or the server stops).
  MHD_Result StartLater(MHD_Connection* connection, Pending& pending) {
    pending.suspended = std::make_shared<SuspendedRequests::Entry>();
    pending.suspended->connection = connection;
    if (!suspended_->Suspend(pending.suspended)) {
      return Send(connection, JsonError(MHD_HTTP_SERVICE_UNAVAILABLE, "server shutting down"));
    }
    // The answer may come before this returns, on this thread or another: the connection is suspended, so
    // MHD resumes it and calls OnRequest again once this callback has returned.
    auto entry = pending.suspended;
    Done done = [requests = suspended_, entry](Reply reply) { requests->Answer(*entry, std::move(reply)); };
    try {
      pending.route->later(pending.request, [requests = suspended_, entry] { return requests->Abandoned(*entry); },
                           done);
    } catch (const std::bad_alloc&) {
      done(ErrorReply(absl::ResourceExhaustedError("out of memory while handling the request")));
    } catch (const std::exception&) {
      done(JsonError(MHD_HTTP_INTERNAL_SERVER_ERROR, "the request failed"));
    }
    // The handler has taken what it needs (an inference holds its decoded request): the body, up to
    // --max-request-bytes, need not stay with the connection while it waits.
    std::string().swap(pending.request.body);
    return MHD_YES;
  }

  // The resumed connection of a `later` route: sends the answer Answer() or Close() stored.
  MHD_Result SendLater(MHD_Connection* connection, Pending& pending) {
    std::optional<Reply> reply = suspended_->TakeAnswer(*pending.suspended);
    if (!reply) return MHD_NO;  // resumed without an answer: cannot happen; close rather than hang
    return Send(connection, *reply);
  }

  // A body that is complete: the route's answer, now or later.
  MHD_Result OnBody(MHD_Connection* connection, Pending& pending) {
    if (pending.suspended) return SendLater(connection, pending);
    if (pending.route->later) return StartLater(connection, pending);
    try {
      return Send(connection, pending.route->handler(pending.request));
    } catch (const std::bad_alloc&) {
      return Send(connection, ErrorReply(absl::ResourceExhaustedError("out of memory while handling the request")));
    } catch (const std::exception&) {
      return Send(connection, JsonError(MHD_HTTP_INTERNAL_SERVER_ERROR, "the request failed"));
    }
  }

  // MHD calls this once the headers are in (*request_state is null), once per piece of body, and once more
  // when the body is complete (*body_bytes == 0). Runs on a pool thread; handlers may run concurrently.
  static MHD_Result OnRequest(void* self, MHD_Connection* connection, const char* path, const char* method,
                              const char* /*version*/, const char* body, size_t* body_bytes,
                              void** request_state) {
    auto& server = *static_cast<MhdHttpServer*>(self);
    auto* pending = static_cast<Pending*>(*request_state);
    if (pending == nullptr) return server.OnHeaders(connection, path, method, request_state);
    if (*body_bytes == 0) return server.OnBody(connection, *pending);
    // A chunked body has no announced length, so the cap is enforced here; the connection is dropped.
    if (pending->request.body.size() + *body_bytes > server.BodyLimit(*pending->route)) return MHD_NO;
    if (pending->request.body.empty()) {
      // The announced length (within the route's limit: OnHeaders checked) in one allocation, where growing
      // through every size on the way copied a 100 KB body twice more. Pages not yet written stay untouched.
      pending->request.body.reserve(DeclaredBodyBytes(connection));
    }
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
    if (DeclaredBodyBytes(connection) > BodyLimit(*dispatch.route)) {
      return Send(connection, JsonError(MHD_HTTP_CONTENT_TOO_LARGE, "request body too large"));
    }
    Request request{std::move(dispatch.params), "", std::nullopt, std::nullopt};
    if (const char* length = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, kInferenceHeaderLength)) {
      request.inference_header_length = length;
    }
    if (const char* traceparent = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, kTraceparentHeader)) {
      request.trace = ParseTraceparent(traceparent);
    }
    *request_state = new Pending{dispatch.route, std::move(request), nullptr};
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
  const std::shared_ptr<SuspendedRequests> suspended_ = std::make_shared<SuspendedRequests>();
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

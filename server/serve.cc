// onnxserve serve: the KServe v2 gRPC server over a model repository, plus the HTTP metrics/health endpoint.
//
// Lifecycle: listen (not ready) -> load the repository -> ready -> on SIGTERM/SIGINT: not ready, health
// NOT_SERVING, stop accepting, finish queued and in-flight requests within --shutdown-grace-secs, exit 0. A
// signal during startup is honoured once the loads end; whatever still runs a second past the grace period
// (a load, a kernel) ends with the process, exit 1.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/impl/server_builder_option.h>
#include <grpcpp/impl/server_builder_plugin.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cli/limit_options.h"
#include "server/commands.h"
#include "server/machine_memory.h"
#include "server/observability/log.h"
#include "server/observability/metrics.h"
#include "server/protocol/grpc_access.h"
#include "server/protocol/health_service.h"
#include "server/protocol/http.h"
#include "server/protocol/rest_api.h"
#include "server/protocol/security_config.h"
#include "server/protocol/service.h"
#include "server/protocol/tls.h"
#include "server/serving/repository.h"
#include "server/serving/response_cache.h"

namespace onnxserve::server {
namespace {

constexpr char kUsage[] = R"(usage: onnxserve serve --model-repository DIR [options]
Serves the models of DIR over KServe v2 gRPC and REST, with Prometheus metrics and health endpoints.
)";

// The options that are not security options (security_config.h).
struct ServeOptions {
  std::string model_repository;
  std::string address;
  int grpc_port = 0;
  int http_port = 0;
  std::string model_control_mode;
  int repository_poll_secs = 0;
  int shutdown_grace_secs = 0;
  int64_t max_request_bytes = 0;
  int64_t max_held_request_bytes = 0;
  bool exit_on_error = false;
  int threads = 0;
  int64_t model_memory_budget_bytes = 0;
  int64_t response_cache_byte_size = 0;
  std::string log_level;
  bool log_requests = false;
};

cli::OptionTable ServeOptionTable() {
  using cli::ValueKind;
  cli::OptionTable table = {
      {.name = "model-repository", .kind = ValueKind::kFile, .value_name = "DIR",
       .help = "ROOT/<model>/<version>/model.onnx and optional ROOT/<model>/config.pbtxt", .required = true},
      {.name = "address", .value_name = "HOST",
       .help = "interface the gRPC and HTTP servers listen on (IPv6 in brackets: [::1])", .default_value = "0.0.0.0"},
      {.name = "grpc-port", .kind = ValueKind::kInt, .value_name = "N",
       .help = "gRPC (KServe v2) port; 0 picks a free one", .default_value = "8001", .min = 0, .max = 65535},
      {.name = "http-port", .kind = ValueKind::kInt, .value_name = "N",
       .help = "HTTP port (KServe v2 REST, health); 0 picks a free one, -1 disables", .default_value = "8000",
       .min = -1, .max = 65535},
      {.name = "model-control-mode", .value_name = "none|poll|explicit",
       .help = "none loads everything once; poll also reloads changes every --repository-poll-secs; explicit "
               "loads only on RepositoryModelLoad",
       .default_value = "none"},
      {.name = "repository-poll-secs", .kind = ValueKind::kInt, .value_name = "N",
       .help = "rescan period in poll mode", .default_value = "15", .min = 1, .max = 86400},
      {.name = "shutdown-grace-secs", .kind = ValueKind::kInt, .value_name = "N",
       .help = "on SIGTERM/SIGINT, time given to queued and in-flight requests", .default_value = "30", .min = 0,
       .max = 86400},
      {.name = "max-request-bytes", .kind = ValueKind::kInt, .value_name = "N",
       .help = "largest accepted request message; bigger ones get RESOURCE_EXHAUSTED",
       .default_value = absl::StrCat(64 << 20), .min = 1, .max = INT32_MAX},
      {.name = "max-held-request-bytes", .kind = ValueKind::kInt, .value_name = "N",
       .help = "most bytes of inference requests (gRPC and REST) held at once, queued or running; a request that "
               "would pass it gets RESOURCE_EXHAUSTED (HTTP 429), a request alone is always taken; 0: no bound",
       .default_value = absl::StrCat(int64_t{2} << 30), .min = 0, .max = INT64_MAX},
      {.name = "exit-on-error", .kind = ValueKind::kBool,
       .help = "exit when a model fails to load at startup; by default the server starts with the models that "
               "loaded and lists the others as UNAVAILABLE"},
      {.name = "threads", .kind = ValueKind::kInt, .value_name = "N", .help = "intra-op threads of each model instance",
       .default_value = "1", .min = 1, .max = 256},
      {.name = "model-memory-budget-bytes", .kind = ValueKind::kInt, .value_name = "N",
       .help = "most bytes of tensors one execution of a model may hold at once, for models whose config.pbtxt "
               "sets no memory_budget_bytes; past it the request gets RESOURCE_EXHAUSTED; 0: no budget; -1: half "
               "the memory the process may use (the machine's, or its cgroup's limit)",
       .default_value = "-1", .min = -1, .max = INT64_MAX},
      {.name = "response-cache-byte-size", .kind = ValueKind::kInt, .value_name = "N",
       .help = "bytes of answers the response cache keeps for models whose config says "
               "response_cache { enable: true }; 0: no cache",
       .default_value = "0", .min = 0, .max = INT64_MAX},
      {.name = "log-level", .value_name = "debug|info|warning|error", .help = "least severity logged",
       .default_value = "info"},
      {.name = "log-requests", .kind = ValueKind::kBool,
       .help = "one info line per inference request (event=request: model, version, code, stage times, batch "
               "rows, trace_id and span_id of a valid traceparent)"},
  };
  return cli::Join(cli::Join(std::move(table), cli::TensorLimitOptions()), SecurityOptions());
}

ServeOptions ServeOptionsFromArgs(const cli::Args& args) {
  ServeOptions options;
  options.model_repository = args.Get("model-repository");
  options.address = args.Get("address");
  options.grpc_port = static_cast<int>(args.Int("grpc-port"));
  options.http_port = static_cast<int>(args.Int("http-port"));
  options.model_control_mode = args.Get("model-control-mode");
  options.repository_poll_secs = static_cast<int>(args.Int("repository-poll-secs"));
  options.shutdown_grace_secs = static_cast<int>(args.Int("shutdown-grace-secs"));
  options.max_request_bytes = args.Int("max-request-bytes");
  options.max_held_request_bytes = args.Int("max-held-request-bytes");
  options.exit_on_error = args.Bool("exit-on-error");
  options.threads = static_cast<int>(args.Int("threads"));
  options.model_memory_budget_bytes = args.Int("model-memory-budget-bytes");
  options.response_cache_byte_size = args.Int("response-cache-byte-size");
  options.log_level = args.Get("log-level");
  options.log_requests = args.Bool("log-requests");
  return options;
}

// Parses the command line into `options` and `security`, and applies what is process-wide: the log level and
// the per-tensor limits (before any model loads: the limits also bound what loading allocates).
absl::Status ParseFlags(const cli::Args& args, ServeOptions& options, SecurityConfig& security) {
  if (!args.positional.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", args.positional[0], "\""));
  }
  auto parsed = SecurityConfigFromArgs(args);
  if (!parsed.ok()) return parsed.status();
  security = *std::move(parsed);
  options = ServeOptionsFromArgs(args);
  auto level = ParseLogLevel(options.log_level);
  if (!level.ok()) return level.status();
  SetLogLevel(*level);
  return cli::ApplyTensorLimits(args);
}

// The write end of the pipe that carries shutdown signals to ShutdownSignal's thread.
int signal_pipe_writer = -1;

extern "C" void OnShutdownSignal(int signal) {
  const int saved_errno = errno;
  const unsigned char number = static_cast<unsigned char>(signal);
  [[maybe_unused]] const ssize_t written = write(signal_pipe_writer, &number, 1);
  errno = saved_errno;
}

// SIGTERM and SIGINT go through a handler that writes their number to a pipe: the kernel hands a process's
// signal to any thread that does not block it, and libraries start threads of their own before main (OpenBLAS's
// workers), so blocking the signals in main's threads and waiting with sigwait does not see them all.
// Returns the pipe's read end.
int RouteShutdownSignalsToPipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  signal_pipe_writer = fds[1];
  struct sigaction action {};
  action.sa_handler = OnShutdownSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  return fds[0];
}

int WaitForSignal(int pipe_reader) {
  unsigned char number = 0;
  while (read(pipe_reader, &number, 1) != 1) {
  }
  return number;
}

// The shutdown signal, taken on a thread of its own from before the repository loads, so that a signal during
// startup counts too. From the signal on, the process has the grace period (and a second to unwind) to exit:
// a model load or a kernel that cannot be interrupted must not keep a pod in Terminating, so past that the
// process ends itself whatever still runs.
class ShutdownSignal {
 public:
  ShutdownSignal(int pipe_reader, absl::Duration grace) {
    std::thread([this, pipe_reader, grace] {
      const int signal = WaitForSignal(pipe_reader);
      {
        std::lock_guard<std::mutex> lock(mu_);
        signal_ = signal;
      }
      came_.notify_all();
      absl::SleepFor(grace + absl::Seconds(1));
      Log(LogLevel::kError, "shutdown_grace_exceeded", {{"grace_secs", absl::StrCat(grace / absl::Seconds(1))}});
      std::_Exit(1);
    }).detach();  // never joined: it either ends the process or sleeps through the normal exit
  }

  // Blocks until a signal came; returns its number. On a condition variable rather than absl::Mutex::Await:
  // ThreadSanitizer runs a signal's handler only once the thread it interrupted enters a call it intercepts,
  // and the main thread, which the kernel picks, waited in abseil's futex for good.
  int Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    came_.wait(lock, [this] { return signal_ != 0; });
    return signal_;
  }

 private:
  std::mutex mu_;
  std::condition_variable came_;
  int signal_ = 0;  // guarded by mu_
};

// Everything a running server owns, in construction order (destroyed in reverse).
struct Server {
  ServeOptions options;
  SecurityConfig security;
  std::unique_ptr<ServerMetrics> metrics;
  std::unique_ptr<ResponseCache> cache;  // null without --response-cache-byte-size; outlives every request
  std::unique_ptr<HealthService> health;  // outlives the gRPC server it is registered with
  std::unique_ptr<ModelRepository> repository;
  std::unique_ptr<GrpcAccess> grpc_access;
  std::unique_ptr<InferenceService> service;
  std::unique_ptr<RestApi> rest;
  std::unique_ptr<grpc::Server> grpc;
  std::unique_ptr<HttpServer> http;
  std::unique_ptr<HttpServer> metrics_http;  // only with --metrics-port
};

// Takes gRPC's reflection service off a builder. Linking the reflection library registers its plugin with every
// ServerBuilder from a static initializer, so leaving InitProtoReflectionServerBuilderPlugin() uncalled is not
// enough; a builder option may edit the plugin list.
class WithoutReflection final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    std::erase_if(*plugins, [](const std::unique_ptr<grpc::ServerBuilderPlugin>& plugin) {
      return dynamic_cast<grpc::reflection::ProtoServerReflectionPlugin*>(plugin.get()) != nullptr;
    });
  }
};

absl::Status StartGrpc(Server& s, int& port) {
  auto tls = LoadServerTls("--grpc", s.security.grpc_tls);
  if (!tls.ok()) return tls.status();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  if (!s.security.grpc_reflection) builder.SetOption(std::make_unique<WithoutReflection>());
  const std::string address = absl::StrCat(s.options.address, ":", s.options.grpc_port);
  builder.AddListeningPort(address, GrpcServerCredentials(*tls), &port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(s.options.max_request_bytes));
  builder.RegisterService(s.service.get());
  builder.RegisterService(s.health.get());
  if (s.grpc_access->restricts_anything()) {
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
    interceptors.push_back(s.grpc_access->InterceptorFactory());
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
  }
  s.grpc = builder.BuildAndStart();
  if (!s.grpc || port == 0) return absl::UnavailableError(absl::StrCat("cannot listen on ", address));
  s.health->SetServingStatus("", false);
  return absl::OkStatus();
}

// The HTTP port serves the REST protocol and the health endpoints; /metrics has a listener of its own
// (--metrics-port, 8002 as in Triton) unless --metrics-port -1 keeps it on the HTTP port. Both take
// --http-use-ssl* and --http-restricted-api.
absl::Status StartHttp(Server& s, int& port, int& metrics_port) {
  auto tls = LoadServerTls("--http", s.security.http_tls);
  if (!tls.ok()) return tls.status();
  HttpOptions options;
  options.tls = *tls;
  options.access = s.security.http_access;
  const bool own_metrics_port = s.security.metrics_port >= 0;
  if (s.options.http_port >= 0) {
    HealthProbes probes;
    probes.live = [] { return true; };
    probes.ready = [&s] { return s.service->ready(); };
    probes.model_ready = [&s](const std::string& model, const std::string& version) {
      return s.service->ready() && s.repository->Find(model, version).ok();
    };
    HttpOptions http_options = options;
    http_options.serve_metrics = !own_metrics_port;
    http_options.rest = s.rest.get();
    HttpLimits limits;
    limits.max_infer_body_bytes = s.options.max_request_bytes;
    auto http = StartHttpServer(s.options.address, s.options.http_port, *s.metrics,
                                std::move(probes), limits, std::move(http_options));
    if (!http.ok()) return http.status();
    s.http = *std::move(http);
    port = s.http->port();
  }
  if (own_metrics_port) {
    const std::string& address =
        s.security.metrics_address.empty() ? s.options.address : s.security.metrics_address;
    options.serve_health = false;
    auto http = StartHttpServer(address, s.security.metrics_port, *s.metrics, HealthProbes(), HttpLimits(),
                                std::move(options));
    if (!http.ok()) return http.status();
    s.metrics_http = *std::move(http);
    metrics_port = s.metrics_http->port();
  }
  return absl::OkStatus();
}

// The models that failed to load, comma-separated ("" when none): the startup report, beside each failure's
// own model_load_failed line.
std::string UnavailableModels(const ModelRepository& repository) {
  std::set<std::string> names;
  for (const auto& entry : repository.Index(false)) {
    if (entry.state == "UNAVAILABLE") names.insert(entry.name);
  }
  return absl::StrJoin(names, ",");
}

// The run memory budget of models that set none: the flag's, or for -1 half the memory the process may use,
// so that one run of a hostile model fails RESOURCE_EXHAUSTED before the kernel ends the server. No budget
// when that memory is unknown.
int64_t DefaultRunBudget(int64_t flag) {
  if (flag >= 0) return flag;
  const int64_t budget = UsableMemoryBytes().value_or(0) / 2;
  Log(LogLevel::kInfo, "run_memory_budget", {{"bytes", absl::StrCat(budget)}});
  return budget;
}

absl::Status Start(Server& s) {
  auto mode = ParseControlMode(s.options.model_control_mode);
  if (!mode.ok()) return mode.status();
  s.metrics = MakePrometheusMetrics();
  RepositoryOptions options;
  options.root = s.options.model_repository;
  options.mode = *mode;
  options.intra_op_threads = s.options.threads;
  options.memory_budget_bytes = DefaultRunBudget(s.options.model_memory_budget_bytes);
  options.max_request_bytes = s.options.max_request_bytes;
  options.metrics = s.metrics.get();
  if (const int64_t bytes = s.options.response_cache_byte_size; bytes > 0) {
    s.cache = std::make_unique<ResponseCache>(static_cast<size_t>(bytes));
  }
  options.response_cache = s.cache.get();
  s.health = std::make_unique<HealthService>();
  options.on_model_ready = [&s](const std::string& model, bool ready) {
    if (s.health) s.health->SetServingStatus(model, ready);
  };
  s.repository = std::make_unique<ModelRepository>(std::move(options));
  s.grpc_access = std::make_unique<GrpcAccess>(s.security.grpc_access);
  s.service =
      std::make_unique<InferenceService>(*s.repository, s.metrics.get(), s.grpc_access.get(),
                                         s.options.max_held_request_bytes);
  s.service->SetLogRequests(s.options.log_requests);
  s.rest = std::make_unique<RestApi>(*s.service);
  int grpc_port = 0, http_port = -1, metrics_port = -1;
  if (absl::Status status = StartGrpc(s, grpc_port); !status.ok()) return status;
  if (absl::Status status = StartHttp(s, http_port, metrics_port); !status.ok()) return status;
  Log(LogLevel::kInfo, "server_listening",
      {{"grpc_port", absl::StrCat(grpc_port)},
       {"http_port", absl::StrCat(http_port)},
       {"metrics_port", absl::StrCat(metrics_port)},
       {"grpc_tls", s.security.grpc_tls.mutual ? "mutual" : s.security.grpc_tls.enabled ? "on" : "off"},
       {"http_tls", s.security.http_tls.mutual ? "mutual" : s.security.http_tls.enabled ? "on" : "off"}});
  if (absl::Status status = s.repository->Start(s.options.exit_on_error); !status.ok()) {
    return status;
  }
  if (*mode == ControlMode::kPoll) {
    s.repository->StartPolling(absl::Seconds(s.options.repository_poll_secs));
  }
  s.service->SetReady(true);
  s.health->SetServingStatus("", true);
  Log(LogLevel::kInfo, "server_ready", {{"models", absl::StrCat(s.repository->ReadyVersions("").size())},
                                        {"unavailable", UnavailableModels(*s.repository)}});
  return absl::OkStatus();
}

void Shutdown(Server& s, int signal) {
  const absl::Duration grace = absl::Seconds(s.options.shutdown_grace_secs);
  Log(LogLevel::kInfo, "shutdown_started", {{"signal", strsignal(signal)}, {"grace_secs", absl::StrCat(grace / absl::Seconds(1))}});
  s.service->SetReady(false);
  s.health->Shutdown();  // every service NOT_SERVING, and it stays so; every Watch told and ended
  // Stops accepting calls, then waits for the running ones (queued requests included) up to the deadline,
  // after which gRPC cancels what is left and the batcher drops it before compute. REST inferences get the
  // same grace at the same time.
  const absl::Time deadline = absl::Now() + grace;
  std::thread rest_drain([&s, deadline] {
    if (s.http) s.http->Drain(deadline);
  });
  s.grpc->Shutdown(absl::ToChronoTime(deadline));
  rest_drain.join();
  Log(LogLevel::kInfo, "grpc_stopped");
  s.http.reset();  // its handlers end with it: no request is accepted past this point
  s.metrics_http.reset();
  // REST requests answered 503 by the drain may still be computing on batch workers, which answer through the
  // service, the versions and the metrics: those go only once the requests let go of them (they stop at the
  // next check of their run's limits; ShutdownSignal ends a run that never checks).
  s.service->WaitForAcceptedRequests();
  s.repository->UnloadAll();
  Log(LogLevel::kInfo, "shutdown_complete");
}

}  // namespace

int ServeCommand(int argc, char** argv) {
  const int signals = RouteShutdownSignalsToPipe();
  if (signals < 0) {
    Log(LogLevel::kError, "start_failed", {{"error", "no pipe for shutdown signals"}});
    return 1;
  }
  Server s;
  const cli::OptionTable table = ServeOptionTable();
  auto args = cli::ParseArgs(table, argc, argv, 2);
  if (args.ok() && args->help) {
    std::cout << kUsage << cli::OptionsHelp(table);
    return 0;
  }
  absl::Status status = args.ok() ? ParseFlags(*args, s.options, s.security) : args.status();
  if (!status.ok()) {
    Log(LogLevel::kError, "bad_flags", {{"error", std::string(status.message())}});
    return 2;
  }
  // Leaked on purpose: its thread may still be sleeping when this function returns.
  auto* shutdown = new ShutdownSignal(signals, absl::Seconds(s.options.shutdown_grace_secs));
  if (absl::Status status = Start(s); !status.ok()) {
    Log(LogLevel::kError, "start_failed", {{"error", status.ToString()}});
    if (s.grpc) s.grpc->Shutdown(std::chrono::system_clock::now());
    return 1;
  }
  Shutdown(s, shutdown->Wait());
  return 0;
}

}  // namespace onnxserve::server

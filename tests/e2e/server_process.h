// A real `onnxserve serve` child process for end-to-end tests, listening on an ephemeral loopback port.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/channel.h>

namespace onnxserve::e2e {

// Generates a fresh model repository (make_models.py) under the test work dir and returns its path.
std::string MakeRepository(const std::string& name);
// Adds version `version` of the "add" model to `repository`.
void AddVersion(const std::string& repository, int version);
// Adds the models that must fail to load (make_models.py --broken): too_many_instances, huge_initializer,
// bad_offset.
void AddBrokenModels(const std::string& repository);
// Adds "stuck", a model whose warmup never ends (tests/e2e/make_models.py --stuck-warmup).
void AddStuckWarmupModel(const std::string& repository);
// GET http://127.0.0.1:`port``path`: the whole response, headers included ("" when it cannot connect).
std::string HttpGet(int port, const std::string& path);
// POST `body` (JSON) to http://127.0.0.1:`port``path`: the whole response, as HttpGet.
std::string HttpPost(int port, const std::string& path, const std::string& body);

class ServerProcess {
 public:
  // Starts the server on `repository` with `flags` added and waits (at most 30 s) until it logs
  // server_ready. Fails the current test (and returns nullptr) if it does not.
  static std::unique_ptr<ServerProcess> Start(const std::string& repository, std::vector<std::string> flags = {});
  // Starts the server expecting it to exit on its own within `timeout`: returns the exit status (-1 when it
  // became ready or kept running instead) and fills `log`.
  static int RunToExit(const std::string& repository, std::vector<std::string> flags,
                       std::chrono::milliseconds timeout, std::string* log);
  // Starts the server without waiting for anything.
  static std::unique_ptr<ServerProcess> Spawn(const std::string& repository, std::vector<std::string> flags);
  ~ServerProcess();  // SIGKILL when still running

  std::shared_ptr<grpc::Channel> channel() const { return channel_; }
  // Sends SIGTERM and waits up to `timeout` for the exit status (-1 when it did not exit in time).
  int Terminate(std::chrono::milliseconds timeout);
  // Everything the server logged so far.
  std::string Log() const;
  // Whether the log shows `needle` within `timeout`.
  bool WaitForLog(const std::string& needle, std::chrono::milliseconds timeout);
  // The HTTP port it logged (start it with --http-port 0), or -1.
  int http_port() const;

 private:
  ServerProcess() = default;
  // True (and the exit status kept) once the process has exited.
  bool Reaped();

  pid_t pid_ = -1;
  int exit_status_ = -1;
  std::string log_path_;
  std::shared_ptr<grpc::Channel> channel_;
};

}  // namespace onnxserve::e2e

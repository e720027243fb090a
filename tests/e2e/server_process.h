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

class ServerProcess {
 public:
  // Starts the server on `repository` with `flags` added and waits (at most 30 s) until it logs
  // server_ready. Fails the current test (and returns nullptr) if it does not.
  static std::unique_ptr<ServerProcess> Start(const std::string& repository, std::vector<std::string> flags = {});
  ~ServerProcess();  // SIGKILL when still running

  std::shared_ptr<grpc::Channel> channel() const { return channel_; }
  // Sends SIGTERM and waits up to `timeout` for the exit status (-1 when it did not exit in time).
  int Terminate(std::chrono::milliseconds timeout);
  // Everything the server logged so far.
  std::string Log() const;

 private:
  ServerProcess() = default;
  bool WaitForLog(const std::string& needle, std::chrono::milliseconds timeout);

  pid_t pid_ = -1;
  std::string log_path_;
  std::shared_ptr<grpc::Channel> channel_;
};

}  // namespace onnxserve::e2e

#include "tests/e2e/server_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <grpcpp/create_channel.h>
#include <gtest/gtest.h>

namespace onnxserve::e2e {
namespace {

std::string Shell(const std::vector<std::string>& args) {
  std::string command;
  for (const auto& a : args) command += "'" + a + "' ";
  return command;
}

}  // namespace

std::string MakeRepository(const std::string& name) {
  const std::string dir = std::string(ONNXSERVE_E2E_WORK_DIR) + "/" + name + "-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  EXPECT_EQ(std::system(Shell({ONNXSERVE_PYTHON, ONNXSERVE_MAKE_MODELS, dir}).c_str()), 0);
  return dir;
}

void AddVersion(const std::string& repository, int version) {
  EXPECT_EQ(std::system(Shell({ONNXSERVE_PYTHON, ONNXSERVE_MAKE_MODELS, repository, "--add-version",
                               std::to_string(version)}).c_str()),
            0);
}

std::unique_ptr<ServerProcess> ServerProcess::Start(const std::string& repository, std::vector<std::string> flags) {
  static std::atomic<int> counter{0};
  std::unique_ptr<ServerProcess> server(new ServerProcess());
  server->log_path_ = repository + ".log" + std::to_string(counter++);
  std::vector<std::string> args = {ONNXSERVE_BINARY, "serve", "--model-repository", repository,
                                   "--address", "127.0.0.1", "--grpc-port", "0", "--http-port", "-1"};
  args.insert(args.end(), flags.begin(), flags.end());
  server->pid_ = fork();
  if (server->pid_ == 0) {
    const int fd = open(server->log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDERR_FILENO);
    dup2(fd, STDOUT_FILENO);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  if (!server->WaitForLog("event=server_ready", std::chrono::seconds(30))) {
    ADD_FAILURE() << "server did not become ready:\n" << server->Log();
    return nullptr;
  }
  std::smatch port;
  const std::string log = server->Log();
  if (!std::regex_search(log, port, std::regex("grpc_port=([0-9]+)"))) {
    ADD_FAILURE() << "no grpc_port in the log:\n" << log;
    return nullptr;
  }
  server->channel_ = grpc::CreateChannel("127.0.0.1:" + port[1].str(), grpc::InsecureChannelCredentials());
  return server;
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

int ServerProcess::Terminate(std::chrono::milliseconds timeout) {
  kill(pid_, SIGTERM);
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

std::string ServerProcess::Log() const {
  std::ifstream in(log_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool ServerProcess::WaitForLog(const std::string& needle, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (Log().find(needle) != std::string::npos) return true;
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace onnxserve::e2e

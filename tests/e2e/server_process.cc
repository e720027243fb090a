#include "tests/e2e/server_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
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

void AddBrokenModels(const std::string& repository) {
  EXPECT_EQ(std::system(Shell({ONNXSERVE_PYTHON, ONNXSERVE_MAKE_MODELS, repository, "--broken"}).c_str()), 0);
}

void AddStuckWarmupModel(const std::string& repository) {
  EXPECT_EQ(std::system(Shell({ONNXSERVE_PYTHON, ONNXSERVE_MAKE_MODELS, repository, "--stuck-warmup"}).c_str()), 0);
}

namespace {

// Sends `request` to 127.0.0.1:`port` and reads the response until the server closes the connection.
std::string HttpExchange(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
    if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buffer[4096];
      for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) response.append(buffer, static_cast<size_t>(n));
    }
  }
  close(fd);
  return response;
}

}  // namespace

std::string HttpGet(int port, const std::string& path) {
  return HttpExchange(port, "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
}

std::string HttpPost(int port, const std::string& path, const std::string& body) {
  return HttpExchange(port, "POST " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
                                "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
}

std::unique_ptr<ServerProcess> ServerProcess::Start(const std::string& repository, std::vector<std::string> flags) {
  std::unique_ptr<ServerProcess> server = Spawn(repository, std::move(flags));
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

int ServerProcess::RunToExit(const std::string& repository, std::vector<std::string> flags,
                             std::chrono::milliseconds timeout, std::string* log) {
  std::unique_ptr<ServerProcess> server = Spawn(repository, std::move(flags));
  const bool ready = server->WaitForLog("event=server_ready", timeout);
  *log = server->Log();
  return !ready && server->pid_ < 0 ? server->exit_status_ : -1;
}

std::unique_ptr<ServerProcess> ServerProcess::Spawn(const std::string& repository, std::vector<std::string> flags) {
  static std::atomic<int> counter{0};
  std::unique_ptr<ServerProcess> server(new ServerProcess());
  server->log_path_ = repository + ".log" + std::to_string(counter++);
  // No fixed port: /metrics on the HTTP port (when a test turns it on) rather than on 8002, which concurrent
  // test servers would fight over. `flags` may say otherwise: the last value of a flag counts.
  std::vector<std::string> args = {ONNXSERVE_BINARY, "serve", "--model-repository", repository,
                                   "--address", "127.0.0.1", "--grpc-port", "0", "--http-port", "-1",
                                   "--metrics-port", "-1"};
  args.insert(args.end(), flags.begin(), flags.end());
  // Emptied before the fork, not by the child: the path names the test's pid, which an earlier test process
  // had too (pids wrap at 32768), and WaitForLog read that one's "server_ready" and port before the child
  // truncated it (a test connected to a port nothing listened on, about one run in twenty).
  const int log = open(server->log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  server->pid_ = fork();
  if (server->pid_ == 0) {
    dup2(log, STDERR_FILENO);
    dup2(log, STDOUT_FILENO);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(log);
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
    if (Reaped()) return exit_status_;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

bool ServerProcess::Reaped() {
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
  pid_ = -1;
  exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return true;
}

int ServerProcess::http_port() const {
  std::smatch port;
  const std::string log = Log();
  return std::regex_search(log, port, std::regex("http_port=([0-9]+)")) ? std::stoi(port[1].str()) : -1;
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
    if (Reaped()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace onnxserve::e2e

// onnxserve: one executable for serving, running, checking and benchmarking ONNX models.
#include <cstring>
#include <iostream>
#include <string>

#include "absl/synchronization/mutex.h"
#include "cli/commands.h"
#ifdef ONNXSERVE_WITH_SERVER
#include "server/commands.h"
#endif

namespace {

struct Subcommand {
  const char* name;
  int (*run)(int, char**);
  const char* usage;
};

constexpr Subcommand kSubcommands[] = {
#ifdef ONNXSERVE_WITH_SERVER
    {"serve", onnxserve::server::ServeCommand,
     "serve --model-repository DIR [--grpc-port 8001] [--http-port 8000] [--metrics-port 8002] ...  (see serve --help)"},
    {"probe", onnxserve::server::ProbeCommand, "probe [--addr host:port] [--model NAME]"},
    {"load", onnxserve::server::LoadCommand, "load --model NAME [-c N] [-n N | -z SECONDS] ... (see load --help)"},
#endif
    {"run", onnxserve::cli::RunCommand,
     "run MODEL.onnx --inputs-dir DIR --outputs-dir OUT [--threads N] [--max-tensor-elements N] "
     "[--max-tensor-bytes N] [--memory-budget-bytes N]"},
    {"bench", onnxserve::cli::BenchCommand,
     "bench MODEL.onnx [--inputs-dir DIR] [--batch N] [--iterations N] [--warmup N] [--threads N] "
     "[--max-tensor-elements N] [--max-tensor-bytes N] [--memory-budget-bytes N]"},
    {"check", onnxserve::cli::CheckCommand, "check MODEL.onnx [--plan]"},
    {"ops", onnxserve::cli::OpsCommand, "ops [--format table|markdown]"},
};

int Usage(std::ostream& out, int status) {
  out << "usage: onnxserve <command> [options]\n\ncommands:\n";
  for (const auto& cmd : kSubcommands) out << "  onnxserve " << cmd.usage << "\n";
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  // Debian builds abseil without NDEBUG, which leaves Mutex deadlock detection on: every Mutex gRPC creates,
  // locks and destroys then updates a global lock graph (GraphCycles::GetId, RemoveNode), about 5% of the
  // server's and the load generator's CPU under load. The tests keep it on, where it finds lock-order bugs.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (argc < 2) return Usage(std::cerr, 2);
  const std::string command = argv[1];
  if (command == "help" || command == "--help" || command == "-h") return Usage(std::cout, 0);
  for (const auto& cmd : kSubcommands) {
    if (command == cmd.name) return cmd.run(argc, argv);
  }
  std::cerr << "onnxserve: unknown command \"" << command << "\"\n";
  return Usage(std::cerr, 2);
}

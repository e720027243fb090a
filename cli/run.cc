// onnxserve run: runs a model once on inputs read from input_K.pb files and writes output_K.pb files
// (tensors, or sequences, maps and optionals where the graph declares them).
#include <filesystem>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/run_options.h"
#include "cli/tensor_files.h"
#include "runtime/core/status_macros.h"
#include "runtime/exec/session.h"

namespace onnxserve::cli {
namespace {

namespace fs = std::filesystem;

absl::Status Run(const Args& args) {
  if (args.positional.size() != 1) return absl::InvalidArgumentError("expected exactly one MODEL.onnx");
  const std::string inputs_dir = args.Get("inputs-dir");
  const std::string outputs_dir = args.Get("outputs-dir");
  ASSIGN_OR_RETURN(SessionOptions options, ApplyRunOptions(args));
  ASSIGN_OR_RETURN(auto session, Session::LoadFile(args.positional[0], options));
  std::vector<std::pair<std::string, Value>> feeds;
  for (size_t i = 0; i < session->inputs().size(); ++i) {
    const std::string path = (fs::path(inputs_dir) / absl::StrCat("input_", i, ".pb")).string();
    ASSIGN_OR_RETURN(Value value, ReadValueFile(path, session->input_types()[i].value_kind()));
    feeds.push_back({session->inputs()[i].name, std::move(value)});
  }
  ASSIGN_OR_RETURN(std::vector<Value> outputs, session->RunValues(feeds));
  std::error_code ec;
  fs::create_directories(outputs_dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", outputs_dir, ": ", ec.message()));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string path = (fs::path(outputs_dir) / absl::StrCat("output_", i, ".pb")).string();
    RETURN_IF_ERROR(WriteValueFile(path, outputs[i], session->output_types()[i].value_kind(),
                                   session->outputs()[i].name));
  }
  return absl::OkStatus();
}

}  // namespace

int RunCommand(int argc, char** argv) {
  const OptionTable options = Join(
      {
          {.name = "inputs-dir", .kind = ValueKind::kFile, .value_name = "DIR",
           .help = "input_0.pb, input_1.pb, ... for the model's inputs", .required = true},
          {.name = "outputs-dir", .kind = ValueKind::kFile, .value_name = "DIR",
           .help = "where output_K.pb files are written", .required = true},
      },
      RunOptions());
  auto args = ParseArgs(options, argc, argv, 2);
  if (args.ok() && args->help) {
    std::cout << "usage: onnxserve run MODEL.onnx --inputs-dir DIR --outputs-dir OUT [options]\n" << OptionsHelp(options);
    return 0;
  }
  absl::Status status = args.ok() ? Run(*args) : args.status();
  if (!status.ok()) {
    std::cerr << "onnxserve run: " << status << "\n";
    return 1;
  }
  return 0;
}

}  // namespace onnxserve::cli

// The subcommands of the onnxserve executable. Each takes main's argc/argv (argv[1] is the subcommand) and
// returns the process exit status; failures print their reason to stderr.
#pragma once

namespace onnxserve::cli {

int RunCommand(int argc, char** argv);    // onnxserve run MODEL --inputs-dir DIR --outputs-dir OUT
int BenchCommand(int argc, char** argv);  // onnxserve bench MODEL [--inputs-dir DIR] [--batch N] ...
int CheckCommand(int argc, char** argv);  // onnxserve check MODEL
int OpsCommand(int argc, char** argv);    // onnxserve ops [--markdown]

}  // namespace onnxserve::cli

// The server subcommands of the onnxserve executable (dispatched by cli/main.cc). Each takes main's
// argc/argv (argv[1] is the subcommand) and returns the process exit status.
#pragma once

namespace onnxserve::server {

int ServeCommand(int argc, char** argv);  // serve.cc: onnxserve serve --model-repository DIR ...
int ProbeCommand(int argc, char** argv);  // probe.cc: onnxserve probe [--addr host:port] [--model NAME]
int LoadCommand(int argc, char** argv);   // loadgen.cc: onnxserve load --model NAME [-c N] ...

}  // namespace onnxserve::server

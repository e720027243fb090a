// What `onnxserve load` is told to do: the target, the model, the shape of the load and its bounds. Shared by
// the run (loadgen.h) and each protocol's connections (loadgen_run.h, loadgen_rest.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "server/protocol/tls.h"

namespace onnxserve::server {

struct LoadOptions {
  static constexpr double kMaxSeconds = 600;  // hard cap on any run, whatever -n or -z say

  std::string target = "127.0.0.1:8001";
  bool http = false;          // REST (KServe v2 over HTTP/1.1) instead of gRPC
  bool binary_data = false;   // REST: tensors in Triton's binary data extension
  std::string model;
  std::string model_version;  // "" = the server's choice (latest)
  int concurrency = 1;        // calls in flight
  int connections = 1;        // gRPC: HTTP/2 connections the calls are spread over; REST: threads
  int64_t total = 200;        // requests to send; 0 = until `duration_seconds`
  double duration_seconds = 0;
  double rps = 0;             // 0 = as fast as responses come back
  std::string input;          // "" = random inputs from ModelMetadata; a JSON request file or input_K.pb dir
  int64_t batch = 1;          // the dynamic first dimension of random inputs
  int64_t timeout_ms = 10000; // deadline of each call
  std::vector<std::pair<std::string, std::string>> metadata;  // sent with every call (--metadata KEY=VALUE)
  ClientTlsFlags tls;                                         // TLS when tls.ca_file is set
};

}  // namespace onnxserve::server

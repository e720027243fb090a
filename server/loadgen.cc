#include "server/loadgen.h"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "grpc_service.grpc.pb.h"
#include "onnx/onnx_pb.h"
#include "runtime/core/status_macros.h"
#include "runtime/core/tensor.h"
#include "runtime/model/tensor_proto.h"
#include "server/commands.h"
#include "server/serving/datatype.h"
#include "server/serving/sample_tensors.h"

namespace onnxserve::server {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using inference::GRPCInferenceService;
using inference::ModelInferRequest;
using inference::ModelInferResponse;
using inference::ModelMetadataResponse;

// ---- Inputs: one request, built once and sent by every call ----------------------------------------------

absl::StatusOr<ModelMetadataResponse> FetchMetadata(GRPCInferenceService::Stub& stub, const LoadOptions& options) {
  inference::ModelMetadataRequest request;
  request.set_name(options.model);
  request.set_version(options.model_version);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(options.timeout_ms));
  for (const auto& [key, value] : options.metadata) context.AddMetadata(key, value);
  ModelMetadataResponse metadata;
  const grpc::Status status = stub.ModelMetadata(&context, request, &metadata);
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                        absl::StrCat("ModelMetadata of model \"", options.model, "\" from ", options.target, ": ",
                                     status.error_message()));
  }
  return metadata;
}

// Appends `tensor` as input `name` in raw_input_contents form.
absl::Status AddRawInput(const std::string& name, const Tensor& tensor, ModelInferRequest& request) {
  const char* datatype = KServeDataType(tensor.dtype());
  if (datatype == nullptr || tensor.dtype() == DataType::kString) {
    return absl::InvalidArgumentError(absl::StrCat("input \"", name, "\": ", tensor.DebugString(),
                                                   " has no raw wire form; give it in a JSON --input file"));
  }
  auto* input = request.add_inputs();
  input->set_name(name);
  input->set_datatype(datatype);
  for (int64_t d : tensor.shape()) input->add_shape(d);
  request.add_raw_input_contents(static_cast<const char*>(tensor.raw_data()), tensor.ByteSize());
  return absl::OkStatus();
}

// Random inputs (RandomTensor). A dynamic first dimension takes `batch`, other dynamic dimensions 1.
absl::Status AddRandomInputs(const ModelMetadataResponse& metadata, int64_t batch, ModelInferRequest& request) {
  std::mt19937 rng(42);
  for (const auto& info : metadata.inputs()) {
    ASSIGN_OR_RETURN(DataType dtype, DataTypeFromKServe(info.datatype()));
    Shape shape(info.shape().begin(), info.shape().end());
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] < 0) shape[d] = d == 0 ? batch : 1;
    }
    if (dtype == DataType::kString) {
      return absl::InvalidArgumentError(absl::StrCat("input \"", info.name(), "\" is BYTES: give it with --input"));
    }
    ASSIGN_OR_RETURN(Tensor tensor, RandomTensor(dtype, std::move(shape), rng));
    RETURN_IF_ERROR(AddRawInput(info.name(), tensor, request));
  }
  return absl::OkStatus();
}

// input_0.pb, input_1.pb, ... (serialized onnx.TensorProto, as in the ONNX test data) for the model's inputs
// in metadata order.
absl::Status AddDirectoryInputs(const std::string& dir, const ModelMetadataResponse& metadata,
                                ModelInferRequest& request) {
  for (int i = 0; i < metadata.inputs_size(); ++i) {
    const fs::path path = fs::path(dir) / absl::StrCat("input_", i, ".pb");
    std::ifstream in(path, std::ios::binary);
    onnx::TensorProto proto;
    if (!in || !proto.ParseFromIstream(&in)) {
      return absl::InvalidArgumentError(absl::StrCat(path.string(), ": expected a serialized onnx.TensorProto for input \"",
                                                     metadata.inputs(i).name(), "\""));
    }
    ASSIGN_OR_RETURN(Tensor tensor, TensorFromProto(proto));
    RETURN_IF_ERROR(AddRawInput(metadata.inputs(i).name(), tensor, request));
  }
  return absl::OkStatus();
}

// A ModelInferRequest in protobuf's JSON mapping, like ghz's -D file: bytes fields are base64, e.g.
// {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 2]}], "raw_input_contents": ["AACAPwAAAEA="]}
absl::Status ReadJsonRequest(const std::string& path, ModelInferRequest& request) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read --input ", path));
  std::stringstream json;
  json << in.rdbuf();
  const auto status = google::protobuf::util::JsonStringToMessage(json.str(), &request);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a ModelInferRequest in JSON: ", status.ToString()));
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelInferRequest> BuildRequest(GRPCInferenceService::Stub& stub, const LoadOptions& options) {
  ModelInferRequest request;
  if (!options.input.empty() && !fs::is_directory(options.input)) {
    RETURN_IF_ERROR(ReadJsonRequest(options.input, request));
  } else {
    ASSIGN_OR_RETURN(ModelMetadataResponse metadata, FetchMetadata(stub, options));
    if (options.input.empty()) {
      RETURN_IF_ERROR(AddRandomInputs(metadata, options.batch, request));
    } else {
      RETURN_IF_ERROR(AddDirectoryInputs(options.input, metadata, request));
    }
  }
  request.set_model_name(options.model);
  request.set_model_version(options.model_version);
  return request;
}

// ---- The run ----------------------------------------------------------------------------------------------

// Hands out send slots ("tickets") to the connection threads: bounds the count and the duration and paces
// the rate. Ticket i of a paced run is due at start + i / rps, so a slow moment is caught up, not lost.
class Schedule {
 public:
  explicit Schedule(const LoadOptions& options)
      : options_(options), start_(Clock::now()),
        end_(start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                          options.total > 0 && options.duration_seconds <= 0 ? LoadOptions::kMaxSeconds
                                                                              : options.duration_seconds))) {}

  Clock::time_point start() const { return start_; }

  // The due time of the next ticket, or nullopt when the run has sent all it may.
  std::optional<Clock::time_point> Take() {
    const int64_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (options_.total > 0 && i >= options_.total) return std::nullopt;
    const Clock::time_point due =
        options_.rps > 0 ? start_ + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(static_cast<double>(i) / options_.rps))
                         : Clock::now();
    if (due >= end_) return std::nullopt;
    return due;
  }

 private:
  const LoadOptions& options_;
  const Clock::time_point start_;
  const Clock::time_point end_;
  std::atomic<int64_t> next_{0};
};

// What one connection saw; merged into the report at the end, so threads never share a counter.
constexpr size_t kNumCodes = grpc::StatusCode::UNAUTHENTICATED + 1;

struct Tally {
  std::vector<double> ok_ms;
  std::array<int64_t, kNumCodes> codes{};  // responses by grpc::StatusCode
  Clock::time_point last_done;
};

// One connection: its own channel, CompletionQueue and thread, keeping up to `slots` calls in flight.
class Connection {
 public:
  Connection(const LoadOptions& options, const std::shared_ptr<grpc::ChannelCredentials>& credentials, int slots)
      : options_(options), slots_(slots), stub_(GRPCInferenceService::NewStub(MakeChannel(options, credentials))) {}

  void Run(const ModelInferRequest& request, Schedule& schedule);
  const Tally& tally() const { return tally_; }

 private:
  struct Call {
    grpc::ClientContext context;
    ModelInferResponse response;
    grpc::Status status;
    Clock::time_point sent;
    std::unique_ptr<grpc::ClientAsyncResponseReader<ModelInferResponse>> reader;
  };

  static std::shared_ptr<grpc::Channel> MakeChannel(const LoadOptions& options,
                                                    const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own, not a shared subchannel
    return grpc::CreateCustomChannel(options.target, credentials, args);
  }

  void Send(const ModelInferRequest& request);
  void Complete(Call* call);

  const LoadOptions& options_;
  const int slots_;
  std::unique_ptr<GRPCInferenceService::Stub> stub_;
  grpc::CompletionQueue cq_;
  Tally tally_;
};

void Connection::Send(const ModelInferRequest& request) {
  auto* call = new Call;  // owned by the completion queue until Complete()
  call->sent = Clock::now();
  call->context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(options_.timeout_ms));
  for (const auto& [key, value] : options_.metadata) call->context.AddMetadata(key, value);
  call->reader = stub_->PrepareAsyncModelInfer(&call->context, request, &cq_);
  call->reader->StartCall();
  call->reader->Finish(&call->response, &call->status, call);
}

void Connection::Complete(Call* done) {
  std::unique_ptr<Call> call(done);
  tally_.last_done = Clock::now();
  const auto code = static_cast<size_t>(call->status.error_code());
  ++tally_.codes[code < kNumCodes ? code : static_cast<size_t>(grpc::StatusCode::UNKNOWN)];
  if (call->status.ok()) {
    tally_.ok_ms.push_back(std::chrono::duration<double, std::milli>(tally_.last_done - call->sent).count());
  }
}

void Connection::Run(const ModelInferRequest& request, Schedule& schedule) {
  tally_.ok_ms.reserve(options_.total > 0 ? static_cast<size_t>(options_.total) : 4096);
  int in_flight = 0;
  std::optional<Clock::time_point> due = schedule.Take();
  while (due || in_flight > 0) {
    while (due && in_flight < slots_ && *due <= Clock::now()) {
      Send(request);
      ++in_flight;
      due = schedule.Take();
    }
    // Wake for the next completion, or when the next paced send is due if a slot is free for it.
    const auto wake = due && in_flight < slots_ ? *due : Clock::now() + std::chrono::seconds(1);
    void* tag;
    bool ok;
    const auto deadline = std::chrono::system_clock::now() + (wake - Clock::now());
    if (cq_.AsyncNext(&tag, &ok, deadline) == grpc::CompletionQueue::GOT_EVENT) {
      Complete(static_cast<Call*>(tag));
      --in_flight;
    }
  }
  cq_.Shutdown();
  void* tag;
  bool ok;
  while (cq_.Next(&tag, &ok)) Complete(static_cast<Call*>(tag));
}

// Nearest-rank percentile of sorted values.
double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

LoadReport Summarize(const std::vector<std::unique_ptr<Connection>>& connections, Clock::time_point start) {
  LoadReport report;
  std::vector<double> ms;
  Clock::time_point last = start;
  for (const auto& connection : connections) {
    const Tally& tally = connection->tally();
    ms.insert(ms.end(), tally.ok_ms.begin(), tally.ok_ms.end());
    for (size_t code = 0; code < kNumCodes; ++code) {
      if (tally.codes[code] == 0) continue;
      // absl::StatusCode and grpc::StatusCode share google.rpc.Code numbering (asserted in status.cc).
      report.codes[absl::StatusCodeToString(static_cast<absl::StatusCode>(code))] += tally.codes[code];
      report.count += tally.codes[code];
    }
    last = std::max(last, tally.last_done);
  }
  std::sort(ms.begin(), ms.end());
  report.ok = static_cast<int64_t>(ms.size());
  report.seconds = std::chrono::duration<double>(last - start).count();
  report.rps = report.seconds > 0 ? static_cast<double>(report.count) / report.seconds : 0;
  if (!ms.empty()) report.mean_ms = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  report.p50_ms = Percentile(ms, 50);
  report.p90_ms = Percentile(ms, 90);
  report.p99_ms = Percentile(ms, 99);
  report.max_ms = ms.empty() ? 0 : ms.back();
  return report;
}

// ---- Command line ----------------------------------------------------------------------------------------

constexpr char kUsage[] = R"(usage: onnxserve load --model NAME [options]
Sends ModelInfer requests to a running onnxserve (or any KServe v2 gRPC server) and reports latency.
  --target HOST:PORT       server address (default 127.0.0.1:8001)
  --model NAME             model to call (required)
  --model-version V        version (default: the server's latest)
  -c, --concurrency N      calls in flight (default 1)
  --connections N          HTTP/2 connections to spread the calls over (default 1)
  -n, --total N            requests to send (default 200; 0 with -z: until the duration ends)
  -z, --duration SECONDS   stop sending after this long (at most 600)
  --rps R                  pace sends to R requests per second (default: unpaced)
  --input PATH             a ModelInferRequest JSON file (bytes in base64, as ghz's -D) or a directory of
                           input_K.pb TensorProtos; default: random inputs shaped by ModelMetadata
  --batch N                the dynamic first dimension of random inputs (default 1)
  --timeout-ms N           deadline of each call (default 10000)
  --metadata KEY=VALUE     gRPC metadata sent with every call, repeatable (e.g. triton-grpc-protocol-KEY=VALUE
                           for a server started with --grpc-restricted-protocol)
)";
constexpr char kUsageEnd[] = "The last line of stdout is the report as one JSON object.\n";

absl::Status ParseInt(const std::string& name, const std::string& value, int64_t min, int64_t max, int64_t& out) {
  if (!absl::SimpleAtoi(value, &out) || out < min || out > max) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be an integer in [", min, ", ", max, "], got \"",
                                                   value, "\""));
  }
  return absl::OkStatus();
}

absl::Status ParseSeconds(const std::string& name, const std::string& value, double max, double& out) {
  if (!absl::SimpleAtod(value, &out) || !(out > 0) || out > max) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be a number in (0, ", max, "], got \"", value, "\""));
  }
  return absl::OkStatus();
}

absl::Status SetOption(const std::string& name, const std::string& value, LoadOptions& options) {
  if (SetClientTlsFlag(name, value, options.tls)) return absl::OkStatus();
  int64_t n = 0;
  if (name == "--target") {
    options.target = value;
  } else if (name == "--model") {
    options.model = value;
  } else if (name == "--model-version") {
    options.model_version = value;
  } else if (name == "-c" || name == "--concurrency") {
    RETURN_IF_ERROR(ParseInt(name, value, 1, 10000, n));
    options.concurrency = static_cast<int>(n);
  } else if (name == "--connections") {
    RETURN_IF_ERROR(ParseInt(name, value, 1, 64, n));
    options.connections = static_cast<int>(n);
  } else if (name == "-n" || name == "--total") {
    RETURN_IF_ERROR(ParseInt(name, value, 0, int64_t{1} << 40, options.total));
  } else if (name == "-z" || name == "--duration") {
    RETURN_IF_ERROR(ParseSeconds(name, value, LoadOptions::kMaxSeconds, options.duration_seconds));
  } else if (name == "--rps") {
    RETURN_IF_ERROR(ParseSeconds(name, value, 1e7, options.rps));
  } else if (name == "--input") {
    options.input = value;
  } else if (name == "--batch") {
    RETURN_IF_ERROR(ParseInt(name, value, 1, 1 << 20, options.batch));
  } else if (name == "--timeout-ms") {
    RETURN_IF_ERROR(ParseInt(name, value, 1, 3600000, options.timeout_ms));
  } else if (name == "--metadata") {
    const size_t eq = value.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(absl::StrCat("--metadata must be KEY=VALUE, got \"", value, "\""));
    }
    options.metadata.emplace_back(value.substr(0, eq), value.substr(eq + 1));
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown option ", name, " (see onnxserve load --help)"));
  }
  return absl::OkStatus();
}

// Options as "--name value", "--name=value" or "-c value"; -z without -n runs for the duration only.
absl::StatusOr<LoadOptions> ParseLoadOptions(int argc, char** argv) {
  LoadOptions options;
  bool total_given = false;
  for (int i = 2; i < argc; ++i) {
    std::string name = argv[i], value;
    if (const size_t eq = name.find('='); name.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat("option ", name, " needs a value"));
    }
    total_given |= name == "-n" || name == "--total";
    RETURN_IF_ERROR(SetOption(name, value, options));
  }
  if (options.model.empty()) return absl::InvalidArgumentError("--model is required");
  if (options.duration_seconds > 0 && !total_given) options.total = 0;
  if (options.total == 0 && options.duration_seconds <= 0) {
    return absl::InvalidArgumentError("-n 0 needs -z: every run must be bounded");
  }
  if (!options.input.empty() && options.batch != 1) {
    return absl::InvalidArgumentError("--batch shapes random inputs only; --input files carry their own shapes");
  }
  return options;
}

}  // namespace

absl::StatusOr<LoadReport> RunLoad(const LoadOptions& options) {
  ASSIGN_OR_RETURN(const std::shared_ptr<grpc::ChannelCredentials> credentials, GrpcChannelCredentials(options.tls));
  auto stub = GRPCInferenceService::NewStub(grpc::CreateChannel(options.target, credentials));
  ASSIGN_OR_RETURN(const ModelInferRequest request, BuildRequest(*stub, options));
  std::vector<std::unique_ptr<Connection>> connections;
  const int n = std::min(options.connections, options.concurrency);
  for (int i = 0; i < n; ++i) {
    // Spread the calls in flight as evenly as possible: the first (concurrency % n) connections get one more.
    connections.push_back(std::make_unique<Connection>(
        options, credentials, options.concurrency / n + (i < options.concurrency % n ? 1 : 0)));
  }
  Schedule schedule(options);
  std::vector<std::thread> threads;
  for (auto& connection : connections) {
    threads.emplace_back([&request, &schedule, c = connection.get()] { c->Run(request, schedule); });
  }
  for (auto& thread : threads) thread.join();
  return Summarize(connections, schedule.start());
}

std::string FormatReportTable(const LoadOptions& options, const LoadReport& report) {
  return absl::StrFormat(
      "target       %s  model %s%s  concurrency %d  connections %d\n"
      "requests     %d in %.3f s  (%.1f req/s)\n"
      "latency ms   mean %.3f  p50 %.3f  p90 %.3f  p99 %.3f  max %.3f  (OK responses)\n"
      "status codes %s\n",
      options.target, options.model, options.model_version.empty() ? "" : ":" + options.model_version,
      options.concurrency, std::min(options.connections, options.concurrency), report.count, report.seconds,
      report.rps, report.mean_ms, report.p50_ms, report.p90_ms, report.p99_ms, report.max_ms,
      absl::StrJoin(report.codes, "  ", absl::PairFormatter(" ")));
}

std::string FormatReportJson(const LoadOptions& options, const LoadReport& report) {
  std::vector<std::string> codes;
  for (const auto& [code, n] : report.codes) codes.push_back(absl::StrFormat("\"%s\": %d", code, n));
  return absl::StrFormat(
      "{\"target\": \"%s\", \"model\": \"%s\", \"model_version\": \"%s\", \"concurrency\": %d, \"batch\": %d, "
      "\"count\": %d, \"ok\": %d, \"errors\": %d, \"codes\": {%s}, \"seconds\": %.4f, \"rps\": %.2f, "
      "\"mean_ms\": %.4f, \"p50_ms\": %.4f, \"p90_ms\": %.4f, \"p99_ms\": %.4f, \"max_ms\": %.4f}",
      absl::CEscape(options.target), absl::CEscape(options.model), absl::CEscape(options.model_version),
      options.concurrency, options.batch, report.count,
      report.ok, report.count - report.ok, absl::StrJoin(codes, ", "), report.seconds, report.rps, report.mean_ms,
      report.p50_ms, report.p90_ms, report.p99_ms, report.max_ms);
}

int LoadCommand(int argc, char** argv) {
  if (argc > 2 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h")) {
    std::cout << kUsage << kClientTlsUsage << kUsageEnd;
    return 0;
  }
  auto options = ParseLoadOptions(argc, argv);
  if (!options.ok()) {
    std::cerr << "onnxserve load: " << options.status().message() << "\n" << kUsage << kClientTlsUsage << kUsageEnd;
    return 2;
  }
  auto report = RunLoad(*options);
  if (!report.ok()) {
    std::cerr << "onnxserve load: " << report.status() << "\n";
    return 1;
  }
  std::cout << FormatReportTable(*options, *report) << FormatReportJson(*options, *report) << std::endl;
  return 0;
}

}  // namespace onnxserve::server

#include "server/loadgen.h"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
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
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "grpc_service.grpc.pb.h"
#include "onnx/onnx_pb.h"
#include "runtime/core/status_macros.h"
#include "runtime/core/tensor.h"
#include "runtime/model/tensor_proto.h"
#include "server/client_options.h"
#include "server/commands.h"
#include "server/loadgen_rest.h"
#include "server/loadgen_run.h"
#include "server/protocol/rest_json.h"
#include "server/serving/datatype.h"
#include "server/serving/sample_tensors.h"

namespace onnxserve::server {
namespace {

namespace fs = std::filesystem;
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

// `fetch_metadata` returns the model's ModelMetadataResponse, over whichever protocol the run speaks.
template <typename FetchMetadata>
absl::StatusOr<ModelInferRequest> BuildRequest(const FetchMetadata& fetch_metadata, const LoadOptions& options) {
  ModelInferRequest request;
  if (!options.input.empty() && !fs::is_directory(options.input)) {
    RETURN_IF_ERROR(ReadJsonRequest(options.input, request));
  } else {
    ASSIGN_OR_RETURN(ModelMetadataResponse metadata, fetch_metadata());
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

// One gRPC connection: its own channel, CompletionQueue and thread, keeping up to `slots` calls in flight.
// Every call sends the same request, serialized once (as the REST connections send one body), and only its
// status is looked at: the generator's own cost per call, on the cores it shares with the server, is the
// call, not encoding 100 KB of the same tensor again or decoding an answer nobody reads.
class GrpcConnection final : public LoadConnection {
 public:
  GrpcConnection(const LoadOptions& options, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
                 const grpc::ByteBuffer& request, int slots)
      : LoadConnection(options, slots), request_(request), stub_(MakeChannel(options, credentials)) {}
  ~GrpcConnection() override;

 private:
  struct Call {
    grpc::ClientContext context;
    grpc::ByteBuffer response;
    grpc::Status status;
    Clock::time_point sent;
    std::unique_ptr<grpc::ClientAsyncResponseReader<grpc::ByteBuffer>> reader;
  };

  static std::shared_ptr<grpc::Channel> MakeChannel(const LoadOptions& options,
                                                    const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own, not a shared subchannel
    return grpc::CreateCustomChannel(options.target, credentials, args);
  }

  void Send() override;
  int Wait(Clock::time_point until) override;
  void Complete(Call* call);

  const grpc::ByteBuffer& request_;  // shared by the connections: each call sends a reference to its slices
  grpc::GenericStub stub_;
  grpc::CompletionQueue cq_;
};

void GrpcConnection::Send() {
  auto* call = new Call;  // owned by the completion queue until Complete()
  call->sent = Clock::now();
  call->context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(options_.timeout_ms));
  for (const auto& [key, value] : options_.metadata) call->context.AddMetadata(key, value);
  static const std::string method = absl::StrCat("/", GRPCInferenceService::service_full_name(), "/ModelInfer");
  call->reader = stub_.PrepareUnaryCall(&call->context, method, request_, &cq_);
  call->reader->StartCall();
  call->reader->Finish(&call->response, &call->status, call);
}

void GrpcConnection::Complete(Call* done) {
  std::unique_ptr<Call> call(done);
  tally_.Record(call->status.error_code(), call->status.ok(), call->sent);
}

int GrpcConnection::Wait(Clock::time_point until) {
  void* tag;
  bool ok;
  const auto deadline = std::chrono::system_clock::now() + (until - Clock::now());
  if (cq_.AsyncNext(&tag, &ok, deadline) != grpc::CompletionQueue::GOT_EVENT) return 0;
  Complete(static_cast<Call*>(tag));
  return 1;
}

// A CompletionQueue must be shut down and drained before it goes.
GrpcConnection::~GrpcConnection() {
  cq_.Shutdown();
  void* tag;
  bool ok;
  while (cq_.Next(&tag, &ok)) Complete(static_cast<Call*>(tag));
}

std::string GrpcCodeName(int code) {
  // absl::StatusCode and grpc::StatusCode share google.rpc.Code numbering (asserted in status.cc).
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}


// Nearest-rank percentile of sorted values.
double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

LoadReport Summarize(const std::vector<const Tally*>& tallies, Clock::time_point start,
                     std::string (*code_name)(int)) {
  LoadReport report;
  std::vector<double> ms;
  Clock::time_point last = start;
  for (const Tally* tally : tallies) {
    ms.insert(ms.end(), tally->ok_ms.begin(), tally->ok_ms.end());
    for (const auto& [code, n] : tally->codes) {
      report.codes[code_name(code)] += n;
      report.count += n;
    }
    last = std::max(last, tally->last_done);
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
Sends inference requests to a running onnxserve (or any KServe v2 server, gRPC or REST) and reports latency.
)";
constexpr char kUsageEnd[] = "The last line of stdout is the report as one JSON object.\n";

cli::OptionTable LoadOptionTable() {
  using cli::ValueKind;
  return cli::Join(
      {
          {.name = "target", .value_name = "HOST:PORT",
           .help = "server address (default 127.0.0.1:8001; 127.0.0.1:8000 with --protocol http)"},
          {.name = "protocol", .value_name = "grpc|http",
           .help = "gRPC ModelInfer, or REST POST /v2/models/NAME[/versions/V]/infer", .default_value = "grpc"},
          {.name = "binary-data", .kind = ValueKind::kBool,
           .help = "with --protocol http: tensors in Triton's binary data extension instead of JSON"},
          {.name = "model", .value_name = "NAME", .help = "model to call", .required = true},
          {.name = "model-version", .value_name = "V", .help = "version (default: the server's latest)"},
          {.name = "concurrency", .kind = ValueKind::kInt, .value_name = "N", .help = "calls in flight",
           .default_value = "1", .short_name = 'c', .min = 1, .max = 10000},
          {.name = "connections", .kind = ValueKind::kInt, .value_name = "N",
           .help = "gRPC: HTTP/2 connections to spread the calls over; REST: threads, each with its share of the "
                   "calls on keep-alive connections of their own",
           .default_value = "1", .min = 1, .max = 64},
          {.name = "total", .kind = ValueKind::kInt, .value_name = "N",
           .help = "requests to send (0 with -z: until the duration ends)", .default_value = "200",
           .short_name = 'n', .min = 0, .max = int64_t{1} << 40},
          {.name = "duration", .kind = ValueKind::kNumber, .value_name = "SECONDS",
           .help = "stop sending after this long", .short_name = 'z', .max = static_cast<int64_t>(LoadOptions::kMaxSeconds)},
          {.name = "rps", .kind = ValueKind::kNumber, .value_name = "R",
           .help = "pace sends to R requests per second (default: unpaced)", .max = 10000000},
          {.name = "input", .kind = ValueKind::kFile, .value_name = "PATH",
           .help = "a ModelInferRequest JSON file (bytes in base64, as ghz's -D) or a directory of input_K.pb "
                   "TensorProtos; default: random inputs shaped by the model's metadata"},
          {.name = "batch", .kind = ValueKind::kInt, .value_name = "N",
           .help = "the dynamic first dimension of random inputs", .default_value = "1", .min = 1, .max = 1 << 20},
          {.name = "timeout-ms", .kind = ValueKind::kInt, .value_name = "N", .help = "deadline of each call",
           .default_value = "10000", .min = 1, .max = 3600000},
          MetadataOption("gRPC metadata (HTTP headers with --protocol http) sent with every call, e.g. "
                         "triton-grpc-protocol-KEY=VALUE for a server started with --grpc-restricted-protocol"),
      },
      ClientTlsOptions());
}

// -z without -n runs for the duration only.
absl::StatusOr<LoadOptions> LoadOptionsFromArgs(const cli::Args& args) {
  if (!args.positional.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", args.positional[0], "\""));
  }
  LoadOptions options;
  const std::string protocol = args.Get("protocol");
  if (protocol != "grpc" && protocol != "http") {
    return absl::InvalidArgumentError(absl::StrCat("--protocol must be grpc or http, got \"", protocol, "\""));
  }
  options.http = protocol == "http";
  options.binary_data = args.Bool("binary-data");
  if (options.binary_data && !options.http) return absl::InvalidArgumentError("--binary-data needs --protocol http");
  options.target = args.Has("target") ? args.Get("target") : options.http ? "127.0.0.1:8000" : "127.0.0.1:8001";
  options.model = args.Get("model");
  options.model_version = args.Get("model-version");
  options.concurrency = static_cast<int>(args.Int("concurrency"));
  options.connections = static_cast<int>(args.Int("connections"));
  options.total = args.Int("total");
  options.duration_seconds = args.Number("duration");
  options.rps = args.Number("rps");
  options.input = args.Get("input");
  options.batch = args.Int("batch");
  options.timeout_ms = args.Int("timeout-ms");
  ASSIGN_OR_RETURN(options.metadata, MetadataFromArgs(args));
  options.tls = ClientTlsFromArgs(args);
  if (options.duration_seconds > 0 && !args.Has("total")) options.total = 0;
  if (options.total == 0 && options.duration_seconds <= 0) {
    return absl::InvalidArgumentError("-n 0 needs -z: every run must be bounded");
  }
  if (!options.input.empty() && options.batch != 1) {
    return absl::InvalidArgumentError("--batch shapes random inputs only; --input files carry their own shapes");
  }
  return options;
}

}  // namespace

namespace {

// `options.concurrency` calls spread as evenly as possible over min(connections, concurrency) connections of
// type C (the first concurrency % n get one more), each run by a thread of its own.
template <typename C, typename... Shared>
LoadReport RunConnections(const LoadOptions& options, std::string (*code_name)(int), const Shared&... shared) {
  std::vector<std::unique_ptr<LoadConnection>> connections;
  const int n = std::min(options.connections, options.concurrency);
  for (int i = 0; i < n; ++i) {
    connections.push_back(
        std::make_unique<C>(options, shared..., options.concurrency / n + (i < options.concurrency % n ? 1 : 0)));
  }
  Schedule schedule(options);
  std::vector<std::thread> threads;
  for (auto& connection : connections) {
    threads.emplace_back([&schedule, c = connection.get()] { c->Run(schedule); });
  }
  for (auto& thread : threads) thread.join();
  std::vector<const Tally*> tallies;
  for (const auto& connection : connections) tallies.push_back(&connection->tally());
  return Summarize(tallies, schedule.start(), code_name);
}

absl::StatusOr<LoadReport> RunRestLoad(const LoadOptions& options) {
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return absl::InternalError("curl_global_init failed");
  ASSIGN_OR_RETURN(const ModelInferRequest request,
                   BuildRequest([&options] { return FetchRestMetadata(options); }, options));
  ASSIGN_OR_RETURN(const RestBody body, EncodeRestInferRequest(request, options.binary_data));
  return RunConnections<RestConnection>(options, HttpCodeName, body);
}

}  // namespace

absl::StatusOr<LoadReport> RunLoad(const LoadOptions& options) {
  // Checks the TLS files for both protocols: they agree, they read, they hold PEM.
  ASSIGN_OR_RETURN(const std::shared_ptr<grpc::ChannelCredentials> credentials, GrpcChannelCredentials(options.tls));
  if (options.http) return RunRestLoad(options);
  auto stub = GRPCInferenceService::NewStub(grpc::CreateChannel(options.target, credentials));
  ASSIGN_OR_RETURN(const ModelInferRequest request,
                   BuildRequest([&stub, &options] { return FetchMetadata(*stub, options); }, options));
  grpc::ByteBuffer encoded;
  bool owned = false;
  if (!grpc::SerializationTraits<ModelInferRequest>::Serialize(request, &encoded, &owned).ok()) {
    return absl::InternalError("the request could not be serialized");
  }
  return RunConnections<GrpcConnection>(options, GrpcCodeName, credentials, encoded);
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
      "\"count\": %d, \"ok\": %d, \"errors\": %d, \"codes\": {%s}, \"seconds\": %.6f, \"rps\": %.2f, "
      "\"mean_ms\": %.4f, \"p50_ms\": %.4f, \"p90_ms\": %.4f, \"p99_ms\": %.4f, \"max_ms\": %.4f}",
      absl::CEscape(options.target), absl::CEscape(options.model), absl::CEscape(options.model_version),
      options.concurrency, options.batch, report.count,
      report.ok, report.count - report.ok, absl::StrJoin(codes, ", "), report.seconds, report.rps, report.mean_ms,
      report.p50_ms, report.p90_ms, report.p99_ms, report.max_ms);
}

int LoadCommand(int argc, char** argv) {
  const cli::OptionTable table = LoadOptionTable();
  auto args = cli::ParseArgs(table, argc, argv, 2);
  if (args.ok() && args->help) {
    std::cout << kUsage << cli::OptionsHelp(table) << kUsageEnd;
    return 0;
  }
  auto options = args.ok() ? LoadOptionsFromArgs(*args) : args.status();
  if (!options.ok()) {
    std::cerr << "onnxserve load: " << options.status().message() << "\n" << kUsage << cli::OptionsHelp(table)
              << kUsageEnd;
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

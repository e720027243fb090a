// onnxserve bench: latency of one model in this process, with its last stdout line a JSON summary
// (load_ms: reading, validating, optimizing and planning the model, weights packed, before any run).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/run_options.h"
#include "cli/tensor_files.h"
#include "runtime/core/status_macros.h"
#include "runtime/exec/session.h"

namespace onnxserve::cli {
namespace {

namespace fs = std::filesystem;

// Random values of the input's type and shape; a dynamic first dim takes `batch`, other dynamic dims 1.
absl::StatusOr<Tensor> RandomInput(const ValueInfo& info, int64_t batch, std::mt19937& rng) {
  if (!info.is_tensor || info.dtype == DataType::kUndefined || info.dtype == DataType::kString) {
    return absl::InvalidArgumentError(absl::StrCat("input \"", info.name, "\" (", info.DebugString(),
                                                   ") needs --inputs-dir: no random values for its type"));
  }
  Shape shape = info.dims;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) shape[d] = d == 0 ? batch : 1;
  }
  Tensor t(info.dtype, shape);
  std::uniform_real_distribution<float> uniform(0.f, 1.f);
  DispatchNumeric(info.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (T& v : t.mutable_values<T>()) v = static_cast<T>(uniform(rng) * (std::is_floating_point_v<T> ? 1 : 2));
  });
  return t;
}

absl::StatusOr<std::vector<std::pair<std::string, Tensor>>> MakeFeeds(const Session& session, const Args& args,
                                                                      int64_t batch) {
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::mt19937 rng(42);
  const std::string dir = args.Get("inputs-dir");
  for (size_t i = 0; i < session.inputs().size(); ++i) {
    const ValueInfo& info = session.inputs()[i];
    if (!dir.empty()) {
      ASSIGN_OR_RETURN(Tensor t, ReadTensorFile((fs::path(dir) / absl::StrCat("input_", i, ".pb")).string()));
      feeds.push_back({info.name, std::move(t)});
    } else {
      ASSIGN_OR_RETURN(Tensor t, RandomInput(info, batch, rng));
      feeds.push_back({info.name, std::move(t)});
    }
  }
  return feeds;
}

double Percentile(const std::vector<double>& sorted, double p) {
  const size_t i = static_cast<size_t>(std::min<double>(sorted.size() - 1, p / 100.0 * sorted.size()));
  return sorted[i];
}

absl::Status Bench(const Args& args) {
  if (args.positional.size() != 1) return absl::InvalidArgumentError("expected exactly one MODEL.onnx");
  const int64_t batch = args.Int("batch");
  const int64_t iterations = args.Int("iterations");
  const int64_t warmup = args.Int("warmup");
  ASSIGN_OR_RETURN(SessionOptions options, ApplyRunOptions(args));
  const auto load_start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(auto session, Session::LoadFile(args.positional[0], options));
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start).count();
  ASSIGN_OR_RETURN(auto feeds, MakeFeeds(*session, args, batch));
  for (int64_t i = 0; i < warmup; ++i) RETURN_IF_ERROR(session->Run(feeds).status());
  std::vector<double> ms;
  ms.reserve(iterations);
  for (int64_t i = 0; i < iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(session->Run(feeds).status());
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  const double mean = std::accumulate(ms.begin(), ms.end(), 0.0) / ms.size();
  std::sort(ms.begin(), ms.end());
  const int64_t items = feeds.empty() || feeds[0].second.rank() == 0 ? 1 : feeds[0].second.dim(0);
  std::cout << absl::StrFormat(
      "{\"model\": \"%s\", \"threads\": %d, \"batch\": %d, \"iterations\": %d, \"warmup\": %d, "
      "\"p50_ms\": %.4f, \"p90_ms\": %.4f, \"p99_ms\": %.4f, \"mean_ms\": %.4f, \"min_ms\": %.4f, "
      "\"max_ms\": %.4f, \"items_per_second\": %.2f, \"load_ms\": %.4f}\n",
      fs::path(args.positional[0]).filename().string(), options.intra_op_threads, items, iterations, warmup,
      Percentile(ms, 50), Percentile(ms, 90), Percentile(ms, 99), mean, ms.front(), ms.back(),
      items * 1000.0 / mean, load_ms);
  return absl::OkStatus();
}

}  // namespace

int BenchCommand(int argc, char** argv) {
  const OptionTable options = Join(
      {
          {.name = "inputs-dir", .kind = ValueKind::kFile, .value_name = "DIR",
           .help = "input_K.pb files; default: random inputs"},
          {.name = "batch", .kind = ValueKind::kInt, .value_name = "N",
           .help = "the dynamic first dimension of random inputs", .default_value = "1", .min = 1, .max = 1 << 20},
          {.name = "iterations", .kind = ValueKind::kInt, .value_name = "N", .help = "timed runs",
           .default_value = "100", .min = 1, .max = 10000000},
          {.name = "warmup", .kind = ValueKind::kInt, .value_name = "N", .help = "untimed runs first",
           .default_value = "10", .min = 0, .max = 1000000},
      },
      RunOptions());
  auto args = ParseArgs(options, argc, argv, 2);
  if (args.ok() && args->help) {
    std::cout << "usage: onnxserve bench MODEL.onnx [options]\n" << OptionsHelp(options);
    return 0;
  }
  absl::Status status = args.ok() ? Bench(*args) : args.status();
  if (!status.ok()) {
    std::cerr << "onnxserve bench: " << status << "\n";
    return 1;
  }
  return 0;
}

}  // namespace onnxserve::cli

// Fuzz target: config.pbtxt text -> ReadModelConfig -> CompleteModelConfig against a small model with every
// KServe payload type, then everything the server derives from a completed config.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "server/observability/log.h"
#include "server/serving/config.h"
#include "tests/fuzz/fuzz_models.h"

namespace {

// ReadModelConfig reads a file: each input is written to this process's own scratch file first.
const std::string& ScratchPath() {
  static const std::string path = [] {
    std::string dir = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
    std::string pattern = dir + "/config_fuzz_XXXXXX";
    const int fd = mkstemp(pattern.data());
    if (fd < 0) std::abort();
    close(fd);
    return pattern;
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxserve::server;
  static const std::unique_ptr<onnxserve::Session> session = onnxserve::fuzz::MixedSession();
  if (session == nullptr) std::abort();
  static const bool quiet = (SetLogLevel(LogLevel::kError), true);  // completion warns about ignored settings
  (void)quiet;
  if (size > static_cast<size_t>(kMaxConfigBytes)) return 0;
  {
    FILE* f = std::fopen(ScratchPath().c_str(), "wb");
    if (f == nullptr) std::abort();
    if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
    std::fclose(f);
  }
  auto config = ReadModelConfig(ScratchPath());
  if (!config.ok()) return 0;
  if (!CompleteModelConfig("mixed", *session, /*from_file=*/true, *config).ok()) return 0;
  (void)InputSpecs(*config);
  (void)OutputSpecs(*config);
  (void)InstanceCount(*config);
  (void)ThreadsParameter(*config, 1);
  (void)ExecutionTimeoutParameter(*config);
  return 0;
}

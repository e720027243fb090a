#include "server/machine_memory.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace onnxserve::server {
namespace {

std::optional<std::string> ReadFile(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A limit this large is v1's way of saying none (the largest page-aligned int64).
constexpr int64_t kNoLimitAbove = int64_t{1} << 60;

}  // namespace

std::optional<int64_t> MemTotalBytes(std::string_view meminfo) {
  for (absl::string_view line : absl::StrSplit(absl::string_view(meminfo.data(), meminfo.size()), '\n')) {
    if (!absl::ConsumePrefix(&line, "MemTotal:")) continue;
    line = absl::StripAsciiWhitespace(line);
    if (!absl::ConsumeSuffix(&line, "kB")) return std::nullopt;
    int64_t kib = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &kib) || kib <= 0 || kib > kNoLimitAbove / 1024) {
      return std::nullopt;
    }
    return kib * 1024;
  }
  return std::nullopt;
}

std::optional<int64_t> CgroupLimitBytes(std::string_view limit_file) {
  int64_t bytes = 0;
  const absl::string_view text(limit_file.data(), limit_file.size());
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &bytes) || bytes <= 0 || bytes >= kNoLimitAbove) {
    return std::nullopt;
  }
  return bytes;
}

std::optional<int64_t> UsableMemoryBytes() {
  std::optional<int64_t> usable;
  if (auto meminfo = ReadFile("/proc/meminfo")) usable = MemTotalBytes(*meminfo);
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    auto text = ReadFile(path);
    if (!text) continue;
    if (auto limit = CgroupLimitBytes(*text)) usable = usable ? std::min(*usable, *limit) : *limit;
  }
  return usable;
}

}  // namespace onnxserve::server

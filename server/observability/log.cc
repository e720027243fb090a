#include "server/observability/log.h"

#include <unistd.h>

#include <atomic>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace onnxserve::server {
namespace {

constexpr const char* kLevelNames[] = {"debug", "info", "warning", "error"};

std::atomic<int>& MinLevel() {
  static std::atomic<int> level{static_cast<int>(LogLevel::kInfo)};
  return level;
}

// Control bytes (a client's model name can hold any) would let a value end the line or forge the next one
// ("m\rts=... level=error"), so they are written escaped, inside quotes.
bool IsControl(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

bool NeedsQuotes(std::string_view value) {
  if (value.empty()) return true;
  for (char c : value) {
    if (c == ' ' || c == '"' || c == '=' || IsControl(c)) return true;
  }
  return false;
}

void AppendValue(std::string& line, std::string_view value) {
  if (!NeedsQuotes(value)) {
    line.append(value);
    return;
  }
  line.push_back('"');
  for (char c : value) {
    if (IsControl(c)) {
      absl::StrAppend(&line, "\\x", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
      continue;
    }
    if (c == '"' || c == '\\') line.push_back('\\');
    line.push_back(c);
  }
  line.push_back('"');
}

// Writes the line of one event: the one place lines are built, whichever way their fields come.
void LogFields(LogLevel level, std::string_view event, const LogField* begin, const LogField* end) {
  if (static_cast<int>(level) < MinLevel().load(std::memory_order_relaxed)) return;
  std::string line = absl::StrCat(
      "ts=", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()),
      " level=", kLevelNames[static_cast<int>(level)], " event=", std::string(event));
  for (const LogField* field = begin; field != end; ++field) {
    const auto& [key, value] = *field;
    line.push_back(' ');
    line.append(key);
    line.push_back('=');
    AppendValue(line, value);
  }
  line.push_back('\n');
  // One write(2) per line keeps concurrent lines whole.
  ssize_t ignored = write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace

absl::StatusOr<LogLevel> ParseLogLevel(std::string_view name) {
  for (int i = 0; i < 4; ++i) {
    if (name == kLevelNames[i]) return static_cast<LogLevel>(i);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown log level \"", std::string(name), "\": expected debug, info, warning or error"));
}

void SetLogLevel(LogLevel level) { MinLevel().store(static_cast<int>(level)); }

void Log(LogLevel level, std::string_view event, std::initializer_list<LogField> fields) {
  LogFields(level, event, fields.begin(), fields.end());
}

void Log(LogLevel level, std::string_view event, const std::vector<LogField>& fields) {
  LogFields(level, event, fields.data(), fields.data() + fields.size());
}

}  // namespace onnxserve::server

// Leveled structured logs: one line per event on stderr, as key=value pairs.
//   ts=2024-05-01T12:00:00.123Z level=info event=model_loaded model=resnet version=1 ms=52
// Thread-safe: each line is written with a single write, so lines from several threads never interleave.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace onnxserve::server {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// "debug", "info", "warning" or "error".
absl::StatusOr<LogLevel> ParseLogLevel(std::string_view name);
// Events below `level` are dropped. Default: kInfo.
void SetLogLevel(LogLevel level);

using LogField = std::pair<std::string_view, std::string>;

// `event` is a snake_case name; values with spaces, quotes or '=' are quoted.
void Log(LogLevel level, std::string_view event, std::initializer_list<LogField> fields = {});
// The same, for lines whose fields are chosen at run time.
void Log(LogLevel level, std::string_view event, const std::vector<LogField>& fields);

}  // namespace onnxserve::server

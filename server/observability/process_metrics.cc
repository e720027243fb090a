#include "server/observability/process_metrics.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "runtime/core/status_macros.h"

namespace onnxserve::server {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::UnavailableError(absl::StrCat("cannot read ", path));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// utime + stime (fields 14 and 15 of proc(5)'s stat) in seconds. The command name (field 2) is in
// parentheses and may itself hold spaces and ')', so fields are counted from the last ')'.
absl::StatusOr<double> ParseCpuSeconds(const std::string& stat, const std::string& path) {
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return absl::DataLossError(absl::StrCat(path, ": no \"(comm)\" field"));
  const std::vector<std::string> fields =
      absl::StrSplit(stat.substr(paren + 1), ' ', absl::SkipEmpty());
  constexpr size_t kUtime = 11, kStime = 12;  // indices after ')': field 3 (state) is index 0
  int64_t utime, stime;
  if (fields.size() <= kStime || !absl::SimpleAtoi(fields[kUtime], &utime) ||
      !absl::SimpleAtoi(fields[kStime], &stime)) {
    return absl::DataLossError(absl::StrCat(path, ": expected numeric utime and stime (fields 14, 15)"));
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// The resident set (second field of statm, in pages) in bytes.
absl::StatusOr<double> ParseResidentBytes(const std::string& statm, const std::string& path) {
  const std::vector<std::string> fields = absl::StrSplit(statm, absl::ByAnyChar(" \n"), absl::SkipEmpty());
  int64_t pages;
  if (fields.size() < 2 || !absl::SimpleAtoi(fields[1], &pages)) {
    return absl::DataLossError(absl::StrCat(path, ": expected \"size resident ...\" in pages"));
  }
  return static_cast<double>(pages) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

absl::StatusOr<double> CountEntries(const std::string& dir) {
  std::error_code error;
  std::filesystem::directory_iterator it(dir, error);
  if (error) return absl::UnavailableError(absl::StrCat("cannot list ", dir, ": ", error.message()));
  return static_cast<double>(std::distance(it, std::filesystem::directory_iterator()));
}

}  // namespace

absl::StatusOr<ProcessStats> ReadProcessStats(const std::string& proc_self) {
  const std::string stat_path = proc_self + "/stat", statm_path = proc_self + "/statm";
  ProcessStats stats;
  ASSIGN_OR_RETURN(const std::string stat, ReadFile(stat_path));
  ASSIGN_OR_RETURN(stats.cpu_seconds, ParseCpuSeconds(stat, stat_path));
  ASSIGN_OR_RETURN(const std::string statm, ReadFile(statm_path));
  ASSIGN_OR_RETURN(stats.resident_bytes, ParseResidentBytes(statm, statm_path));
  ASSIGN_OR_RETURN(stats.open_fds, CountEntries(proc_self + "/fd"));
  return stats;
}

}  // namespace onnxserve::server

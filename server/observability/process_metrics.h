// The standard Prometheus process metrics (process_cpu_seconds_total, process_resident_memory_bytes,
// process_open_fds), read from /proc/self at scrape time. Linux only.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace onnxserve::server {

struct ProcessStats {
  double cpu_seconds = 0;     // user + system CPU time of all threads
  double resident_bytes = 0;  // resident set size
  double open_fds = 0;        // entries of /proc/self/fd
};

// Reads the stats of the calling process. Thread-safe; costs a few syscalls, so call it per scrape, not per
// request. `proc_self` is the /proc/<pid> directory to read (a parameter so tests can point at fixtures).
absl::StatusOr<ProcessStats> ReadProcessStats(const std::string& proc_self = "/proc/self");

}  // namespace onnxserve::server

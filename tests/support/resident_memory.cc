#include "tests/support/resident_memory.h"

#include <fstream>
#include <string>

namespace onnxserve::testing {

bool ResetPeakResident() {
  std::ofstream clear_refs("/proc/self/clear_refs");
  clear_refs << "5";  // 5: reset the peak resident set size to the current one
  clear_refs.flush();
  return static_cast<bool>(clear_refs);
}

int64_t PeakResidentBytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // "VmHWM:   1234 kB"
  }
  return -1;
}

}  // namespace onnxserve::testing

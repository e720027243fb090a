// The process's resident memory as Linux reports it, for tests that pin what an operation may touch where a
// run's budget cannot see it: a kernel's scratch outside tensors, sized by a request.
#pragma once

#include <cstdint>

namespace onnxserve::testing {

// Resets the resident-set high-water mark (/proc/self/clear_refs); false where the kernel does not offer it.
bool ResetPeakResident();

// The resident-set high-water mark in bytes since the last reset (VmHWM), or -1 where unavailable.
int64_t PeakResidentBytes();

// How far `fn` raised the resident-set high-water mark above what was resident before it, in bytes; -1
// where the kernel reports neither.
template <typename Fn>
int64_t ResidentGrowth(Fn fn) {
  if (!ResetPeakResident()) return -1;
  const int64_t before = PeakResidentBytes();
  fn();
  const int64_t after = PeakResidentBytes();
  return before < 0 || after < 0 ? -1 : after - before;
}

}  // namespace onnxserve::testing

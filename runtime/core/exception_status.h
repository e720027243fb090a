// The boundary where exceptions become statuses. Kernels and the loader report errors as absl::Status, but
// the standard library reports a failed allocation by throwing (std::bad_alloc, std::length_error), and so
// does Tensor's constructor for a shape past the size limits. No request and no model may take the
// process down, so the executor and the loader run their work through CatchExceptions.
#pragma once

#include <exception>
#include <new>
#include <stdexcept>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/core/memory_budget.h"
#include "runtime/core/run_limits.h"

namespace onnxserve {

// Returns fn() (an absl::Status or absl::StatusOr<T>), or a status for any std::exception it throws:
// RESOURCE_EXHAUSTED for bad_alloc and length_error (an allocation too big to make) and for a run past its
// memory budget, the run's own status for a kernel stopped by its limits (RunStopped), INTERNAL otherwise.
template <typename Fn>
auto CatchExceptions(Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const RunStopped& e) {
    return e.status();
  } catch (const MemoryBudgetExceeded& e) {
    return absl::ResourceExhaustedError(e.what());
  } catch (const std::bad_alloc& e) {
    return absl::ResourceExhaustedError(absl::StrCat("out of memory (", e.what(), ")"));
  } catch (const std::length_error& e) {
    return absl::ResourceExhaustedError(e.what());
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("unexpected exception: ", e.what()));
  }
}

}  // namespace onnxserve

#include "runtime/core/memory_budget.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace onnxserve {
namespace {

thread_local std::shared_ptr<MemoryAccount> t_current_account;

}  // namespace

MemoryBudgetExceeded::MemoryBudgetExceeded(int64_t budget, int64_t live, size_t requested)
    : message_(absl::StrCat("memory budget of ", budget, " bytes exceeded: ", requested,
                            " more bytes asked with ", live, " in use")) {}

void MemoryAccount::Charge(size_t bytes) {
  // Compare-and-swap rather than add-then-undo: two concurrent charges that do not fit together must not
  // both fail when one of them fits.
  const int64_t want = static_cast<int64_t>(std::min<size_t>(bytes, std::numeric_limits<int64_t>::max()));
  int64_t live = live_.load(std::memory_order_relaxed);
  do {
    if (want > budget_ - live) throw MemoryBudgetExceeded(budget_, live, bytes);
  } while (!live_.compare_exchange_weak(live, live + want, std::memory_order_relaxed));
  int64_t peak = peak_.load(std::memory_order_relaxed);
  while (live + want > peak && !peak_.compare_exchange_weak(peak, live + want, std::memory_order_relaxed)) {
  }
}

const std::shared_ptr<MemoryAccount>& CurrentMemoryAccount() { return t_current_account; }

ScopedMemoryAccount::ScopedMemoryAccount(std::shared_ptr<MemoryAccount> account)
    : previous_(std::exchange(t_current_account, std::move(account))) {}

ScopedMemoryAccount::~ScopedMemoryAccount() { t_current_account = std::move(previous_); }

MemoryCharge MemoryCharge::ToCurrentRun(size_t bytes) {
  MemoryCharge charge;
  if (t_current_account) {
    t_current_account->Charge(bytes);
    charge.account_ = t_current_account;
    charge.bytes_ = bytes;
  }
  return charge;
}

}  // namespace onnxserve

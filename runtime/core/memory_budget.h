// A run's memory budget: the bytes of tensor storage one inference may hold at once. The allocator charges
// every tensor buffer taken while a run is current on the thread (runtime/core/allocator.h), and gives the
// bytes back when the buffer is freed, so what is bounded is the run's peak of live tensor bytes: what a
// hostile request can make the machine hold, rather than a total that buffer reuse makes meaningless.
//
// Counted: every tensor a run creates (intermediates, outputs, kernels' scratch tensors, subgraph values),
// on the run's thread and on the intra-op workers it hands chunks to (ThreadPool::ParallelFor carries the
// current account over), and the value slots of the sequences, maps and optionals it makes (value.cc), which
// cost memory however empty their tensors are. Not counted: the run's inputs, initializers and folded constants (they exist before
// the run), characters of string elements and scratch a kernel keeps in std::vector.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>

namespace onnxserve {

// Thrown by an allocation that would take a run past its budget, before any memory is taken. A kind of
// bad_alloc, so code that survives a failed allocation survives this too; CatchExceptions
// (runtime/core/exception_status.h) reports it as RESOURCE_EXHAUSTED with this message.
class MemoryBudgetExceeded : public std::bad_alloc {
 public:
  MemoryBudgetExceeded(int64_t budget, int64_t live, size_t requested);
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

// The live tensor bytes of one run against its budget. Thread-safe: a run's intra-op workers charge it
// concurrently. Shared by the buffers it counts, which may outlive the run (its outputs).
class MemoryAccount {
 public:
  explicit MemoryAccount(int64_t budget_bytes) : budget_(budget_bytes) {}

  int64_t budget() const { return budget_; }
  int64_t live_bytes() const { return live_.load(std::memory_order_relaxed); }
  int64_t peak_bytes() const { return peak_.load(std::memory_order_relaxed); }

  // Adds `bytes` to the live bytes, or throws MemoryBudgetExceeded (leaving them unchanged) when that would
  // pass the budget.
  void Charge(size_t bytes);
  void Release(size_t bytes) { live_.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed); }

 private:
  const int64_t budget_;
  std::atomic<int64_t> live_{0};
  std::atomic<int64_t> peak_{0};
};

// The account of the run executing on this thread, or null outside a budgeted run.
const std::shared_ptr<MemoryAccount>& CurrentMemoryAccount();

// Makes `account` (may be null: no budget) the current one on this thread for the scope's lifetime, and
// restores the previous one after.
class ScopedMemoryAccount {
 public:
  explicit ScopedMemoryAccount(std::shared_ptr<MemoryAccount> account);
  ~ScopedMemoryAccount();
  ScopedMemoryAccount(const ScopedMemoryAccount&) = delete;
  ScopedMemoryAccount& operator=(const ScopedMemoryAccount&) = delete;

 private:
  std::shared_ptr<MemoryAccount> previous_;
};

// Bytes charged to the current run's account, for a deleter to give back (copyable, as shared_ptr needs
// its deleters to be; call Release once). Outside a budgeted run it charges nothing.
class MemoryCharge {
 public:
  // Throws MemoryBudgetExceeded when the current run cannot take `bytes` more.
  static MemoryCharge ToCurrentRun(size_t bytes);
  void Release() const {
    if (account_) account_->Release(bytes_);
  }

 private:
  std::shared_ptr<MemoryAccount> account_;
  size_t bytes_ = 0;
};

}  // namespace onnxserve

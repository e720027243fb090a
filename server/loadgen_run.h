// The closed loop that onnxserve load runs on each connection, whatever the protocol: the schedule of sends
// shared by the connection threads, and what each connection saw.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "server/load_options.h"

namespace onnxserve::server {

using Clock = std::chrono::steady_clock;

// Hands out send slots ("tickets") to the connection threads: bounds the count and the duration and paces
// the rate. Ticket i of a paced run is due at start + i / rps, so a slow moment is caught up, not lost.
class Schedule {
 public:
  explicit Schedule(const LoadOptions& options)
      : options_(options), start_(Clock::now()),
        end_(start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                          options.total > 0 && options.duration_seconds <= 0 ? LoadOptions::kMaxSeconds
                                                                              : options.duration_seconds))) {}

  Clock::time_point start() const { return start_; }

  // The due time of the next ticket, or nullopt when the run has sent all it may.
  std::optional<Clock::time_point> Take() {
    const int64_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (options_.total > 0 && i >= options_.total) return std::nullopt;
    const Clock::time_point due =
        options_.rps > 0 ? start_ + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(static_cast<double>(i) / options_.rps))
                         : Clock::now();
    if (due >= end_) return std::nullopt;
    return due;
  }

 private:
  const LoadOptions& options_;
  const Clock::time_point start_;
  const Clock::time_point end_;
  std::atomic<int64_t> next_{0};
};

// What one connection saw; merged into the report at the end, so threads never share a counter.
struct Tally {
  std::vector<double> ok_ms;
  std::map<int, int64_t> codes;  // responses by gRPC status code, or by HTTP status (a curl error as minus it)
  Clock::time_point last_done;

  void Record(int code, bool ok, Clock::time_point sent) {
    last_done = Clock::now();
    ++codes[code];
    if (ok) ok_ms.push_back(std::chrono::duration<double, std::milli>(last_done - sent).count());
  }
};

// One connection of a run, on a thread of its own: keeps up to `slots` calls in flight as the schedule hands
// out tickets. Subclasses speak a protocol.
class LoadConnection {
 public:
  LoadConnection(const LoadOptions& options, int slots) : options_(options), slots_(slots) {
    tally_.ok_ms.reserve(options.total > 0 ? static_cast<size_t>(options.total) : 4096);
  }
  virtual ~LoadConnection() = default;

  // Returns when the schedule has no more tickets and every call sent has completed.
  void Run(Schedule& schedule) {
    int in_flight = 0;
    std::optional<Clock::time_point> due = schedule.Take();
    while (due || in_flight > 0) {
      while (due && in_flight < slots_ && *due <= Clock::now()) {
        Send();
        ++in_flight;
        due = schedule.Take();
      }
      // Wake for the next completion, or when the next paced send is due if a slot is free for it.
      in_flight -= Wait(due && in_flight < slots_ ? *due : Clock::now() + std::chrono::seconds(1));
    }
  }

  const Tally& tally() const { return tally_; }

 protected:
  // Starts a call.
  virtual void Send() = 0;
  // Waits until `until` at most for a call to complete; records the completed ones in tally_ and returns how
  // many there were.
  virtual int Wait(Clock::time_point until) = 0;

  const LoadOptions& options_;
  Tally tally_;

 private:
  const int slots_;
};

}  // namespace onnxserve::server

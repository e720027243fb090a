#include "server/batching/scheduler.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "runtime/core/checked_size.h"
#include "runtime/core/exception_status.h"
#include "server/batching/arrival_forecast.h"

namespace onnxserve::server {
namespace {

// A request waiting for, or in, a batch.
struct QueuedRequest {
  ServableRequest request;
  ServableDone done;

  const std::vector<Tensor>& inputs() const { return request.inputs; }
  int64_t rows() const { return request.rows; }
  absl::Time deadline() const { return request.control.deadline; }
  bool Cancelled() const { return request.control.cancelled && request.control.cancelled(); }
  void Answer(absl::StatusOr<std::vector<Tensor>> outputs, ExecutionTiming timing = {}) {
    done({std::move(outputs), timing});
  }
};

using Batch = std::vector<std::unique_ptr<QueuedRequest>>;

// The answer of `r` at `now` when its own limits have ended it (scheduler.h: the deadline first), `stage` saying
// where it was; nullopt while it still wants its answer.
std::optional<absl::Status> OwnLimitReached(const QueuedRequest& r, absl::Time now, absl::string_view model,
                                            absl::string_view stage) {
  if (r.deadline() <= now) {
    return absl::DeadlineExceededError(absl::StrCat("request to model \"", model, "\" timed out ", stage));
  }
  if (r.Cancelled()) return absl::CancelledError("request cancelled by the client");
  return std::nullopt;
}

// A batch's run stopped by its requests' limits (all past their deadlines or cancelled) or by the model's
// execution timeout: its error says so and quotes none of their data. Run again one by one, a batch stopped
// by the execution timeout would hold the instance for one timeout per request.
bool StoppedByItsLimits(const absl::Status& status) {
  return absl::IsDeadlineExceeded(status) || absl::IsCancelled(status);
}

// True when the two requests' inputs agree on every dimension but the first.
bool SameItemShapes(const QueuedRequest& a, const QueuedRequest& b) {
  for (size_t i = 0; i < a.inputs().size(); ++i) {
    const Shape& x = a.inputs()[i].shape();
    const Shape& y = b.inputs()[i].shape();
    if (x.size() != y.size() || !std::equal(x.begin() + 1, x.end(), y.begin() + 1)) return false;
  }
  return true;
}

// Whether the inputs of `head` with `rows` rows stay within the per-tensor limits: requests within them one
// by one need not be together, and their batch's tensors must be made.
bool BatchFitsTheLimits(const QueuedRequest& head, int64_t rows) {
  for (const Tensor& input : head.inputs()) {
    Shape shape = input.shape();
    shape[0] = rows;
    if (!CheckedByteSize(input.dtype(), shape).ok()) return false;
  }
  return true;
}

// Concatenates the requests' input `index` on dim 0.
Tensor ConcatInput(const Batch& batch, size_t index, int64_t rows) {
  const Tensor& first = batch[0]->inputs()[index];
  Shape shape = first.shape();
  shape[0] = rows;
  Tensor out(first.dtype(), shape);
  if (first.dtype() == DataType::kString) {
    std::string* dst = out.data<std::string>();
    for (const auto& r : batch) {
      for (const auto& s : r->inputs()[index].values<std::string>()) *dst++ = s;
    }
    return out;
  }
  char* dst = static_cast<char*>(out.raw_data());
  for (const auto& r : batch) {
    const Tensor& t = r->inputs()[index];
    std::memcpy(dst, t.raw_data(), t.ByteSize());
    dst += t.ByteSize();
  }
  return out;
}

// Rows [begin, begin + rows) of `full`, sharing its storage.
Tensor SliceRows(const std::shared_ptr<Tensor>& full, int64_t begin, int64_t rows) {
  Shape shape = full->shape();
  const int64_t row_elements = full->dim(0) == 0 ? 0 : full->NumElements() / full->dim(0);
  shape[0] = rows;
  const size_t element_size =
      full->dtype() == DataType::kString ? sizeof(std::string) : ElementSize(full->dtype());
  char* base = static_cast<char*>(full->raw_data()) + begin * row_elements * element_size;
  return Tensor::Wrap(full->dtype(), std::move(shape), full, base);
}

}  // namespace

// Everything the workers touch lives here, shared with them, so a detached worker never outlives it.
struct Scheduler::State {
  SchedulerOptions options;
  std::shared_ptr<Servable> model;
  VersionStats* stats;
  ServerMetrics* metrics;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::unique_ptr<QueuedRequest>> queue;
  ArrivalForecast forecast;  // guarded by mu
  bool stopping = false;
  int busy = 0;  // instances running a batch, on a worker or on the thread that received the request
  absl::Time freed_at = absl::InfinitePast();  // when an instance last became free while all were busy

  int Instances() const { return std::max(1, options.instances); }
  bool RunsInline() const;
  void Release(absl::Duration took);
  static void RunInline(std::shared_ptr<State> state, std::unique_ptr<QueuedRequest> request);
  void Work();
  void PublishDepth() {
    if (metrics) metrics->SetQueueDepth(options.model, options.version, static_cast<int>(queue.size()));
  }
  Batch RemoveDead(absl::Time now, std::vector<absl::Status>& why);
  std::vector<size_t> Gather() const;
  bool Full(const std::vector<size_t>& picks) const;
  std::vector<size_t> TrimToPreferred(std::vector<size_t> picks) const;
  Batch Collect(std::unique_lock<std::mutex>& lock, absl::Time free_since);
  ServableRequest BatchRequest(const Batch& live, int64_t rows) const;
  absl::Duration Execute(Batch batch);
  absl::Duration ExecuteEachAlone(Batch batch);
  void AnswerAfterRun(QueuedRequest& r, absl::StatusOr<std::vector<Tensor>> outputs, const ExecutionTiming& timing);
  void Fail(Batch batch, const absl::Status& status, const ExecutionTiming& timing);
};

// Requests past their deadline or cancelled, taken out of the queue; `why` gets the answer of each.
Batch Scheduler::State::RemoveDead(absl::Time now, std::vector<absl::Status>& why) {
  Batch dead;
  for (auto it = queue.begin(); it != queue.end();) {
    if (std::optional<absl::Status> reached = OwnLimitReached(**it, now, options.model, "in the queue")) {
      why.push_back(*std::move(reached));
      dead.push_back(std::move(*it));
      it = queue.erase(it);
    } else {
      ++it;
    }
  }
  return dead;
}

// Queue positions of the requests that can join the head's batch, oldest first, within max_batch_size and
// the per-tensor limits.
std::vector<size_t> Scheduler::State::Gather() const {
  std::vector<size_t> picks = {0};
  int64_t rows = queue[0]->rows();
  for (size_t i = 1; i < queue.size() && rows < options.max_batch_size; ++i) {
    if (rows + queue[i]->rows() <= options.max_batch_size && SameItemShapes(*queue[0], *queue[i]) &&
        BatchFitsTheLimits(*queue[0], rows + queue[i]->rows())) {
      picks.push_back(i);
      rows += queue[i]->rows();
    }
  }
  return picks;
}

// When the gathered rows match no preferred size, keeps the longest prefix that fits the largest preferred
// size it can reach (all of it when none is reachable).
std::vector<size_t> Scheduler::State::TrimToPreferred(std::vector<size_t> picks) const {
  const auto& preferred = options.preferred_batch_sizes;
  int64_t rows = 0;
  for (size_t i : picks) rows += queue[i]->rows();
  if (preferred.empty() || std::find(preferred.begin(), preferred.end(), rows) != preferred.end()) return picks;
  int64_t target = 0;
  for (int64_t p : preferred) {
    if (p <= rows) target = std::max(target, p);
  }
  if (target == 0) return picks;
  size_t keep = 0;
  for (int64_t sum = 0; keep < picks.size() && sum + queue[picks[keep]]->rows() <= target; ++keep) {
    sum += queue[picks[keep]]->rows();
  }
  picks.resize(std::max<size_t>(keep, 1));
  return picks;
}

// True when the picked requests make a batch that should leave at once: max_batch_size or a preferred size.
bool Scheduler::State::Full(const std::vector<size_t>& picks) const {
  int64_t rows = 0;
  for (size_t i : picks) rows += queue[i]->rows();
  const auto& preferred = options.preferred_batch_sizes;
  return rows >= options.max_batch_size || std::find(preferred.begin(), preferred.end(), rows) != preferred.end();
}

// Takes the head's batch out of the queue for a worker free since `free_since`. The batch leaves at once
// unless holding it for company pays (ArrivalForecast), and then only until it is full, the forecast turns,
// its oldest request has been held max_queue_delay past the moment an instance could have run it, or that
// request's deadline. Waits release the lock; returns an empty batch when the head changed meanwhile (another
// worker took it, or it was cancelled), and the caller starts over.
Batch Scheduler::State::Collect(std::unique_lock<std::mutex>& lock, absl::Time free_since) {
  Batch batch;
  if (options.max_batch_size == 0) {
    batch.push_back(std::move(queue.front()));
    queue.pop_front();
    return batch;
  }
  const QueuedRequest* head = queue.front().get();
  // The delay bounds time spent held back for company, not time spent waiting for a busy instance.
  const absl::Time hold_until = std::max(head->request.arrival, free_since) + options.max_queue_delay;
  std::vector<size_t> picks;
  while (true) {
    picks = Gather();
    const auto queued = static_cast<int64_t>(picks.size());
    const absl::Time now = absl::Now();
    if (Full(picks) || stopping || now >= hold_until || head->deadline() <= now ||
        !forecast.WorthHolding(queued, now)) {
      break;
    }
    cv.wait_until(lock, absl::ToChronoTime(std::min({hold_until, head->deadline(), forecast.HoldingPaysUntil(queued)})));
    if (queue.empty() || queue.front().get() != head) return batch;
  }
  picks = TrimToPreferred(std::move(picks));
  for (size_t i : picks) batch.push_back(std::move(queue[i]));
  for (auto it = picks.rbegin(); it != picks.rend(); ++it) queue.erase(queue.begin() + static_cast<long>(*it));
  return batch;
}

// Answers a request whose batch ran: with its own end when its deadline passed or it was cancelled while the
// batch ran, whatever the batch's run returned (a run stopped by the batch's limits returns one code for all).
void Scheduler::State::AnswerAfterRun(QueuedRequest& r, absl::StatusOr<std::vector<Tensor>> outputs,
                                      const ExecutionTiming& timing) {
  if (std::optional<absl::Status> reached = OwnLimitReached(r, absl::Now(), options.model, "while its batch ran")) {
    return r.Answer(*std::move(reached), timing);
  }
  r.Answer(std::move(outputs), timing);
}

void Scheduler::State::Fail(Batch batch, const absl::Status& status, const ExecutionTiming& timing) {
  for (auto& r : batch) AnswerAfterRun(*r, status, timing);
}

// True when a request should run at once on the thread that received it: the model does not batch, nothing
// is queued ahead of it and an instance is free. It then costs no hand-off to a worker (a wake-up and a
// context switch). A batching model hands even a lone request to a worker: run inline, the first request of
// each burst ran alone where the worker's wake-up had let a few more join it (at 64 in flight, 4-5x the
// one-row executions and more CPU per request than the hand-off saved).
bool Scheduler::State::RunsInline() const {
  return options.max_batch_size == 0 && !stopping && queue.empty() && busy < Instances();
}

// An instance finished a batch that took `took` (zero when none ran). Called with mu held.
void Scheduler::State::Release(absl::Duration took) {
  if (busy == Instances()) freed_at = absl::Now();
  --busy;
  if (took > absl::ZeroDuration()) forecast.OnExecution(took);
}

void Scheduler::State::Work() {
  std::unique_lock<std::mutex> lock(mu);
  absl::Time free_since = absl::Now();  // when this worker last finished a batch
  while (true) {
    // An instance taken by a request running inline is not free for a worker's batch.
    cv.wait(lock, [&] { return (stopping && queue.empty()) || (!queue.empty() && busy < Instances()); });
    if (queue.empty()) return;
    std::vector<absl::Status> why;
    Batch dead = RemoveDead(absl::Now(), why);
    if (!dead.empty()) {
      PublishDepth();
      lock.unlock();
      for (size_t i = 0; i < dead.size(); ++i) dead[i]->Answer(why[i]);
      dead.clear();
      lock.lock();
      continue;
    }
    // The instance this worker is about to use may have been busy with inline requests since free_since.
    Batch batch = Collect(lock, std::max(free_since, freed_at));
    if (batch.empty()) continue;
    ++busy;
    PublishDepth();
    lock.unlock();
    const absl::Duration took = Execute(std::move(batch));  // may destroy the Scheduler; State stays alive
    lock.lock();
    free_since = absl::Now();
    Release(took);
  }
}

// The batch as one request to the model: inputs concatenated on dim 0 (as they are for a lone request), and a
// control under which it runs while any of its requests still wants the answer.
ServableRequest Scheduler::State::BatchRequest(const Batch& live, int64_t rows) const {
  ServableRequest request;
  request.rows = rows;
  if (live.size() == 1) {
    request.inputs = live[0]->inputs();
  } else {
    for (size_t i = 0; i < live[0]->inputs().size(); ++i) request.inputs.push_back(ConcatInput(live, i, rows));
  }
  request.control.deadline = absl::InfinitePast();
  for (const auto& r : live) request.control.deadline = std::max(request.control.deadline, r->deadline());
  // `live` outlives the run: RunAndWait returns only once the model has answered.
  request.control.cancelled = [&live] {
    return std::all_of(live.begin(), live.end(), [](const auto& r) { return r->Cancelled(); });
  };
  return request;
}

// Any other failure of a batch may be one request's doing (an index out of range, a run past the memory
// budget) and its message may quote that request's values: each request runs alone instead, so that it gets
// its own rows or its own error, never another's. Returns how long the runs took.
absl::Duration Scheduler::State::ExecuteEachAlone(Batch batch) {
  absl::Duration took = absl::ZeroDuration();
  for (auto& r : batch) {
    Batch alone;
    alone.push_back(std::move(r));
    took += Execute(std::move(alone));
  }
  return took;
}

// Returns how long the model execution took, zero when none ran.
absl::Duration Scheduler::State::Execute(Batch batch) {
  const absl::Time start = absl::Now();
  Batch live;
  for (auto& r : batch) {
    if (std::optional<absl::Status> reached = OwnLimitReached(*r, start, options.model, "before compute")) {
      r->Answer(*std::move(reached));
    } else {
      live.push_back(std::move(r));
    }
  }
  if (live.empty()) return absl::ZeroDuration();
  int64_t rows = 0;
  for (const auto& r : live) rows += r->rows();

  // On this worker thread an exception (a batch's inputs too big to concatenate, a servable that throws)
  // would end the process and leave the batch unanswered: it becomes the batch's answer instead.
  absl::Time computed_input = start;
  absl::StatusOr<std::vector<Tensor>> outputs = CatchExceptions([&]() -> absl::StatusOr<std::vector<Tensor>> {
    ServableRequest merged = BatchRequest(live, rows);
    computed_input = absl::Now();
    return RunAndWait(*model, std::move(merged)).outputs;
  });
  const absl::Time computed = absl::Now();
  if (!outputs.ok()) {
    if (live.size() > 1 && !StoppedByItsLimits(outputs.status())) {
      return (computed - start) + ExecuteEachAlone(std::move(live));
    }
    Fail(std::move(live), outputs.status(), {start, computed - start, rows});
    return computed - start;
  }

  std::vector<std::vector<Tensor>> split(live.size());
  if (live.size() == 1) {
    split[0] = *std::move(outputs);
  } else {
    for (size_t o = 0; o < outputs->size(); ++o) {
      auto full = std::make_shared<Tensor>((*outputs)[o]);
      if (full->rank() == 0 || full->dim(0) != rows) {
        // Not split by rows: a model that does not batch as its config says. Alone, each request gets what
        // the model answers it.
        return (computed - start) + ExecuteEachAlone(std::move(live));
      }
      int64_t begin = 0;
      for (size_t r = 0; r < live.size(); ++r) {
        split[r].push_back(SliceRows(full, begin, live[r]->rows()));
        begin += live[r]->rows();
      }
    }
  }
  const absl::Time done = absl::Now();
  stats->RecordExecution(rows, computed_input - start, computed - computed_input, done - computed);
  if (metrics) metrics->OnBatch(options.model, options.version, static_cast<int>(rows),
                                absl::ToDoubleSeconds(done - start));
  for (size_t r = 0; r < live.size(); ++r) {
    const absl::Time enqueued = live[r]->request.arrival;
    stats->RecordRequestCompute(start - enqueued, computed_input - start, computed - computed_input,
                                done - computed);
    if (metrics) metrics->OnQueue(options.model, options.version, absl::ToDoubleSeconds(start - enqueued));
    AnswerAfterRun(*live[r], std::move(split[r]), {start, done - start, rows});
  }
  return done - start;
}

Scheduler::Scheduler(SchedulerOptions options, std::shared_ptr<Servable> model, VersionStats* stats,
                     ServerMetrics* metrics)
    : state_(std::make_shared<State>()) {
  state_->options = std::move(options);
  state_->model = std::move(model);
  state_->stats = stats;
  state_->metrics = metrics;
  // A thread that fails to start throws; the ones already running must be stopped before the exception
  // leaves, since destroying a joinable std::thread ends the process.
  try {
    for (int i = 0; i < std::max(1, state_->options.instances); ++i) {
      workers_.emplace_back([state = state_] { state->Work(); });
    }
  } catch (...) {
    StopWorkers();
    throw;
  }
}

Scheduler::~Scheduler() { StopWorkers(); }

void Scheduler::StopWorkers() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stopping = true;
  }
  state_->cv.notify_all();
  for (auto& worker : workers_) {
    if (worker.get_id() == std::this_thread::get_id()) {
      worker.detach();
    } else {
      worker.join();
    }
  }
}

// Runs `request` on the caller's thread on the instance RunsInline reserved for it, then frees the instance and
// wakes the workers for what arrived meanwhile. `state` is held here because the request's answer may destroy
// the Scheduler.
void Scheduler::State::RunInline(std::shared_ptr<State> state, std::unique_ptr<QueuedRequest> request) {
  absl::Duration took = absl::ZeroDuration();
  // Frees the instance even when the run throws (the protocol answers the call): a lost instance would stall
  // the queue for good.
  auto release = absl::MakeCleanup([&state, &took] {
    bool queued = false;
    {
      std::lock_guard<std::mutex> lock(state->mu);
      state->Release(took);
      queued = !state->queue.empty();
    }
    // An idle worker waits for queued requests only (a stop notifies it itself): waking it for an empty queue
    // cost a context switch for every request that ran inline.
    if (queued) state->cv.notify_all();
  });
  Batch batch;
  batch.push_back(std::move(request));
  took = state->Execute(std::move(batch));
}

void Scheduler::Enqueue(ServableRequest servable_request, ServableDone done) {
  auto request = std::make_unique<QueuedRequest>(QueuedRequest{std::move(servable_request), std::move(done)});
  const uint32_t level = request->request.priority_level;
  const auto& limits = state_->options.max_queue_sizes;
  const int64_t limit = level >= 1 && level <= limits.size() ? limits[level - 1] : limits.back();
  bool wake_workers = false;
  {
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->forecast.OnArrival(absl::Now());
    if (state_->RunsInline()) {
      ++state_->busy;
      lock.unlock();
      return State::RunInline(state_, std::move(request));
    }
    auto& queue = state_->queue;
    // The queue is sorted by level, so a level's requests are one run of it.
    auto by_level = [](const std::unique_ptr<QueuedRequest>& r, uint32_t l) { return r->request.priority_level < l; };
    auto by_level_after = [](uint32_t l, const std::unique_ptr<QueuedRequest>& r) {
      return l < r->request.priority_level;
    };
    const auto first = std::lower_bound(queue.begin(), queue.end(), level, by_level);
    const auto end = std::upper_bound(first, queue.end(), level, by_level_after);
    if (limit == 0 || end - first < limit) {
      queue.insert(end, std::move(request));
      state_->PublishDepth();
      // A worker can act on the arrival only with an instance free (a worker collecting a batch has not taken
      // its instance yet). While every instance is busy the one that frees first notifies, or takes the queue
      // itself; a wake-up now would find nothing to do and cost a context switch.
      wake_workers = state_->busy < state_->Instances();
    }
  }
  if (request) {
    const bool leveled = limits.size() > 1;
    request->Answer(absl::ResourceExhaustedError(absl::StrCat(
        "model \"", state_->options.model, "\" version ", state_->options.version, ": queue full (max_queue_size ",
        limit, leveled ? absl::StrCat(" of priority level ", level) : "", "), retry later")));
    return;
  }
  if (wake_workers) state_->cv.notify_all();
}

}  // namespace onnxserve::server

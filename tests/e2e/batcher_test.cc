// The batcher's policy without a server: when a free instance holds requests back for company
// (ArrivalForecast, on made-up times) and which batches the Scheduler forms (counted through VersionStats'
// batch statistics). No assertion depends on how fast the machine is: waits for answers are bounded by
// seconds only to fail instead of hanging.
#include "server/batching/scheduler.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <future>
#include <map>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/core/checked_size.h"
#include "server/batching/arrival_forecast.h"

namespace onnxserve::server {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'000'000);

// A forecast that saw 1 ms executions and `arrivals` requests 10 us apart from kStart; returns the last
// arrival's time.
absl::Time BurstAfterMillisecondExecutions(ArrivalForecast& forecast, int arrivals) {
  forecast.OnExecution(absl::Milliseconds(1));
  for (int i = 0; i < arrivals; ++i) forecast.OnArrival(kStart + i * absl::Microseconds(10));
  return kStart + (arrivals - 1) * absl::Microseconds(10);
}

// ---- ArrivalForecast ------------------------------------------------------------------------------------

TEST(ArrivalForecastTest, NothingIsHeldBeforeAnythingWasSeen) {
  ArrivalForecast forecast;
  EXPECT_FALSE(forecast.WorthHolding(1, kStart));
  forecast.OnArrival(kStart);
  EXPECT_FALSE(forecast.WorthHolding(1, kStart));
  forecast.OnExecution(absl::Milliseconds(5));  // an execution, but one arrival gives no rate yet
  EXPECT_FALSE(forecast.WorthHolding(1, kStart));
}

// A client that sends its next request when the answer comes never overlaps an execution: arrivals are
// at least an execution apart, so a lone request is never held.
TEST(ArrivalForecastTest, OneClientAtATimeIsNeverHeld) {
  ArrivalForecast forecast;
  absl::Time now = kStart;
  for (int i = 0; i < 100; ++i) {
    forecast.OnArrival(now);
    EXPECT_FALSE(forecast.WorthHolding(1, now)) << "request " << i;
    forecast.OnExecution(absl::Microseconds(500));
    now += absl::Microseconds(600);  // the execution, then the round trip to the client
  }
}

// Arrivals every 10 us against 1 ms executions: about 100 requests come during one execution, so a few
// queued ones wait for them, and a hundred or more do not.
TEST(ArrivalForecastTest, ABurstIsHeldUntilItOutnumbersWhatOneExecutionBrings) {
  ArrivalForecast forecast;
  const absl::Time last = BurstAfterMillisecondExecutions(forecast, 64);
  EXPECT_NEAR(forecast.ExpectedDuringExecution(last), 100, 1);
  EXPECT_TRUE(forecast.WorthHolding(1, last));
  EXPECT_TRUE(forecast.WorthHolding(50, last));
  EXPECT_FALSE(forecast.WorthHolding(100, last));
}

// Once arrivals stop, the silence counts as the gap: 4 queued requests stop waiting after a quarter of an
// execution without an arrival, and HoldingPaysUntil says exactly when.
TEST(ArrivalForecastTest, SilenceEndsTheHold) {
  ArrivalForecast forecast;
  const absl::Time last = BurstAfterMillisecondExecutions(forecast, 16);
  EXPECT_EQ(forecast.HoldingPaysUntil(4), last + absl::Microseconds(250));
  EXPECT_TRUE(forecast.WorthHolding(4, last + absl::Microseconds(240)));
  EXPECT_FALSE(forecast.WorthHolding(4, last + absl::Microseconds(260)));
}

// An hour without requests must not make the next burst look slow for hundreds of arrivals: a gap counts
// as at most two executions, so ten fast arrivals bring the average back under one execution.
TEST(ArrivalForecastTest, ALongIdleSpellIsForgottenWithinAFewArrivals) {
  ArrivalForecast forecast;
  forecast.OnExecution(absl::Milliseconds(1));
  forecast.OnArrival(kStart);
  absl::Time now = kStart + absl::Hours(1);
  for (int i = 0; i < 10; ++i, now += absl::Microseconds(10)) forecast.OnArrival(now);
  EXPECT_TRUE(forecast.WorthHolding(1, now - absl::Microseconds(10)));
}

// ---- Scheduler ------------------------------------------------------------------------------------------

constexpr auto kAnswerWithin = std::chrono::seconds(5);

// A servable that answers each run with what `run` returns for its inputs, on the calling thread.
class FnServable final : public Servable {
 public:
  using Fn = std::function<absl::StatusOr<std::vector<Tensor>>(const std::vector<Tensor>& inputs)>;
  explicit FnServable(Fn run) : run_(std::move(run)) {}
  void Run(ServableRequest request, ServableDone done) override { done({run_(request.inputs), {}}); }

 private:
  Fn run_;
};

// A model whose executions return their input, and whose first execution can be held until released.
class GatedModel {
 public:
  explicit GatedModel(bool hold_first) {
    if (!hold_first) release_.set_value();
  }
  std::shared_ptr<Servable> Fn() {
    return std::make_shared<FnServable>([this](const std::vector<Tensor>& inputs) -> absl::StatusOr<std::vector<Tensor>> {
      for (float v : inputs[0].values<float>()) seen_.push_back(v);
      if (!first_started_) {
        first_started_ = true;
        started_.set_value();
        release_future_.wait();
      }
      return inputs;
    });
  }
  void WaitUntilFirstRuns() { started_.get_future().wait(); }
  void Release() { release_.set_value(); }
  // The values of every row run, in the order the rows ran; read once every answer has arrived.
  const std::vector<float>& seen() const { return seen_; }

 private:
  std::vector<float> seen_;
  bool first_started_ = false;  // touched by one run at a time: there is one instance
  std::promise<void> started_;
  std::promise<void> release_;
  std::shared_future<void> release_future_ = release_.get_future().share();
};

SchedulerOptions OneInstance(int64_t max_batch_size, absl::Duration max_queue_delay,
                             std::vector<int64_t> preferred = {}) {
  SchedulerOptions options;
  options.model = "m";
  options.version = "1";
  options.max_batch_size = max_batch_size;
  options.preferred_batch_sizes = std::move(preferred);
  options.max_queue_delay = max_queue_delay;
  return options;
}

// Queues a one-row request holding `value`; the future gets the value it was answered with.
std::future<absl::StatusOr<float>> Send(Scheduler& scheduler, float value, uint32_t priority_level = 1,
                                        CallControl control = {}) {
  auto answer = std::make_shared<std::promise<absl::StatusOr<float>>>();
  ServableRequest request;
  request.inputs = {Tensor::FromVector<float>({1, 1}, {value})};
  request.priority_level = priority_level;
  request.control = std::move(control);
  std::future<absl::StatusOr<float>> future = answer->get_future();
  scheduler.Enqueue(std::move(request), [answer](ServableResponse response) {
    if (!response.outputs.ok()) return answer->set_value(response.outputs.status());
    answer->set_value((*response.outputs)[0].data<float>()[0]);
  });
  return future;
}

// Send from a thread of its own, as from a protocol's thread: a request that finds the instance idle runs on
// the thread that sends it, so one the gated model holds must not be sent by the test's thread.
std::future<absl::StatusOr<float>> SendAside(Scheduler& scheduler, float value, uint32_t priority_level = 1,
                                             CallControl control = {}) {
  return std::async(std::launch::async, [&scheduler, value, priority_level, control = std::move(control)] {
    return Send(scheduler, value, priority_level, control).get();
  });
}

void ExpectAnswered(std::future<absl::StatusOr<float>>& answer, float value) {
  ASSERT_EQ(answer.wait_for(kAnswerWithin), std::future_status::ready) << "request " << value << " unanswered";
  absl::StatusOr<float> got = answer.get();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, value);
}

// Sends request 0, which the gated model holds, then requests 1..queued behind it; releases the model and
// checks that every request got its own value back.
void SendBehindABusyInstance(Scheduler& scheduler, GatedModel& model, int queued) {
  std::vector<std::future<absl::StatusOr<float>>> answers;
  answers.push_back(SendAside(scheduler, 0));
  model.WaitUntilFirstRuns();
  for (int i = 1; i <= queued; ++i) answers.push_back(Send(scheduler, static_cast<float>(i)));
  model.Release();
  for (int i = 0; i <= queued; ++i) ExpectAnswered(answers[static_cast<size_t>(i)], static_cast<float>(i));
}

// Executions by batch size (rows).
std::map<uint64_t, uint64_t> Executions(const VersionStats& stats) {
  std::map<uint64_t, uint64_t> by_size;
  const inference::ModelStatistics snapshot = stats.Snapshot();
  for (const auto& b : snapshot.batch_stats()) by_size[b.batch_size()] = b.compute_infer().count();
  return by_size;
}

// A batch that throws on the worker thread (a servable's allocation failing, as a batch's concatenated
// inputs can) answers its requests with the error; it ended the process before, unanswered.
TEST(SchedulerTest, AnExceptionWhileABatchRunsIsItsRequestsAnswer) {
  std::promise<void> started, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> first{true};
  auto model = std::make_shared<FnServable>([&](const std::vector<Tensor>& inputs) -> absl::StatusOr<std::vector<Tensor>> {
    if (!first.exchange(false)) throw std::bad_alloc();
    started.set_value();
    released.wait();
    return inputs;
  });
  VersionStats stats("m", "1");
  Scheduler scheduler(OneInstance(8, absl::Seconds(10)), model, &stats, nullptr);
  std::future<absl::StatusOr<float>> held = SendAside(scheduler, 0);
  started.get_future().wait();
  std::future<absl::StatusOr<float>> queued[] = {Send(scheduler, 1), Send(scheduler, 2)};
  release.set_value();
  ExpectAnswered(held, 0);
  for (auto& answer : queued) {
    ASSERT_EQ(answer.wait_for(kAnswerWithin), std::future_status::ready);
    EXPECT_EQ(answer.get().status().code(), absl::StatusCode::kResourceExhausted);
  }
}

// What `queued` one-row requests were answered when they ran as one batch of `run`: they queue behind a request
// (0) whose run is held, and leave together once it is released. `largest_run` gets the most rows `run` saw.
std::vector<absl::StatusOr<float>> AnswersOfOneBatch(const FnServable::Fn& run, const std::vector<float>& queued,
                                                     int64_t& largest_run) {
  std::promise<void> started, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> first{true};
  std::atomic<int64_t> largest{0};
  auto model = std::make_shared<FnServable>([&](const std::vector<Tensor>& inputs) {
    if (first.exchange(false)) {
      started.set_value();
      released.wait();
    }
    largest = std::max(largest.load(), inputs[0].dim(0));
    return run(inputs);
  });
  VersionStats stats("m", "1");
  Scheduler scheduler(OneInstance(8, absl::Seconds(10)), model, &stats, nullptr);
  std::future<absl::StatusOr<float>> held = SendAside(scheduler, 0);
  started.get_future().wait();
  std::vector<std::future<absl::StatusOr<float>>> answers;
  for (float value : queued) answers.push_back(Send(scheduler, value));
  release.set_value();
  ExpectAnswered(held, 0);
  std::vector<absl::StatusOr<float>> got;
  for (auto& answer : answers) {
    const bool ready = answer.wait_for(kAnswerWithin) == std::future_status::ready;
    got.push_back(ready ? answer.get() : absl::DeadlineExceededError("unanswered"));
  }
  largest_run = largest;
  return got;
}

// A batch that fails for one request's rows (a model's error names the offending value, here -7) answers each
// request alone: the others get their own rows, and no request gets an error about another's data. Answered
// with the batch's error, requests 1 and 2 learnt a value request -7 sent.
TEST(SchedulerTest, ABatchThatFailsAnswersEachOfItsRequestsWithItsOwnRunAlone) {
  auto refuses_negative_rows = [](const std::vector<Tensor>& inputs) -> absl::StatusOr<std::vector<Tensor>> {
    for (float v : inputs[0].values<float>()) {
      if (v < 0) return absl::InvalidArgumentError(absl::StrCat("row value ", v, " is refused"));
    }
    return inputs;
  };
  int64_t largest_run = 0;
  const std::vector<absl::StatusOr<float>> got = AnswersOfOneBatch(refuses_negative_rows, {1, -7, 2}, largest_run);
  EXPECT_EQ(largest_run, 3) << "the three requests must have run as one batch first";
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].value_or(-1), 1) << got[0].status();
  EXPECT_EQ(got[2].value_or(-1), 2) << got[2].status();
  EXPECT_EQ(got[1].status(), absl::InvalidArgumentError("row value -7 is refused"));
}

// A model whose output does not follow the batch's rows (here a sum over them, [1, 1] whatever the batch)
// cannot be split: each request runs alone and gets its own answer, not INTERNAL and not the others' sum.
TEST(SchedulerTest, OutputsThatDoNotSplitByRowsAnswerEachRequestWithItsOwnRunAlone) {
  auto sums_rows = [](const std::vector<Tensor>& inputs) -> absl::StatusOr<std::vector<Tensor>> {
    float sum = 0;
    for (float v : inputs[0].values<float>()) sum += v;
    return std::vector<Tensor>{Tensor::FromVector<float>({1, 1}, {sum})};
  };
  int64_t largest_run = 0;
  const std::vector<absl::StatusOr<float>> got = AnswersOfOneBatch(sums_rows, {1, 2, 3}, largest_run);
  EXPECT_EQ(largest_run, 3) << "the three requests must have run as one batch first";
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].value_or(-1), static_cast<float>(i + 1)) << got[i].status();
}

// The configured delay is 10 s: every answer within 5 s shows that no request waited it out.
TEST(SchedulerTest, ALoneRequestRunsAtOnceWhateverTheQueueDelay) {
  GatedModel model(/*hold_first=*/false);
  VersionStats stats("m", "1");
  Scheduler scheduler(OneInstance(8, absl::Seconds(10)), model.Fn(), &stats, nullptr);
  for (int i = 0; i < 20; ++i) {
    auto answer = Send(scheduler, static_cast<float>(i));
    ExpectAnswered(answer, static_cast<float>(i));
  }
  EXPECT_EQ(Executions(stats), (std::map<uint64_t, uint64_t>{{1, 20}}));
}

// While the one instance runs a request, the requests that arrive meanwhile form the next batch, whether
// it fills max_batch_size, leaves at once (delay 0), or could wait 10 s for more that never come.
TEST(SchedulerTest, RequestsArrivingWhileTheInstanceIsBusyAreBatchedTogether) {
  struct Case {
    int64_t max_batch_size;
    absl::Duration delay;
  };
  for (const Case& c : {Case{4, absl::Seconds(10)}, Case{8, absl::ZeroDuration()}, Case{8, absl::Seconds(10)}}) {
    SCOPED_TRACE(absl::StrCat("max_batch_size ", c.max_batch_size, " delay ", absl::FormatDuration(c.delay)));
    GatedModel model(/*hold_first=*/true);
    VersionStats stats("m", "1");
    Scheduler scheduler(OneInstance(c.max_batch_size, c.delay), model.Fn(), &stats, nullptr);
    SendBehindABusyInstance(scheduler, model, 4);
    EXPECT_EQ(Executions(stats), (std::map<uint64_t, uint64_t>{{1, 1}, {4, 1}}));
  }
}

// The threads a lone request ran and was answered on.
struct Threads {
  std::thread::id ran_on, answered_on;
};

Threads SendAlone(int64_t max_batch_size) {
  Threads threads;
  auto model = std::make_shared<FnServable>([&threads](const std::vector<Tensor>& inputs) {
    threads.ran_on = std::this_thread::get_id();
    return absl::StatusOr<std::vector<Tensor>>(inputs);
  });
  VersionStats stats("m", "1");
  Scheduler scheduler(OneInstance(max_batch_size, absl::ZeroDuration()), model, &stats, nullptr);
  ServableRequest request;
  request.inputs = {Tensor::FromVector<float>({1, 1}, {7})};
  std::promise<void> answered;
  scheduler.Enqueue(std::move(request), [&](ServableResponse response) {
    EXPECT_TRUE(response.outputs.ok()) << response.outputs.status();
    threads.answered_on = std::this_thread::get_id();
    answered.set_value();
  });
  EXPECT_EQ(answered.get_future().wait_for(kAnswerWithin), std::future_status::ready);
  return threads;
}

// Without batching, a request that finds the queue empty and the instance idle runs on the thread that
// enqueues it and is answered there, before Enqueue returns: no hand-off to a worker.
TEST(SchedulerTest, WithoutBatchingARequestFindingTheInstanceIdleRunsOnTheCallersThread) {
  const Threads threads = SendAlone(/*max_batch_size=*/0);
  EXPECT_EQ(threads.ran_on, std::this_thread::get_id());
  EXPECT_EQ(threads.answered_on, std::this_thread::get_id());
}

// A batching model hands even a lone request to a worker (scheduler.cc, RunsInline).
TEST(SchedulerTest, WithBatchingALoneRequestRunsOnAWorker) {
  const Threads threads = SendAlone(/*max_batch_size=*/8);
  EXPECT_NE(threads.ran_on, std::this_thread::get_id());
  EXPECT_EQ(threads.answered_on, threads.ran_on);
}

// While a request runs on its sender's thread, the requests that arrive meanwhile queue for a worker rather
// than run beside it on their senders' threads.
TEST(SchedulerTest, ArrivalsWhileARequestRunsOnItsSendersThreadQueue) {
  GatedModel model(/*hold_first=*/true);
  VersionStats stats("m", "1");
  Scheduler scheduler(OneInstance(0, absl::ZeroDuration()), model.Fn(), &stats, nullptr);
  auto first = SendAside(scheduler, 0);
  model.WaitUntilFirstRuns();
  std::vector<std::future<absl::StatusOr<float>>> queued;
  for (int i = 1; i <= 3; ++i) queued.push_back(Send(scheduler, static_cast<float>(i)));
  for (auto& answer : queued) {
    EXPECT_EQ(answer.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
        << "a request ran while the only instance was busy";
  }
  model.Release();
  ExpectAnswered(first, 0);
  for (int i = 1; i <= 3; ++i) ExpectAnswered(queued[static_cast<size_t>(i - 1)], static_cast<float>(i));
  EXPECT_EQ(model.seen(), (std::vector<float>{0, 1, 2, 3}));
}

// Requests running on their senders' threads take instances as workers do: with two instances both held,
// a third request waits in the queue, and no more than two runs ever overlap.
TEST(SchedulerTest, RequestsRunOnTheirSendersThreadsCountAgainstTheInstances) {
  std::mutex mu;
  std::condition_variable changed;
  int running = 0, most_running = 0, started = 0;
  bool released = false;
  auto model = std::make_shared<FnServable>([&](const std::vector<Tensor>& inputs) {
    std::unique_lock<std::mutex> lock(mu);
    ++started;
    most_running = std::max(most_running, ++running);
    changed.notify_all();
    changed.wait(lock, [&] { return released; });
    --running;
    return absl::StatusOr<std::vector<Tensor>>(inputs);
  });
  VersionStats stats("m", "1");
  SchedulerOptions options = OneInstance(0, absl::ZeroDuration());
  options.instances = 2;
  Scheduler scheduler(options, model, &stats, nullptr);
  auto a = SendAside(scheduler, 1);
  auto b = SendAside(scheduler, 2);
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(changed.wait_for(lock, kAnswerWithin, [&] { return started == 2; }));
  }
  auto c = SendAside(scheduler, 3);
  // Not proof that c will never start before the release, but a scheduler that let it run would have
  // started it well within this time.
  absl::SleepFor(absl::Milliseconds(100));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(started, 2) << "a third run started while both instances were busy";
    released = true;
  }
  changed.notify_all();
  ExpectAnswered(a, 1);
  ExpectAnswered(b, 2);
  ExpectAnswered(c, 3);
  EXPECT_EQ(most_running, 2);
}

// Preferred sizes keep Triton's meaning: five waiting rows with preferred size 2 leave as 2, 2 and 1.
TEST(SchedulerTest, QueuedRequestsLeaveInPreferredSizes) {
  GatedModel model(/*hold_first=*/true);
  VersionStats stats("m", "1");
  Scheduler scheduler(OneInstance(8, absl::ZeroDuration(), {2}), model.Fn(), &stats, nullptr);
  SendBehindABusyInstance(scheduler, model, 5);
  EXPECT_EQ(Executions(stats), (std::map<uint64_t, uint64_t>{{1, 2}, {2, 2}}));
}

// Priority levels are served highest first (level 1), in arrival order within a level, and batches fill
// from the top level down.
TEST(SchedulerTest, HigherPriorityLevelsRunFirst) {
  GatedModel model(/*hold_first=*/true);
  VersionStats stats("m", "1");
  SchedulerOptions options = OneInstance(1, absl::ZeroDuration());  // one row a batch: the order shows
  options.max_queue_sizes = {0, 0, 0};
  Scheduler scheduler(options, model.Fn(), &stats, nullptr);
  std::vector<std::future<absl::StatusOr<float>>> answers;
  answers.push_back(SendAside(scheduler, 0));
  model.WaitUntilFirstRuns();
  const std::pair<float, uint32_t> queued[] = {{31, 3}, {21, 2}, {32, 3}, {11, 1}, {22, 2}, {12, 1}};
  for (const auto& [value, level] : queued) answers.push_back(Send(scheduler, value, level));
  model.Release();
  for (size_t i = 0; i < answers.size(); ++i) {
    ExpectAnswered(answers[i], i == 0 ? 0.f : queued[i - 1].first);
  }
  EXPECT_EQ(model.seen(), (std::vector<float>{0, 11, 12, 21, 22, 31, 32}));
}

// Each level has its own bound: a full low level turns its requests away while a higher level queues.
TEST(SchedulerTest, EachPriorityLevelHasItsOwnQueueBound) {
  GatedModel model(/*hold_first=*/true);
  VersionStats stats("m", "1");
  SchedulerOptions options = OneInstance(8, absl::ZeroDuration());
  options.max_queue_sizes = {0, 1};
  Scheduler scheduler(options, model.Fn(), &stats, nullptr);
  auto running = SendAside(scheduler, 0);
  model.WaitUntilFirstRuns();
  auto low = Send(scheduler, 1, 2);
  auto refused = Send(scheduler, 2, 2);
  auto high = Send(scheduler, 3, 1);
  ASSERT_EQ(refused.wait_for(kAnswerWithin), std::future_status::ready);
  const absl::StatusOr<float> answer = refused.get();
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(answer.status().message().find("max_queue_size 1 of priority level 2"), std::string::npos)
      << answer.status();
  model.Release();
  ExpectAnswered(running, 0);
  ExpectAnswered(low, 1);
  ExpectAnswered(high, 3);
}

// gRPC reports a call past its deadline as cancelled too: this control does the same.
CallControl GrpcLikeDeadline(absl::Time deadline) {
  CallControl control;
  control.deadline = deadline;
  control.cancelled = [deadline] { return absl::Now() >= deadline; };
  return control;
}

void SleepUntil(absl::Time t) {
  while (absl::Now() < t) absl::SleepFor(t - absl::Now());
}

// The model does not stop for the request (it answers OK) and the deadline passes during its run: the answer
// is the request's own, DEADLINE_EXCEEDED, though its control also reports it cancelled.
TEST(SchedulerTest, ADeadlinePassedWhileTheBatchRanIsDeadlineExceeded) {
  GatedModel model(/*hold_first=*/true);
  VersionStats stats("m", "1");
  Scheduler scheduler(OneInstance(8, absl::ZeroDuration()), model.Fn(), &stats, nullptr);
  // Far enough that the request starts before it on a loaded machine (at 50 ms it once passed first: the
  // request was dropped unrun and the test waited for a run that never came).
  const absl::Time deadline = absl::Now() + absl::Seconds(1);
  auto answer = SendAside(scheduler, 0, 1, GrpcLikeDeadline(deadline));
  model.WaitUntilFirstRuns();
  SleepUntil(deadline);
  model.Release();
  ASSERT_EQ(answer.wait_for(kAnswerWithin), std::future_status::ready);
  EXPECT_EQ(answer.get().status().code(), absl::StatusCode::kDeadlineExceeded);
}

// The run stops because its control says cancelled, which it does for a gRPC call past its deadline: the
// answer is still DEADLINE_EXCEEDED, as it is for the same request found dead in the queue.
TEST(SchedulerTest, ARunStoppedAfterTheDeadlineIsDeadlineExceededWhateverTheRunReturned) {
  VersionStats stats("m", "1");
  const absl::Time deadline = absl::Now() + absl::Milliseconds(200);
  std::atomic<bool> ran{false};
  auto stopping = std::make_shared<FnServable>(
      [deadline, &ran](const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
        ran = true;
        SleepUntil(deadline);
        return absl::CancelledError("run cancelled by its caller");
      });
  Scheduler scheduler(OneInstance(8, absl::ZeroDuration()), stopping, &stats, nullptr);
  auto answer = Send(scheduler, 0, 1, GrpcLikeDeadline(deadline));
  ASSERT_EQ(answer.wait_for(kAnswerWithin), std::future_status::ready);
  ASSERT_TRUE(ran) << "the request was answered before it ran: this test needs it to run";
  EXPECT_EQ(answer.get().status().code(), absl::StatusCode::kDeadlineExceeded);
}

// A client that cancels while its batch runs gets CANCELLED, not the outputs nobody waits for any more.
TEST(SchedulerTest, ACancelWhileTheBatchRanIsCancelled) {
  GatedModel model(/*hold_first=*/true);
  VersionStats stats("m", "1");
  Scheduler scheduler(OneInstance(8, absl::ZeroDuration()), model.Fn(), &stats, nullptr);
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  CallControl control;
  control.cancelled = [cancelled] { return cancelled->load(); };
  auto answer = SendAside(scheduler, 0, 1, control);
  model.WaitUntilFirstRuns();
  *cancelled = true;
  model.Release();
  ASSERT_EQ(answer.wait_for(kAnswerWithin), std::future_status::ready);
  EXPECT_EQ(answer.get().status().code(), absl::StatusCode::kCancelled);
}

// Two requests within the per-tensor limits may not be within them together: each [1, 600] fits a limit of
// 1000 elements, their batch [2, 600] does not. They run one at a time; merged, the batch's Tensor threw on
// the worker's thread and ended the process.
TEST(SchedulerTest, RequestsWhoseBatchWouldPassTheSizeLimitsRunApart) {
  const SizeLimits saved = GetSizeLimits();
  ASSERT_TRUE(SetSizeLimits({.max_elements = 1000, .max_bytes = 4000}).ok());
  GatedModel model(/*hold_first=*/true);
  VersionStats stats("m", "1");
  Scheduler scheduler(OneInstance(8, absl::ZeroDuration()), model.Fn(), &stats, nullptr);
  std::vector<std::future<absl::StatusOr<float>>> answers;
  answers.push_back(SendAside(scheduler, 0));
  model.WaitUntilFirstRuns();
  for (float value : {1.f, 2.f}) {
    auto answer = std::make_shared<std::promise<absl::StatusOr<float>>>();
    answers.push_back(answer->get_future());
    ServableRequest request;
    request.inputs = {Tensor::FromVector<float>({1, 600}, std::vector<float>(600, value))};
    scheduler.Enqueue(std::move(request), [answer](ServableResponse response) {
      if (!response.outputs.ok()) return answer->set_value(response.outputs.status());
      answer->set_value((*response.outputs)[0].data<float>()[599]);
    });
  }
  model.Release();
  for (size_t i = 0; i < answers.size(); ++i) ExpectAnswered(answers[i], static_cast<float>(i));
  EXPECT_EQ(Executions(stats), (std::map<uint64_t, uint64_t>{{1, 3}}));
  ASSERT_TRUE(SetSizeLimits(saved).ok());
}

}  // namespace
}  // namespace onnxserve::server

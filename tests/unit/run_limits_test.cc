// A run's limits reach the kernels it runs: GEMMs and convolutions, whose one call can take seconds, check
// them between blocks of their work (on every thread of the pool), so a run that must stop does not first
// finish a multiplication. Each model below is one node: the executor checks before it and never after,
// so a run cancelled from its second check on stops only if the kernel itself checked.
#include "runtime/core/run_limits.h"

#include <atomic>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/core/exception_status.h"
#include "runtime/core/thread_pool.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::RandomTensor;

// Limits whose first check passes (the executor's, before the node) and every later one says cancelled.
class CancelledAfterFirstCheck {
 public:
  RunLimits limits() {
    return RunLimits(absl::InfiniteFuture(), [this] { return checks_.fetch_add(1) > 0; });
  }
  int checks() const { return checks_.load(); }

 private:
  std::atomic<int> checks_{0};
};

void ExpectStopsInsideTheKernel(const OpTest& node) {
  CancelledAfterFirstCheck cancel;
  auto out = node.Run(cancel.limits());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled) << out.status();
  EXPECT_GE(cancel.checks(), 2);
  EXPECT_TRUE(node.Run().ok());  // unlimited, the same node runs to the end
}

// For a kernel whose whole work is one block (a row of outputs): its check before the block passes, as the
// executor's did, and it must check again inside the block to stop.
void ExpectStopsWithinItsOneBlock(const OpTest& node) {
  std::atomic<int> checks{0};
  const RunLimits limits(absl::InfiniteFuture(), [&] { return checks.fetch_add(1) > 1; });
  auto out = node.Run(limits);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled) << out.status();
}

TEST(RunLimitsTest, StopIfRunEndedChecksTheCurrentRunOnceEnoughWorkPassed) {
  const RunLimits cancelled(absl::InfiniteFuture(), [] { return true; });
  EXPECT_NO_THROW(StopIfRunEnded(int64_t{1} << 40));  // outside a run nothing stops
  const ScopedRunLimits scope(&cancelled);
  RestartWorkCount();
  EXPECT_NO_THROW(StopIfRunEnded(1));  // a little work is not worth a check
  try {
    StopIfRunEnded(int64_t{1} << 40);
    ADD_FAILURE() << "a cancelled run's kernel went on";
  } catch (const RunStopped& stopped) {
    EXPECT_EQ(stopped.status().code(), absl::StatusCode::kCancelled);
    EXPECT_EQ(CatchExceptions([&]() -> absl::Status { throw stopped; }).code(), absl::StatusCode::kCancelled);
  }
}

// The executor's check before each step restarts the count: work done on this thread before the step (an
// earlier node, an earlier run) does not bring a kernel's first check forward, so a kernel that never checks
// never stops however the thread's earlier work left the count.
TEST(RunLimitsTest, ACheckOutsideAKernelRestartsItsWorkCount) {
  const RunLimits cancelled(absl::InfiniteFuture(), [] { return true; });
  const ScopedRunLimits scope(&cancelled);
  RestartWorkCount();
  EXPECT_NO_THROW(StopIfRunEnded((int64_t{1} << 26) - 2));
  RestartWorkCount();
  EXPECT_NO_THROW(StopIfRunEnded(2));
  EXPECT_THROW(StopIfRunEnded((int64_t{1} << 26) - 2), RunStopped);
}

TEST(RunLimitsTest, AKernelOnlyStopsAfterItsOwnWorkWhateverRanBeforeIt) {
  // Work left on the executor's thread just short of a check; then a small pool, which counts a little work
  // per row of outputs, runs in a run cancelled from its second check on: the executor's own check passes,
  // and the pool's few rows must not check on the earlier work's account.
  StopIfRunEnded((int64_t{1} << 26) - 1);
  CancelledAfterFirstCheck cancel;
  auto out = OpTest("MaxPool", 12)
                 .Input("x", RandomTensor({1, 1, 4, 4}, 1))
                 .Attr("kernel_shape", std::vector<int64_t>{2, 2})
                 .Output("y")
                 .Run(cancel.limits());
  EXPECT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(cancel.checks(), 1);
}

// Kernels count work from a model's or a request's extents, each within the limits but not their product
// (a pool's window width times its output width): WorkOf saturates, and the count never overflows.
TEST(RunLimitsTest, WorkPastInt64SaturatesAndStillStops) {
  EXPECT_EQ(WorkOf({int64_t{1} << 20, int64_t{1} << 21}), int64_t{1} << 41);
  EXPECT_EQ(WorkOf({int64_t{1} << 40, int64_t{1} << 40, 3}), INT64_MAX);
  const RunLimits cancelled(absl::InfiniteFuture(), [] { return true; });
  const ScopedRunLimits scope(&cancelled);
  EXPECT_NO_THROW(StopIfRunEnded(1));
  EXPECT_THROW(StopIfRunEnded(WorkOf({int64_t{1} << 40, int64_t{1} << 40})), RunStopped);
}

TEST(RunLimitsTest, ParallelForCarriesTheCallersLimitsToItsWorkers) {
  ThreadPool pool(2);
  const RunLimits limits;
  const ScopedRunLimits scope(&limits);
  std::vector<const RunLimits*> seen(2, nullptr);
  pool.ParallelFor(2, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) seen[i] = CurrentRunLimits();
  });
  EXPECT_EQ(seen, (std::vector<const RunLimits*>{&limits, &limits}));
}

// 1024^3 multiply-adds, on OpenBLAS (both operands fed) and on the packed GEMM (B an initializer), on one
// thread and split over two.
TEST(RunLimitsTest, AMatMulStopsBetweenItsBlocks) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    ExpectStopsInsideTheKernel(OpTest("MatMul", 13)
                                   .Input("a", RandomTensor({1024, 1024}, 1))
                                   .Input("b", RandomTensor({1024, 1024}, 2))
                                   .Output("y")
                                   .Threads(threads));
    ExpectStopsInsideTheKernel(OpTest("MatMul", 13)
                                   .Input("a", RandomTensor({1024, 1024}, 1))
                                   .Constant("b", RandomTensor({1024, 1024}, 2))
                                   .Output("y")
                                   .Threads(threads));
  }
}

TEST(RunLimitsTest, ConvolutionsStopBetweenTheirBlocks) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    // 256 -> 256 channels, 3x3 on 64x64: 2.4e9 multiply-adds through im2col rows and the packed GEMM.
    ExpectStopsInsideTheKernel(OpTest("Conv", 11)
                                   .Input("x", RandomTensor({1, 256, 64, 64}, 3))
                                   .Constant("w", RandomTensor({256, 256, 3, 3}, 4))
                                   .Attr("pads", std::vector<int64_t>{1, 1, 1, 1})
                                   .Output("y")
                                   .Threads(threads));
    // Depthwise 7x7 over 128 channels of 256x256: 4e8 multiply-adds, one group at a time (each thread's
    // share well past the work between two checks).
    ExpectStopsInsideTheKernel(OpTest("Conv", 11)
                                   .Input("x", RandomTensor({1, 128, 256, 256}, 5))
                                   .Constant("w", RandomTensor({128, 1, 7, 7}, 6))
                                   .Attr("group", int64_t{128})
                                   .Attr("pads", std::vector<int64_t>{3, 3, 3, 3})
                                   .Output("y")
                                   .Threads(threads));
  }
}

// Einsum evaluates its sum directly: "a,b,c->" of three 512-element vectors is 2^27 terms for one output.
TEST(RunLimitsTest, AnEinsumStopsWithinOneOutputsSum) {
  CancelledAfterFirstCheck cancel;
  auto out = OpTest("Einsum", 12)
                 .Input("a", RandomTensor({512}, 7))
                 .Input("b", RandomTensor({512}, 8))
                 .Input("c", RandomTensor({512}, 9))
                 .Attr("equation", std::string("a,b,c->"))
                 .Output("y")
                 .Run(cancel.limits());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled) << out.status();
}

// Windows as large as the image make a pool quadratic in it: 513 x 513 outputs of 512 x 512 taps (the
// vector kernels' rows), and 129 x 129 of 128 x 128 with Indices (the generic walk).
TEST(RunLimitsTest, PoolsWithLargeWindowsStopBetweenOutputRows) {
  ExpectStopsInsideTheKernel(OpTest("MaxPool", 12)
                                 .Input("x", RandomTensor({1, 1, 1024, 1024}, 10))
                                 .Attr("kernel_shape", std::vector<int64_t>{512, 512})
                                 .Output("y"));
  ExpectStopsInsideTheKernel(OpTest("MaxPool", 12)
                                 .Input("x", RandomTensor({1, 1, 256, 256}, 11))
                                 .Attr("kernel_shape", std::vector<int64_t>{128, 128})
                                 .Output("y")
                                 .Output("indices"));
}

// A DFT whose length is not a power of two is summed directly, n^2 terms: a dft_length of 2^14 + 1 over a
// one-sample signal is 2^28 of them from a request of a few bytes (and 2^31 + 1 would run for days).
TEST(RunLimitsTest, ADirectDftStopsBetweenItsOutputs) {
  CancelledAfterFirstCheck cancel;
  auto out = OpTest("DFT", 20)
                 .Input("x", RandomTensor({1, 1, 1}, 10))
                 .Input("dft_length", Tensor::Scalar<int64_t>((int64_t{1} << 14) + 1))
                 .Output("y")
                 .Run(cancel.limits());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled) << out.status();
}

// TfIdfVectorizer scans a row once per skip distance: with max_skip_count as long as the row, one 2-gram
// over a row of n equal tokens is matched n^2 / 2 times (2^27 for these 16384 tokens).
TEST(RunLimitsTest, ATfIdfWithLongSkipsStopsBetweenThem) {
  CancelledAfterFirstCheck cancel;
  auto out = OpTest("TfIdfVectorizer", 9)
                 .Input("X", Tensor::FromVector<int64_t>({16384}, std::vector<int64_t>(16384, 7)))
                 .Attr("mode", std::string("TF"))
                 .Attr("min_gram_length", int64_t{2})
                 .Attr("max_gram_length", int64_t{2})
                 .Attr("max_skip_count", int64_t{16384})
                 .Attr("ngram_counts", std::vector<int64_t>{0, 0})
                 .Attr("ngram_indexes", std::vector<int64_t>{0})
                 .Attr("pool_int64s", std::vector<int64_t>{7, 7})
                 .Output("Y")
                 .Run(cancel.limits());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled) << out.status();
}

// Det decomposes each m x m matrix in m^3 / 3 multiply-adds: 2^28 for one 1024 x 1024 matrix (4 MB).
TEST(RunLimitsTest, ADeterminantStopsBetweenItsColumns) {
  CancelledAfterFirstCheck cancel;
  auto out = OpTest("Det", 11).Input("x", RandomTensor({1024, 1024}, 11)).Output("y").Run(cancel.limits());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled) << out.status();
}

// LRN sums each channel's window of `size` channels: a size as large as the channels makes it quadratic in
// them, over 2^27 squares for these 12288 (48 KB); the model's size may be anything.
TEST(RunLimitsTest, AnLrnWithAWideWindowStopsBetweenChannels) {
  ExpectStopsInsideTheKernel(
      OpTest("LRN", 13).Input("x", RandomTensor({1, 12288, 1, 1}, 12)).Attr("size", int64_t{24577}).Output("y"));
}

// CausalConvWithState convolves each channel's length with its k taps, and both may come from the request:
// a 16384-tap weight over 16384 positions is 2^28 multiply-adds for one channel (128 KB of input).
TEST(RunLimitsTest, ACausalConvWithLongTapsStopsWithinAChannel) {
  ExpectStopsInsideTheKernel(OpTest("CausalConvWithState", 27)
                                 .Input("x", RandomTensor({1, 1, 16384}, 13))
                                 .Input("w", RandomTensor({1, 1, 16384}, 14))
                                 .Output("y"));
}

// LinearAttention updates a d_k x d_v state and reads it back for every token, and all three come from the
// request: 512 tokens of a 512 x 512 state are over 2^27 multiply-adds for one head (1 MB per input).
TEST(RunLimitsTest, ALinearAttentionWithAWideStateStopsBetweenTokens) {
  ExpectStopsInsideTheKernel(OpTest("LinearAttention", 27)
                                 .Attr("update_rule", std::string("linear"))
                                 .Attr("q_num_heads", int64_t{1})
                                 .Attr("kv_num_heads", int64_t{1})
                                 .Input("query", RandomTensor({1, 512, 512}, 15))
                                 .Input("key", RandomTensor({1, 512, 512}, 16))
                                 .Input("value", RandomTensor({1, 512, 512}, 17))
                                 .Output("output"));
}

// Resize weighs each output element with the product of every axis' taps: a cubic upscale of a rank-12
// tensor of one element is 4096 outputs of 4^12 taps each (minutes of work, and at rank 16 a 16 GiB list of
// the outer axes' taps per row). It must stop between the outer taps, long before it is done.
TEST(RunLimitsTest, AHighRankCubicResizeStopsBetweenItsOuterTaps) {
  CancelledAfterFirstCheck cancel;
  const int rank = 12;
  auto out = OpTest("Resize", 19)
                 .Input("x", Tensor::FromVector<float>(Shape(rank, 1), {1}))
                 .NoInput()
                 .Input("scales", Tensor::FromVector<float>({rank}, std::vector<float>(rank, 2)))
                 .Attr("mode", std::string("cubic"))
                 .Output("y")
                 .Run(cancel.limits());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled) << out.status();
}

// NhwcMaxPool's row of outputs holds every channel of each: a row of 4097 windows 4096 wide over 64 channels
// is 2^30 taps (a 2 MB request), and a model's wider windows or more channels make it as long as they like.
// It must stop within the row: its first check, before the row, passes here, and later ones say cancelled.
TEST(RunLimitsTest, AnNhwcMaxPoolOfOneWideRowStopsWithinIt) {
  std::atomic<int> checks{0};
  const RunLimits limits(absl::InfiniteFuture(), [&] { return checks.fetch_add(1) > 1; });  // the executor's too
  auto out = OpTest("NhwcMaxPool", 1, "ai.onnxserve")
                 .Input("x", RandomTensor({1, 1, 8192, 64}, 18))
                 .Attr("kernel_shape", std::vector<int64_t>{1, 4096})
                 .Output("y")
                 .Run(limits);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled) << out.status();
}

// A linear model's row is a dot product per target, so one request's rows times the model's coefficients
// is its work: 2048 rows of 256 features against 256 targets are 2^27 multiply-adds (a 2 MB request).
TEST(RunLimitsTest, AnMlLinearModelStopsBetweenRows) {
  ExpectStopsInsideTheKernel(OpTest("LinearRegressor", 1, "ai.onnx.ml")
                                 .Attr("targets", int64_t{256})
                                 .Attr("coefficients", std::vector<float>(256 * 256, 0.5f))
                                 .Input("X", RandomTensor({2048, 256}, 19))
                                 .Output("Y"));
}

// TreeEnsemble's trees may share their nodes, so a model of a few MB walks as long a path per tree as it
// likes: 2^17 trees that all start at the root of one 1024-node chain are 2^27 steps for one row of X.
TEST(RunLimitsTest, ATreeEnsembleStopsBetweenTheTreesOfOneRow) {
  const int64_t nodes = 1024;
  std::vector<int64_t> next(nodes), leaf_flags(nodes, 0);
  for (int64_t i = 0; i < nodes; ++i) next[i] = i + 1;
  next.back() = 0;  // the chain's last branch leads to leaf 0 either way
  leaf_flags.back() = 1;
  const std::vector<uint8_t> leq(nodes, 0);  // mode BRANCH_LEQ: 0 <= 0 is true, and both children are the same
  ExpectStopsInsideTheKernel(OpTest("TreeEnsemble", 5, "ai.onnx.ml")
                                 .Attr("n_targets", int64_t{1})
                                 .Attr("tree_roots", std::vector<int64_t>(int64_t{1} << 17, 0))
                                 .Attr("nodes_featureids", std::vector<int64_t>(nodes, 0))
                                 .Attr("nodes_modes", Tensor::FromVector<uint8_t>({nodes}, leq))
                                 .Attr("nodes_splits", Tensor::FromVector<float>({nodes}, std::vector<float>(nodes, 0)))
                                 .Attr("nodes_truenodeids", next)
                                 .Attr("nodes_trueleafs", leaf_flags)
                                 .Attr("nodes_falsenodeids", next)
                                 .Attr("nodes_falseleafs", leaf_flags)
                                 .Attr("leaf_targetids", std::vector<int64_t>{0})
                                 .Attr("leaf_weights", Tensor::FromVector<float>({1}, {1}))
                                 .Input("X", Tensor::FromVector<float>({1, 1}, {0}))
                                 .Output("Y"));
}

// MaxRoiPool scans each RoI's pixels once per channel, and the RoIs come from the request: 128 RoIs as large
// as a 1024 x 1024 image are 2^27 comparisons for a few KB of boxes.
TEST(RunLimitsTest, AMaxRoiPoolOfLargeRoisStopsBetweenThem) {
  std::vector<float> rois;
  for (int r = 0; r < 128; ++r) rois.insert(rois.end(), {0, 0, 0, 1023, 1023});
  ExpectStopsInsideTheKernel(OpTest("MaxRoiPool", 22)
                                 .Attr("pooled_shape", std::vector<int64_t>{2, 2})
                                 .Input("X", RandomTensor({1, 1, 1024, 1024}, 20))
                                 .Input("rois", Tensor::FromVector<float>({128, 5}, rois))
                                 .Output("Y"));
}

// A one-vs-one SVM of 256 classes of one support vector each: every row meets the vectors once but weighs
// them (classes - 1) times in its machines, and with probabilities couples the pairwise ones in libsvm's
// fixed point, 2 k^2 per iteration, up to k iterations.
OpTest SvmOfManyClasses(bool probabilities, int64_t rows) {
  const int64_t classes = 256, machines = classes * (classes - 1) / 2;
  std::vector<int64_t> labels(classes);
  for (int64_t c = 0; c < classes; ++c) labels[c] = c;
  std::vector<float> vectors(classes), coefficients((classes - 1) * classes), prob_a(machines);
  for (int64_t i = 0; i < classes; ++i) vectors[i] = static_cast<float>(i) / classes;
  for (size_t i = 0; i < coefficients.size(); ++i) coefficients[i] = static_cast<float>(i % 7) - 3;
  for (int64_t m = 0; m < machines; ++m) prob_a[m] = -static_cast<float>(m % 5);
  OpTest test("SVMClassifier", 1, "ai.onnx.ml");
  test.Attr("kernel_type", std::string("LINEAR"))
      .Attr("classlabels_ints", labels)
      .Attr("vectors_per_class", std::vector<int64_t>(classes, 1))
      .Attr("support_vectors", vectors)
      .Attr("coefficients", coefficients)
      .Attr("rho", std::vector<float>(machines, 0.25f))
      .Input("X", RandomTensor({rows, 1}, 21))
      .Output("Y");
  if (probabilities) {
    test.Attr("prob_a", prob_a).Attr("prob_b", std::vector<float>(machines, 0.5f)).Output("Z");
  }
  return test;
}

// 2048 rows of 255 x 256 weights are 2^27 multiply-adds, though the vectors are only 256 values.
TEST(RunLimitsTest, AnSvmOfManyClassesStopsBetweenRows) {
  ExpectStopsInsideTheKernel(SvmOfManyClasses(/*probabilities=*/false, 2048));
}

// 512 rows couple 256 classes: over 2^26 steps of the fixed point, from 512 numbers of request.
TEST(RunLimitsTest, AnSvmCouplingManyClassesStopsBetweenItsIterations) {
  ExpectStopsInsideTheKernel(SvmOfManyClasses(/*probabilities=*/true, 512));
}

// A pool of one long row, as a 1-D pool of a signal is, is one row of outputs: 16385 windows 16384 wide over
// a 128 KB row are 2^28 taps, on the float vector path, on the scalar path of other float types and on the
// generic walk that Indices takes. Each must stop within the row.
TEST(RunLimitsTest, PoolsOfOneLongRowStopWithinIt) {
  const std::vector<int64_t> kernel = {1, 16384};
  for (const char* op : {"MaxPool", "AveragePool"}) {
    SCOPED_TRACE(op);
    ExpectStopsWithinItsOneBlock(
        OpTest(op, 19).Input("x", RandomTensor({1, 1, 1, 32768}, 22)).Attr("kernel_shape", kernel).Output("y"));
  }
  ExpectStopsWithinItsOneBlock(OpTest("MaxPool", 12)
                                   .Input("x", Tensor::FromVector<double>({1, 1, 1, 32768}, std::vector<double>(32768)))
                                   .Attr("kernel_shape", kernel)
                                   .Output("y"));
  ExpectStopsWithinItsOneBlock(OpTest("MaxPool", 12)
                                   .Input("x", RandomTensor({1, 1, 1, 32768}, 24))
                                   .Attr("kernel_shape", kernel)
                                   .Output("y")
                                   .Output("indices"));
}

// GridSample weighs each output with every combination of its axes' taps, 2^r for linear sampling over r
// axes, and X's rank comes from the request: one output of a rank-29 X of one element is 2^27 combinations
// (and rank 40 would be days). It must stop within that one output.
TEST(RunLimitsTest, AHighRankGridSampleStopsWithinOneOutput) {
  const int rank = 27;
  Shape x_shape(rank + 2, 1), grid_shape(rank + 2, 1);
  grid_shape.back() = rank;
  ExpectStopsWithinItsOneBlock(OpTest("GridSample", 20)
                                   .Input("X", Tensor::FromVector<float>(x_shape, {1}))
                                   .Input("grid", Tensor::FromVector<float>(grid_shape, std::vector<float>(rank, 0)))
                                   .Output("Y"));
}

// RoiAlign pools one RoI's taps once per channel: a sampling_ratio of 256 is 2^16 taps per bin, and over
// 2048 channels of a 16 KB X one RoI is 2^27 samples. It must stop between the channels of that one RoI.
TEST(RunLimitsTest, ARoiAlignOfManyChannelsStopsWithinOneRoi) {
  ExpectStopsWithinItsOneBlock(OpTest("RoiAlign", 16)
                                   .Attr("sampling_ratio", int64_t{256})
                                   .Input("X", RandomTensor({1, 2048, 1, 1}, 25))
                                   .Input("rois", Tensor::FromVector<float>({1, 4}, {0, 0, 1, 1}))
                                   .Input("batch_indices", Tensor::FromVector<int64_t>({1}, {0}))
                                   .Output("Y"));
}

// DictVectorizer copies each map entry to every position of its key, a vocabulary may list a key many times
// and a request's map may repeat a key: 4096 entries of one key into 32768 positions are 2^27 copies.
TEST(RunLimitsTest, ADictVectorizerOfRepeatedKeysStopsBetweenEntries) {
  std::vector<Value> values;
  for (int i = 0; i < 4096; ++i) values.push_back(Tensor::Scalar(1.0f));
  const Value map = Value::Map(Tensor::FromVector<std::string>({4096}, std::vector<std::string>(4096, "k")),
                               std::move(values));
  CancelledAfterFirstCheck cancel;
  auto out = OpTest("DictVectorizer", 1, "ai.onnx.ml")
                 .ValueInput("x", map)
                 .Attr("string_vocabulary", std::vector<std::string>(32768, "k"))
                 .Output("y")
                 .Run(cancel.limits());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled) << out.status();
}

// Sum, Max, Min and Mean fold one input at a time into the whole output, and a node may list as many inputs
// as its model likes (one name repeated costs two bytes each): 64 of them over a 2^21-element output are
// 2^27 additions. The fold must stop between inputs.
TEST(RunLimitsTest, AVariadicSumOfManyInputsStopsBetweenThem) {
  OpTest sum("Sum", 13);
  sum.Input("x", RandomTensor({int64_t{1} << 21}, 26));
  for (int i = 1; i < 64; ++i) sum.Input(absl::StrCat("s", i), Tensor::FromVector<float>({1}, {1}));
  ExpectStopsInsideTheKernel(sum.Output("y"));
}

// StringSplit looks for its delimiter at every position of an element, comparing up to the delimiter's
// length at each: a request's element of 24K 'a's against a model's delimiter of 12K 'a's and a 'b' is 2^27
// comparisons in one search. The search must stop within it.
TEST(RunLimitsTest, AStringSplitOnALongDelimiterStopsWithinItsSearch) {
  CancelledAfterFirstCheck cancel;
  auto out = OpTest("StringSplit", 20)
                 .Attr("delimiter", std::string(12 * 1024, 'a') + "b")
                 .Input("X", Tensor::FromVector<std::string>({1}, {std::string(24 * 1024, 'a')}))
                 .Output("Y")
                 .Run(cancel.limits());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled) << out.status();
}

}  // namespace
}  // namespace onnxserve

// Our Conv and Gemm kernels against oneDNN's (libdnnl 2.6) and XNNPACK's (Debian's 2022 snapshot) on the
// layers of the benchmark set where we trail ONNX Runtime (issue #11): light_resnet50's stem, 3x3 and 1x1
// convolutions, MobileNet's depthwise 3x3/5x5 and pointwise layers, the keyword spotter's 25x5 layers, and
// the MLP's 784 -> 512 product at batch 1, 8 and 64.
//
// Each library gets what our kernel gets: NCHW in and out (any reorder or transpose to its own layout is
// timed), weights reordered or packed once outside the timing, as we pack at load, and the same number of
// threads (oneDNN's OpenMP team via omp_set_num_threads, XNNPACK's pthreadpool). BM_ConvXnnpack/nhwc times
// XNNPACK's NHWC convolution without the transposes: what it would cost in a runtime that kept NHWC;
// BM_ConvOneDnn/blocked likewise times oneDNN's primitive without its reorders (a net kept in nChw16c).
//
// The ISA paths: ONNXSERVE_ISA=avx2 for ours, DNNL_MAX_CPU_ISA=AVX2 for oneDNN (the label names the
// implementation it chose); XNNPACK picks its kernels from the CPU and has no such switch. "Ours" is Conv
// through the registry: built with ONNXSERVE_DNNL=ON its 3x3 and 7x7 rows run on oneDNN on our pool
// (runtime/math/dnnl_conv.h), so time our own kernels in a build with it OFF.
// Args: C, H, W, M, kernel, stride, group, threads.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "benchmarks/fma_peak.h"
#include "benchmarks/node_runner.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "onnx/onnx_pb.h"
#include "pthreadpool.h"
#include "runtime/core/thread_pool.h"
#include "xnnpack.h"

namespace onnxserve {
namespace {

struct ConvShape {
  int64_t c, h, w, m, k, s, group;
  int threads;

  explicit ConvShape(const benchmark::State& state)
      : c(state.range(0)), h(state.range(1)), w(state.range(2)), m(state.range(3)), k(state.range(4)),
        s(state.range(5)), group(state.range(6)), threads(static_cast<int>(state.range(7))) {}
  int64_t pad() const { return k / 2; }
  int64_t out_h() const { return (h + 2 * pad() - k) / s + 1; }
  int64_t out_w() const { return (w + 2 * pad() - k) / s + 1; }
  double flops() const { return 2.0 * m * (c / group) * k * k * out_h() * out_w(); }
};

// The layers on `threads` threads.
benchmark::internal::Benchmark* ConvLayers(benchmark::internal::Benchmark* b, int64_t threads) {
  b->ArgNames({"C", "H", "W", "M", "k", "s", "group", "threads"});
  const std::vector<std::vector<int64_t>> layers = {
      // light_resnet50: the 7x7/2 stem, each stage's 3x3, a 1x1 reduction and expansion; MobileNet's
      // 3x3/2 stem.
      {3, 224, 224, 64, 7, 2, 1},
      {3, 224, 224, 32, 3, 2, 1},
      {64, 56, 56, 64, 3, 1, 1},
      {128, 28, 28, 128, 3, 1, 1},
      {256, 14, 14, 256, 3, 1, 1},
      {512, 7, 7, 512, 3, 1, 1},
      {256, 56, 56, 64, 1, 1, 1},
      {64, 56, 56, 256, 1, 1, 1},
      {1024, 14, 14, 256, 1, 1, 1},
      // MobileNet's depthwise 3x3 and 5x5 from 112x112 to 7x7, and its pointwise layers.
      {32, 112, 112, 32, 3, 1, 32},
      {144, 56, 56, 144, 3, 1, 144},
      {144, 56, 56, 144, 3, 2, 144},
      {96, 112, 112, 96, 3, 2, 96},
      {192, 28, 28, 192, 3, 2, 192},
      {144, 56, 56, 144, 5, 2, 144},
      {192, 28, 28, 192, 3, 1, 192},
      {576, 14, 14, 576, 3, 1, 576},
      {960, 7, 7, 960, 3, 1, 960},
      {72, 56, 56, 72, 5, 2, 72},
      {480, 14, 14, 480, 5, 1, 480},
      {16, 112, 112, 96, 1, 1, 1},
      {144, 56, 56, 24, 1, 1, 1},
      {576, 14, 14, 96, 1, 1, 1},
      {960, 7, 7, 160, 1, 1, 1},
      // The keyword spotter's depthwise 3x3 and pointwise layers on its 25x5 map.
      {64, 25, 5, 64, 3, 1, 64},
      {64, 25, 5, 64, 1, 1, 1},
  };
  for (std::vector<int64_t> args : layers) {
    args.push_back(threads);
    b->Args(args);
  }
  return b->Unit(benchmark::kMicrosecond);
}
// One thread: CPU time, which a shared machine's other work does not inflate (the libraries then compute
// on the calling thread); two: wall time, since the threads share the work.
void OneThread(benchmark::internal::Benchmark* b) { ConvLayers(b, 1); }
void TwoThreads(benchmark::internal::Benchmark* b) { ConvLayers(b, 2)->UseRealTime(); }

void BM_ConvOurs(benchmark::State& state) {
  const ConvShape shape(state);
  bench::RunConvNode(state, "Conv", {1, shape.c, shape.h, shape.w}, {shape.m, shape.c / shape.group, shape.k, shape.k},
                     shape.s, bench::EveryPad(shape.pad()), shape.threads, true, shape.flops(), {}, shape.group);
}
BENCHMARK(BM_ConvOurs)->Apply(OneThread);
BENCHMARK(BM_ConvOurs)->Apply(TwoThreads);

// oneDNN: the memory of an NCHW-side tensor and, when the primitive chose another layout, its own copy.
struct DnnlOperand {
  dnnl::memory user, own;
  DnnlOperand(const dnnl::memory::desc& chosen, const dnnl::memory::desc& plain, const dnnl::engine& engine)
      : user(plain, engine), own(chosen == plain ? user : dnnl::memory(chosen, engine)) {}
  bool reordered() const { return own != user; }
};

void FillRandom(const dnnl::memory& memory) {
  Tensor values = bench::RandomFloats({static_cast<int64_t>(memory.get_desc().get_size() / sizeof(float))});
  std::copy(values.data<float>(), values.data<float>() + values.NumElements(),
            static_cast<float*>(memory.get_data_handle()));
}

// Runs `primitive` per iteration between the timed reorders of its source in and its destination out.
// With `reorders` false the timed loop leaves out the reorders from and to NCHW: what the layer would cost
// in a net kept in oneDNN's blocked layout end to end.
void RunDnnl(benchmark::State& state, const dnnl::primitive& primitive, DnnlOperand& src, const dnnl::memory& weights,
             const dnnl::memory& bias, DnnlOperand& dst, const dnnl::engine& engine, double flops, int threads,
             const std::string& impl, bool reorders) {
  dnnl::stream stream(engine);
  for (auto _ : state) {
    if (reorders && src.reordered()) dnnl::reorder(src.user, src.own).execute(stream, src.user, src.own);
    primitive.execute(stream, {{DNNL_ARG_SRC, src.own},
                               {DNNL_ARG_WEIGHTS, weights},
                               {DNNL_ARG_BIAS, bias},
                               {DNNL_ARG_DST, dst.own}});
    if (reorders && dst.reordered()) dnnl::reorder(dst.own, dst.user).execute(stream, dst.own, dst.user);
    stream.wait();
    benchmark::DoNotOptimize(dst.user.get_data_handle());
  }
  bench::ReportFlops(state, flops, threads);
  state.SetLabel(impl + (reorders && src.reordered() ? " +reorder src" : "") +
                 (reorders && dst.reordered() ? " +reorder dst" : ""));
}

// Weights in the primitive's layout, reordered once from the plain one (not timed).
dnnl::memory DnnlWeights(const dnnl::memory::desc& chosen, const dnnl::memory::desc& plain,
                         const dnnl::engine& engine) {
  dnnl::memory user(plain, engine), own(chosen, engine);
  FillRandom(user);
  dnnl::stream stream(engine);
  dnnl::reorder(user, own).execute(stream, user, own);
  stream.wait();
  return own;
}

void BM_ConvOneDnn(benchmark::State& state, bool reorders) {
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  const ConvShape shape(state);
  omp_set_num_threads(shape.threads);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const dnnl::memory::dims src_dims = {1, shape.c, shape.h, shape.w};
  const dnnl::memory::dims dst_dims = {1, shape.m, shape.out_h(), shape.out_w()};
  const int64_t g = shape.group;
  const dnnl::memory::dims weight_dims = g == 1 ? dnnl::memory::dims{shape.m, shape.c, shape.k, shape.k}
                                                : dnnl::memory::dims{g, shape.m / g, shape.c / g, shape.k, shape.k};
  const dnnl::memory::desc bias_md({shape.m}, dt::f32, tag::x);
  const dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
      dnnl::memory::desc(src_dims, dt::f32, tag::any), dnnl::memory::desc(weight_dims, dt::f32, tag::any), bias_md,
      dnnl::memory::desc(dst_dims, dt::f32, tag::any), {shape.s, shape.s}, {shape.pad(), shape.pad()},
      {shape.pad(), shape.pad()});
  const dnnl::convolution_forward::primitive_desc pd(desc, engine);
  DnnlOperand src(pd.src_desc(), dnnl::memory::desc(src_dims, dt::f32, tag::nchw), engine);
  DnnlOperand dst(pd.dst_desc(), dnnl::memory::desc(dst_dims, dt::f32, tag::nchw), engine);
  FillRandom(src.user);
  const dnnl::memory weights = DnnlWeights(
      pd.weights_desc(), dnnl::memory::desc(weight_dims, dt::f32, shape.group == 1 ? tag::oihw : tag::goihw), engine);
  dnnl::memory bias(bias_md, engine);
  FillRandom(bias);
  RunDnnl(state, dnnl::convolution_forward(pd), src, weights, bias, dst, engine, shape.flops(), shape.threads,
          pd.impl_info_str(), reorders);
}
BENCHMARK_CAPTURE(BM_ConvOneDnn, nchw, true)->Apply(OneThread);
BENCHMARK_CAPTURE(BM_ConvOneDnn, nchw, true)->Apply(TwoThreads);
BENCHMARK_CAPTURE(BM_ConvOneDnn, blocked, false)->Apply(OneThread);

// [rows x cols] -> [cols x rows], 8 x 8 tiles at a time, rows split over `pool`: NCHW <-> NHWC of one image.
void Transpose(const float* src, int64_t rows, int64_t cols, float* dst, ThreadPool& pool) {
  constexpr int64_t kTile = 8;
  pool.ParallelFor((rows + kTile - 1) / kTile, 1, [&](int64_t begin, int64_t end) {
    for (int64_t r0 = begin * kTile; r0 < std::min(rows, end * kTile); r0 += kTile) {
      for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
        for (int64_t r = r0; r < std::min(rows, r0 + kTile); ++r) {
          for (int64_t c = c0; c < std::min(cols, c0 + kTile); ++c) dst[c * rows + r] = src[r * cols + c];
        }
      }
    }
  });
}

// XNNPACK's thread pool of `threads` threads (none for one: the caller computes).
struct XnnThreads {
  pthreadpool_t pool;
  explicit XnnThreads(int threads) : pool(threads > 1 ? pthreadpool_create(threads) : nullptr) {}
  ~XnnThreads() {
    if (pool != nullptr) pthreadpool_destroy(pool);
  }
};

struct XnnOperator {
  xnn_operator_t op = nullptr;
  ~XnnOperator() {
    if (op != nullptr) xnn_delete_operator(op);
  }
};

bool XnnInitialized() {
  static const bool kInitialized = xnn_initialize(nullptr) == xnn_status_success;
  return kInitialized;
}

constexpr float kNoMin = -std::numeric_limits<float>::infinity();
constexpr float kNoMax = std::numeric_limits<float>::infinity();

// Depthwise layers run on XNNPACK's NCHW operator where it has one (3x3 and 5x5, stride 1 or 2), so no
// transpose is needed; the others through NHWC, transposed in and out unless `nhwc`.
void BM_ConvXnnpack(benchmark::State& state, bool nhwc_only) {
  const ConvShape shape(state);
  if (!XnnInitialized()) return state.SkipWithError("xnn_initialize failed");
  const int64_t group_c = shape.c / shape.group, group_m = shape.m / shape.group;
  const Tensor weights = bench::RandomFloats({shape.m, group_c, shape.k, shape.k});
  const Tensor bias = bench::RandomFloats({shape.m});
  const auto p = static_cast<uint32_t>(shape.pad()), k = static_cast<uint32_t>(shape.k);
  const auto s = static_cast<uint32_t>(shape.s), groups = static_cast<uint32_t>(shape.group);
  XnnOperator conv;
  bool nchw = !nhwc_only && shape.group > 1 &&
              xnn_create_convolution2d_nchw_f32(p, p, p, p, k, k, s, s, 1, 1, groups, group_c, group_m, shape.c,
                                                shape.m, weights.data<float>(), bias.data<float>(), kNoMin, kNoMax,
                                                0, &conv.op) == xnn_status_success;
  if (!nchw && xnn_create_convolution2d_nhwc_f32(p, p, p, p, k, k, s, s, 1, 1, groups, group_c, group_m, shape.c,
                                                 shape.m, weights.data<float>(), bias.data<float>(), kNoMin, kNoMax,
                                                 0, &conv.op) != xnn_status_success) {
    return state.SkipWithError("XNNPACK does not take this convolution");
  }
  XnnThreads threads(shape.threads);
  ThreadPool pool(shape.threads);
  const Tensor x = bench::RandomFloats({shape.c, shape.h * shape.w});
  Tensor x_nhwc(DataType::kFloat, {shape.h * shape.w, shape.c});
  Tensor y(DataType::kFloat, {shape.m, shape.out_h() * shape.out_w()});
  Tensor y_nhwc(DataType::kFloat, {shape.out_h() * shape.out_w(), shape.m});
  const float* input = nchw ? x.data<float>() : x_nhwc.data<float>();
  float* output = nchw ? y.data<float>() : y_nhwc.data<float>();
  const xnn_status setup =
      nchw ? xnn_setup_convolution2d_nchw_f32(conv.op, 1, shape.h, shape.w, input, output, threads.pool)
           : xnn_setup_convolution2d_nhwc_f32(conv.op, 1, shape.h, shape.w, input, output, threads.pool);
  if (setup != xnn_status_success) return state.SkipWithError("XNNPACK setup failed");
  const bool transposed = !nchw && !nhwc_only;
  for (auto _ : state) {
    if (transposed) Transpose(x.data<float>(), shape.c, shape.h * shape.w, x_nhwc.data<float>(), pool);
    if (xnn_run_operator(conv.op, threads.pool) != xnn_status_success) return state.SkipWithError("XNNPACK run");
    if (transposed) Transpose(y_nhwc.data<float>(), shape.out_h() * shape.out_w(), shape.m, y.data<float>(), pool);
    benchmark::DoNotOptimize(y.raw_data());
  }
  bench::ReportFlops(state, shape.flops(), shape.threads);
  state.SetLabel(nchw ? "nchw" : transposed ? "nhwc +transposes" : "nhwc");
}
BENCHMARK_CAPTURE(BM_ConvXnnpack, nchw, false)->Apply(OneThread);
BENCHMARK_CAPTURE(BM_ConvXnnpack, nchw, false)->Apply(TwoThreads);
BENCHMARK_CAPTURE(BM_ConvXnnpack, nhwc, true)->Apply(OneThread);
BENCHMARK_CAPTURE(BM_ConvXnnpack, nhwc, true)->Apply(TwoThreads);

// The MLP's first layer, [M x 784] x [784 x 512] + bias (Gemm with transB = 1), at batch 1, 8 and 64.
void GemmShapes(benchmark::internal::Benchmark* b, int64_t threads) {
  b->ArgNames({"M", "N", "K", "threads"});
  for (int64_t m : {1, 8, 64}) b->Args({m, 512, 784, threads});
  b->Unit(benchmark::kMicrosecond);
}
void GemmOneThread(benchmark::internal::Benchmark* b) { GemmShapes(b, 1); }
void GemmTwoThreads(benchmark::internal::Benchmark* b) {
  GemmShapes(b, 2);
  b->UseRealTime();
}

void BM_GemmOurs(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  onnx::NodeProto node;
  node.set_op_type("Gemm");
  for (const char* name : {"a", "b", "c"}) node.add_input(name);
  auto* trans_b = node.add_attribute();
  trans_b->set_name("transB");
  trans_b->set_type(onnx::AttributeProto::INT);
  trans_b->set_i(1);
  const int threads = static_cast<int>(state.range(3));
  bench::RunNode(state, kOnnx, 13, node,
                 {bench::RandomFloats({m, k}), bench::RandomFloats({n, k}), bench::RandomFloats({n})}, threads, true);
  bench::ReportFlops(state, 2.0 * m * n * k, threads);
}
BENCHMARK(BM_GemmOurs)->Apply(GemmOneThread);
BENCHMARK(BM_GemmOurs)->Apply(GemmTwoThreads);

void BM_GemmOneDnn(benchmark::State& state) {
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const int threads = static_cast<int>(state.range(3));
  omp_set_num_threads(threads);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const dnnl::memory::desc src_md({m, k}, dt::f32, tag::ab), dst_md({m, n}, dt::f32, tag::ab);
  const dnnl::memory::desc bias_md({1, n}, dt::f32, tag::ab);
  const dnnl::matmul::desc desc(src_md, dnnl::memory::desc({k, n}, dt::f32, tag::any), bias_md, dst_md);
  const dnnl::matmul::primitive_desc pd(desc, engine);
  DnnlOperand src(pd.src_desc(), src_md, engine), dst(pd.dst_desc(), dst_md, engine);
  FillRandom(src.user);
  // transB: the [N x K] weight is [K x N] in the "ba" layout.
  const dnnl::memory weights = DnnlWeights(pd.weights_desc(), dnnl::memory::desc({k, n}, dt::f32, tag::ba), engine);
  dnnl::memory bias(bias_md, engine);
  FillRandom(bias);
  RunDnnl(state, dnnl::matmul(pd), src, weights, bias, dst, engine, 2.0 * m * n * k, threads, pd.impl_info_str(),
          true);
}
BENCHMARK(BM_GemmOneDnn)->Apply(GemmOneThread);
BENCHMARK(BM_GemmOneDnn)->Apply(GemmTwoThreads);

void BM_GemmXnnpack(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const int threads = static_cast<int>(state.range(3));
  if (!XnnInitialized()) return state.SkipWithError("xnn_initialize failed");
  const Tensor weights = bench::RandomFloats({n, k}), bias = bench::RandomFloats({n}), a = bench::RandomFloats({m, k});
  Tensor y(DataType::kFloat, {m, n});
  XnnOperator fc;
  if (xnn_create_fully_connected_nc_f32(k, n, k, n, weights.data<float>(), bias.data<float>(), kNoMin, kNoMax, 0,
                                        &fc.op) != xnn_status_success) {
    return state.SkipWithError("XNNPACK create failed");
  }
  XnnThreads pool(threads);
  if (xnn_setup_fully_connected_nc_f32(fc.op, m, a.data<float>(), y.data<float>(), pool.pool) != xnn_status_success) {
    return state.SkipWithError("XNNPACK setup failed");
  }
  for (auto _ : state) {
    if (xnn_run_operator(fc.op, pool.pool) != xnn_status_success) return state.SkipWithError("XNNPACK run");
    benchmark::DoNotOptimize(y.raw_data());
  }
  bench::ReportFlops(state, 2.0 * m * n * k, threads);
}
BENCHMARK(BM_GemmXnnpack)->Apply(GemmOneThread);
BENCHMARK(BM_GemmXnnpack)->Apply(GemmTwoThreads);

}  // namespace
}  // namespace onnxserve

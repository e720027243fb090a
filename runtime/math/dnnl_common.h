// What our two oneDNN paths share (runtime/math/dnnl_conv.h, runtime/math/nhwc_conv.h; built with oneDNN only):
// the ISA limit, the bounds on a call's work and on the plans a node keeps, the windows of rows a band of
// output reads, and the reorder of constant weights into a primitive's layout.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"
#include "runtime/math/conv_shape.h"

namespace onnxserve {

// Limits oneDNN to ActiveIsa() once, before it generates any code, so ONNXSERVE_ISA=avx2 lowers oneDNN too;
// false when oneDNN refuses (then no oneDNN primitive may run).
bool LimitDnnlIsaOnce();

// Multiply-adds per band: about half a millisecond at the AVX-512 rate, so a run that must stop does
// within a millisecond or so.
inline constexpr int64_t kDnnlBandWork = int64_t{1} << 27;

// Input shapes one node keeps plans for: a model's inputs take a few; a client cycling through sizes gets
// our kernel past them instead of growing this.
inline constexpr size_t kMaxDnnlPlans = 4;

// The plan in `plans` for `shape`'s image geometry on `threads` threads, else the one `make()` makes, kept
// while `plans` holds fewer than kMaxDnnlPlans; null when they are full or `make` declines the shape. The
// caller holds the lock that guards `plans`. Plan has `shape` and `threads`.
template <typename Plan, typename Make>
const Plan* FindOrMakePlan(std::vector<std::unique_ptr<Plan>>& plans, const ConvShape2D& shape, int threads,
                           Make make) {
  for (const auto& plan : plans) {
    if (plan->threads == threads && SameImageGeometry(plan->shape, shape)) return plan.get();
  }
  if (plans.size() >= kMaxDnnlPlans) return nullptr;
  std::unique_ptr<Plan> plan = make();
  if (plan == nullptr) return nullptr;
  plans.push_back(std::move(plan));
  return plans.back().get();
}

// A plain NCHW window of one image: `channels` x `rows` x `cols` of an image `height` x `width`.
dnnl::memory::desc PlainWindow(int64_t channels, int64_t rows, int64_t cols, int64_t height, int64_t width);

// Where a band of output rows [r0, r0 + rows) reads: input rows [begin, end) and the zero rows before and
// after them.
struct RowWindow {
  int64_t begin, end, pad_before, pad_after;
};
RowWindow WindowOf(int64_t r0, int64_t rows, int64_t in, int64_t stride, int64_t dilation, int64_t kernel,
                   int64_t pad);

// Constant weights `w`, laid out as `plain` says, reordered into a new memory of the layout `desc` that a
// primitive chose; made once per layout by the caller, which keeps and shares the copy.
dnnl::memory ReorderedWeights(const dnnl::memory::desc& desc, const dnnl::memory::desc& plain, const float* w,
                              const dnnl::engine& engine);

}  // namespace onnxserve

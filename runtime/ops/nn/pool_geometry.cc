#include "runtime/ops/nn/pool_geometry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/core/checked_size.h"
#include "runtime/core/memory_budget.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/window.h"

namespace onnxserve {

absl::StatusOr<PoolAttrs> ReadPoolAttrs(const KernelInfo& info, bool has_ceil, bool has_dilations) {
  PoolAttrs a;
  ASSIGN_OR_RETURN(a.auto_pad, info.Attr<std::string>("auto_pad", "NOTSET"));
  ASSIGN_OR_RETURN(a.kernel, info.Attr<std::vector<int64_t>>("kernel_shape"));
  ASSIGN_OR_RETURN(a.strides, info.Attr<std::vector<int64_t>>("strides", {}));
  ASSIGN_OR_RETURN(a.pads, info.Attr<std::vector<int64_t>>("pads", {}));
  if (has_dilations) {
    ASSIGN_OR_RETURN(a.dilations, info.Attr<std::vector<int64_t>>("dilations", {}));
  }
  if (has_ceil) {
    ASSIGN_OR_RETURN(int64_t ceil_mode, info.Attr<int64_t>("ceil_mode", 0));
    a.ceil_mode = ceil_mode != 0;
  }
  const size_t rank = a.kernel.size();
  if (rank == 0 || rank > kMaxSpatial) {
    return absl::UnimplementedError(absl::StrCat("kernel_shape must have 1 to ", kMaxSpatial, " dims, got ", rank));
  }
  if (a.strides.empty()) a.strides.assign(rank, 1);
  if (a.dilations.empty()) a.dilations.assign(rank, 1);
  if (a.pads.empty()) a.pads.assign(2 * rank, 0);
  if (a.strides.size() != rank || a.dilations.size() != rank || a.pads.size() != 2 * rank) {
    return absl::InvalidArgumentError(absl::StrCat("kernel_shape has ", rank, " dims: strides and dilations need ",
                                                   rank, " values and pads ", 2 * rank));
  }
  for (size_t d = 0; d < rank; ++d) {
    if (a.kernel[d] < 1 || a.strides[d] < 1 || a.dilations[d] < 1) {
      return absl::InvalidArgumentError("kernel_shape, strides and dilations must be positive");
    }
  }
  if (std::any_of(a.pads.begin(), a.pads.end(), [](int64_t p) { return p < 0; })) {
    return absl::InvalidArgumentError(absl::StrCat("pads [", absl::StrJoin(a.pads, ","), "]: expected >= 0"));
  }
  if (a.auto_pad != "NOTSET" && a.auto_pad != "VALID" && a.auto_pad != "SAME_UPPER" && a.auto_pad != "SAME_LOWER") {
    return absl::InvalidArgumentError(absl::StrCat("unknown auto_pad \"", a.auto_pad, "\""));
  }
  return a;
}

// DimWindows' start, lo, hi and padded: int64 each, per output position of each spatial dim.
constexpr int64_t kWindowFields = 4;

// The windows of `out_shape`, counted as a tensor of their int64 would be: within the size limits, and
// charged to the current run until the returned handle goes.
absl::StatusOr<std::shared_ptr<const void>> ChargeWindows(const Shape& out_shape, size_t rank) {
  int64_t positions = 0;
  for (size_t d = 0; d < rank; ++d) {
    ASSIGN_OR_RETURN(positions, CheckedAdd(positions, out_shape[d + 2]));
  }
  ASSIGN_OR_RETURN(const int64_t bytes, CheckedByteSize(DataType::kInt64, {positions, kWindowFields}));
  const MemoryCharge charge = MemoryCharge::ToCurrentRun(static_cast<size_t>(bytes));  // throws past the budget
  return std::shared_ptr<const void>(nullptr, [charge](const void*) { charge.Release(); });
}

absl::StatusOr<PoolGeometry> PlanPool(const PoolAttrs& a, const Shape& x) {
  const size_t rank = a.kernel.size();
  if (x.size() != rank + 2) {
    return absl::InvalidArgumentError(absl::StrCat("input should be [N, C] followed by ", rank,
                                                   " spatial dims (kernel_shape), got ", ShapeToString(x)));
  }
  PoolGeometry g;
  g.planes = x[0] * x[1];
  g.out_shape = {x[0], x[1]};
  const size_t skip = kMaxSpatial - rank;
  std::vector<int64_t> pad_begin(rank), pad_end(rank);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t in = x[d + 2], s = a.strides[d];
    ASSIGN_OR_RETURN(const int64_t extent, DilatedExtent(a.kernel[d], a.dilations[d]));
    pad_begin[d] = a.pads[d];
    pad_end[d] = a.pads[d + rank];
    int64_t out;
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      out = in / s + (in % s != 0 ? 1 : 0);
      ASSIGN_OR_RETURN(const int64_t total, SamePadding(in, extent, s));
      pad_begin[d] = a.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pad_end[d] = total - pad_begin[d];
    } else {
      if (a.auto_pad == "VALID") pad_begin[d] = pad_end[d] = 0;
      ASSIGN_OR_RETURN(const int64_t padded, PaddedSize(in, pad_begin[d], pad_end[d]));
      if (padded < extent - 1) {  // one short is an axis of no windows
        return absl::InvalidArgumentError(absl::StrCat("kernel extent ", extent, " exceeds padded input dim ", d,
                                                       " of ", ShapeToString(x)));
      }
      ASSIGN_OR_RETURN(out, WindowCount(padded, extent, s, a.ceil_mode));
      // A last window that would start in the end padding is dropped (as PyTorch and the ONNX reference do).
      if (a.ceil_mode) {
        ASSIGN_OR_RETURN(const int64_t last_start, CheckedMul(out - 1, s));
        if (last_start >= in + pad_begin[d]) --out;
      }
    }
    g.out_shape.push_back(out);
  }
  // The windows below take memory per output position: bound the output before building them. An empty
  // output reads none, and bounds nothing: a request of no images may declare rows past any memory.
  ASSIGN_OR_RETURN(const int64_t outputs, CheckedElementCount(g.out_shape));
  if (outputs > 0) {
    ASSIGN_OR_RETURN(g.windows_charge, ChargeWindows(g.out_shape, rank));
  }
  for (size_t d = 0; d < rank; ++d) {
    const int64_t in = x[d + 2], k = a.kernel[d], s = a.strides[d], dil = a.dilations[d], out = g.out_shape[d + 2];
    const size_t dd = d + skip;
    g.in[dd] = in;
    g.out[dd] = out;
    g.kernel[dd] = k;
    g.stride[dd] = s;
    g.dilation[dd] = dil;
    DimWindows& w = g.windows[dd];
    for (int64_t o = 0; o < (outputs == 0 ? 0 : out); ++o) {
      const int64_t start = o * s - pad_begin[d];
      w.start.push_back(start);
      w.lo.push_back(start >= 0 ? 0 : std::min(k, CeilDiv(-start, dil)));
      w.hi.push_back(std::max(w.lo.back(), std::min(k, CeilDiv(in - start, dil))));
      w.padded.push_back(std::min(k, CeilDiv(in + pad_end[d] - start, dil)));
    }
  }
  for (size_t dd = 0; dd < skip; ++dd) g.windows[dd] = DimWindows{{0}, {0}, {1}, {1}};
  return g;
}

}  // namespace onnxserve

// Unique: the distinct elements (or, with `axis`, the distinct slices along an axis) with the index of
// each one's first occurrence, the inverse map and the counts; sorted ascending or in order of appearance.
#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "runtime/core/memory_budget.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// The input viewed as [outer, count, inner]: slice k is every element (o, k, i).
struct SliceView {
  int64_t outer = 1, count = 0, inner = 1;
};

// Half types order through float, floats with NaN last (numpy.unique's order, its NaNs one value);
// everything else (strings included) by operator<.
template <typename T>
bool Less(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return OrderedLess(static_cast<float>(a), static_cast<float>(b));
  } else if constexpr (std::is_floating_point_v<T>) {
    return OrderedLess(a, b);
  } else {
    return a < b;
  }
}

// Lexicographic order and equality of slices, walking o then i.
template <typename T>
class SliceCompare {
 public:
  SliceCompare(const T* data, const SliceView& v) : data_(data), v_(v) {}

  // <0, 0, >0 as slice a sorts before, equals or after slice b.
  int Compare(int64_t a, int64_t b) const {
    for (int64_t o = 0; o < v_.outer; ++o) {
      const T* row = data_ + o * v_.count * v_.inner;
      const T* pa = row + a * v_.inner;
      const T* pb = row + b * v_.inner;
      for (int64_t i = 0; i < v_.inner; ++i) {
        if (Less(pa[i], pb[i])) return -1;
        if (Less(pb[i], pa[i])) return 1;
      }
    }
    return 0;
  }

 private:
  const T* data_;
  SliceView v_;
};

// The groups of equal slices: `first` (the first occurrence of each, in output order), and for every
// slice the group it belongs to.
struct Groups {
  std::vector<int64_t> first;
  std::vector<int64_t> counts;
  std::vector<int64_t> inverse;
};

template <typename T>
Groups GroupSlices(const T* data, const SliceView& v, bool sorted) {
  const SliceCompare<T> cmp(data, v);
  std::vector<int64_t> order(static_cast<size_t>(v.count));
  std::iota(order.begin(), order.end(), 0);
  // Stable: equal slices keep their order, so each group starts with its first occurrence.
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp.Compare(a, b) < 0; });
  Groups g;
  g.inverse.resize(static_cast<size_t>(v.count));
  std::vector<int64_t> sorted_group(static_cast<size_t>(v.count));
  for (size_t j = 0; j < order.size(); ++j) {
    if (j == 0 || cmp.Compare(order[j - 1], order[j]) != 0) {
      g.first.push_back(order[j]);
      g.counts.push_back(0);
    }
    ++g.counts.back();
    sorted_group[order[j]] = static_cast<int64_t>(g.first.size()) - 1;
  }
  // Unsorted: groups in order of first appearance.
  std::vector<int64_t> rank(g.first.size());
  std::iota(rank.begin(), rank.end(), 0);
  if (!sorted) {
    std::vector<int64_t> by_first(g.first.size());
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return g.first[a] < g.first[b]; });
    Groups reordered;
    for (size_t j = 0; j < by_first.size(); ++j) {
      rank[by_first[j]] = static_cast<int64_t>(j);
      reordered.first.push_back(g.first[by_first[j]]);
      reordered.counts.push_back(g.counts[by_first[j]]);
    }
    g.first = std::move(reordered.first);
    g.counts = std::move(reordered.counts);
  }
  for (int64_t k = 0; k < v.count; ++k) g.inverse[k] = rank[sorted_group[k]];
  return g;
}

// What GroupSlices and the outputs made from it hold at once, at most: ten int64 a slice (the sort order and
// its merge buffer, each slice's group in both orders, the groups' first slices, counts and ranks as they
// grow, and their copies into the outputs).
constexpr size_t kScratchBytesPerSlice = 10 * sizeof(int64_t);

Tensor Int64Tensor(const std::vector<int64_t>& values) {
  return Tensor::FromVector<int64_t>({static_cast<int64_t>(values.size())}, values);
}

class Unique final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    has_axis_ = info.HasAttr("axis");
    ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis", 0));
    ASSIGN_OR_RETURN(const int64_t sorted, info.Attr<int64_t>("sorted", 1));
    sorted_ = sorted != 0;
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    SliceView view;
    int64_t axis = 0;
    if (has_axis_) {
      ASSIGN_OR_RETURN(axis, NormalizeAxis(axis_, x.rank()));
      if (x.rank() == 0) return absl::InvalidArgumentError("axis: a scalar X has no axis to compare slices along");
      view.count = x.dim(axis);
      for (int64_t d = 0; d < axis; ++d) view.outer *= x.dim(d);
      for (int64_t d = axis + 1; d < x.rank(); ++d) view.inner *= x.dim(d);
    } else {
      view.count = x.NumElements();
    }
    if (view.count > 0 && view.outer * view.inner == 0) return UniqueOfEmptySlices(ctx, x, axis, view.count);
    // The grouping's vectors, charged to the run while they live: some 80 bytes a slice, 80 times a
    // one-byte X, were outside its budget.
    const MemoryCharge scratch = MemoryCharge::ToCurrentRun(kScratchBytesPerSlice * static_cast<size_t>(view.count));
    const std::shared_ptr<const void> release_scratch(nullptr, [scratch](const void*) { scratch.Release(); });
    Groups groups;
    bool handled = DispatchAny(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      groups = GroupSlices(x.data<T>(), view, sorted_);
      Shape y_shape = has_axis_ ? x.shape() : Shape{0};
      y_shape[axis] = static_cast<int64_t>(groups.first.size());
      T* out = ctx.Output(0, x.dtype(), y_shape).template data<T>();
      const int64_t unique = static_cast<int64_t>(groups.first.size());
      for (int64_t o = 0; o < view.outer; ++o) {
        for (int64_t j = 0; j < unique; ++j) {
          const T* src = x.data<T>() + (o * view.count + groups.first[j]) * view.inner;
          std::copy(src, src + view.inner, out + (o * unique + j) * view.inner);
        }
      }
    });
    if (!handled) {
      return absl::InvalidArgumentError(absl::StrCat("X has unsupported type ", DataTypeName(x.dtype())));
    }
    if (ctx.OutputWanted(1)) ctx.SetOutput(1, Int64Tensor(groups.first));
    if (ctx.OutputWanted(2)) ctx.SetOutput(2, Int64Tensor(groups.inverse));
    if (ctx.OutputWanted(3)) ctx.SetOutput(3, Int64Tensor(groups.counts));
    return absl::OkStatus();
  }

 private:
  // Slices of no elements are all equal: one group, nothing to sort. An empty X may declare 2^32 of them
  // (nothing bounds the dims of an empty tensor but their nonzero product), so the inverse goes straight to
  // its checked output instead of through scratch vectors of that length (32 GB each).
  static absl::Status UniqueOfEmptySlices(KernelContext& ctx, const Tensor& x, int64_t axis, int64_t count) {
    Shape y_shape = x.shape();
    y_shape[axis] = 1;
    ctx.Output(0, x.dtype(), y_shape);
    if (ctx.OutputWanted(1)) ctx.SetOutput(1, Int64Tensor({0}));
    if (ctx.OutputWanted(2)) {
      ASSIGN_OR_RETURN(Tensor* inverse, ctx.CheckedOutput(2, DataType::kInt64, {count}));
      std::fill_n(inverse->data<int64_t>(), count, int64_t{0});
    }
    if (ctx.OutputWanted(3)) ctx.SetOutput(3, Int64Tensor({count}));
    return absl::OkStatus();
  }

  bool has_axis_ = false;
  int64_t axis_ = 0;
  bool sorted_ = true;
};

REGISTER_KERNEL(kOnnx, "Unique", 11, kLatest, kAllTypes, Unique);

}  // namespace
}  // namespace onnxserve

// ScatterElements, ScatterND, TensorScatter (and the deprecated Scatter): the output is a copy of `data` with
// the elements picked by `indices` replaced by, or reduced (add/mul/max/min) with, `updates`. All indices are
// checked before anything is written. Updates apply in order, so duplicate indices reduce deterministically.
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

// The reductions each version defines: none before 16, add/mul from 16, max/min from 18.
absl::StatusOr<Reduction> ParseReduction(const KernelInfo& info) {
  const absl::StatusOr<std::string> attr = info.Attr<std::string>("reduction", "none");
  if (!attr.ok()) return attr.status();
  const std::string& name = *attr;
  if (name == "none") return Reduction::kNone;
  if (info.opset() >= 16 && name == "add") return Reduction::kAdd;
  if (info.opset() >= 16 && name == "mul") return Reduction::kMul;
  if (info.opset() >= 18 && name == "max") return Reduction::kMax;
  if (info.opset() >= 18 && name == "min") return Reduction::kMin;
  return absl::InvalidArgumentError(absl::StrCat("reduction \"", name, "\" is not defined at opset ",
                                                 info.opset(), " (expected none",
                                                 info.opset() >= 16 ? ", add, mul" : "",
                                                 info.opset() >= 18 ? ", max, min" : "", ")"));
}

// Calls fn(combine) with combine(T& target, const T& update) for the reduction. Strings only replace.
template <typename T, typename Fn>
absl::Status WithCombine(Reduction reduction, Fn&& fn) {
  if (reduction == Reduction::kNone) {
    fn([](T& target, const T& update) { target = update; });
    return absl::OkStatus();
  }
  if constexpr (std::is_same_v<T, std::string>) {
    return absl::InvalidArgumentError("string tensors support only reduction \"none\"");
  } else {
    switch (reduction) {
      case Reduction::kAdd:
        if constexpr (std::is_same_v<T, bool>) {
          fn([](T& t, const T& u) { t = t || u; });
        } else {
          fn([](T& t, const T& u) { t = FromCompute<T>(ToCompute(t) + ToCompute(u)); });
        }
        break;
      case Reduction::kMul:
        if constexpr (std::is_same_v<T, bool>) {
          fn([](T& t, const T& u) { t = t && u; });
        } else {
          fn([](T& t, const T& u) { t = FromCompute<T>(ToCompute(t) * ToCompute(u)); });
        }
        break;
      case Reduction::kMax:
        fn([](T& t, const T& u) { t = FromCompute<T>(std::max(ToCompute(t), ToCompute(u))); });
        break;
      case Reduction::kMin:
        fn([](T& t, const T& u) { t = FromCompute<T>(std::min(ToCompute(t), ToCompute(u))); });
        break;
      case Reduction::kNone:
        break;
    }
    return absl::OkStatus();
  }
}

absl::Status CheckIndexType(const Tensor& indices) {
  if (indices.dtype() == DataType::kInt32 || indices.dtype() == DataType::kInt64) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("indices must be int32 or int64, got ", DataTypeName(indices.dtype())));
}

// Applies combine(out[targets[i]], updates[i * slice + k]) for every target and k < slice, in order.
absl::Status ScatterInto(const Tensor& data, const Tensor& updates, const std::vector<int64_t>& targets,
                         int64_t slice, Reduction reduction, Tensor& out) {
  if (updates.dtype() != data.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat("updates are ", DataTypeName(updates.dtype()),
                                                   ", expected the data type ", DataTypeName(data.dtype())));
  }
  absl::Status status = absl::OkStatus();
  DispatchAny(data.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* dst = out.data<T>();
    const T* src = data.data<T>();
    std::copy(src, src + data.NumElements(), dst);
    const T* upd = updates.data<T>();
    status = WithCombine<T>(reduction, [&](auto combine) {
      for (size_t i = 0; i < targets.size(); ++i) {
        T* target = dst + targets[i];
        const T* from = upd + static_cast<int64_t>(i) * slice;
        for (int64_t k = 0; k < slice; ++k) combine(target[k], from[k]);
      }
    });
  });
  return status;
}

// ScatterElements (and Scatter-9): updates and indices share a shape of data's rank; the update at
// position p goes to data at p with p[axis] replaced by indices[p].
class ScatterElements final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis", 0));
    ASSIGN_OR_RETURN(reduction_, ParseReduction(info));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 3));
    const Tensor& data = *ctx.Input(0);
    const Tensor& indices = *ctx.Input(1);
    const Tensor& updates = *ctx.Input(2);
    RETURN_IF_ERROR(CheckIndexType(indices));
    if (data.rank() == 0 || indices.shape() != updates.shape() || indices.rank() != data.rank()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "indices ", ShapeToString(indices.shape()), " and updates ", ShapeToString(updates.shape()),
          " must have the same shape, of the rank of data ", ShapeToString(data.shape()), " (>= 1)"));
    }
    ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(axis_, data.rank()));
    for (int64_t d = 0; d < data.rank(); ++d) {
      if (d != axis && indices.dim(d) > data.dim(d)) {
        return absl::InvalidArgumentError(absl::StrCat("indices ", ShapeToString(indices.shape()),
                                                       " exceed data ", ShapeToString(data.shape()),
                                                       " on axis ", d));
      }
    }
    ASSIGN_OR_RETURN(const std::vector<int64_t> targets, TargetOffsets(data, indices, axis));
    Tensor& out = ctx.Output(0, data.dtype(), data.shape());
    return ScatterInto(data, updates, targets, 1, reduction_, out);
  }

 private:
  // The data offset every update goes to.
  static absl::StatusOr<std::vector<int64_t>> TargetOffsets(const Tensor& data, const Tensor& indices,
                                                            int64_t axis) {
    const std::vector<int64_t> strides = StridesOf(data.shape());
    std::vector<int64_t> targets(static_cast<size_t>(indices.NumElements()));
    std::vector<int64_t> position(static_cast<size_t>(indices.rank()), 0);
    int64_t base = 0;  // Offset of `position` in data without the axis term.
    for (int64_t i = 0; i < indices.NumElements(); ++i) {
      ASSIGN_OR_RETURN(const int64_t index, ResolveIndex(indices.GetAsInt64(i), data.dim(axis), true));
      targets[i] = base + index * strides[axis];
      for (int64_t d = indices.rank() - 1; d >= 0; --d) {
        const int64_t step = d == axis ? 0 : strides[d];
        base += step;
        if (++position[d] < indices.dim(d)) break;
        base -= step * indices.dim(d);
        position[d] = 0;
      }
    }
    return targets;
  }

  int64_t axis_ = 0;
  Reduction reduction_ = Reduction::kNone;
};

// ScatterND: with k = indices.shape[-1], each index tuple names the slice data[i_1..i_k] of shape
// data.shape[k:]; updates has shape indices.shape[:-1] + data.shape[k:].
class ScatterND final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(reduction_, ParseReduction(info));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 3));
    const Tensor& data = *ctx.Input(0);
    const Tensor& indices = *ctx.Input(1);
    const Tensor& updates = *ctx.Input(2);
    RETURN_IF_ERROR(CheckIndexType(indices));
    const int64_t k = indices.rank() == 0 ? 0 : indices.dim(indices.rank() - 1);
    if (indices.rank() < 1 || k > data.rank()) {
      return absl::InvalidArgumentError(absl::StrCat("indices ", ShapeToString(indices.shape()),
                                                     " must have rank >= 1 and a last dim <= the rank",
                                                     " of data ",
                                                     ShapeToString(data.shape())));
    }
    Shape expected(indices.shape().begin(), indices.shape().end() - 1);
    expected.insert(expected.end(), data.shape().begin() + k, data.shape().end());
    if (updates.shape() != expected) {
      return absl::InvalidArgumentError(absl::StrCat("updates ", ShapeToString(updates.shape()),
                                                     ": expected ", ShapeToString(expected)));
    }
    // With k = 0 each tuple names all of data, and indices of [2^32, 0] declare 2^32 tuples without holding an
    // element (nothing bounds the dims of an empty tensor but their nonzero product): an empty data has
    // nothing to write, and a non-empty one's slice bounds the tuples by the updates' elements.
    if (k == 0 && data.NumElements() == 0) {
      ctx.Output(0, data.dtype(), data.shape());
      return absl::OkStatus();
    }
    const std::vector<int64_t> strides = StridesOf(data.shape());
    const int64_t tuples = NumElements(absl::MakeConstSpan(indices.shape()).subspan(0, indices.rank() - 1));
    std::vector<int64_t> targets(static_cast<size_t>(tuples), 0);
    for (int64_t t = 0; t < tuples; ++t) {
      for (int64_t j = 0; j < k; ++j) {
        ASSIGN_OR_RETURN(const int64_t i, ResolveIndex(indices.GetAsInt64(t * k + j), data.dim(j), true));
        targets[t] += i * strides[j];
      }
    }
    const int64_t slice = NumElements(absl::MakeConstSpan(data.shape()).subspan(k));
    Tensor& out = ctx.Output(0, data.dtype(), data.shape());
    return ScatterInto(data, updates, targets, slice, reduction_, out);
  }

 private:
  Reduction reduction_ = Reduction::kNone;
};

// TensorScatter-24: a KV cache of max_sequence_length positions on `axis`, with `update`'s sequence written
// into it from write_indices[batch] (0 when absent). `linear` writes must fit; `circular` ones wrap.
class TensorScatter final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis", -2));
    ASSIGN_OR_RETURN(const std::string mode, info.Attr<std::string>("mode", "linear"));
    if (mode != "linear" && mode != "circular") {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute mode: expected \"linear\" or \"circular\", got \"", mode, "\""));
    }
    circular_ = mode == "circular";
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& cache = *ctx.Input(0);
    const Tensor& update = *ctx.Input(1);
    ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(axis_, cache.rank()));
    if (axis == 0) return absl::InvalidArgumentError("axis must not be 0, the batch axis");
    Shape expected = cache.shape();
    expected[axis] = update.rank() == cache.rank() ? update.dim(axis) : -1;
    if (update.shape() != expected || update.dim(axis) > cache.dim(axis)) {
      return absl::InvalidArgumentError(absl::StrCat("update ", update.DebugString(), " must have past_cache ",
                                                     cache.DebugString(), "'s shape but on axis ", axis,
                                                     ", where it can be at most ", cache.dim(axis)));
    }
    const int64_t max_len = cache.dim(axis), len = update.dim(axis);
    ASSIGN_OR_RETURN(const std::vector<int64_t> starts, WriteStarts(ctx, cache.dim(0)));
    for (size_t b = 0; b < starts.size() && !circular_; ++b) {
      // Written without start + len, which a write index near INT64_MAX overflows.
      if (starts[b] < 0 || starts[b] > max_len - len) {
        return absl::InvalidArgumentError(absl::StrCat("write index ", starts[b], " of batch ", b, " plus ", len,
                                                       " updates leaves the cache of ", max_len,
                                                       " positions (mode linear)"));
      }
    }
    Tensor& out = ctx.Output(0, cache.dtype(), cache.shape());
    // An empty cache may still declare 2^32 positions or batches (nothing bounds the dims of an empty tensor
    // but their nonzero product): no target list for elements that do not exist.
    if (out.NumElements() == 0) return absl::OkStatus();
    const int64_t outer = NumElements(absl::MakeConstSpan(cache.shape()).subspan(0, axis));
    const int64_t inner = NumElements(absl::MakeConstSpan(cache.shape()).subspan(axis + 1));
    const int64_t per_batch = outer / cache.dim(0);
    std::vector<int64_t> targets;
    targets.reserve(outer * len);
    for (int64_t o = 0; o < outer; ++o) {
      const int64_t start = starts.empty() ? 0 : starts[o / per_batch];
      const int64_t first = len == 0 ? 0 : (start % max_len + max_len) % max_len;  // max_len is 0 only if len is
      for (int64_t i = 0; i < len; ++i) {
        const int64_t position = (first + i) % max_len;
        targets.push_back((o * max_len + position) * inner);
      }
    }
    return ScatterInto(cache, update, targets, inner, Reduction::kNone, out);
  }

 private:
  // write_indices, or none when absent (every batch writes from 0).
  static absl::StatusOr<std::vector<int64_t>> WriteStarts(const KernelContext& ctx, int64_t batch) {
    const Tensor* indices = ctx.Input(2);
    if (indices == nullptr) return std::vector<int64_t>();
    if (indices->dtype() != DataType::kInt64 || indices->shape() != Shape{batch}) {
      return absl::InvalidArgumentError(
          absl::StrCat("write_indices must be int64 of shape [", batch, "], got ", indices->DebugString()));
    }
    return Int64Values(*indices);
  }

  int64_t axis_ = -2;
  bool circular_ = false;
};

// Kept for the error message: the spec removes Scatter from opset 11 in favour of ScatterElements.
class DeprecatedScatter final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Scatter is deprecated since opset 11 (model opset ", info.opset(), "): use ScatterElements"));
  }
  absl::Status Compute(KernelContext&) const override { return absl::InternalError("unreachable"); }
};

REGISTER_KERNEL(kOnnx, "TensorScatter", 24, kLatest, kAllTypes, TensorScatter);
REGISTER_KERNEL(kOnnx, "Scatter", 9, 10, kAllTypes, ScatterElements);
REGISTER_KERNEL(kOnnx, "Scatter", 11, kLatest, kAllTypes, DeprecatedScatter);
// ScatterElements-13 adds bfloat16; -16 adds reduction add/mul; -18 adds max/min.
REGISTER_KERNEL(kOnnx, "ScatterElements", 11, 12, kAllTypes, ScatterElements);
REGISTER_KERNEL(kOnnx, "ScatterElements", 13, 15, kAllTypes, ScatterElements);
REGISTER_KERNEL(kOnnx, "ScatterElements", 16, 17, kAllTypes, ScatterElements);
REGISTER_KERNEL(kOnnx, "ScatterElements", 18, kLatest, kAllTypes, ScatterElements);
// ScatterND has the same history.
REGISTER_KERNEL(kOnnx, "ScatterND", 11, 12, kAllTypes, ScatterND);
REGISTER_KERNEL(kOnnx, "ScatterND", 13, 15, kAllTypes, ScatterND);
REGISTER_KERNEL(kOnnx, "ScatterND", 16, 17, kAllTypes, ScatterND);
REGISTER_KERNEL(kOnnx, "ScatterND", 18, kLatest, kAllTypes, ScatterND);

}  // namespace
}  // namespace onnxserve

// Gather, GatherElements and GatherND: copy elements of `data` picked by integer indices. Indices are read
// and checked once per run (an out-of-range index is an error naming it), then the copy runs in parallel.
// Only element widths matter for a copy, so kernels dispatch by width (strings are copied as strings).
#include <algorithm>
#include <vector>

#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// About 64K elements per task: below that, waking a worker costs more than the copy.
int64_t MinBlocks(int64_t block_size) {
  return std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(block_size, 1));
}

absl::Status CheckIndexType(const Tensor& indices) {
  if (indices.dtype() == DataType::kInt32 || indices.dtype() == DataType::kInt64) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("indices must be int32 or int64, got ", DataTypeName(indices.dtype())));
}

// Every index of `indices` mapped into [0, size) (see ResolveIndex).
absl::StatusOr<std::vector<int64_t>> ResolveAll(const Tensor& indices, int64_t size, bool allow_negative) {
  RETURN_IF_ERROR(CheckIndexType(indices));
  std::vector<int64_t> out(static_cast<size_t>(indices.NumElements()));
  for (int64_t i = 0; i < indices.NumElements(); ++i) {
    ASSIGN_OR_RETURN(out[i], ResolveIndex(indices.GetAsInt64(i), size, allow_negative));
  }
  return out;
}

// Gather: output = data.shape[:axis] + indices.shape + data.shape[axis+1:]. Each (outer, index) pair copies
// one contiguous block of data.shape[axis+1:].
class Gather final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis", 0));
    allow_negative_ = info.opset() >= 11;  // Gather-1 requires indices in [0, s).
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& data = *ctx.Input(0);
    const Tensor& indices = *ctx.Input(1);
    if (data.rank() == 0) return absl::InvalidArgumentError("data must have rank >= 1, got a scalar");
    ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(axis_, data.rank()));
    ASSIGN_OR_RETURN(const std::vector<int64_t> index, ResolveAll(indices, data.dim(axis), allow_negative_));

    Shape out_shape(data.shape().begin(), data.shape().begin() + axis);
    out_shape.insert(out_shape.end(), indices.shape().begin(), indices.shape().end());
    out_shape.insert(out_shape.end(), data.shape().begin() + axis + 1, data.shape().end());
    Tensor& out = ctx.Output(0, data.dtype(), out_shape);
    RETURN_IF_ERROR(CheckStringCopies({&data}, out.NumElements()));

    const int64_t outer = NumElements(absl::MakeConstSpan(data.shape()).subspan(0, axis));
    const int64_t block = NumElements(absl::MakeConstSpan(data.shape()).subspan(axis + 1));
    const int64_t axis_size = data.dim(axis);
    const int64_t count = static_cast<int64_t>(index.size());
    DispatchByWidth(data.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* src = data.data<T>();
      T* dst = out.data<T>();
      ctx.pool().ParallelFor(outer * count, MinBlocks(block), [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) {
          const int64_t o = b / count;
          const T* from = src + (o * axis_size + index[b % count]) * block;
          std::copy(from, from + block, dst + b * block);
        }
      });
    });
    return absl::OkStatus();
  }

 private:
  int64_t axis_ = 0;
  bool allow_negative_ = true;
};

// GatherElements: out[i_0..i_r] = data[i_0.., indices[i_0..i_r] (at axis), ..i_r]; out has indices' shape,
// whose dims may be smaller than data's off the axis.
class GatherElements final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis", 0));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& data = *ctx.Input(0);
    const Tensor& indices = *ctx.Input(1);
    if (data.rank() == 0 || indices.rank() != data.rank()) {
      return absl::InvalidArgumentError(absl::StrCat("data ", ShapeToString(data.shape()), " and indices ",
                                                     ShapeToString(indices.shape()),
                                                     " must have the same rank >= 1"));
    }
    ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(axis_, data.rank()));
    for (int64_t d = 0; d < data.rank(); ++d) {
      if (d != axis && indices.dim(d) > data.dim(d)) {
        return absl::InvalidArgumentError(absl::StrCat("indices ", ShapeToString(indices.shape()),
                                                       " exceed data ", ShapeToString(data.shape()),
                                                       " on axis ", d));
      }
    }
    ASSIGN_OR_RETURN(const std::vector<int64_t> index, ResolveAll(indices, data.dim(axis), true));
    Tensor& out = ctx.Output(0, data.dtype(), indices.shape());
    if (out.NumElements() == 0) return absl::OkStatus();
    RETURN_IF_ERROR(CheckStringCopies({&data}, out.NumElements()));

    const std::vector<int64_t> strides = StridesOf(data.shape());
    const int64_t rank = data.rank();
    const int64_t inner = indices.dim(rank - 1);
    DispatchByWidth(data.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* src = data.data<T>();
      T* dst = out.data<T>();
      ctx.pool().ParallelFor(out.NumElements() / inner, MinBlocks(inner), [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          // Offset of the row in data without the axis term (which comes from the index).
          int64_t base = 0;
          for (int64_t d = rank - 2, rest = row; d >= 0; --d) {
            if (d != axis) base += (rest % indices.dim(d)) * strides[d];
            rest /= indices.dim(d);
          }
          const int64_t* row_index = index.data() + row * inner;
          T* row_out = dst + row * inner;
          if (axis == rank - 1) {
            for (int64_t k = 0; k < inner; ++k) row_out[k] = src[base + row_index[k]];
          } else {
            for (int64_t k = 0; k < inner; ++k) {
              row_out[k] = src[base + k * strides[rank - 1] + row_index[k] * strides[axis]];
            }
          }
        }
      });
    });
    return absl::OkStatus();
  }

 private:
  int64_t axis_ = 0;
};

// GatherND: with b = batch_dims and m = indices.shape[-1], each index tuple picks the slice
// data[batch..., i_1..i_m] of shape data.shape[b+m:]; out = indices.shape[:-1] + data.shape[b+m:].
class GatherND final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(batch_dims_, info.Attr<int64_t>("batch_dims", 0));
    if (batch_dims_ < 0) {
      return absl::InvalidArgumentError(absl::StrCat("batch_dims must be >= 0, got ", batch_dims_));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& data = *ctx.Input(0);
    const Tensor& indices = *ctx.Input(1);
    RETURN_IF_ERROR(CheckIndexType(indices));
    const int64_t b = batch_dims_;
    if (indices.rank() < 1 || b >= std::min(data.rank(), indices.rank())) {
      return absl::InvalidArgumentError(absl::StrCat("batch_dims ", b, " must be less than the ranks of",
                                                     " data ", ShapeToString(data.shape()), " and indices ",
                                                     ShapeToString(indices.shape())));
    }
    const int64_t m = indices.dim(indices.rank() - 1);
    if (m < 1 || b + m > data.rank()) {
      return absl::InvalidArgumentError(absl::StrCat("indices.shape[-1] = ", m, " must be in [1, ",
                                                     data.rank() - b, "] for data ",
                                                     ShapeToString(data.shape()), " and batch_dims ", b));
    }
    for (int64_t d = 0; d < b; ++d) {
      if (data.dim(d) != indices.dim(d)) {
        return absl::InvalidArgumentError(absl::StrCat("batch dim ", d, " differs: data ",
                                                       ShapeToString(data.shape()), ", indices ",
                                                       ShapeToString(indices.shape())));
      }
    }
    const std::vector<int64_t> strides = StridesOf(data.shape());
    // Element offset of every index tuple inside its batch.
    const int64_t tuples = indices.NumElements() / m;
    std::vector<int64_t> offsets(static_cast<size_t>(tuples), 0);
    for (int64_t t = 0; t < tuples; ++t) {
      for (int64_t k = 0; k < m; ++k) {
        ASSIGN_OR_RETURN(const int64_t i, ResolveIndex(indices.GetAsInt64(t * m + k), data.dim(b + k), true));
        offsets[t] += i * strides[b + k];
      }
    }

    Shape out_shape(indices.shape().begin(), indices.shape().end() - 1);
    out_shape.insert(out_shape.end(), data.shape().begin() + b + m, data.shape().end());
    Tensor& out = ctx.Output(0, data.dtype(), out_shape);
    RETURN_IF_ERROR(CheckStringCopies({&data}, out.NumElements()));
    const int64_t slice = NumElements(absl::MakeConstSpan(data.shape()).subspan(b + m));
    const int64_t batches = NumElements(absl::MakeConstSpan(data.shape()).subspan(0, b));
    const int64_t tuples_per_batch = batches == 0 ? 0 : tuples / batches;
    const int64_t batch_stride = b == 0 ? 0 : strides[b - 1];
    DispatchByWidth(data.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* src = data.data<T>();
      T* dst = out.data<T>();
      ctx.pool().ParallelFor(tuples, MinBlocks(slice), [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          const T* from = src + (t / tuples_per_batch) * batch_stride + offsets[t];
          std::copy(from, from + slice, dst + t * slice);
        }
      });
    });
    return absl::OkStatus();
  }

 private:
  int64_t batch_dims_ = 0;
};

// Gather-1 takes indices in [0, s); -11 allows negative ones; -13 adds bfloat16.
REGISTER_KERNEL(kOnnx, "Gather", 1, 10, kAllTypes, Gather);
REGISTER_KERNEL(kOnnx, "Gather", 11, 12, kAllTypes, Gather);
REGISTER_KERNEL(kOnnx, "Gather", 13, kLatest, kAllTypes, Gather);
// GatherElements-13 adds bfloat16.
REGISTER_KERNEL(kOnnx, "GatherElements", 11, 12, kAllTypes, GatherElements);
REGISTER_KERNEL(kOnnx, "GatherElements", 13, kLatest, kAllTypes, GatherElements);
// GatherND-12 adds batch_dims (absent in -11, so it defaults to 0); -13 adds bfloat16.
REGISTER_KERNEL(kOnnx, "GatherND", 11, 11, kAllTypes, GatherND);
REGISTER_KERNEL(kOnnx, "GatherND", 12, 12, kAllTypes, GatherND);
REGISTER_KERNEL(kOnnx, "GatherND", 13, kLatest, kAllTypes, GatherND);

}  // namespace
}  // namespace onnxserve

// What the ai.onnx.ml models share: score post-transforms, attributes given either as a list of floats or,
// from ai.onnx.ml opset 3, as a double-precision tensor (`*_as_tensor`), the rows of X as doubles, and the
// class labels (int64 or string) a classifier writes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "runtime/core/run_limits.h"
#include "runtime/core/status_macros.h"
#include "runtime/core/tensor.h"
#include "runtime/core/thread_pool.h"
#include "runtime/ops/common.h"
#include "runtime/registry/kernel.h"

namespace onnxserve {

// The element types ai.onnx.ml models take for X: float, double, int64, int32.
inline constexpr DataType kMlNumericTypes[] = {DataType::kFloat, DataType::kDouble, DataType::kInt64,
                                               DataType::kInt32};

// Runs fn(T{}) for the kMlNumericTypes; an error naming X for any other type.
template <typename Fn>
absl::Status DispatchMlNumeric(const Tensor& x, Fn&& fn) {
  switch (x.dtype()) {
    case DataType::kFloat: fn(float{}); return absl::OkStatus();
    case DataType::kDouble: fn(double{}); return absl::OkStatus();
    case DataType::kInt64: fn(int64_t{}); return absl::OkStatus();
    case DataType::kInt32: fn(int32_t{}); return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("X must be float, double, int64 or int32, got ", x.DebugString()));
  }
}

// What happens to a row of scores before it is written (named in the attributes as "NONE", "SOFTMAX", ...;
// TreeEnsemble-5 numbers them in this order).
enum class PostTransform { kNone, kSoftmax, kLogistic, kSoftmaxZero, kProbit };

absl::StatusOr<PostTransform> ParsePostTransform(const std::string& name);
absl::StatusOr<PostTransform> PostTransformFromIndex(int64_t index);
// The `post_transform` string attribute (default NONE).
absl::StatusOr<PostTransform> PostTransformAttr(const KernelInfo& info);
// Applies `transform` to one row of scores in place. SOFTMAX_ZERO leaves exact zeros at zero and normalizes
// the rest; PROBIT is the inverse of the standard normal CDF.
void ApplyPostTransform(PostTransform transform, absl::Span<double> scores);

// The elements of a floating-point tensor as doubles; an error naming `what` for other types.
absl::StatusOr<std::vector<double>> FloatingValues(const Tensor& t, const std::string& what);
// The attribute `name` as doubles: `name_as_tensor` (a tensor of any float type) when the node has it, else
// the float list `name`, else empty.
absl::StatusOr<std::vector<double>> DoublesAttr(const KernelInfo& info, const std::string& name);
// The float list attribute `name` as doubles (empty when absent).
absl::StatusOr<std::vector<double>> FloatListAttr(const KernelInfo& info, const std::string& name);

// An error unless attribute `name` has `expected` entries (`why` says what sets that count).
absl::Status CheckAttrSize(const std::string& name, size_t size, size_t expected, const std::string& why);

// X as a batch of rows: [N, F], or [F] for one row.
struct RowShape {
  int64_t rows = 0;
  int64_t features = 0;
};
absl::StatusOr<RowShape> RowsOf(const Tensor& x);

// `count` vectors of `features` values each from one flat list attribute: a linear model's rows of
// coefficients, or an SVM's support vectors.
struct VectorSet {
  std::vector<double> values;
  int64_t count = 0;
  int64_t features = 0;

  // Splits attribute `name` into `count` vectors (`count_from` says what sets the count): its size must be a
  // non-zero multiple of count.
  static absl::StatusOr<VectorSet> Make(std::vector<double> values, int64_t count, const std::string& name,
                                        const std::string& count_from);
  // The rows of X, which must have `features` features.
  absl::StatusOr<RowShape> RowsOf(const Tensor& x) const;
  const double* operator[](int64_t v) const { return &values[v * features]; }
};

// Calls fn(r, row, scratch) for every row r of X ([N, F] or [F]) with the row converted to doubles; rows are
// split over `pool` in chunks of about 16K / cost_per_row rows, so fn runs on several threads at once.
// `scratch` belongs to the chunk: fn may size it once and reuse it for the chunk's next rows. cost_per_row
// (the model's coefficients a row meets) is also the row's work towards StopIfRunEnded: a request's rows
// times a model's coefficients can take minutes.
template <typename Fn>
absl::Status ForEachRowAsDoubles(const Tensor& x, ThreadPool& pool, int64_t cost_per_row, const Fn& fn) {
  ASSIGN_OR_RETURN(const RowShape shape, RowsOf(x));
  bool numeric = false;
  DispatchNumeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      numeric = true;
      const T* data = x.data<T>();
      const int64_t chunk = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cost_per_row));
      pool.ParallelFor(shape.rows, chunk, [&](int64_t begin, int64_t end) {
        std::vector<double> row(static_cast<size_t>(shape.features)), scratch;
        for (int64_t r = begin; r < end; ++r) {
          const T* in = data + r * shape.features;
          for (int64_t f = 0; f < shape.features; ++f) row[f] = static_cast<double>(ToCompute(in[f]));
          fn(r, absl::Span<const double>(row), scratch);
          StopIfRunEnded(cost_per_row);
        }
      });
    }
  });
  if (!numeric) return absl::InvalidArgumentError(absl::StrCat("X must be numeric, got ", x.DebugString()));
  return absl::OkStatus();
}

// The class labels of a classifier, from exactly one of `classlabels_strings` and an int64 list (named
// `classlabels_ints` by LinearClassifier and SVMClassifier, `classlabels_int64s` by TreeEnsembleClassifier).
class ClassLabels {
 public:
  static absl::StatusOr<ClassLabels> FromAttrs(const KernelInfo& info, const std::string& ints_name);

  int64_t size() const { return static_cast<int64_t>(strings_used_ ? strings_.size() : ints_.size()); }
  DataType type() const { return strings_used_ ? DataType::kString : DataType::kInt64; }
  // A [rows] tensor of the labels' type for Y. Each string row is a copy of a label: a model's long label
  // over many rows must fit the limits (CheckStringCopies) before any is written.
  absl::StatusOr<Tensor*> Output(KernelContext& ctx, int64_t rows) const;
  // y[row] = the label at `index` (in [0, size())).
  void Write(Tensor& y, int64_t row, int64_t index) const;

 private:
  std::vector<std::string> strings_;
  std::vector<int64_t> ints_;
  int64_t longest_string_ = 0;  // characters of the longest string label; 0 for int64 labels
  bool strings_used_ = false;
};

// Output `index` as float [rows, columns] when the graph reads it, else nullptr: a classifier's scores Z are
// optional, its labels Y are not.
absl::StatusOr<float*> OptionalScores(KernelContext& ctx, int index, int64_t rows, int64_t columns);
// Row r of such scores, or nullptr.
inline float* ScoreRow(float* z, int64_t r, int64_t columns) { return z == nullptr ? nullptr : z + r * columns; }

// Class scores as a classifier writes them to Z: for two classes scored by one number s (positive favours
// the second class) the row [-s, s], as ONNX Runtime expands it; then `transform` (LOGISTIC turns [-s, s]
// into [1 - p, p]), stored as float. Nothing is written (or computed) when z is nullptr.
void WriteBinaryScores(double s, PostTransform transform, float* z);
// `scores` (one per column) through `transform`, stored as float.
void WriteScores(absl::Span<double> scores, PostTransform transform, float* z);

// Index of the first largest of `values` (non-empty).
inline int64_t ArgMax(absl::Span<const double> values) {
  return std::max_element(values.begin(), values.end()) - values.begin();
}

}  // namespace onnxserve

// The forest behind the ai.onnx.ml tree ensembles (TreeEnsembleRegressor, TreeEnsembleClassifier,
// TreeEnsemble): a flat array of branches whose children point at branches or leaves, compiled at load from
// either attribute encoding and checked once (children and targets in range, no cycles) so that evaluating a
// row is a bounded walk per tree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "runtime/ops/ml/common.h"
#include "runtime/registry/kernel.h"

namespace onnxserve {

enum class TreeMode : uint8_t { kLeq, kLt, kGte, kGt, kEq, kNeq, kMember };
enum class Aggregate { kAverage, kSum, kMin, kMax };

// Where a branch leads: a branch index when >= 0, leaf ~index when < 0.
using Child = int64_t;
constexpr Child LeafChild(int64_t leaf) { return ~leaf; }
constexpr bool IsLeaf(Child c) { return c < 0; }

struct Branch {
  double split = 0;
  int64_t feature = 0;
  TreeMode mode = TreeMode::kLeq;
  bool missing_goes_true = false;
  Child on_true = 0, on_false = 0;
  int64_t member_set = -1;  // index into Forest::member_sets for kMember
};

struct Contribution {
  int64_t target;
  double weight;
};

struct Forest {
  std::vector<Branch> branches;
  std::vector<Child> roots;
  std::vector<std::vector<Contribution>> leaves;
  std::vector<std::vector<double>> member_sets;  // sorted, for binary search
  int64_t n_targets = 0;
  Aggregate aggregate = Aggregate::kSum;
  std::vector<double> base_values;  // empty, or one per target
  int64_t features_needed = 0;      // 1 + the largest feature index a branch reads

  // Aggregates every tree's leaf for one row of features into `scores` (n_targets) and adds base values.
  void Score(const double* row, double* scores) const;
  // Children and targets in range, every tree reachable without a cycle (a cyclic model must fail to load,
  // not hang a request).
  absl::Status Validate() const;

 private:
  bool GoesTrue(const Branch& b, double x) const;
};

// The opset 1/3 encoding: nodes named by (tree id, node id), leaves marked "LEAF", and the votes at leaves in
// parallel `<prefix>_treeids/_nodeids/_ids/_weights` lists (prefix "target" or "class") naming targets in
// [0, n_targets). No base values: the kernels read those themselves.
absl::StatusOr<Forest> LegacyForest(const KernelInfo& info, const std::string& prefix, int64_t n_targets);

// Calls write(r, scores) with the aggregated scores (before any post-transform) of every row r of X ([N, F],
// or [F] for one row), rows in parallel; `scores` may be changed in place.
template <typename Write>
absl::Status ScoreRows(const Forest& forest, const Tensor& x, ThreadPool& pool, const Write& write) {
  ASSIGN_OR_RETURN(const RowShape shape, RowsOf(x));
  if (shape.features < forest.features_needed) {
    return absl::InvalidArgumentError(absl::StrCat("X has ", shape.features, " features, the trees read feature ",
                                                   forest.features_needed - 1, ": ", x.DebugString()));
  }
  const int64_t cost = 4 * static_cast<int64_t>(forest.branches.size());
  return ForEachRowAsDoubles(x, pool, cost,
                             [&](int64_t r, absl::Span<const double> row, std::vector<double>& scores) {
                               scores.resize(static_cast<size_t>(forest.n_targets));
                               forest.Score(row.data(), scores.data());
                               write(r, absl::MakeSpan(scores));
                             });
}

// Registered for ai.onnx.ml opset 5 and later, where the legacy op `kOp` is deprecated in favour of
// TreeEnsemble: a model that uses it there fails to load and the error says what to use.
template <const char* kOp>
class DeprecatedTreeOp final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    return absl::InvalidArgumentError(absl::StrCat(kOp, " is deprecated since ai.onnx.ml opset 5 (model opset ",
                                                   info.opset(), "): use TreeEnsemble"));
  }
  absl::Status Compute(KernelContext&) const override { return absl::InternalError("unreachable"); }
};

}  // namespace onnxserve

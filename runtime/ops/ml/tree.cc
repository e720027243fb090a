// Tree ensembles of ai.onnx.ml, the models scikit-learn, XGBoost and LightGBM converters emit:
// TreeEnsembleRegressor (1, 3; deprecated by 5) and TreeEnsemble (5). Both encodings compile at load into one
// Forest (ml_tree.h), which TreeEnsembleClassifier (ml_tree_classifier.cc) shares.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/core/work_tally.h"
#include "runtime/ops/common.h"
#include "runtime/ops/ml/common.h"
#include "runtime/ops/ml/tree.h"
#include "runtime/registry/registry.h"

namespace onnxserve {

bool Forest::GoesTrue(const Branch& b, double x) const {
  if (std::isnan(x) && b.missing_goes_true) return true;
  switch (b.mode) {
    case TreeMode::kLeq: return x <= b.split;
    case TreeMode::kLt: return x < b.split;
    case TreeMode::kGte: return x >= b.split;
    case TreeMode::kGt: return x > b.split;
    case TreeMode::kEq: return x == b.split;
    case TreeMode::kNeq: return x != b.split;
    case TreeMode::kMember: {
      const auto& set = member_sets[b.member_set];
      return std::binary_search(set.begin(), set.end(), x);
    }
  }
  return false;
}

void Forest::Score(const double* row, double* scores) const {
  std::fill(scores, scores + n_targets, 0.0);
  std::vector<char> scored(aggregate == Aggregate::kMin || aggregate == Aggregate::kMax ? n_targets : 0);
  // Trees may share nodes, so a row's walks are bounded by roots times branches, not by the model's size:
  // they count towards StopIfRunEnded within the row, walk by walk.
  WorkTally walked;
  for (Child node : roots) {
    int64_t steps = 1;
    for (; !IsLeaf(node); ++steps) {
      const Branch& b = branches[node];
      node = GoesTrue(b, row[b.feature]) ? b.on_true : b.on_false;
    }
    walked.Add(steps + static_cast<int64_t>(leaves[~node].size()));
    for (const Contribution& c : leaves[~node]) {
      double& s = scores[c.target];
      switch (aggregate) {
        case Aggregate::kSum:
        case Aggregate::kAverage: s += c.weight; break;
        case Aggregate::kMin: s = scored[c.target] ? std::min(s, c.weight) : c.weight; break;
        case Aggregate::kMax: s = scored[c.target] ? std::max(s, c.weight) : c.weight; break;
      }
      if (!scored.empty()) scored[c.target] = 1;
    }
  }
  if (aggregate == Aggregate::kAverage && !roots.empty()) {
    for (int64_t t = 0; t < n_targets; ++t) scores[t] /= static_cast<double>(roots.size());
  }
  for (size_t t = 0; t < base_values.size(); ++t) scores[t] += base_values[t];
}

absl::Status Forest::Validate() const {
  const auto child_ok = [&](Child c) {
    return IsLeaf(c) ? ~c < static_cast<int64_t>(leaves.size()) : c < static_cast<int64_t>(branches.size());
  };
  for (size_t i = 0; i < branches.size(); ++i) {
    const Branch& b = branches[i];
    if (!child_ok(b.on_true) || !child_ok(b.on_false)) {
      return absl::InvalidArgumentError(absl::StrCat("tree node ", i, " has a child out of range"));
    }
    if (b.feature < 0) return absl::InvalidArgumentError(absl::StrCat("tree node ", i, " reads feature ", b.feature));
  }
  for (size_t l = 0; l < leaves.size(); ++l) {
    for (const Contribution& c : leaves[l]) {
      if (c.target < 0 || c.target >= n_targets) {
        return absl::InvalidArgumentError(
            absl::StrCat("leaf ", l, " adds to target ", c.target, ", outside [0, ", n_targets, ")"));
      }
    }
  }
  enum : char { kUnseen, kOnPath, kDone };
  std::vector<char> state(branches.size(), kUnseen);
  for (Child root : roots) {
    if (!child_ok(root)) return absl::InvalidArgumentError(absl::StrCat("tree root ", root, " is out of range"));
    std::vector<std::pair<Child, int>> stack;  // branch, children visited
    if (!IsLeaf(root) && state[root] == kUnseen) stack.push_back({root, 0});
    while (!stack.empty()) {
      auto& [node, visited] = stack.back();
      state[node] = kOnPath;
      if (visited == 2) {
        state[node] = kDone;
        stack.pop_back();
        continue;
      }
      const Child next = visited++ == 0 ? branches[node].on_true : branches[node].on_false;
      if (IsLeaf(next) || state[next] == kDone) continue;
      if (state[next] == kOnPath) {
        return absl::InvalidArgumentError(absl::StrCat("the trees have a cycle through node ", next));
      }
      stack.push_back({next, 0});
    }
  }
  return absl::OkStatus();
}

namespace {

absl::StatusOr<TreeMode> ParseMode(const std::string& name) {
  static const std::map<std::string, TreeMode> kModes = {
      {"BRANCH_LEQ", TreeMode::kLeq}, {"BRANCH_LT", TreeMode::kLt}, {"BRANCH_GTE", TreeMode::kGte},
      {"BRANCH_GT", TreeMode::kGt},   {"BRANCH_EQ", TreeMode::kEq}, {"BRANCH_NEQ", TreeMode::kNeq}};
  auto it = kModes.find(name);
  if (it == kModes.end()) return absl::InvalidArgumentError(absl::StrCat("nodes_modes: unknown mode \"", name, "\""));
  return it->second;
}

absl::StatusOr<Aggregate> ParseAggregate(const std::string& name) {
  if (name == "AVERAGE") return Aggregate::kAverage;
  if (name == "SUM") return Aggregate::kSum;
  if (name == "MIN") return Aggregate::kMin;
  if (name == "MAX") return Aggregate::kMax;
  return absl::InvalidArgumentError(
      absl::StrCat("aggregate_function \"", name, "\" is not one of AVERAGE, SUM, MIN, MAX"));
}

absl::Status CheckLength(const std::string& name, size_t size, size_t expected, bool optional = false) {
  if (size == expected || (optional && size == 0)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(name, " has ", size, " entries, expected ", expected, optional ? " (or none)" : ""));
}

void NoteFeatures(Forest& forest) {
  for (const Branch& b : forest.branches) forest.features_needed = std::max(forest.features_needed, b.feature + 1);
}

}  // namespace

absl::StatusOr<Forest> LegacyForest(const KernelInfo& info, const std::string& prefix, int64_t n_targets) {
  ASSIGN_OR_RETURN(const auto tree_ids, info.Attr<std::vector<int64_t>>("nodes_treeids"));
  ASSIGN_OR_RETURN(const auto node_ids, info.Attr<std::vector<int64_t>>("nodes_nodeids"));
  ASSIGN_OR_RETURN(const auto features, info.Attr<std::vector<int64_t>>("nodes_featureids"));
  ASSIGN_OR_RETURN(const auto modes, info.Attr<std::vector<std::string>>("nodes_modes"));
  ASSIGN_OR_RETURN(const auto true_ids, info.Attr<std::vector<int64_t>>("nodes_truenodeids"));
  ASSIGN_OR_RETURN(const auto false_ids, info.Attr<std::vector<int64_t>>("nodes_falsenodeids"));
  ASSIGN_OR_RETURN(const auto missing, info.Attr<std::vector<int64_t>>("nodes_missing_value_tracks_true", {}));
  ASSIGN_OR_RETURN(const auto splits, DoublesAttr(info, "nodes_values"));
  const size_t n = tree_ids.size();
  RETURN_IF_ERROR(CheckLength("nodes_nodeids", node_ids.size(), n));
  RETURN_IF_ERROR(CheckLength("nodes_featureids", features.size(), n));
  RETURN_IF_ERROR(CheckLength("nodes_modes", modes.size(), n));
  RETURN_IF_ERROR(CheckLength("nodes_truenodeids", true_ids.size(), n));
  RETURN_IF_ERROR(CheckLength("nodes_falsenodeids", false_ids.size(), n));
  RETURN_IF_ERROR(CheckLength("nodes_values", splits.size(), n));
  RETURN_IF_ERROR(CheckLength("nodes_missing_value_tracks_true", missing.size(), n, /*optional=*/true));

  Forest forest;
  forest.n_targets = n_targets;
  std::map<std::pair<int64_t, int64_t>, Child> refs;  // (tree, node) -> branch or leaf
  std::vector<int64_t> tree_order;  // trees in the order they first appear
  std::set<int64_t> seen_trees;
  for (size_t i = 0; i < n; ++i) {
    if (seen_trees.insert(tree_ids[i]).second) tree_order.push_back(tree_ids[i]);
    Child ref;
    if (modes[i] == "LEAF") {
      ref = LeafChild(static_cast<int64_t>(forest.leaves.size()));
      forest.leaves.emplace_back();
    } else {
      ref = static_cast<Child>(forest.branches.size());
      forest.branches.emplace_back();
    }
    if (!refs.emplace(std::pair(tree_ids[i], node_ids[i]), ref).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("tree ", tree_ids[i], " has node id ", node_ids[i], " more than once"));
    }
  }
  const auto resolve = [&](int64_t tree, int64_t node) -> absl::StatusOr<Child> {
    auto it = refs.find({tree, node});
    if (it == refs.end()) {
      return absl::InvalidArgumentError(absl::StrCat("tree ", tree, " has no node ", node));
    }
    return it->second;
  };
  // Every ref is one tree's, and children resolve within their node's tree, so the refs nothing points at
  // are the trees' roots.
  std::set<Child> pointed_at;
  for (size_t i = 0; i < n; ++i) {
    if (modes[i] == "LEAF") continue;
    Branch& b = forest.branches[refs[{tree_ids[i], node_ids[i]}]];
    ASSIGN_OR_RETURN(b.mode, ParseMode(modes[i]));
    b.split = splits[i];
    b.feature = features[i];
    b.missing_goes_true = !missing.empty() && missing[i] != 0;
    ASSIGN_OR_RETURN(b.on_true, resolve(tree_ids[i], true_ids[i]));
    ASSIGN_OR_RETURN(b.on_false, resolve(tree_ids[i], false_ids[i]));
    pointed_at.insert(b.on_true);
    pointed_at.insert(b.on_false);
  }
  std::map<int64_t, std::vector<Child>> roots_of_tree;
  for (const auto& [key, ref] : refs) {
    if (!pointed_at.contains(ref)) roots_of_tree[key.first].push_back(ref);
  }
  // A tree's root is its one node no other node of the tree points at.
  for (int64_t tree : tree_order) {
    const std::vector<Child>& roots = roots_of_tree[tree];
    if (roots.size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("tree ", tree, " has ", roots.size(), " nodes no other node points at, expected one root"));
    }
    forest.roots.push_back(roots[0]);
  }

  ASSIGN_OR_RETURN(const auto vote_trees, info.Attr<std::vector<int64_t>>(prefix + "_treeids", {}));
  ASSIGN_OR_RETURN(const auto vote_nodes, info.Attr<std::vector<int64_t>>(prefix + "_nodeids", {}));
  ASSIGN_OR_RETURN(const auto vote_targets, info.Attr<std::vector<int64_t>>(prefix + "_ids", {}));
  ASSIGN_OR_RETURN(const auto vote_weights, DoublesAttr(info, prefix + "_weights"));
  RETURN_IF_ERROR(CheckLength(prefix + "_nodeids", vote_nodes.size(), vote_trees.size()));
  RETURN_IF_ERROR(CheckLength(prefix + "_ids", vote_targets.size(), vote_trees.size()));
  RETURN_IF_ERROR(CheckLength(prefix + "_weights", vote_weights.size(), vote_trees.size()));
  for (size_t v = 0; v < vote_trees.size(); ++v) {
    ASSIGN_OR_RETURN(const Child leaf, resolve(vote_trees[v], vote_nodes[v]));
    if (!IsLeaf(leaf)) {
      return absl::InvalidArgumentError(absl::StrCat(prefix, " vote ", v, " is for node ", vote_nodes[v],
                                                     " of tree ", vote_trees[v], ", which is not a LEAF"));
    }
    forest.leaves[~leaf].push_back({vote_targets[v], vote_weights[v]});
  }
  NoteFeatures(forest);
  RETURN_IF_ERROR(forest.Validate());
  return forest;
}

namespace {

// The opset 5 encoding: nodes by position, each child flagged as a node or a leaf, one weight per leaf, modes
// as a uint8 tensor, and the sets of BRANCH_MEMBER nodes in one NaN-delimited tensor.
absl::StatusOr<Forest> Forest5(const KernelInfo& info) {
  ASSIGN_OR_RETURN(const auto features, info.Attr<std::vector<int64_t>>("nodes_featureids"));
  ASSIGN_OR_RETURN(const Tensor modes, info.Attr<Tensor>("nodes_modes"));
  ASSIGN_OR_RETURN(const Tensor splits_tensor, info.Attr<Tensor>("nodes_splits"));
  ASSIGN_OR_RETURN(const auto true_ids, info.Attr<std::vector<int64_t>>("nodes_truenodeids"));
  ASSIGN_OR_RETURN(const auto true_leafs, info.Attr<std::vector<int64_t>>("nodes_trueleafs"));
  ASSIGN_OR_RETURN(const auto false_ids, info.Attr<std::vector<int64_t>>("nodes_falsenodeids"));
  ASSIGN_OR_RETURN(const auto false_leafs, info.Attr<std::vector<int64_t>>("nodes_falseleafs"));
  ASSIGN_OR_RETURN(const auto missing, info.Attr<std::vector<int64_t>>("nodes_missing_value_tracks_true", {}));
  ASSIGN_OR_RETURN(const auto roots, info.Attr<std::vector<int64_t>>("tree_roots"));
  ASSIGN_OR_RETURN(const auto leaf_targets, info.Attr<std::vector<int64_t>>("leaf_targetids"));
  ASSIGN_OR_RETURN(const Tensor leaf_weights_tensor, info.Attr<Tensor>("leaf_weights"));
  ASSIGN_OR_RETURN(const auto splits, FloatingValues(splits_tensor, "nodes_splits"));
  ASSIGN_OR_RETURN(const auto leaf_weights, FloatingValues(leaf_weights_tensor, "leaf_weights"));
  if (modes.dtype() != DataType::kUint8) {
    return absl::InvalidArgumentError(absl::StrCat("nodes_modes must be a uint8 tensor, got ", modes.DebugString()));
  }
  const size_t n = features.size();
  RETURN_IF_ERROR(CheckLength("nodes_modes", static_cast<size_t>(modes.NumElements()), n));
  RETURN_IF_ERROR(CheckLength("nodes_splits", splits.size(), n));
  RETURN_IF_ERROR(CheckLength("nodes_truenodeids", true_ids.size(), n));
  RETURN_IF_ERROR(CheckLength("nodes_trueleafs", true_leafs.size(), n));
  RETURN_IF_ERROR(CheckLength("nodes_falsenodeids", false_ids.size(), n));
  RETURN_IF_ERROR(CheckLength("nodes_falseleafs", false_leafs.size(), n));
  RETURN_IF_ERROR(CheckLength("nodes_missing_value_tracks_true", missing.size(), n, /*optional=*/true));
  RETURN_IF_ERROR(CheckLength("leaf_weights", leaf_weights.size(), leaf_targets.size()));

  std::vector<double> members;
  if (info.HasAttr("membership_values")) {
    ASSIGN_OR_RETURN(const Tensor t, info.Attr<Tensor>("membership_values"));
    ASSIGN_OR_RETURN(members, FloatingValues(t, "membership_values"));
  }
  auto next_member = members.begin();

  Forest forest;
  for (size_t i = 0; i < n; ++i) {
    Branch b;
    const uint8_t mode = modes.data<uint8_t>()[i];
    if (mode > static_cast<uint8_t>(TreeMode::kMember)) {
      return absl::InvalidArgumentError(absl::StrCat("nodes_modes[", i, "] is ", mode, ", not in [0, 6]"));
    }
    b.mode = static_cast<TreeMode>(mode);
    b.split = splits[i];
    b.feature = features[i];
    b.missing_goes_true = !missing.empty() && missing[i] != 0;
    b.on_true = true_leafs[i] ? LeafChild(true_ids[i]) : true_ids[i];
    b.on_false = false_leafs[i] ? LeafChild(false_ids[i]) : false_ids[i];
    if (b.mode == TreeMode::kMember) {
      if (next_member == members.end()) {
        return absl::InvalidArgumentError(absl::StrCat("membership_values has no set for node ", i));
      }
      auto end = std::find_if(next_member, members.end(), [](double v) { return std::isnan(v); });
      std::vector<double> set(next_member, end);
      std::sort(set.begin(), set.end());
      b.member_set = static_cast<int64_t>(forest.member_sets.size());
      forest.member_sets.push_back(std::move(set));
      next_member = end == members.end() ? end : end + 1;
    }
    forest.branches.push_back(b);
  }
  for (size_t l = 0; l < leaf_targets.size(); ++l) forest.leaves.push_back({{leaf_targets[l], leaf_weights[l]}});
  forest.roots.assign(roots.begin(), roots.end());
  ASSIGN_OR_RETURN(forest.n_targets, info.Attr<int64_t>("n_targets"));
  ASSIGN_OR_RETURN(const int64_t aggregate, info.Attr<int64_t>("aggregate_function", 1));
  if (aggregate < 0 || aggregate > 3) {
    return absl::InvalidArgumentError(absl::StrCat("aggregate_function ", aggregate, " is not in [0, 3]"));
  }
  forest.aggregate = static_cast<Aggregate>(aggregate);
  NoteFeatures(forest);
  RETURN_IF_ERROR(forest.Validate());
  return forest;
}

// TreeEnsembleRegressor-1/3: Y is float [N, n_targets].
class TreeEnsembleRegressor final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const int64_t n_targets, info.Attr<int64_t>("n_targets", 1));
    ASSIGN_OR_RETURN(forest_, LegacyForest(info, "target", n_targets));
    ASSIGN_OR_RETURN(forest_.base_values, DoublesAttr(info, "base_values"));
    if (!forest_.base_values.empty()) {
      RETURN_IF_ERROR(CheckAttrSize("base_values", forest_.base_values.size(), static_cast<size_t>(n_targets),
                                    "one per target, n_targets"));
    }
    ASSIGN_OR_RETURN(const std::string aggregate, info.Attr<std::string>("aggregate_function", "SUM"));
    ASSIGN_OR_RETURN(forest_.aggregate, ParseAggregate(aggregate));
    ASSIGN_OR_RETURN(transform_, PostTransformAttr(info));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    ASSIGN_OR_RETURN(const RowShape shape, RowsOf(x));
    ASSIGN_OR_RETURN(Tensor * y, ctx.CheckedOutput(0, DataType::kFloat, {shape.rows, forest_.n_targets}));
    float* out = y->data<float>();
    return ScoreRows(forest_, x, ctx.pool(), [&](int64_t r, absl::Span<double> scores) {
      WriteScores(scores, transform_, out + r * forest_.n_targets);
    });
  }

 private:
  Forest forest_;
  PostTransform transform_ = PostTransform::kNone;
};

// TreeEnsemble-5: Y has X's type, [N, n_targets].
class TreeEnsemble final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(forest_, Forest5(info));
    ASSIGN_OR_RETURN(const int64_t transform, info.Attr<int64_t>("post_transform", 0));
    ASSIGN_OR_RETURN(transform_, PostTransformFromIndex(transform));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    ASSIGN_OR_RETURN(const RowShape shape, RowsOf(x));
    ASSIGN_OR_RETURN(Tensor * y, ctx.CheckedOutput(0, x.dtype(), {shape.rows, forest_.n_targets}));
    absl::Status status = absl::OkStatus();
    const absl::Status typed = DispatchFloating(x, "X", [&](auto tag) {
      using T = decltype(tag);
      T* out = y->data<T>();
      status = ScoreRows(forest_, x, ctx.pool(), [&](int64_t r, absl::Span<double> scores) {
        ApplyPostTransform(transform_, scores);
        for (int64_t t = 0; t < forest_.n_targets; ++t) {
          out[r * forest_.n_targets + t] = FromCompute<T>(static_cast<ComputeType<T>>(scores[t]));
        }
      });
    });
    RETURN_IF_ERROR(typed);
    return status;
  }

 private:
  Forest forest_;
  PostTransform transform_ = PostTransform::kNone;
};

constexpr char kRegressorName[] = "TreeEnsembleRegressor";
constexpr DataType kTreeTypes[] = {DataType::kFloat, DataType::kDouble, DataType::kFloat16};

}  // namespace

// Opset 3 adds the *_as_tensor (double) forms of the weight attributes.
REGISTER_KERNEL(kMl, "TreeEnsembleRegressor", 1, 2, kMlNumericTypes, TreeEnsembleRegressor);
REGISTER_KERNEL(kMl, "TreeEnsembleRegressor", 3, 4, kMlNumericTypes, TreeEnsembleRegressor);
REGISTER_KERNEL(kMl, "TreeEnsembleRegressor", 5, kLatest, kMlNumericTypes, DeprecatedTreeOp<kRegressorName>);
REGISTER_KERNEL(kMl, "TreeEnsemble", 5, kLatest, kTreeTypes, TreeEnsemble);

}  // namespace onnxserve

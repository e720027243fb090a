// TreeEnsembleClassifier (ai.onnx.ml 1, 3; deprecated by 5 in favour of TreeEnsemble): scikit-learn's
// DecisionTree, RandomForest, ExtraTrees and GradientBoosting classifiers as converters emit them. The
// leaves' class votes are summed per class (a random forest's weights come pre-divided by its tree count).
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/ops/common.h"
#include "runtime/ops/ml/common.h"
#include "runtime/ops/ml/tree.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// Y [N] labels, Z [N, classes] float. Two ways to score two classes, as ONNX Runtime reads them:
// - every vote for one class id, the score s of the second class (what converters emit for binary models):
//   with non-negative weights, no base value and no post_transform s is a probability, Y is the second
//   label when s > 0.5 and Z is [1 - s, s]; otherwise s is a margin, Y is the second label when s > 0 and Z
//   is [-s, s] through post_transform (a gradient-boosted model's LOGISTIC gives [1 - p, p]). One base
//   value may be added to s.
// - otherwise one score per class, plus base_values (one per class): Y is the first class with the highest
//   score, Z the scores through post_transform.
class TreeEnsembleClassifier final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(labels_, ClassLabels::FromAttrs(info, "classlabels_int64s"));
    ASSIGN_OR_RETURN(forest_, LegacyForest(info, "class", labels_.size()));
    ASSIGN_OR_RETURN(std::vector<double> base_values, DoublesAttr(info, "base_values"));
    ASSIGN_OR_RETURN(transform_, PostTransformAttr(info));
    std::set<int64_t> voted;
    bool negative = false;
    for (const auto& leaf : forest_.leaves) {
      for (const Contribution& c : leaf) {
        voted.insert(c.target);
        negative |= c.weight < 0;
      }
    }
    one_column_ = labels_.size() == 2 && voted.size() == 1 && base_values.size() <= 1;
    if (one_column_) {
      scored_class_ = *voted.begin();
      base_ = base_values.empty() ? 0 : base_values[0];
      probability_ = !negative && base_values.empty() && transform_ == PostTransform::kNone;
    } else if (!base_values.empty()) {
      RETURN_IF_ERROR(CheckAttrSize("base_values", base_values.size(), static_cast<size_t>(labels_.size()),
                                    "one per class label"));
      forest_.base_values = std::move(base_values);
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    ASSIGN_OR_RETURN(const RowShape shape, RowsOf(x));
    ASSIGN_OR_RETURN(Tensor * y, labels_.Output(ctx, shape.rows));
    const int64_t columns = labels_.size();
    ASSIGN_OR_RETURN(float* z, OptionalScores(ctx, 1, shape.rows, columns));
    return ScoreRows(forest_, x, ctx.pool(), [&](int64_t r, absl::Span<double> scores) {
      float* zr = ScoreRow(z, r, columns);
      if (!one_column_) {
        labels_.Write(*y, r, ArgMax(scores));
        WriteScores(scores, transform_, zr);
        return;
      }
      const double s = scores[scored_class_] + base_;
      labels_.Write(*y, r, s > (probability_ ? 0.5 : 0.0) ? 1 : 0);
      if (!probability_) {
        WriteBinaryScores(s, transform_, zr);
      } else if (zr != nullptr) {
        zr[0] = static_cast<float>(1 - s);
        zr[1] = static_cast<float>(s);
      }
    });
  }

 private:
  ClassLabels labels_;
  Forest forest_;
  PostTransform transform_ = PostTransform::kNone;
  bool one_column_ = false;
  int64_t scored_class_ = 0;  // the one class id the votes name, when one_column_
  double base_ = 0;
  bool probability_ = false;
};

constexpr char kClassifierName[] = "TreeEnsembleClassifier";

}  // namespace

// Opset 3 adds the *_as_tensor (double) forms of the weight attributes.
REGISTER_KERNEL(kMl, "TreeEnsembleClassifier", 1, 2, kMlNumericTypes, TreeEnsembleClassifier);
REGISTER_KERNEL(kMl, "TreeEnsembleClassifier", 3, 4, kMlNumericTypes, TreeEnsembleClassifier);
REGISTER_KERNEL(kMl, "TreeEnsembleClassifier", 5, kLatest, kMlNumericTypes, DeprecatedTreeOp<kClassifierName>);

}  // namespace onnxserve

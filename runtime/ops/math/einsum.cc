// Einsum-12: the Einstein summation of any number of operands, as numpy.einsum evaluates it.
//
// The equation is parsed once at load into labels per operand ('A'-'Z' then 'a'-'z', in ASCII order, plus
// "..." for broadcast dims). Each run binds the labels to sizes and strides and evaluates the sum directly:
// every output element walks the summed labels with one offset per operand (a repeated label within an
// operand adds its strides, which reads the diagonal). This is the plain reference evaluation, O(output *
// summed) multiply-adds; contractions big enough to matter would be rewritten into batched MatMul.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/checked_size.h"
#include "runtime/core/run_limits.h"
#include "runtime/ops/common.h"
#include "runtime/ops/elementwise.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

inline constexpr int kLetters = 52;
inline constexpr int kEllipsis = -1;  // "..." in a term

using Term = std::vector<int>;  // letter labels in [0, 52) and kEllipsis

int LetterLabel(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -2;
}

absl::StatusOr<Term> ParseTerm(const std::string& text) {
  Term term;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 3, "...") == 0) {
      if (std::count(term.begin(), term.end(), kEllipsis) > 0) {
        return absl::InvalidArgumentError(absl::StrCat("equation term \"", text, "\" has more than one \"...\""));
      }
      term.push_back(kEllipsis);
      i += 2;
    } else if (const int label = LetterLabel(text[i]); label >= 0) {
      term.push_back(label);
    } else {
      return absl::InvalidArgumentError(absl::StrCat("equation term \"", text, "\": unexpected character '",
                                                     std::string(1, text[i]), "', expected letters and \"...\""));
    }
  }
  return term;
}

// Labels bound to one run's shapes: letters keep their numbers, the ellipsis dims (right-aligned across
// operands, broadcast numpy-style) become labels kLetters, kLetters + 1, ...
struct EinsumPlan {
  std::vector<int64_t> size;                 // per label; -1 when unused
  std::vector<int> output;                   // output labels, outermost first
  std::vector<int> summed;                   // the other used labels
  std::vector<std::vector<int64_t>> stride;  // per operand, per label (0: absent or broadcast)
};

class Einsum final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(std::string equation, info.Attr<std::string>("equation"));
    std::erase(equation, ' ');
    const size_t arrow = equation.find("->");
    const std::string lhs = equation.substr(0, arrow);
    for (size_t start = 0;;) {
      const size_t comma = lhs.find(',', start);
      ASSIGN_OR_RETURN(Term term, ParseTerm(lhs.substr(start, comma - start)));
      inputs_.push_back(std::move(term));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (arrow != std::string::npos) {
      ASSIGN_OR_RETURN(Term output, ParseTerm(equation.substr(arrow + 2)));
      output_ = std::move(output);
    }
    if (static_cast<int>(inputs_.size()) != info.num_inputs()) {
      return absl::InvalidArgumentError(absl::StrCat("equation \"", equation, "\" has ", inputs_.size(),
                                                     " operands, the node ", info.num_inputs(), " inputs"));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const int n = static_cast<int>(inputs_.size());
    RETURN_IF_ERROR(RequireInputs(ctx, n));
    for (int i = 1; i < n; ++i) {
      if (ctx.Input(i)->dtype() != ctx.Input(0)->dtype()) {
        return absl::InvalidArgumentError(absl::StrCat("input ", i, " ", ctx.Input(i)->DebugString(),
                                                       ": expected the type of input 0, ",
                                                       DataTypeName(ctx.Input(0)->dtype())));
      }
    }
    ASSIGN_OR_RETURN(const EinsumPlan plan, Bind(ctx));
    Shape out_shape;
    for (int label : plan.output) out_shape.push_back(plan.size[label]);
    ASSIGN_OR_RETURN(const int64_t summed_count, SummedCount(plan, out_shape));
    Tensor& out = ctx.Output(0, ctx.Input(0)->dtype(), out_shape);
    absl::Status status = UnsupportedTypeError(out.dtype());
    DispatchNumeric(out.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (kIsNumber<T>) {
        Evaluate<T>(ctx, plan, summed_count, out.data<T>(), out.NumElements());
        status = absl::OkStatus();
      }
    });
    return status;
  }

 private:
  // Binds labels to the inputs' dims: sizes must agree (ellipsis dims broadcast) and the output is the
  // explicit one or, implicitly, the ellipsis dims then the letters used once, in ASCII order.
  absl::StatusOr<EinsumPlan> Bind(const KernelContext& ctx) const {
    const int n = static_cast<int>(inputs_.size());
    int64_t ellipsis_rank = 0;
    for (int i = 0; i < n; ++i) ellipsis_rank = std::max(ellipsis_rank, EllipsisRank(i, *ctx.Input(i)));
    for (int i = 0; i < n; ++i) {
      if (EllipsisRank(i, *ctx.Input(i)) < 0) {
        return absl::InvalidArgumentError(absl::StrCat("input ", i, " ", ctx.Input(i)->DebugString(),
                                                       ": rank does not match its equation term"));
      }
    }
    EinsumPlan plan;
    plan.size.assign(kLetters + ellipsis_rank, -1);
    std::vector<int> uses(plan.size.size(), 0);
    std::vector<std::vector<int>> labels(n);
    for (int i = 0; i < n; ++i) {
      const Tensor& t = *ctx.Input(i);
      labels[i] = DimLabels(inputs_[i], t.rank(), ellipsis_rank);
      for (int64_t d = 0; d < t.rank(); ++d) {
        const int label = labels[i][d];
        int64_t& size = plan.size[label];
        const bool broadcast = label >= kLetters;
        if (size == -1 || (broadcast && size == 1)) {
          size = t.dim(d);
        } else if (t.dim(d) != size && !(broadcast && t.dim(d) == 1)) {
          return absl::InvalidArgumentError(absl::StrCat("input ", i, " ", t.DebugString(), ": dim ", d, " is ",
                                                         t.dim(d), ", but its label has size ", size, " elsewhere"));
        }
        ++uses[label];
      }
    }
    plan.stride.assign(n, std::vector<int64_t>(plan.size.size(), 0));
    for (int i = 0; i < n; ++i) {
      const Tensor& t = *ctx.Input(i);
      const std::vector<int64_t> strides = StridesOf(t.shape());
      for (int64_t d = 0; d < t.rank(); ++d) {
        // A broadcast dim of 1 reads its one element for every index of the label.
        const bool broadcast = labels[i][d] >= kLetters && t.dim(d) == 1 && plan.size[labels[i][d]] != 1;
        if (!broadcast) plan.stride[i][labels[i][d]] += strides[d];
      }
    }
    RETURN_IF_ERROR(ChooseOutput(uses, ellipsis_rank, plan));
    return plan;
  }

  // How many dims input i's "..." stands for: -1 when its rank does not fit its term.
  int64_t EllipsisRank(int i, const Tensor& t) const {
    const int64_t letters = static_cast<int64_t>(std::count_if(inputs_[i].begin(), inputs_[i].end(),
                                                               [](int l) { return l != kEllipsis; }));
    const bool has_ellipsis = letters != static_cast<int64_t>(inputs_[i].size());
    if (has_ellipsis) return t.rank() >= letters ? t.rank() - letters : -1;
    return t.rank() == letters ? 0 : -1;
  }

  // The label of each dim of a tensor of `rank` with this term; "..." dims are right-aligned onto the
  // ellipsis_rank broadcast labels.
  static std::vector<int> DimLabels(const Term& term, int64_t rank, int64_t ellipsis_rank) {
    std::vector<int> labels;
    const int64_t own = rank - static_cast<int64_t>(term.size()) + 1;  // dims this operand's "..." covers
    for (int label : term) {
      if (label != kEllipsis) {
        labels.push_back(label);
        continue;
      }
      for (int64_t k = 0; k < own; ++k) labels.push_back(static_cast<int>(kLetters + ellipsis_rank - own + k));
    }
    return labels;
  }

  absl::Status ChooseOutput(const std::vector<int>& uses, int64_t ellipsis_rank, EinsumPlan& plan) const {
    std::vector<bool> in_output(uses.size(), false);
    const auto add = [&](int label) -> absl::Status {
      if (label < kLetters && uses[label] == 0) {
        return absl::InvalidArgumentError("equation: an output label does not appear in any input");
      }
      if (in_output[label]) return absl::InvalidArgumentError("equation: an output label appears twice");
      in_output[label] = true;
      plan.output.push_back(label);
      return absl::OkStatus();
    };
    const auto add_ellipsis = [&]() -> absl::Status {
      for (int64_t k = 0; k < ellipsis_rank; ++k) RETURN_IF_ERROR(add(static_cast<int>(kLetters + k)));
      return absl::OkStatus();
    };
    if (output_) {
      for (int label : *output_) RETURN_IF_ERROR(label == kEllipsis ? add_ellipsis() : add(label));
    } else {
      RETURN_IF_ERROR(add_ellipsis());
      for (int label = 0; label < kLetters; ++label) {
        if (uses[label] == 1) RETURN_IF_ERROR(add(label));
      }
    }
    for (size_t label = 0; label < uses.size(); ++label) {
      if (uses[label] > 0 && !in_output[label]) plan.summed.push_back(static_cast<int>(label));
    }
    return absl::OkStatus();
  }

  // The terms each output element sums: the product of the summed labels' sizes. Sizes within the tensor
  // limits still multiply past int64 over a few operands ("a,b,c->" of three 2^22-element vectors), and
  // the evaluation is as long as this times the output's size, so both must be counted first.
  static absl::StatusOr<int64_t> SummedCount(const EinsumPlan& plan, const Shape& out_shape) {
    int64_t count = 1;
    for (int label : plan.summed) {
      absl::StatusOr<int64_t> product = CheckedMul(count, plan.size[label]);
      if (!product.ok()) return TooMuchWork();
      count = *product;
    }
    int64_t outputs = 1;
    for (int64_t d : out_shape) {
      if (d == 0) return count;
      if (__builtin_mul_overflow(outputs, d, &outputs)) return TooMuchWork();
    }
    if (int64_t work; __builtin_mul_overflow(outputs, count, &work)) return TooMuchWork();
    return count;
  }

  static absl::Status TooMuchWork() {
    return absl::ResourceExhaustedError("Einsum: the sum takes more than 2^63 multiply-adds");
  }

  // Terms between two checks of the run's limits within one output element's sum.
  static constexpr int64_t kTermsBetweenChecks = int64_t{1} << 16;

  // Floats accumulate in double; integers wrap around as two's complement. The run's limits are checked
  // as the terms add up (StopIfRunEnded), however they split between outputs and summed labels.
  template <typename T>
  void Evaluate(KernelContext& ctx, const EinsumPlan& plan, int64_t summed_count, T* out, int64_t total) const {
    using Acc = std::conditional_t<kIsFloat<T>, double, WrapType<T>>;
    const size_t n = inputs_.size();
    std::vector<const T*> in(n);
    for (size_t i = 0; i < n; ++i) in[i] = ctx.Input(static_cast<int>(i))->template data<T>();
    ParallelRange(ctx.pool(), total, std::max<int64_t>(1, 16384 / std::max<int64_t>(summed_count, 1)),
                  [&](int64_t begin, int64_t end) {
      std::vector<int64_t> offset(n), index(plan.summed.size());
      for (int64_t o = begin; o < end; ++o) {
        std::fill(offset.begin(), offset.end(), 0);
        for (int64_t j = static_cast<int64_t>(plan.output.size()) - 1, rest = o; j >= 0; --j) {
          const int label = plan.output[j];
          const int64_t at = rest % plan.size[label];
          rest /= plan.size[label];
          for (size_t i = 0; i < n; ++i) offset[i] += at * plan.stride[i][label];
        }
        std::fill(index.begin(), index.end(), 0);
        Acc sum(0);
        for (int64_t s = 0; s < summed_count; ++s) {
          if (s % kTermsBetweenChecks == kTermsBetweenChecks - 1) StopIfRunEnded(kTermsBetweenChecks * n);
          Acc product(1);
          for (size_t i = 0; i < n; ++i) product = static_cast<Acc>(product * static_cast<Acc>(ToCompute(in[i][offset[i]])));
          sum = static_cast<Acc>(sum + product);
          // Advance the summed labels' odometer, innermost (last) first.
          for (int64_t j = static_cast<int64_t>(index.size()) - 1; j >= 0; --j) {
            const int label = plan.summed[j];
            for (size_t i = 0; i < n; ++i) offset[i] += plan.stride[i][label];
            if (++index[j] < plan.size[label]) break;
            for (size_t i = 0; i < n; ++i) offset[i] -= plan.stride[i][label] * plan.size[label];
            index[j] = 0;
          }
        }
        out[o] = FromCompute<T>(static_cast<ComputeType<T>>(sum));
        StopIfRunEnded(summed_count % kTermsBetweenChecks * n);
      }
    });
  }

  std::vector<Term> inputs_;
  std::optional<Term> output_;
};

// Einsum has a single version.
REGISTER_KERNEL(kOnnx, "Einsum", 12, kLatest, kNumericTypes, Einsum);

}  // namespace
}  // namespace onnxserve

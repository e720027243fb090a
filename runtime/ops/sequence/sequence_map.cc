// SequenceMap-17: runs its body once per element of the first input sequence. Each body input takes the
// element at the same position of a sequence input (all of one length) or a tensor input whole; output j
// is the sequence of the body's output j. Elements run in order, one after the other.
#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/exec/plan.h"
#include "runtime/ops/sequence/sequence.h"
#include "runtime/ops/subgraph.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

class SequenceMap final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    body_ = info.Subgraph("body");
    if (body_ == nullptr) return absl::InvalidArgumentError("graph attribute \"body\" is missing");
    const auto& graph = body_->graph();
    if (static_cast<int>(graph.inputs().size()) != info.num_inputs() ||
        static_cast<int>(graph.outputs().size()) != info.num_outputs()) {
      return absl::InvalidArgumentError(absl::StrCat("body takes ", graph.inputs().size(), " inputs and gives ",
                                                     graph.outputs().size(), " outputs; the node has ",
                                                     info.num_inputs(), " and ", info.num_outputs()));
    }
    return absl::OkStatus();
  }
  bool TakesValues() const override { return true; }
  Value::Kind OutputKind(int) const override { return Value::Kind::kSequence; }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const Value* first, SequenceInput(ctx, 0));
    const size_t length = first->elements().size();
    for (int i = 1; i < ctx.num_inputs(); ++i) {
      const Value* input = ctx.InputValue(i);
      if (input == nullptr) return absl::InvalidArgumentError(absl::StrCat("input ", i, " is missing"));
      if (input->is_sequence() && input->elements().size() != length) {
        return absl::InvalidArgumentError(absl::StrCat("input ", i, " is ", input->DebugString(),
                                                       ", input 0 has ", length, " elements"));
      }
    }
    const auto& body_inputs = body_->graph().inputs();
    std::vector<std::vector<Value>> results(ctx.num_outputs());
    for (size_t at = 0; at < length; ++at) {
      RETURN_IF_ERROR(ctx.limits().Check());
      std::vector<NamedValue> feeds = OuterFeeds(ctx, *body_);
      for (int i = 0; i < ctx.num_inputs(); ++i) {
        const Value* input = ctx.InputValue(i);
        feeds.push_back({body_inputs[i].name, input->is_sequence() ? &input->elements()[at] : input});
      }
      ASSIGN_OR_RETURN(std::vector<Value> out, body_->Run(feeds, ctx.pool(), ctx.limits()));
      for (int j = 0; j < ctx.num_outputs(); ++j) {
        RETURN_IF_ERROR(CheckJoinsResults(results[j], out[j], j));
        results[j].push_back(std::move(out[j]));
      }
    }
    for (int j = 0; j < ctx.num_outputs(); ++j) {
      // An empty result knows its element type from the body's declared output.
      DataType elem_type = body_->graph().outputs()[j].dtype;
      if (!results[j].empty() && results[j][0].is_tensor()) elem_type = results[j][0].tensor()->dtype();
      RETURN_IF_ERROR(ctx.SetOutputValue(j, Value::Sequence(elem_type, std::move(results[j]))));
    }
    return absl::OkStatus();
  }

 private:
  // A sequence holds tensors of one type, but the body's outputs may change type from element to element (an
  // If that picks a branch by the element): each must join the results before it.
  static absl::Status CheckJoinsResults(const std::vector<Value>& results, const Value& next, int output) {
    if (results.empty()) return absl::OkStatus();
    const std::string what = absl::StrCat("body output ", output);
    if (results[0].is_tensor() && next.is_tensor()) {
      return CheckJoins(results[0].tensor()->dtype(), *next.tensor(), what.c_str());
    }
    if (results[0].is_tensor() == next.is_tensor()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(what, " ", next.DebugString(), " cannot join a sequence of ",
                                                   results[0].DebugString(), " values"));
  }

  const ExecutionPlan* body_ = nullptr;
};

REGISTER_KERNEL(kOnnx, "SequenceMap", 17, kLatest, kAnyType, SequenceMap);

}  // namespace
}  // namespace onnxserve

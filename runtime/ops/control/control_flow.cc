// Control flow: If, Loop and Scan run compiled subgraphs (KernelInfo::Subgraph) with the values of the
// enclosing graph that the body reads (KernelContext::outer_scope) fed by name.
//
//   If-1..25     picks then_branch or else_branch by a bool scalar; later versions only widen types.
//   Loop-1..25   runs body while iteration < M and cond; carries N values, stacks K scan outputs on axis 0.
//   Scan-8       has a leading batch axis and an optional sequence_lens input (only full lengths run).
//   Scan-9..25   scans M inputs along scan_input_axes (either direction), stacks K outputs along
//                scan_output_axes; over zero-length inputs they take the body's declared output shapes.
// If's branches and Loop's carried values may be of any kind (sequences, optionals, maps); Scan's state
// and scanned values are tensors, as are Loop's scan outputs.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "runtime/exec/plan.h"
#include "runtime/ops/common.h"
#include "runtime/ops/subgraph.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// Copies `count` elements; strings element by element, numbers as bytes.
void CopyElements(const Tensor& src, int64_t src_offset, Tensor& dst, int64_t dst_offset, int64_t count) {
  if (count == 0) return;  // an empty tensor's data may be null, which memcpy must not be given
  if (src.dtype() == DataType::kString) {
    for (int64_t i = 0; i < count; ++i) dst.data<std::string>()[dst_offset + i] = src.data<std::string>()[src_offset + i];
    return;
  }
  const size_t size = ElementSize(src.dtype());
  std::memcpy(static_cast<char*>(dst.raw_data()) + dst_offset * size,
              static_cast<const char*>(src.raw_data()) + src_offset * size, count * size);
}

// The slice t[..., index, ...] along `axis`, with that axis removed.
Tensor TakeAlongAxis(const Tensor& t, int64_t axis, int64_t index) {
  Shape shape = t.shape();
  const int64_t length = shape[axis];
  shape.erase(shape.begin() + axis);
  Tensor out(t.dtype(), shape);
  const int64_t inner = NumElements(absl::MakeConstSpan(t.shape()).subspan(axis + 1));
  const int64_t outer = NumElements(absl::MakeConstSpan(t.shape()).subspan(0, axis));
  for (int64_t o = 0; o < outer; ++o) CopyElements(t, (o * length + index) * inner, out, o * inner, inner);
  return out;
}

// The scan outputs of a Loop or Scan (and Scan-8's batch items), stacked as they come: each part is copied
// into one growing tensor, charged to the run and bounded by the tensor limits as it grows (doubling, so a
// byte is copied about twice). Keeping the parts until the end instead held a tensor and its shape per
// iteration, uncounted: a Loop of 2^40 trips scanning out a value of the enclosing graph grew by 220 MB a
// second until its deadline, or without one until the machine ran out of memory.
class ScanOutputStack {
 public:
  // Appends `part`, which must have the type and shape of the first.
  absl::Status Append(const Tensor& part) {
    if (count_ == 0) {
      part_shape_ = part.shape();
      dtype_ = part.dtype();
    } else if (part.shape() != part_shape_ || part.dtype() != dtype_) {
      return absl::InvalidArgumentError(absl::StrCat("scan outputs differ across iterations: ",
                                                     DataTypeName(dtype_), ShapeToString(part_shape_), " vs ",
                                                     part.DebugString()));
    }
    if (dtype_ == DataType::kString) {
      // Every iteration may scan out the same long strings (an outer value passed through).
      for (const std::string& str : absl::MakeConstSpan(part.data<std::string>(), part.NumElements())) {
        chars_ += static_cast<int64_t>(str.size());
      }
      RETURN_IF_ERROR(CheckStringChars(chars_));
    }
    if (count_ == Capacity()) RETURN_IF_ERROR(Grow());
    const int64_t part_elements = part.NumElements();
    CopyElements(part, 0, rows_, count_ * part_elements, part_elements);
    ++count_;
    return absl::OkStatus();
  }

  int64_t size() const { return count_; }

  // The parts stacked along a new axis `axis` (normalized against their rank + 1), the last first when
  // `reverse`. At least one part must have been appended.
  absl::StatusOr<Tensor> Stack(int64_t axis_attr, bool reverse) const {
    ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(axis_attr, static_cast<int64_t>(part_shape_.size()) + 1));
    Shape shape = part_shape_;
    shape.insert(shape.begin() + axis, count_);
    if (axis == 0 && !reverse && count_ == Capacity()) return rows_;
    ASSIGN_OR_RETURN(Tensor out, Tensor::Create(dtype_, shape));
    const int64_t inner = NumElements(absl::MakeConstSpan(part_shape_).subspan(axis));
    const int64_t outer = NumElements(absl::MakeConstSpan(part_shape_).subspan(0, axis));
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < count_; ++i) {
        const int64_t row = reverse ? count_ - 1 - i : i;
        CopyElements(rows_, (row * outer + o) * inner, out, (o * count_ + i) * inner, inner);
      }
    }
    return out;
  }

 private:
  int64_t Capacity() const { return rows_.rank() == 0 ? 0 : rows_.dim(0); }

  // Doubles the rows, or takes one more where the double would pass the tensor limits and one more would not.
  absl::Status Grow() {
    Shape shape = part_shape_;
    shape.insert(shape.begin(), std::max<int64_t>(1, 2 * count_));
    if (!CheckedByteSize(dtype_, shape).ok()) shape[0] = count_ + 1;
    ASSIGN_OR_RETURN(Tensor grown, Tensor::Create(dtype_, shape));
    CopyElements(rows_, 0, grown, 0, count_ * NumElements(part_shape_));
    rows_ = std::move(grown);
    return absl::OkStatus();
  }

  Shape part_shape_;
  DataType dtype_ = DataType::kUndefined;
  Tensor rows_;  // [capacity, part shape...]; the first count_ rows hold the parts
  int64_t count_ = 0;
  int64_t chars_ = 0;
};

// A scan output no iteration made: empty along the new axis `axis_attr`, the rest as the body declares its
// output (dynamic dims as 0, an undeclared element type as float).
absl::StatusOr<Tensor> EmptyScanOutput(const ValueInfo& declared, int64_t axis_attr) {
  Shape shape;
  for (int64_t d : declared.dims) shape.push_back(std::max<int64_t>(d, 0));
  ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(axis_attr, static_cast<int64_t>(shape.size()) + 1));
  shape.insert(shape.begin() + axis, 0);
  return Tensor::Create(declared.dtype == DataType::kUndefined ? DataType::kFloat : declared.dtype, std::move(shape));
}

absl::StatusOr<const ExecutionPlan*> RequireSubgraph(const KernelInfo& info, const char* attr) {
  const ExecutionPlan* plan = info.Subgraph(attr);
  if (plan == nullptr) return absl::InvalidArgumentError(absl::StrCat("graph attribute \"", attr, "\" is missing"));
  return plan;
}

// A subgraph output that must be a tensor (a scan output, a condition).
absl::StatusOr<Tensor> TensorResult(Value value, const char* what) {
  if (!value.is_tensor()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must be a tensor, got ", value.DebugString()));
  }
  return *value.tensor();
}

absl::StatusOr<bool> ScalarBool(const Tensor& t, const char* what) {
  if (t.dtype() != DataType::kBool || t.NumElements() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must be a single bool, got ", t.DebugString()));
  }
  return *t.data<bool>();
}

class If final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(then_, RequireSubgraph(info, "then_branch"));
    ASSIGN_OR_RETURN(else_, RequireSubgraph(info, "else_branch"));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    ASSIGN_OR_RETURN(bool cond, ScalarBool(*ctx.Input(0), "cond"));
    const ExecutionPlan& branch = cond ? *then_ : *else_;
    ASSIGN_OR_RETURN(std::vector<Value> outputs, branch.Run(OuterFeeds(ctx, branch), ctx.pool(), ctx.limits()));
    if (static_cast<int>(outputs.size()) != ctx.num_outputs()) {
      return absl::InvalidArgumentError(absl::StrCat("branch gives ", outputs.size(), " outputs, node has ",
                                                     ctx.num_outputs()));
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      RETURN_IF_ERROR(ctx.SetOutputValue(static_cast<int>(i), std::move(outputs[i])));
    }
    return absl::OkStatus();
  }
  // The branches decide (a sequence, an optional...): the outputs' declared types say.
  Value::Kind OutputKind(int) const override { return Value::Kind::kNone; }

 private:
  const ExecutionPlan* then_ = nullptr;
  const ExecutionPlan* else_ = nullptr;
};

class Loop final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(body_, RequireSubgraph(info, "body"));
    const auto& body_inputs = body_->graph().inputs();
    num_carried_ = info.num_inputs() - 2;
    if (num_carried_ < 0 || static_cast<int>(body_inputs.size()) != num_carried_ + 2) {
      return absl::InvalidArgumentError(absl::StrCat("body takes ", body_inputs.size(),
                                                     " inputs; expected iteration, condition and ",
                                                     std::max(0, num_carried_), " loop-carried values"));
    }
    num_scan_ = static_cast<int>(body_->graph().outputs().size()) - 1 - num_carried_;
    if (num_scan_ < 0) return absl::InvalidArgumentError("body has fewer outputs than loop-carried values + 1");
    return absl::OkStatus();
  }

  // Loop-carried values may be sequences or optionals (a list grown one element per iteration).
  bool TakesValues() const override { return true; }

  absl::Status Compute(KernelContext& ctx) const override {
    int64_t trip_count = std::numeric_limits<int64_t>::max();
    ASSIGN_OR_RETURN(const Tensor* m, ctx.TensorInput(0));
    if (m != nullptr) {
      ASSIGN_OR_RETURN(trip_count, ScalarInput(*m, "M"));
    }
    bool cond = true;
    ASSIGN_OR_RETURN(const Tensor* c, ctx.TensorInput(1));
    if (c != nullptr) {
      ASSIGN_OR_RETURN(cond, ScalarBool(*c, "cond"));
    }
    std::vector<Value> carried;
    for (int i = 0; i < num_carried_; ++i) {
      if (ctx.InputValue(2 + i) == nullptr) return absl::InvalidArgumentError(absl::StrCat("loop-carried input ", i, " is missing"));
      carried.push_back(*ctx.InputValue(2 + i));
    }
    const auto& names = body_->graph().inputs();
    std::vector<ScanOutputStack> scans(num_scan_);
    for (int64_t iter = 0; iter < trip_count && cond; ++iter) {
      // The body's own steps check too, but an empty body would not: a trip count of 1e13 must still stop.
      RETURN_IF_ERROR(ctx.limits().Check());
      const Value iter_value = Tensor::Scalar<int64_t>(iter);
      const Value cond_value = Tensor::Scalar<bool>(cond);
      std::vector<NamedValue> feeds = OuterFeeds(ctx, *body_);
      feeds.push_back({names[0].name, &iter_value});
      feeds.push_back({names[1].name, &cond_value});
      for (int i = 0; i < num_carried_; ++i) feeds.push_back({names[2 + i].name, &carried[i]});
      ASSIGN_OR_RETURN(std::vector<Value> out, body_->Run(feeds, ctx.pool(), ctx.limits()));
      ASSIGN_OR_RETURN(const Tensor cond_out, TensorResult(std::move(out[0]), "body condition output"));
      ASSIGN_OR_RETURN(cond, ScalarBool(cond_out, "body condition output"));
      for (int i = 0; i < num_carried_; ++i) carried[i] = std::move(out[1 + i]);
      for (int k = 0; k < num_scan_; ++k) {
        ASSIGN_OR_RETURN(const Tensor scanned, TensorResult(std::move(out[1 + num_carried_ + k]), "a scan output"));
        RETURN_IF_ERROR(scans[k].Append(scanned));
      }
    }
    for (int i = 0; i < num_carried_; ++i) RETURN_IF_ERROR(ctx.SetOutputValue(i, std::move(carried[i])));
    for (int k = 0; k < num_scan_; ++k) {
      ASSIGN_OR_RETURN(Tensor stacked, scans[k].size() == 0
                                           ? EmptyScanOutput(body_->graph().outputs()[1 + num_carried_ + k], 0)
                                           : scans[k].Stack(0, /*reverse=*/false));
      ctx.SetOutput(num_carried_ + k, std::move(stacked));
    }
    return absl::OkStatus();
  }

 private:
  const ExecutionPlan* body_ = nullptr;
  int num_carried_ = 0;
  int num_scan_ = 0;
};

// Scan over unbatched tensors (Scan-9+, and each batch item of Scan-8).
struct ScanSpec {
  int num_state = 0;
  int num_scan_inputs = 0;
  std::vector<int64_t> input_directions;   // per scan input: 0 forward, 1 reverse
  std::vector<int64_t> input_axes;         // per scan input
  std::vector<int64_t> output_directions;  // per scan output
  std::vector<int64_t> output_axes;        // per scan output
};

absl::StatusOr<std::vector<Tensor>> RunScan(const ExecutionPlan& body, const ScanSpec& spec,
                                            const std::vector<Tensor>& state_in,
                                            const std::vector<Tensor>& scan_in, const KernelContext& ctx) {
  const auto& names = body.graph().inputs();
  const int num_scan_out = static_cast<int>(body.graph().outputs().size()) - spec.num_state;
  int64_t length = -1;
  std::vector<int64_t> axes(scan_in.size());
  for (size_t j = 0; j < scan_in.size(); ++j) {
    ASSIGN_OR_RETURN(axes[j], NormalizeAxis(spec.input_axes[j], scan_in[j].rank()));
    if (axes[j] >= scan_in[j].rank()) {
      return absl::InvalidArgumentError(absl::StrCat("scan input ", j, " is a scalar: it has no axis to scan along"));
    }
    const int64_t len = scan_in[j].dim(axes[j]);
    if (length >= 0 && len != length) {
      return absl::InvalidArgumentError(absl::StrCat("scan inputs have different lengths ", length, " and ", len));
    }
    length = len;
  }
  std::vector<Value> state(state_in.begin(), state_in.end());
  std::vector<ScanOutputStack> scans(num_scan_out);
  for (int64_t t = 0; t < std::max<int64_t>(length, 0); ++t) {
    RETURN_IF_ERROR(ctx.limits().Check());
    std::vector<Value> elements;
    for (size_t j = 0; j < scan_in.size(); ++j) {
      const int64_t index = spec.input_directions[j] == 1 ? length - 1 - t : t;
      elements.push_back(TakeAlongAxis(scan_in[j], axes[j], index));
    }
    std::vector<NamedValue> feeds = OuterFeeds(ctx, body);
    for (int i = 0; i < spec.num_state; ++i) feeds.push_back({names[i].name, &state[i]});
    for (size_t j = 0; j < elements.size(); ++j) feeds.push_back({names[spec.num_state + j].name, &elements[j]});
    ASSIGN_OR_RETURN(std::vector<Value> out, body.Run(feeds, ctx.pool(), ctx.limits()));
    for (int i = 0; i < spec.num_state; ++i) state[i] = std::move(out[i]);
    for (int k = 0; k < num_scan_out; ++k) {
      ASSIGN_OR_RETURN(const Tensor scanned, TensorResult(std::move(out[spec.num_state + k]), "a scan output"));
      RETURN_IF_ERROR(scans[k].Append(scanned));
    }
  }
  std::vector<Tensor> results;
  for (Value& value : state) {
    ASSIGN_OR_RETURN(Tensor final_state, TensorResult(std::move(value), "a scan state"));
    results.push_back(std::move(final_state));
  }
  for (int k = 0; k < num_scan_out; ++k) {
    ASSIGN_OR_RETURN(Tensor stacked,
                     scans[k].size() == 0
                         ? EmptyScanOutput(body.graph().outputs()[spec.num_state + k], spec.output_axes[k])
                         : scans[k].Stack(spec.output_axes[k], spec.output_directions[k] == 1));
    results.push_back(std::move(stacked));
  }
  return results;
}

absl::StatusOr<std::vector<int64_t>> PerItemAttr(const KernelInfo& info, const char* name, int count) {
  ASSIGN_OR_RETURN(std::vector<int64_t> values, info.Attr<std::vector<int64_t>>(name, std::vector<int64_t>(count, 0)));
  if (static_cast<int>(values.size()) != count) {
    return absl::InvalidArgumentError(absl::StrCat("attribute \"", name, "\" has ", values.size(),
                                                   " entries, expected ", count));
  }
  return values;
}

// Scan's per-item directions: 0 forward, 1 reverse. Any other value ran forward, a model's mistake (or a
// reverse meant some other way) answered without a word.
absl::StatusOr<std::vector<int64_t>> Directions(const KernelInfo& info, const char* name, int count) {
  ASSIGN_OR_RETURN(std::vector<int64_t> directions, PerItemAttr(info, name, count));
  for (int64_t direction : directions) {
    if (direction != 0 && direction != 1) {
      return absl::InvalidArgumentError(absl::StrCat("attribute \"", name, "\" holds ", direction,
                                                     ": expected 0 (forward) or 1 (reverse)"));
    }
  }
  return directions;
}

class Scan final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(body_, RequireSubgraph(info, "body"));
    ASSIGN_OR_RETURN(int64_t num_scan_inputs, info.Attr<int64_t>("num_scan_inputs"));
    batched_ = info.opset() < 9;
    const int explicit_inputs = info.num_inputs() - (batched_ ? 1 : 0);
    // Checked before it narrows to int: 2^32 + 1 would pass as 1.
    if (num_scan_inputs < 0 || num_scan_inputs > explicit_inputs) {
      return absl::InvalidArgumentError(absl::StrCat("num_scan_inputs ", num_scan_inputs, ": the node has ",
                                                     explicit_inputs, " state and scan inputs"));
    }
    spec_.num_scan_inputs = static_cast<int>(num_scan_inputs);
    spec_.num_state = explicit_inputs - spec_.num_scan_inputs;
    const int num_scan_out = static_cast<int>(body_->graph().outputs().size()) - spec_.num_state;
    if (num_scan_out < 0) {
      return absl::InvalidArgumentError("num_scan_inputs does not fit the node's inputs and the body's outputs");
    }
    // Each run feeds body input i by name: a body of fewer inputs had names read past the end of its list.
    if (static_cast<int>(body_->graph().inputs().size()) != explicit_inputs) {
      return absl::InvalidArgumentError(absl::StrCat("body takes ", body_->graph().inputs().size(),
                                                     " inputs; expected the node's ", explicit_inputs,
                                                     " state and scan inputs"));
    }
    ASSIGN_OR_RETURN(spec_.input_directions,
                     Directions(info, batched_ ? "directions" : "scan_input_directions", spec_.num_scan_inputs));
    if (batched_) {
      spec_.input_axes.assign(spec_.num_scan_inputs, 0);
      spec_.output_axes.assign(num_scan_out, 0);
      spec_.output_directions.assign(num_scan_out, 0);
    } else {
      ASSIGN_OR_RETURN(spec_.input_axes, PerItemAttr(info, "scan_input_axes", spec_.num_scan_inputs));
      ASSIGN_OR_RETURN(spec_.output_axes, PerItemAttr(info, "scan_output_axes", num_scan_out));
      ASSIGN_OR_RETURN(spec_.output_directions, Directions(info, "scan_output_directions", num_scan_out));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const int first = batched_ ? 1 : 0;
    std::vector<Tensor> state, scan_in;
    for (int i = 0; i < spec_.num_state + spec_.num_scan_inputs; ++i) {
      const Tensor* t = ctx.Input(first + i);
      if (t == nullptr) return absl::InvalidArgumentError(absl::StrCat("input ", first + i, " is missing"));
      (i < spec_.num_state ? state : scan_in).push_back(*t);
    }
    std::vector<Tensor> results;
    if (batched_) {
      ASSIGN_OR_RETURN(results, RunBatched(ctx, state, scan_in));
    } else {
      ASSIGN_OR_RETURN(results, RunScan(*body_, spec_, state, scan_in, ctx));
    }
    for (size_t i = 0; i < results.size(); ++i) ctx.SetOutput(static_cast<int>(i), std::move(results[i]));
    return absl::OkStatus();
  }

 private:
  // The batch size every Scan-8 input leads with, checked before batch item b is taken from each of them.
  static absl::StatusOr<int64_t> BatchSize(const std::vector<Tensor>& state, const std::vector<Tensor>& scan_in) {
    if (state.empty() && scan_in.empty()) return absl::InvalidArgumentError("Scan-8 needs at least one input");
    const Tensor& first = state.empty() ? scan_in[0] : state[0];
    const int64_t batch = first.rank() >= 1 ? first.dim(0) : -1;
    const auto leads_with_batch = [batch](const Tensor& t, int64_t min_rank) {
      return t.rank() >= min_rank && t.dim(0) == batch;
    };
    const bool ok =
        batch >= 0 &&
        std::all_of(state.begin(), state.end(), [&](const Tensor& t) { return leads_with_batch(t, 1); }) &&
        std::all_of(scan_in.begin(), scan_in.end(), [&](const Tensor& t) { return leads_with_batch(t, 2); });
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat("Scan-8 inputs must all lead with the batch axis of ",
                                                     first.DebugString(), ", and scan inputs have a scan axis"));
    }
    return batch;
  }

  // Scan-8 over no batch items: the states as they came, and each scan output empty, [0, the scan length, the
  // body's declared dims]. With no item to run, no output was made, and the run failed saying the node
  // listed more outputs than the op has.
  absl::StatusOr<std::vector<Tensor>> EmptyBatch(std::vector<Tensor> state, const std::vector<Tensor>& scan_in) const {
    const int64_t length = scan_in.empty() ? 0 : scan_in[0].dim(1);
    const auto& outputs = body_->graph().outputs();
    for (size_t k = spec_.num_state; k < outputs.size(); ++k) {
      ASSIGN_OR_RETURN(const Tensor item, EmptyScanOutput(outputs[k], 0));  // [0, declared dims]
      Shape shape = item.shape();
      shape[0] = length;
      shape.insert(shape.begin(), 0);
      ASSIGN_OR_RETURN(Tensor empty, Tensor::Create(item.dtype(), std::move(shape)));
      state.push_back(std::move(empty));
    }
    return state;
  }

  // Scan-8: every input has a leading batch axis; each batch item scans along its axis 1.
  absl::StatusOr<std::vector<Tensor>> RunBatched(const KernelContext& ctx, const std::vector<Tensor>& state,
                                                 const std::vector<Tensor>& scan_in) const {
    ASSIGN_OR_RETURN(const int64_t batch, BatchSize(state, scan_in));
    if (const Tensor* lens = ctx.Input(0)) {
      for (int64_t b = 0; b < lens->NumElements(); ++b) {
        if (!scan_in.empty() && lens->GetAsInt64(b) != scan_in[0].dim(1)) {
          return absl::UnimplementedError("Scan-8 with sequence_lens shorter than the scan axis");
        }
      }
    }
    if (batch == 0) return EmptyBatch(state, scan_in);
    std::vector<ScanOutputStack> per_output;
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Tensor> item_state, item_scan;
      for (const Tensor& s : state) item_state.push_back(TakeAlongAxis(s, 0, b));
      for (const Tensor& s : scan_in) item_scan.push_back(TakeAlongAxis(s, 0, b));
      ASSIGN_OR_RETURN(std::vector<Tensor> out, RunScan(*body_, spec_, item_state, item_scan, ctx));
      per_output.resize(out.size());
      for (size_t k = 0; k < out.size(); ++k) RETURN_IF_ERROR(per_output[k].Append(out[k]));
    }
    std::vector<Tensor> results;
    for (const ScanOutputStack& parts : per_output) {
      ASSIGN_OR_RETURN(Tensor stacked, parts.Stack(0, /*reverse=*/false));
      results.push_back(std::move(stacked));
    }
    return results;
  }

  const ExecutionPlan* body_ = nullptr;
  bool batched_ = false;
  ScanSpec spec_;
};

REGISTER_KERNEL(kOnnx, "If", 1, 10, kBoolType, If);
REGISTER_KERNEL(kOnnx, "If", 11, 12, kBoolType, If);
REGISTER_KERNEL(kOnnx, "If", 13, 15, kBoolType, If);
REGISTER_KERNEL(kOnnx, "If", 16, 18, kBoolType, If);
REGISTER_KERNEL(kOnnx, "If", 19, 20, kBoolType, If);
REGISTER_KERNEL(kOnnx, "If", 21, 22, kBoolType, If);
REGISTER_KERNEL(kOnnx, "If", 23, 23, kBoolType, If);
REGISTER_KERNEL(kOnnx, "If", 24, 24, kBoolType, If);
REGISTER_KERNEL(kOnnx, "If", 25, kLatest, kBoolType, If);

REGISTER_KERNEL(kOnnx, "Loop", 1, 10, kAnyType, Loop);
REGISTER_KERNEL(kOnnx, "Loop", 11, 12, kAnyType, Loop);
REGISTER_KERNEL(kOnnx, "Loop", 13, 15, kAnyType, Loop);
REGISTER_KERNEL(kOnnx, "Loop", 16, 18, kAnyType, Loop);
REGISTER_KERNEL(kOnnx, "Loop", 19, 20, kAnyType, Loop);
REGISTER_KERNEL(kOnnx, "Loop", 21, 22, kAnyType, Loop);
REGISTER_KERNEL(kOnnx, "Loop", 23, 23, kAnyType, Loop);
REGISTER_KERNEL(kOnnx, "Loop", 24, 24, kAnyType, Loop);
REGISTER_KERNEL(kOnnx, "Loop", 25, kLatest, kAnyType, Loop);

REGISTER_KERNEL(kOnnx, "Scan", 8, 8, kAnyType, Scan);
REGISTER_KERNEL(kOnnx, "Scan", 9, 10, kAnyType, Scan);
REGISTER_KERNEL(kOnnx, "Scan", 11, 15, kAnyType, Scan);
REGISTER_KERNEL(kOnnx, "Scan", 16, 18, kAnyType, Scan);
REGISTER_KERNEL(kOnnx, "Scan", 19, 20, kAnyType, Scan);
REGISTER_KERNEL(kOnnx, "Scan", 21, 22, kAnyType, Scan);
REGISTER_KERNEL(kOnnx, "Scan", 23, 23, kAnyType, Scan);
REGISTER_KERNEL(kOnnx, "Scan", 24, 24, kAnyType, Scan);
REGISTER_KERNEL(kOnnx, "Scan", 25, kLatest, kAnyType, Scan);

}  // namespace
}  // namespace onnxserve

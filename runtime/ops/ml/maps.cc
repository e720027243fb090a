// The ai.onnx.ml operators on maps (all version 1):
//   ZipMap          tensor [N, C] (or [C]) -> a sequence of N maps {label_c: x[n, c]}, keys in attribute order
//   CastMap         map(int64, string|float) -> tensor [1, K], values in ascending key order
//   DictVectorizer  map(string|int64, value) -> tensor [1, V], value of vocabulary[v] at v, 0 (or "") where
//                   absent
// A map value here is a one-element tensor (MapProto stores a map's values as a sequence of 0-D tensors).
// The outputs of CastMap and DictVectorizer are [1, K] and [1, V] as ONNX Runtime writes them (and as the
// DictVectorizer spec's T2 text says; its type line calls them 1-D).
#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "runtime/core/run_limits.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// Map keys read from a MapProto keep the integer type it names; any of them reads as int64.
bool IsIntegerKey(DataType type) {
  return std::find(std::begin(kIntegerTypes), std::end(kIntegerTypes), type) != std::end(kIntegerTypes);
}

// Every element of `y` set to zero (`string_zero` for strings): what a position no key fills holds.
void FillZero(Tensor& y, const std::string& string_zero) {
  DispatchAny(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T zero{};
    if constexpr (std::is_same_v<T, std::string>) zero = string_zero;
    for (T& v : y.mutable_values<T>()) v = zero;
  });
}

// The kernels that take one map (input "X") and give a tensor.
class MapToTensor : public OpKernel {
 public:
  bool TakesValues() const override { return true; }
  Value::Kind OutputKind(int) const override { return Value::Kind::kTensor; }
};

// Input 0 as a map: an error naming it when it is missing or of another kind.
absl::StatusOr<const Value*> MapInput(const KernelContext& ctx) {
  const Value* value = ctx.InputValue(0);
  if (value == nullptr || !value->is_map()) {
    return absl::InvalidArgumentError(absl::StrCat("input \"X\" must be a map, got ",
                                                   value == nullptr ? "nothing" : value->DebugString()));
  }
  return value;
}

// The value at `i` of a map: a one-element tensor.
absl::StatusOr<const Tensor*> MapValue(const Value& map, size_t i) {
  const Tensor* t = map.elements()[i].tensor();
  if (t == nullptr || t->NumElements() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("map value ", i, " must be a one-element tensor, got ",
                                                   map.elements()[i].DebugString()));
  }
  return t;
}

// Whether no two of `values` are equal (sorts a copy).
template <typename T>
bool AllDistinct(std::vector<T> values) {
  std::sort(values.begin(), values.end());
  return std::adjacent_find(values.begin(), values.end()) == values.end();
}

absl::Status NotDistinct(const std::string& name) {
  return absl::InvalidArgumentError(absl::StrCat("the labels of \"", name, "\" must be distinct"));
}

// One of two label attributes (`strings_name` or `ints_name`) as a 1-D tensor, its labels `distinct` or not.
absl::StatusOr<Tensor> LabelsAttr(const KernelInfo& info, const std::string& strings_name,
                                  const std::string& ints_name, bool distinct) {
  ASSIGN_OR_RETURN(auto strings, info.Attr<std::vector<std::string>>(strings_name, {}));
  ASSIGN_OR_RETURN(auto ints, info.Attr<std::vector<int64_t>>(ints_name, {}));
  if (strings.empty() == ints.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("exactly one of \"", strings_name, "\" and \"", ints_name, "\" must be given"));
  }
  if (!strings.empty()) {
    if (distinct && !AllDistinct(strings)) return NotDistinct(strings_name);
    return Tensor::FromVector<std::string>({static_cast<int64_t>(strings.size())}, strings);
  }
  if (distinct && !AllDistinct(ints)) return NotDistinct(ints_name);
  return Tensor::FromVector<int64_t>({static_cast<int64_t>(ints.size())}, ints);
}

class ZipMap final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(keys_, LabelsAttr(info, "classlabels_strings", "classlabels_int64s", /*distinct=*/true));
    return absl::OkStatus();
  }
  bool TakesValues() const override { return true; }
  Value::Kind OutputKind(int) const override { return Value::Kind::kSequence; }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx.TensorInput(0));
    if (x == nullptr || x->dtype() != DataType::kFloat || x->rank() < 1 || x->rank() > 2) {
      return absl::InvalidArgumentError(absl::StrCat("input \"X\" must be a float [N, C] or [C] tensor, got ",
                                                     x == nullptr ? "nothing" : x->DebugString()));
    }
    const int64_t columns = x->dim(x->rank() - 1);
    const int64_t rows = x->rank() == 2 ? x->dim(0) : 1;
    if (columns != keys_.NumElements()) {
      return absl::InvalidArgumentError(absl::StrCat("input \"X\" ", x->DebugString(), " has ", columns,
                                                     " columns for ", keys_.NumElements(), " labels"));
    }
    // Each entry is a tensor handle of its own, far bigger than its float: bound them as a sequence's values.
    ASSIGN_OR_RETURN(int64_t entries, CheckedMul(rows, columns));
    if (entries > kMaxSequenceLength) {
      return absl::ResourceExhaustedError(absl::StrCat("input \"X\" ", x->DebugString(), " would make ", entries,
                                                       " map entries, past the limit of ", kMaxSequenceLength));
    }
    std::vector<Value> maps;
    maps.reserve(static_cast<size_t>(rows));
    const float* in = x->data<float>();
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<Value> values;
      values.reserve(static_cast<size_t>(columns));
      for (int64_t c = 0; c < columns; ++c) values.push_back(Tensor::Scalar(in[r * columns + c]));
      maps.push_back(Value::Map(keys_, std::move(values)));  // every map shares the one keys tensor
    }
    return ctx.SetOutputValue(0, Value::Sequence(DataType::kUndefined, std::move(maps)));
  }

 private:
  Tensor keys_;
};

// The order that sorts a map's integer keys ascending.
std::vector<size_t> AscendingKeyOrder(const Tensor& keys) {
  std::vector<size_t> order(static_cast<size_t>(keys.NumElements()));
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return keys.GetAsInt64(a) < keys.GetAsInt64(b); });
  return order;
}

class CastMap final : public MapToTensor {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(std::string cast_to, info.Attr<std::string>("cast_to", "TO_FLOAT"));
    if (cast_to == "TO_FLOAT") {
      to_ = DataType::kFloat;
    } else if (cast_to == "TO_STRING") {
      to_ = DataType::kString;
    } else if (cast_to == "TO_INT64") {
      to_ = DataType::kInt64;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("cast_to must be TO_FLOAT, TO_STRING or TO_INT64, got \"", cast_to, "\""));
    }
    ASSIGN_OR_RETURN(std::string form, info.Attr<std::string>("map_form", "DENSE"));
    if (form != "DENSE" && form != "SPARSE") {
      return absl::InvalidArgumentError(absl::StrCat("map_form must be DENSE or SPARSE, got \"", form, "\""));
    }
    sparse_ = form == "SPARSE";
    ASSIGN_OR_RETURN(max_map_, info.Attr<int64_t>("max_map", 1));
    if (sparse_ && max_map_ < 1) {
      return absl::InvalidArgumentError(absl::StrCat("max_map must be positive for SPARSE, got ", max_map_));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const Value* map, MapInput(ctx));
    const Tensor& keys = map->keys();
    if (!IsIntegerKey(keys.dtype())) {
      return absl::InvalidArgumentError(absl::StrCat("input \"X\" must have int64 keys, got ", map->DebugString()));
    }
    const std::vector<size_t> order = AscendingKeyOrder(keys);
    const int64_t width = sparse_ ? max_map_ : keys.NumElements();
    ASSIGN_OR_RETURN(Tensor * y, ctx.CheckedOutput(0, to_, {1, width}));
    FillZero(*y, "0");  // a position no key fills reads as a value of 0 would
    for (size_t n = 0; n < order.size(); ++n) {
      const int64_t key = keys.GetAsInt64(order[n]);
      const int64_t at = sparse_ ? key : static_cast<int64_t>(n);
      if (at < 0 || at >= width) {
        return absl::InvalidArgumentError(
            absl::StrCat("key ", key, " is outside [0, ", max_map_, ") (max_map of the SPARSE form)"));
      }
      ASSIGN_OR_RETURN(const Tensor* value, MapValue(*map, order[n]));
      RETURN_IF_ERROR(Write(*value, *y, at));
    }
    return absl::OkStatus();
  }

 private:
  // y[at] = the one element of `value` (string or float) cast to y's type.
  absl::Status Write(const Tensor& value, Tensor& y, int64_t at) const {
    if (value.dtype() == DataType::kString) {
      const std::string& s = *value.data<std::string>();
      switch (to_) {
        case DataType::kString: y.data<std::string>()[at] = s; return absl::OkStatus();
        case DataType::kFloat:
          if (absl::SimpleAtof(s, &y.data<float>()[at])) return absl::OkStatus();
          break;
        default:
          if (absl::SimpleAtoi(s, &y.data<int64_t>()[at])) return absl::OkStatus();
          break;
      }
      return absl::InvalidArgumentError(absl::StrCat("map value \"", s, "\" is not a ", DataTypeName(to_)));
    }
    if (value.dtype() != DataType::kFloat) {
      return absl::InvalidArgumentError(absl::StrCat("map values must be string or float, got ", value.DebugString()));
    }
    const float f = *value.data<float>();
    switch (to_) {
      case DataType::kString: y.data<std::string>()[at] = absl::StrCat(f); return absl::OkStatus();
      case DataType::kFloat: y.data<float>()[at] = f; return absl::OkStatus();
      default:
        // Truncated toward zero, as a C++ cast; NaN and values past int64 have no such integer.
        if (!(std::abs(f) < 9.2233720368547758e18f)) {
          return absl::InvalidArgumentError(absl::StrCat("map value ", f, " has no int64 value"));
        }
        y.data<int64_t>()[at] = static_cast<int64_t>(f);
        return absl::OkStatus();
    }
  }

  DataType to_ = DataType::kFloat;
  bool sparse_ = false;
  int64_t max_map_ = 1;
};

class DictVectorizer final : public MapToTensor {
 public:
  absl::Status Init(const KernelInfo& info) {
    // Converters have written vocabularies that repeat a key; each of its positions takes the value.
    ASSIGN_OR_RETURN(vocabulary_, LabelsAttr(info, "string_vocabulary", "int64_vocabulary", /*distinct=*/false));
    for (int64_t i = 0; i < vocabulary_.NumElements(); ++i) {
      if (vocabulary_.dtype() == DataType::kString) {
        string_positions_[vocabulary_.data<std::string>()[i]].push_back(i);
      } else {
        int_positions_[vocabulary_.data<int64_t>()[i]].push_back(i);
      }
    }
    // An empty map says nothing of its value type: the graph's declared type does, else float.
    const ir::Value* x = info.node().input(0);
    if (x != nullptr && x->type().inner != nullptr && x->type().inner->elem != DataType::kUndefined) {
      declared_value_type_ = x->type().inner->elem;
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const Value* map, MapInput(ctx));
    const Tensor& keys = map->keys();
    const bool string_keys = keys.dtype() == DataType::kString;
    if (string_keys != (vocabulary_.dtype() == DataType::kString) || (!string_keys && !IsIntegerKey(keys.dtype()))) {
      return absl::InvalidArgumentError(absl::StrCat("input \"X\" ", map->DebugString(), " has keys of another type ",
                                                     "than the vocabulary (", DataTypeName(vocabulary_.dtype()), ")"));
    }
    DataType type = declared_value_type_;
    if (!map->elements().empty()) {
      ASSIGN_OR_RETURN(const Tensor* first, MapValue(*map, 0));
      type = first->dtype();
    }
    if (type == DataType::kString) RETURN_IF_ERROR(CheckCopiedStrings(*map));
    Tensor& y = ctx.Output(0, type, {1, vocabulary_.NumElements()});
    FillZero(y, "");  // an absent string is empty, as ONNX Runtime writes it
    for (size_t i = 0; i < map->elements().size(); ++i) {
      ASSIGN_OR_RETURN(const Tensor* value, MapValue(*map, i));
      if (value->dtype() != type) {
        return absl::InvalidArgumentError(absl::StrCat("map value ", i, " is ", value->DebugString(),
                                                       ", value 0 is ", DataTypeName(type)));
      }
      // Keys outside the vocabulary are dropped, as scikit-learn's DictVectorizer and ONNX Runtime drop them.
      const std::vector<int64_t>& positions = PositionsOf(keys, static_cast<int64_t>(i));
      for (int64_t at : positions) RETURN_IF_ERROR(CopyElement(*value, y, at));
      // A map may repeat a key and a vocabulary list it many times: entries times positions in all.
      StopIfRunEnded(static_cast<int64_t>(positions.size()) + 1);
    }
    return absl::OkStatus();
  }

 private:
  // Where key i of `keys` goes in the output: none, one or (a repeated vocabulary entry) more positions.
  const std::vector<int64_t>& PositionsOf(const Tensor& keys, int64_t i) const {
    static const std::vector<int64_t> kNowhere;
    if (keys.dtype() == DataType::kString) {
      auto it = string_positions_.find(keys.data<std::string>()[i]);
      return it == string_positions_.end() ? kNowhere : it->second;
    }
    auto it = int_positions_.find(keys.GetAsInt64(i));
    return it == int_positions_.end() ? kNowhere : it->second;
  }

  // Each string value is copied to every position of its key, and a vocabulary may list a key many times:
  // the copies' characters must fit the limits before Y is built.
  absl::Status CheckCopiedStrings(const Value& map) const {
    int64_t chars = 0;
    for (size_t i = 0; i < map.elements().size(); ++i) {
      ASSIGN_OR_RETURN(const Tensor* value, MapValue(map, i));
      if (value->dtype() != DataType::kString) continue;  // Compute refuses it when it copies it
      const auto positions = static_cast<int64_t>(PositionsOf(map.keys(), static_cast<int64_t>(i)).size());
      ASSIGN_OR_RETURN(const int64_t copies,
                       CheckedMul(static_cast<int64_t>(value->data<std::string>()->size()), positions));
      ASSIGN_OR_RETURN(chars, CheckedAdd(chars, copies));
    }
    return CheckStringChars(chars);
  }

  static absl::Status CopyElement(const Tensor& value, Tensor& y, int64_t at) {
    const bool copied = DispatchAny(value.dtype(), [&](auto tag) {
      using T = decltype(tag);
      y.data<T>()[at] = *value.data<T>();
    });
    if (copied) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("map values of type ", DataTypeName(value.dtype()),
                                                   " are not supported"));
  }

  Tensor vocabulary_;
  absl::flat_hash_map<std::string, std::vector<int64_t>> string_positions_;
  absl::flat_hash_map<int64_t, std::vector<int64_t>> int_positions_;
  DataType declared_value_type_ = DataType::kFloat;
};

REGISTER_KERNEL(kMl, "ZipMap", 1, kLatest, kAnyType, ZipMap);
REGISTER_KERNEL(kMl, "CastMap", 1, kLatest, kAnyType, CastMap);
REGISTER_KERNEL(kMl, "DictVectorizer", 1, kLatest, kAnyType, DictVectorizer);

}  // namespace
}  // namespace onnxserve

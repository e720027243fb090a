// LabelEncoder (ai.onnx.ml 1, 2, 4): maps each element through a key -> value table, the categorical
// preprocessing of scikit-learn pipelines. Opset 1 maps strings to their index in `classes_strings` or back;
// opset 2 takes parallel keys_* / values_* lists of strings, int64s or floats; opset 4 adds the *_tensor forms
// (int16, int32 and double too) and a default_tensor. The table is built once, at load.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

bool IsIntegral(DataType t) { return t == DataType::kInt64 || t == DataType::kInt32 || t == DataType::kInt16; }
bool IsFloating(DataType t) { return t == DataType::kFloat || t == DataType::kDouble; }

// Keys compare by value in one of three canonical forms: strings, integers as int64, floats as double (every
// float is exact in double). NaN keys match any NaN input.
class Table {
 public:
  Table(Tensor keys, Tensor values, Tensor fallback)
      : keys_(std::move(keys)), values_(std::move(values)), fallback_(std::move(fallback)) {
    if (values_.dtype() == DataType::kString) {
      longest_value_ = std::max(LongestString(values_), LongestString(fallback_));
    }
    for (int64_t i = 0; i < keys_.NumElements(); ++i) {  // a repeated key: the last one wins
      if (keys_.dtype() == DataType::kString) {
        by_string_.insert_or_assign(keys_.data<std::string>()[i], i);
      } else if (IsIntegral(keys_.dtype())) {
        by_int_.insert_or_assign(IntAt(keys_, i), i);
      } else if (const double k = FloatAt(keys_, i); std::isnan(k)) {
        nan_position_ = i;
      } else {
        by_float_.insert_or_assign(k, i);
      }
    }
  }

  DataType key_type() const { return keys_.dtype(); }
  DataType value_type() const { return values_.dtype(); }
  // Each output element is a copy of a value: a model's long label over a large X must fit the limits.
  absl::Status CheckOutputFits(int64_t elements) const { return CheckStringCopies(longest_value_, elements); }

  void Map(const Tensor& x, Tensor& y) const {
    DispatchAny(values_.dtype(), [&](auto tag) {
      using V = decltype(tag);
      const V* values = values_.data<V>();
      const V& fallback = fallback_.data<V>()[0];
      V* out = y.data<V>();
      for (int64_t i = 0; i < x.NumElements(); ++i) {
        const int64_t p = Find(x, i);
        out[i] = p < 0 ? fallback : values[p];
      }
    });
  }

 private:
  static int64_t IntAt(const Tensor& t, int64_t i) {
    switch (t.dtype()) {
      case DataType::kInt16: return t.data<int16_t>()[i];
      case DataType::kInt32: return t.data<int32_t>()[i];
      default: return t.data<int64_t>()[i];
    }
  }
  static double FloatAt(const Tensor& t, int64_t i) {
    return t.dtype() == DataType::kFloat ? t.data<float>()[i] : t.data<double>()[i];
  }

  // Position of x[i] among the keys, or -1.
  int64_t Find(const Tensor& x, int64_t i) const {
    if (x.dtype() == DataType::kString) return Lookup(by_string_, x.data<std::string>()[i]);
    if (IsIntegral(x.dtype())) return Lookup(by_int_, IntAt(x, i));
    const double k = FloatAt(x, i);
    return std::isnan(k) ? nan_position_ : Lookup(by_float_, k);
  }
  template <typename Map, typename K>
  static int64_t Lookup(const Map& map, const K& key) {
    auto it = map.find(key);
    return it == map.end() ? -1 : it->second;
  }

  Tensor keys_, values_, fallback_;
  int64_t longest_value_ = 0;  // characters of the longest value or fallback string; 0 for other types
  absl::flat_hash_map<std::string, int64_t> by_string_;
  absl::flat_hash_map<int64_t, int64_t> by_int_;
  absl::flat_hash_map<double, int64_t> by_float_;
  int64_t nan_position_ = -1;
};

// The one keys_* (or values_*) attribute the node sets, as a 1-D tensor.
absl::StatusOr<Tensor> ListOrTensor(const KernelInfo& info, const std::string& prefix) {
  const bool tensors = info.opset() >= 4;
  if (!tensors && info.HasAttr(prefix + "_tensor")) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "_tensor is new in ai.onnx.ml opset 4 (the model imports ", info.opset(), ")"));
  }
  std::vector<std::string> set;
  for (const char* suffix : {"_strings", "_int64s", "_floats", "_tensor"}) {
    if (info.HasAttr(prefix + suffix)) set.push_back(prefix + suffix);
  }
  if (set.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("exactly one of ", prefix, "_strings, ", prefix, "_int64s, ",
                                                   prefix, "_floats", tensors ? ", " + prefix + "_tensor" : "",
                                                   " must be set, found ",
                                                   set.empty() ? "none" : absl::StrJoin(set, ", ")));
  }
  const std::string& name = set[0];
  if (name.ends_with("_strings")) {
    ASSIGN_OR_RETURN(auto v, info.Attr<std::vector<std::string>>(name));
    return Tensor::FromVector<std::string>({static_cast<int64_t>(v.size())}, v);
  }
  if (name.ends_with("_int64s")) {
    ASSIGN_OR_RETURN(auto v, info.Attr<std::vector<int64_t>>(name));
    return Tensor::FromVector<int64_t>({static_cast<int64_t>(v.size())}, v);
  }
  if (name.ends_with("_floats")) {
    ASSIGN_OR_RETURN(auto v, info.Attr<std::vector<float>>(name));
    return Tensor::FromVector<float>({static_cast<int64_t>(v.size())}, v);
  }
  ASSIGN_OR_RETURN(Tensor t, info.Attr<Tensor>(name));
  const DataType type = t.dtype();
  if (type != DataType::kString && !IsIntegral(type) && !IsFloating(type)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must hold strings, int16/32/64, float or double, got ", t.DebugString()));
  }
  return t;
}

// default_tensor when given (opset 4), else the default_* attribute of the values' type.
absl::StatusOr<Tensor> DefaultFor(const KernelInfo& info, DataType type) {
  if (info.HasAttr("default_tensor")) {
    ASSIGN_OR_RETURN(Tensor t, info.Attr<Tensor>("default_tensor"));
    if (t.dtype() != type || t.NumElements() != 1) {
      return absl::InvalidArgumentError(absl::StrCat("default_tensor must be one ", DataTypeName(type),
                                                     " like the values, got ", t.DebugString()));
    }
    return t;
  }
  switch (type) {
    case DataType::kString: {
      ASSIGN_OR_RETURN(auto v, info.Attr<std::string>("default_string", "_Unused"));
      return Tensor::Scalar(v);
    }
    case DataType::kInt64: {
      ASSIGN_OR_RETURN(auto v, info.Attr<int64_t>("default_int64", -1));
      return Tensor::Scalar(v);
    }
    case DataType::kFloat: {
      ASSIGN_OR_RETURN(auto v, info.Attr<float>("default_float", -0.0f));
      return Tensor::Scalar(v);
    }
    case DataType::kInt32: return Tensor::Scalar(int32_t{-1});
    case DataType::kInt16: return Tensor::Scalar(int16_t{-1});
    default: return Tensor::Scalar(-0.0);
  }
}

class LabelEncoder final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    if (info.opset() == 1) return InitClasses(info);
    ASSIGN_OR_RETURN(Tensor keys, ListOrTensor(info, "keys"));
    ASSIGN_OR_RETURN(Tensor values, ListOrTensor(info, "values"));
    if (keys.NumElements() != values.NumElements()) {
      return absl::InvalidArgumentError(
          absl::StrCat(keys.NumElements(), " keys but ", values.NumElements(), " values: they pair up one to one"));
    }
    ASSIGN_OR_RETURN(Tensor fallback, DefaultFor(info, values.dtype()));
    tables_.emplace_back(std::move(keys), std::move(values), std::move(fallback));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    for (const Table& table : tables_) {
      if (table.key_type() != x.dtype()) continue;
      RETURN_IF_ERROR(table.CheckOutputFits(x.NumElements()));
      table.Map(x, ctx.Output(0, table.value_type(), x.shape()));
      return absl::OkStatus();
    }
    std::vector<std::string> accepted;
    for (const Table& table : tables_) accepted.push_back(DataTypeName(table.key_type()));
    return absl::InvalidArgumentError(absl::StrCat("X is ", x.DebugString(), " but the keys are ",
                                                   absl::StrJoin(accepted, " or ")));
  }

 private:
  // Opset 1: strings map to their index in classes_strings (else default_int64), int64s to the string at
  // that index (else default_string).
  absl::Status InitClasses(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const auto classes, info.Attr<std::vector<std::string>>("classes_strings", {}));
    ASSIGN_OR_RETURN(const int64_t default_int, info.Attr<int64_t>("default_int64", -1));
    ASSIGN_OR_RETURN(const std::string default_string, info.Attr<std::string>("default_string", "_Unused"));
    const int64_t n = static_cast<int64_t>(classes.size());
    std::vector<int64_t> indices(classes.size());
    for (int64_t i = 0; i < n; ++i) indices[i] = i;
    const Tensor names = Tensor::FromVector<std::string>({n}, classes);
    const Tensor positions = Tensor::FromVector<int64_t>({n}, indices);
    tables_.emplace_back(names, positions, Tensor::Scalar(default_int));
    tables_.emplace_back(positions, names, Tensor::Scalar(default_string));
    return absl::OkStatus();
  }

  std::vector<Table> tables_;  // one per accepted input type
};

constexpr DataType kLabelTypes[] = {DataType::kString, DataType::kInt64, DataType::kFloat,
                                    DataType::kInt32,  DataType::kInt16, DataType::kDouble};

}  // namespace

REGISTER_KERNEL(kMl, "LabelEncoder", 1, 1, kLabelTypes, LabelEncoder);
REGISTER_KERNEL(kMl, "LabelEncoder", 2, 3, kLabelTypes, LabelEncoder);
REGISTER_KERNEL(kMl, "LabelEncoder", 4, kLatest, kLabelTypes, LabelEncoder);

}  // namespace onnxserve

// Categorical encoders of ai.onnx.ml: OneHotEncoder (scikit-learn's OneHotEncoder, one column at a time)
// and CategoryMapper (strings to integers and back). Their tables are built once, at load.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "runtime/ops/common.h"
#include "runtime/ops/ml/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// A number's category key: numbers are cast to int64 as ONNX Runtime casts them (truncated); NaN and values
// outside int64 (whose cast would be undefined) have none.
template <typename T>
bool CategoryKey(T v, int64_t& key) {
  if constexpr (std::is_floating_point_v<T>) {
    // 2^63 is exact in both float and double; every finite value below it and >= -2^63 casts safely.
    constexpr T kLimit = static_cast<T>(9223372036854775808.0);
    if (!(v >= -kLimit && v < kLimit)) return false;
  }
  key = static_cast<int64_t>(v);
  return true;
}

// Y [X's shape..., categories] float: a one at the position of each element's category among cats_strings
// (string X) or cats_int64s (numeric X), zeros elsewhere. An element of no category gives a row of zeros
// when `zeros` is set (the default), else an error.
class OneHotEncoder final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const auto strings, info.Attr<std::vector<std::string>>("cats_strings", {}));
    ASSIGN_OR_RETURN(const auto ints, info.Attr<std::vector<int64_t>>("cats_int64s", {}));
    if (strings.empty() == ints.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("exactly one of cats_strings and cats_int64s must be set, found ",
                                                     strings.empty() ? "neither" : "both"));
    }
    strings_used_ = !strings.empty();
    categories_ = static_cast<int64_t>(strings_used_ ? strings.size() : ints.size());
    // A repeated category keeps its first position.
    for (int64_t i = 0; i < categories_; ++i) {
      if (strings_used_) {
        by_string_.try_emplace(strings[i], i);
      } else {
        by_int_.try_emplace(ints[i], i);
      }
    }
    ASSIGN_OR_RETURN(const int64_t zeros, info.Attr<int64_t>("zeros", 1));
    zeros_ = zeros != 0;
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    if ((x.dtype() == DataType::kString) != strings_used_) {
      return absl::InvalidArgumentError(absl::StrCat("X is ", x.DebugString(), " but the categories are ",
                                                     strings_used_ ? "cats_strings" : "cats_int64s"));
    }
    Shape shape = x.shape();
    shape.push_back(categories_);
    ASSIGN_OR_RETURN(Tensor * y, ctx.CheckedOutput(0, DataType::kFloat, shape));
    float* out = y->data<float>();
    std::fill(out, out + y->NumElements(), 0.0f);
    if (strings_used_) {
      const std::string* in = x.data<std::string>();
      for (int64_t i = 0; i < x.NumElements(); ++i) {
        const auto it = by_string_.find(in[i]);
        if (it != by_string_.end()) {
          out[i * categories_ + it->second] = 1;
        } else if (!zeros_) {
          return NoCategory(in[i]);
        }
      }
      return absl::OkStatus();
    }
    absl::Status status = absl::OkStatus();
    RETURN_IF_ERROR(DispatchMlNumeric(x, [&](auto tag) {
      using T = decltype(tag);
      const T* in = x.data<T>();
      for (int64_t i = 0; i < x.NumElements(); ++i) {
        int64_t key = 0;
        const auto it = CategoryKey(in[i], key) ? by_int_.find(key) : by_int_.end();
        if (it != by_int_.end()) {
          out[i * categories_ + it->second] = 1;
        } else if (!zeros_) {
          status = NoCategory(absl::StrCat(in[i]));
          return;
        }
      }
    }));
    return status;
  }

 private:
  absl::Status NoCategory(const std::string& value) const {
    return absl::InvalidArgumentError(
        absl::StrCat("X holds ", value, ", which is none of the ", categories_, " categories (zeros is 0)"));
  }

  bool strings_used_ = false;
  int64_t categories_ = 0;
  absl::flat_hash_map<std::string, int64_t> by_string_;
  absl::flat_hash_map<int64_t, int64_t> by_int_;
  bool zeros_ = true;
};

// Y (X's shape) maps strings to int64s (default_int64 for an unknown string) or int64s to strings
// (default_string) through the pairs (cats_strings[i], cats_int64s[i]); the input's type picks the
// direction. A repeated key maps to its last pair, as in ONNX Runtime.
class CategoryMapper final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const auto strings, info.Attr<std::vector<std::string>>("cats_strings", {}));
    ASSIGN_OR_RETURN(const auto ints, info.Attr<std::vector<int64_t>>("cats_int64s", {}));
    RETURN_IF_ERROR(CheckAttrSize("cats_int64s", ints.size(), strings.size(), "one per entry of cats_strings"));
    for (size_t i = 0; i < strings.size(); ++i) {
      to_int_.insert_or_assign(strings[i], ints[i]);
      to_string_.insert_or_assign(ints[i], strings[i]);
    }
    ASSIGN_OR_RETURN(default_int_, info.Attr<int64_t>("default_int64", -1));
    ASSIGN_OR_RETURN(default_string_, info.Attr<std::string>("default_string", "_Unused"));
    longest_string_ = static_cast<int64_t>(default_string_.size());
    for (const std::string& s : strings) longest_string_ = std::max(longest_string_, static_cast<int64_t>(s.size()));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    if (x.dtype() == DataType::kString) {
      Tensor& y = ctx.Output(0, DataType::kInt64, x.shape());
      Map(x.data<std::string>(), x.NumElements(), to_int_, default_int_, y.data<int64_t>());
    } else if (x.dtype() == DataType::kInt64) {
      // Each output is a copy of a category or the default: a model's long one over a large X must fit.
      RETURN_IF_ERROR(CheckStringCopies(longest_string_, x.NumElements()));
      Tensor& y = ctx.Output(0, DataType::kString, x.shape());
      Map(x.data<int64_t>(), x.NumElements(), to_string_, default_string_, y.data<std::string>());
    } else {
      return absl::InvalidArgumentError(absl::StrCat("X must be string or int64, got ", x.DebugString()));
    }
    return absl::OkStatus();
  }

 private:
  template <typename K, typename V>
  static void Map(const K* in, int64_t n, const absl::flat_hash_map<K, V>& table, const V& fallback, V* out) {
    for (int64_t i = 0; i < n; ++i) {
      const auto it = table.find(in[i]);
      out[i] = it == table.end() ? fallback : it->second;
    }
  }

  absl::flat_hash_map<std::string, int64_t> to_int_;
  absl::flat_hash_map<int64_t, std::string> to_string_;
  int64_t default_int_ = -1;
  std::string default_string_;
  int64_t longest_string_ = 0;  // characters of the longest category or default string
};

constexpr DataType kOneHotTypes[] = {DataType::kString, DataType::kInt64, DataType::kInt32, DataType::kFloat,
                                     DataType::kDouble};
constexpr DataType kCategoryTypes[] = {DataType::kString, DataType::kInt64};

}  // namespace

REGISTER_KERNEL(kMl, "OneHotEncoder", 1, kLatest, kOneHotTypes, OneHotEncoder);
REGISTER_KERNEL(kMl, "CategoryMapper", 1, kLatest, kCategoryTypes, CategoryMapper);

}  // namespace onnxserve

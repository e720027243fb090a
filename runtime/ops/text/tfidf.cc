// TfIdfVectorizer (ai.onnx 9): the bag-of-n-grams features of text models (scikit-learn's CountVectorizer
// and TfidfVectorizer export to it). Each row of token ids or strings becomes a row of counts, one column per
// n-gram of a pool fixed in the model, optionally weighted. The pool becomes a trie at load, so a row is
// scanned once per skip distance and every n-gram grows from its prefix instead of being hashed anew.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/core/run_limits.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

enum class Weighting { kTf, kIdf, kTfIdf };

absl::StatusOr<Weighting> ParseMode(const std::string& mode) {
  if (mode == "TF") return Weighting::kTf;
  if (mode == "IDF") return Weighting::kIdf;
  if (mode == "TFIDF") return Weighting::kTfIdf;
  return absl::InvalidArgumentError(absl::StrCat("mode \"", mode, "\" is not one of TF, IDF, TFIDF"));
}

// Y[r, ngram_indexes[i]] counts the occurrences in row r of X of the i-th n-gram of the pool, where an n-gram
// occurs at every start s and skip k (0 <= k <= max_skip_count) with X[r, s + j*(k+1)] its j-th item; 1-grams
// count once, whatever the skip. Only n-grams of min_gram_length..max_gram_length count. Modes: TF keeps
// counts, IDF makes them 0/1 times a weight, TFIDF multiplies them by a weight.
//
// weights[j] scales output column j, as ONNX Runtime and the ONNX reference implementation apply it. The
// spec's text calls it the weight of the j-th pool n-gram, which is the same column when ngram_indexes is
// the identity; with another mapping we follow the implementations models are checked against.
class TfIdfVectorizer final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    RETURN_IF_ERROR(InitLengths(info));
    ASSIGN_OR_RETURN(const Pool pool, ReadPool(info));
    ASSIGN_OR_RETURN(const auto counts, info.Attr<std::vector<int64_t>>("ngram_counts"));
    ASSIGN_OR_RETURN(const auto indexes, info.Attr<std::vector<int64_t>>("ngram_indexes"));
    ASSIGN_OR_RETURN(const std::vector<Level> levels, Levels(counts, pool));
    if (max_n_ > static_cast<int64_t>(levels.size())) {
      return absl::InvalidArgumentError(absl::StrCat("max_gram_length ", max_n_, " is longer than the ",
                                                     levels.size(), "-grams ngram_counts gives starts for"));
    }
    RETURN_IF_ERROR(InitWidth(levels, indexes, pool.name));
    RETURN_IF_ERROR(InitWeights(info, indexes.size()));
    return BuildTrie(pool, levels, indexes);
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    const bool string_input = x.dtype() == DataType::kString;
    if (string_input != strings_) {
      return absl::InvalidArgumentError(absl::StrCat("X is ", x.DebugString(), " but the pool is ",
                                                     strings_ ? "pool_strings: X must hold strings"
                                                              : "pool_int64s: X must hold int32 or int64"));
    }
    if (x.rank() > 2) {
      return absl::InvalidArgumentError(absl::StrCat("X must be [C] or [N, C], got ", x.DebugString()));
    }
    const int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
    const int64_t columns = x.rank() == 0 ? 1 : x.dim(x.rank() - 1);
    Tensor& y = ctx.Output(0, DataType::kFloat, x.rank() == 2 ? Shape{rows, width_} : Shape{width_});
    float* out = y.data<float>();
    std::fill(out, out + y.NumElements(), 0.0f);
    std::vector<int32_t> tokens(static_cast<size_t>(x.NumElements()));
    ForEachRow(ctx.pool(), rows, columns * max_n_, [&](int64_t r) {
      int32_t* row = tokens.data() + r * columns;
      for (int64_t c = 0; c < columns; ++c) row[c] = TokenOf(x, r * columns + c);
      CountRow(row, columns, out + r * width_);
      Weigh(out + r * width_);
    });
    return absl::OkStatus();
  }

 private:
  // pool_int64s or pool_strings, whichever the node sets.
  struct Pool {
    const char* name;
    std::vector<int64_t> ints;
    std::vector<std::string> strings;
    int64_t size() const { return static_cast<int64_t>(ints.empty() ? strings.size() : ints.size()); }
  };

  // The pool's n-grams of length n are items [start, start + n * count).
  struct Level {
    int64_t start;
    int64_t count;
  };

  // mode, min_gram_length, max_gram_length, max_skip_count.
  absl::Status InitLengths(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const std::string mode, info.Attr<std::string>("mode"));
    ASSIGN_OR_RETURN(weighting_, ParseMode(mode));
    ASSIGN_OR_RETURN(min_n_, info.Attr<int64_t>("min_gram_length"));
    ASSIGN_OR_RETURN(max_n_, info.Attr<int64_t>("max_gram_length"));
    ASSIGN_OR_RETURN(max_skip_, info.Attr<int64_t>("max_skip_count"));
    if (min_n_ < 1 || max_n_ < min_n_) {
      return absl::InvalidArgumentError(absl::StrCat("min_gram_length ", min_n_, " and max_gram_length ", max_n_,
                                                     ": need 1 <= min_gram_length <= max_gram_length"));
    }
    if (max_skip_ < 0) {
      return absl::InvalidArgumentError(absl::StrCat("max_skip_count ", max_skip_, " must be >= 0"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Pool> ReadPool(const KernelInfo& info) {
    const bool has_ints = info.HasAttr("pool_int64s"), has_strings = info.HasAttr("pool_strings");
    if (has_ints == has_strings) {
      return absl::InvalidArgumentError(absl::StrCat("exactly one of pool_int64s and pool_strings must be set, found ",
                                                     has_ints ? "both" : "neither"));
    }
    strings_ = has_strings;
    Pool pool{strings_ ? "pool_strings" : "pool_int64s", {}, {}};
    if (strings_) {
      ASSIGN_OR_RETURN(pool.strings, info.Attr<std::vector<std::string>>("pool_strings"));
    } else {
      ASSIGN_OR_RETURN(pool.ints, info.Attr<std::vector<int64_t>>("pool_int64s"));
    }
    if (pool.size() == 0) return absl::InvalidArgumentError(absl::StrCat(pool.name, " is empty: no n-grams to count"));
    return pool;
  }

  // Splits the pool into its n-gram lengths by ngram_counts.
  static absl::StatusOr<std::vector<Level>> Levels(const std::vector<int64_t>& counts, const Pool& pool) {
    if (counts.empty()) return absl::InvalidArgumentError("ngram_counts must not be empty");
    const int64_t pool_size = pool.size();
    std::vector<Level> levels;
    for (size_t i = 0; i < counts.size(); ++i) {
      const int64_t start = counts[i];
      const int64_t end = i + 1 < counts.size() ? counts[i + 1] : pool_size;
      if (start < 0 || start > end || end > pool_size) {
        return absl::InvalidArgumentError(absl::StrCat("ngram_counts [", absl::StrJoin(counts, ", "),
                                                       "] must be non-decreasing starts within the ", pool_size,
                                                       " items of ", pool.name));
      }
      const int64_t n = static_cast<int64_t>(i) + 1;
      if ((end - start) % n != 0) {
        return absl::InvalidArgumentError(absl::StrCat(pool.name, " items ", start, "..", end - 1, " are not whole ",
                                                       n, "-grams: ", end - start, " items"));
      }
      levels.push_back({start, (end - start) / n});
    }
    return levels;
  }

  // width_ from ngram_indexes, which holds one output column per n-gram of the pool.
  absl::Status InitWidth(const std::vector<Level>& levels, const std::vector<int64_t>& indexes,
                         const char* pool_name) {
    int64_t ngrams = 0;
    for (const Level& level : levels) ngrams += level.count;
    if (static_cast<int64_t>(indexes.size()) != ngrams) {
      return absl::InvalidArgumentError(absl::StrCat("ngram_indexes has ", indexes.size(), " entries but ",
                                                     pool_name, " holds ", ngrams,
                                                     " n-grams: they pair up one to one"));
    }
    for (int64_t index : indexes) {
      if (index < 0 || index >= std::numeric_limits<int32_t>::max()) {
        return absl::InvalidArgumentError(
            absl::StrCat("ngram_indexes holds ", index, ": output columns must be in [0, 2^31 - 1)"));
      }
      width_ = std::max(width_, index + 1);
    }
    return absl::OkStatus();
  }

  // weights_, kept for IDF and TFIDF (TF ignores them).
  absl::Status InitWeights(const KernelInfo& info, size_t ngrams) {
    ASSIGN_OR_RETURN(auto weights, info.Attr<std::vector<float>>("weights", {}));
    if (weights.empty()) return absl::OkStatus();
    if (weights.size() != ngrams) {
      return absl::InvalidArgumentError(absl::StrCat("weights has ", weights.size(), " values but ngram_indexes ",
                                                     ngrams, ": they pair up one to one"));
    }
    if (weighting_ == Weighting::kTf) return absl::OkStatus();
    if (static_cast<int64_t>(weights.size()) < width_) {
      return absl::InvalidArgumentError(absl::StrCat("weights has ", weights.size(),
                                                     " values, one per output column, but ngram_indexes makes ",
                                                     width_, " columns"));
    }
    weights_ = std::move(weights);
    return absl::OkStatus();
  }

  // The trie holds the n-grams of min_gram_length..max_gram_length; the others only keep their place in
  // ngram_indexes. A repeated n-gram is an error (which column would it count in?).
  absl::Status BuildTrie(const Pool& pool, const std::vector<Level>& levels, const std::vector<int64_t>& indexes) {
    coordinate_.push_back(-1);  // the root
    int64_t id = 0;
    for (int64_t n = 1; n <= static_cast<int64_t>(levels.size()); ++n) {
      const Level& level = levels[n - 1];
      if (n < min_n_ || n > max_n_) {
        id += level.count;
        continue;
      }
      for (int64_t g = 0; g < level.count; ++g, ++id) {
        const int64_t first = level.start + g * n;
        int32_t node = 0;
        for (int64_t j = first; j < first + n; ++j) {
          node = Child(node, strings_ ? Intern(string_tokens_, pool.strings[j]) : Intern(int_tokens_, pool.ints[j]));
        }
        if (coordinate_[node] >= 0) {
          return absl::InvalidArgumentError(absl::StrCat(pool.name, " repeats an earlier ", n, "-gram at items ",
                                                         first, "..", first + n - 1));
        }
        coordinate_[node] = static_cast<int32_t>(indexes[id]);
      }
    }
    return absl::OkStatus();
  }

  template <typename Map, typename K>
  static int32_t Intern(Map& tokens, const K& item) {
    return tokens.try_emplace(item, static_cast<int32_t>(tokens.size())).first->second;
  }

  static uint64_t EdgeKey(int32_t node, int32_t token) {
    return (static_cast<uint64_t>(node) << 32) | static_cast<uint32_t>(token);
  }

  // The trie node under `node` along `token`, added when missing.
  int32_t Child(int32_t node, int32_t token) {
    const auto [it, added] = edges_.try_emplace(EdgeKey(node, token), static_cast<int32_t>(coordinate_.size()));
    if (added) coordinate_.push_back(-1);
    return it->second;
  }

  // The pool token of element i of X, or -1 when no n-gram that counts holds it.
  int32_t TokenOf(const Tensor& x, int64_t i) const {
    if (strings_) {
      const auto it = string_tokens_.find(x.data<std::string>()[i]);
      return it == string_tokens_.end() ? -1 : it->second;
    }
    const int64_t v = x.dtype() == DataType::kInt32 ? x.data<int32_t>()[i] : x.data<int64_t>()[i];
    const auto it = int_tokens_.find(v);
    return it == int_tokens_.end() ? -1 : it->second;
  }

  // Adds the counts of one row of tokens to `out` (width_ columns).
  void CountRow(const int32_t* row, int64_t columns, float* out) const {
    for (int64_t skip = 0; skip <= max_skip_; ++skip) {
      const int64_t step = skip + 1;
      const int64_t shortest = skip == 0 ? min_n_ : std::max<int64_t>(min_n_, 2);  // 1-grams count at skip 0
      // Longer skips fit nothing either (max_skip_count may be far larger than the row).
      if (shortest > max_n_ || step * (shortest - 1) >= std::max<int64_t>(columns, 1)) break;
      StopIfRunEnded(columns * max_n_);  // a scan per skip: up to columns^2 * max_n in all
      for (int64_t start = 0; start + step * (shortest - 1) < columns; ++start) {
        int32_t node = 0;
        for (int64_t n = 1, at = start; n <= max_n_ && at < columns; ++n, at += step) {
          if (row[at] < 0) break;
          const auto it = edges_.find(EdgeKey(node, row[at]));
          if (it == edges_.end()) break;
          node = it->second;
          if (n >= shortest && coordinate_[node] >= 0) out[coordinate_[node]] += 1.0f;
        }
      }
    }
  }

  void Weigh(float* out) const {
    if (weighting_ == Weighting::kTf) return;
    for (int64_t j = 0; j < width_; ++j) {
      const float w = weights_.empty() ? 1.0f : weights_[j];
      out[j] = weighting_ == Weighting::kIdf ? (out[j] > 0 ? w : 0.0f) : out[j] * w;
    }
  }

  Weighting weighting_ = Weighting::kTf;
  int64_t min_n_ = 1, max_n_ = 1, max_skip_ = 0;
  int64_t width_ = 0;           // output columns: max(ngram_indexes) + 1
  std::vector<float> weights_;  // per output column (IDF, TFIDF); empty: all 1
  bool strings_ = false;        // pool_strings rather than pool_int64s
  // Pool items as dense tokens, so the trie keys are integers whatever X holds.
  absl::flat_hash_map<int64_t, int32_t> int_tokens_;
  absl::flat_hash_map<std::string, int32_t> string_tokens_;
  // The trie: node 0 is the root, edges_ maps (node, token) to the child, coordinate_ gives each node's
  // output column when the n-gram spelled by its path counts, else -1.
  absl::flat_hash_map<uint64_t, int32_t> edges_;
  std::vector<int32_t> coordinate_;
};

constexpr DataType kTfIdfTypes[] = {DataType::kString, DataType::kInt32, DataType::kInt64};

}  // namespace

REGISTER_KERNEL(kOnnx, "TfIdfVectorizer", 9, kLatest, kTfIdfTypes, TfIdfVectorizer);

}  // namespace onnxserve

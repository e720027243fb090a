// Recurrent layers: RNN, GRU and LSTM (forward, reverse, bidirectional; activations with alpha/beta,
// clip, sequence_lens, initial states, LSTM peepholes and input_forget, GRU linear_before_reset, layout).
//
// Per direction, the input projection of every time step is one GEMM (X * W^T plus biases); each step then
// adds H_{t-1} * R^T (one GEMM over the batch) and applies the gate math row by row. float16/bfloat16
// compute in float.
//
// Float W and R that are constants are packed once at load for the packed GEMM: at batch 1 every step is a
// matrix-vector product, and OpenBLAS repacked the whole of R for each of them. The default activations
// (sigmoid, tanh, relu) of float runs go through the vector kernels.
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "runtime/core/checked_size.h"
#include "runtime/math/packed_gemm.h"
#include "runtime/math/vector_kernels.h"
#include "runtime/ops/blas.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

constexpr DataType kRnnTypes[] = {DataType::kFloat, DataType::kDouble, DataType::kFloat16};
constexpr DataType kRnn22Types[] = {DataType::kFloat, DataType::kDouble, DataType::kFloat16, DataType::kBFloat16};

enum class Cell { kRnn, kGru, kLstm };

// An activation function of the spec's list with its alpha and beta.
struct Activation {
  enum class Kind { kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid,
                    kElu, kSoftsign, kSoftplus };
  Kind kind = Kind::kTanh;
  float alpha = 0, beta = 0;

  // Applies the function in place to n values (one switch per span, not per element).
  template <typename T>
  void Apply(T* v, int64_t n) const {
    if constexpr (std::is_same_v<T, float>) {
      if (ApplyVectorized(v, n)) return;
    }
    const T a = static_cast<T>(alpha), b = static_cast<T>(beta);
    auto each = [&](auto f) { for (int64_t i = 0; i < n; ++i) v[i] = f(v[i]); };
    switch (kind) {
      case Kind::kRelu: each([](T x) { return std::max<T>(x, 0); }); break;
      case Kind::kTanh: each([](T x) { return std::tanh(x); }); break;
      case Kind::kSigmoid: each([](T x) { return T{1} / (T{1} + std::exp(-x)); }); break;
      case Kind::kAffine: each([&](T x) { return a * x + b; }); break;
      case Kind::kLeakyRelu: each([&](T x) { return x >= 0 ? x : a * x; }); break;
      case Kind::kThresholdedRelu: each([&](T x) { return x > a ? x : T{0}; }); break;
      case Kind::kScaledTanh: each([&](T x) { return a * std::tanh(b * x); }); break;
      case Kind::kHardSigmoid: each([&](T x) { return std::clamp<T>(a * x + b, 0, 1); }); break;
      case Kind::kElu: each([&](T x) { return x >= 0 ? x : a * (std::exp(x) - T{1}); }); break;
      case Kind::kSoftsign: each([](T x) { return x / (T{1} + std::abs(x)); }); break;
      case Kind::kSoftplus: each([](T x) { return std::log1p(std::exp(x)); }); break;
    }
  }

  // The functions the vector kernels have; false for the others.
  bool ApplyVectorized(float* v, int64_t n) const {
    const vec::VectorKernels& k = vec::Kernels();
    switch (kind) {
      case Kind::kTanh: k.tanh(v, v, n); return true;
      case Kind::kSigmoid: k.sigmoid(v, v, n); return true;
      case Kind::kRelu: k.relu(v, v, n); return true;
      case Kind::kHardSigmoid: k.hard_sigmoid(v, v, n, alpha, beta); return true;
      default: return false;
    }
  }
};

// Parses one activation name; alpha/beta come from the attribute lists in order, for the functions that
// take them, else from the function's default.
absl::StatusOr<Activation> ParseActivation(const std::string& name, const std::vector<float>& alphas,
                                           const std::vector<float>& betas, size_t* next_alpha, size_t* next_beta) {
  using Kind = Activation::Kind;
  struct Known { const char* name; Kind kind; int params; float alpha, beta; };
  static constexpr Known kKnown[] = {
      {"relu", Kind::kRelu, 0, 0, 0},          {"tanh", Kind::kTanh, 0, 0, 0},
      {"sigmoid", Kind::kSigmoid, 0, 0, 0},    {"affine", Kind::kAffine, 2, 1, 0},
      {"leakyrelu", Kind::kLeakyRelu, 1, 0.01f, 0}, {"thresholdedrelu", Kind::kThresholdedRelu, 1, 1, 0},
      {"scaledtanh", Kind::kScaledTanh, 2, 1, 1}, {"hardsigmoid", Kind::kHardSigmoid, 2, 0.2f, 0.5f},
      {"elu", Kind::kElu, 1, 1, 0},            {"softsign", Kind::kSoftsign, 0, 0, 0},
      {"softplus", Kind::kSoftplus, 0, 0, 0}};
  const std::string lower = absl::AsciiStrToLower(name);
  for (const Known& k : kKnown) {
    if (lower != k.name) continue;
    Activation a{k.kind, k.alpha, k.beta};
    if (k.params >= 1 && *next_alpha < alphas.size()) a.alpha = alphas[(*next_alpha)++];
    if (k.params >= 2 && *next_beta < betas.size()) a.beta = betas[(*next_beta)++];
    return a;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown activation \"", name, "\""));
}

// Everything the attributes fix, parsed once at load.
struct RnnConfig {
  Cell cell = Cell::kRnn;
  int64_t gates = 1;  // G: 1 (RNN), 3 (GRU: z, r, h), 4 (LSTM: i, o, f, c)
  int64_t hidden = 0;
  int64_t directions = 1;
  bool reverse_only = false;
  float clip = 0;  // 0: no clipping
  bool linear_before_reset = false;
  bool input_forget = false;
  bool batch_major = false;  // layout 1: X [batch, seq, input]
  std::vector<std::vector<Activation>> activations;  // per direction: f (RNN); f, g (GRU); f, g, h (LSTM)
};

absl::Status ParseConfig(const KernelInfo& info, Cell cell, RnnConfig* c) {
  c->cell = cell;
  c->gates = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4;
  ASSIGN_OR_RETURN(c->hidden, info.Attr<int64_t>("hidden_size"));
  ASSIGN_OR_RETURN(const std::string direction, info.Attr<std::string>("direction", "forward"));
  if (direction == "bidirectional") {
    c->directions = 2;
  } else if (direction == "reverse") {
    c->reverse_only = true;
  } else if (direction != "forward") {
    return absl::InvalidArgumentError(
        absl::StrCat("direction \"", direction, "\": expected forward, reverse or bidirectional"));
  }
  ASSIGN_OR_RETURN(c->clip, info.Attr<float>("clip", 0.0f));
  ASSIGN_OR_RETURN(const int64_t lbr, info.Attr<int64_t>("linear_before_reset", 0));
  ASSIGN_OR_RETURN(const int64_t input_forget, info.Attr<int64_t>("input_forget", 0));
  ASSIGN_OR_RETURN(const int64_t layout, info.Attr<int64_t>("layout", 0));
  c->linear_before_reset = lbr != 0;
  c->input_forget = input_forget != 0;
  c->batch_major = layout == 1;
  const std::vector<std::string> defaults =
      cell == Cell::kRnn ? std::vector<std::string>{"Tanh"}
      : cell == Cell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                           : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  ASSIGN_OR_RETURN(std::vector<std::string> names, info.Attr<std::vector<std::string>>("activations", {}));
  ASSIGN_OR_RETURN(const std::vector<float> alphas, info.Attr<std::vector<float>>("activation_alpha", {}));
  ASSIGN_OR_RETURN(const std::vector<float> betas, info.Attr<std::vector<float>>("activation_beta", {}));
  const size_t per_direction = defaults.size();
  if (names.empty()) names = defaults;
  if (names.size() == per_direction && c->directions == 2) {
    const std::vector<std::string> forward = names;  // both directions use the one list given
    names.insert(names.end(), forward.begin(), forward.end());
  }
  if (names.size() != per_direction * c->directions) {
    return absl::InvalidArgumentError(absl::StrCat("activations has ", names.size(), " entries: expected ",
                                                   per_direction * c->directions));
  }
  size_t next_alpha = 0, next_beta = 0;
  c->activations.resize(c->directions);
  for (size_t i = 0; i < names.size(); ++i) {
    ASSIGN_OR_RETURN(Activation a, ParseActivation(names[i], alphas, betas, &next_alpha, &next_beta));
    c->activations[i / per_direction].push_back(a);
  }
  return absl::OkStatus();
}

// One direction's W and R packed for the packed GEMM, as right operands (W^T and R^T). GRU's R is two
// blocks, since its h gate multiplies the reset-gated state (or is gated after the product).
struct PackedWeights {
  PackedColumns w;                     // W^T: [I x G*H]
  PackedColumns r;                     // R^T: [H x G*H], or GRU's z and r rows: [H x 2*H]
  std::optional<PackedColumns> r_h;    // GRU's h rows: [H x H]
};

// One direction's weights and state, all in [seq, batch, ...] order. Pointers may be null for omitted
// inputs (bias, initial states, peepholes) and unwanted outputs.
template <typename T>
struct DirectionData {
  const T* w = nullptr;       // [G*H, I]
  const T* r = nullptr;       // [G*H, H]
  const T* bias = nullptr;    // [2*G*H]: Wb then Rb
  const T* init_h = nullptr;  // [batch, H]
  const T* init_c = nullptr;  // [batch, H]
  const T* peep = nullptr;    // [3*H]: i, o, f
  const PackedWeights* packed = nullptr;  // W and R packed at load, when they are float constants
  T* y = nullptr;             // [seq, directions, batch, H] at this direction's offset
  T* y_h = nullptr;           // [batch, H]
  T* y_c = nullptr;           // [batch, H]
};

// Recurrent weights and per-step work up to which a step's product runs on the calling thread
// (DirectionRunner::RecurrentPool): half of a 1 MiB L2, and the multiply-adds below which PackedGemm
// would not split a product either.
constexpr int64_t kMaxOneThreadRecurrentBytes = int64_t{512} << 10;
constexpr int64_t kMaxOneThreadRecurrentWork = int64_t{1} << 20;

template <typename T>
class DirectionRunner {
 public:
  DirectionRunner(const RnnConfig& c, const std::vector<Activation>& act, int64_t seq, int64_t batch,
                  int64_t input, const int64_t* lens, ThreadPool& pool)
      : c_(c), act_(act), seq_(seq), batch_(batch), input_(input), lens_(lens), pool_(pool),
        gh_(c.gates * c.hidden) {}

  void Run(const T* x, const DirectionData<T>& d, bool reverse) {
    const int64_t H = c_.hidden;
    // Every step's input projection: a tensor, charged to the run (its size was checked against the limits).
    Tensor xw_tensor(kTypeOf<T>, {seq_ * batch_, gh_});
    T* xw = xw_tensor.data<T>();
    // The states and gates are a request's batch times a model's width: tensors too, taken before any work.
    h_ = Tensor(kTypeOf<T>, {batch_ * H});
    c_state_ = Tensor(kTypeOf<T>, {batch_ * H});
    gates_ = Tensor(kTypeOf<T>, {batch_ * gh_});
    scratch_ = Tensor(kTypeOf<T>, {batch_ * H});
    packed_ = d.packed;
    MultiplyTransposed(x, seq_ * batch_, input_, d.w, packed_ ? &packed_->w : nullptr, gh_, T{0}, xw, gh_, &pool_);
    if (d.bias != nullptr) AddBiases(d.bias, xw);
    InitialState(d.init_h, h_.data<T>());
    InitialState(d.init_c, c_state_.data<T>());
    for (int64_t step = 0; step < seq_; ++step) {
      const int64_t t = reverse ? seq_ - 1 - step : step;
      std::copy(xw + t * batch_ * gh_, xw + (t + 1) * batch_ * gh_, gates_.data<T>());
      switch (c_.cell) {
        case Cell::kRnn: StepRnn(d, t); break;
        case Cell::kGru: StepGru(d, t); break;
        case Cell::kLstm: StepLstm(d, t); break;
      }
      if (d.y != nullptr) WriteY(d.y + t * c_.directions * batch_ * H, t);
    }
    if (d.y_h != nullptr) std::copy_n(h_.data<T>(), batch_ * H, d.y_h);
    if (d.y_c != nullptr) std::copy_n(c_state_.data<T>(), batch_ * H, d.y_c);
  }

 private:
  // A state's batch x hidden values from `init`, or zeros without one.
  void InitialState(const T* init, T* state) const {
    const int64_t n = batch_ * c_.hidden;
    if (init != nullptr) {
      std::copy_n(init, n, state);
    } else {
      std::fill_n(state, n, T{0});
    }
  }

  // Wb + Rb join the input projection, except GRU's Rbh under linear_before_reset (it sits inside r * (...)).
  void AddBiases(const T* bias, T* xw) const {
    const T* wb = bias;
    const T* rb = bias + gh_;
    const int64_t rb_end = c_.cell == Cell::kGru && c_.linear_before_reset ? 2 * c_.hidden : gh_;
    for (int64_t row = 0; row < seq_ * batch_; ++row) {
      T* out = xw + row * gh_;
      for (int64_t j = 0; j < gh_; ++j) out[j] += wb[j] + (j < rb_end ? rb[j] : T{0});
    }
  }

  bool Active(int64_t b, int64_t t) const { return t < lens_[b]; }

  void ClipAndApply(const Activation& a, T* v, int64_t n) const {
    if (c_.clip > 0) {
      const T lim = static_cast<T>(c_.clip);
      for (int64_t i = 0; i < n; ++i) v[i] = std::clamp(v[i], -lim, lim);
    }
    a.Apply(v, n);
  }

  // out[m x cols] = beta * out + A[m x depth] * B[cols x depth]^T, on B's packed copy when there is one
  // (beta 0 or 1), over `pool` (null: the calling thread).
  void MultiplyTransposed(const T* a, int64_t m, int64_t depth, const T* b, const PackedColumns* packed,
                          int64_t cols, T beta, T* out, int64_t ldo, ThreadPool* pool) {
    if constexpr (std::is_same_v<T, float>) {
      if (packed != nullptr) {
        GemmEpilogue epilogue;
        if (beta != T{0}) {
          epilogue.z = out;
          epilogue.ldz = ldo;
        }
        PackedGemm(a, m, depth, /*transposed_a=*/false, *packed, out, ldo, epilogue, pool);
        return;
      }
    }
    Gemm<T>(false, true, m, cols, depth, T{1}, a, depth, b, depth, beta, out, ldo, pool);
  }

  // The pool for a step's product of H_{t-1} and `rows` x hidden recurrent weights. Every step multiplies
  // the same weights, which up to kMaxOneThreadRecurrentBytes stay in the calling core's L2: one core then
  // computes a step in a few microseconds (hidden 128: 64 K multiply-adds, some 3 us), less than a split
  // costs when H_{t-1} goes to the other core and its gates come back, every step (the set's LSTM took
  // 0.65-0.71 of its time on two threads without it). Larger weights, or batches that make the step long,
  // split, each core keeping its share of the weights in its own L2.
  ThreadPool* RecurrentPool(int64_t rows) {
    const int64_t weights = rows * c_.hidden;
    const bool one_core = weights * static_cast<int64_t>(sizeof(T)) <= kMaxOneThreadRecurrentBytes &&
                          batch_ * weights <= kMaxOneThreadRecurrentWork;
    return one_core ? nullptr : &pool_;
  }

  // gates[:, cols) += H_{t-1} * R[rows]^T, R's first `rows` rows (all of them, or GRU's z and r)
  void AddRecurrent(const T* r, int64_t rows, T* out) {
    MultiplyTransposed(h_.data<T>(), batch_, c_.hidden, r, packed_ ? &packed_->r : nullptr, rows, T{1}, out, gh_,
                       RecurrentPool(rows));
  }

  const PackedColumns* PackedRh() const { return packed_ && packed_->r_h ? &*packed_->r_h : nullptr; }

  void StepRnn(const DirectionData<T>& d, int64_t t) {
    const int64_t H = c_.hidden;
    AddRecurrent(d.r, H, gates_.data<T>());
    for (int64_t b = 0; b < batch_; ++b) {
      if (!Active(b, t)) continue;
      T* g = gates_.data<T>() + b * gh_;
      ClipAndApply(act_[0], g, H);
      std::copy(g, g + H, h_.data<T>() + b * H);
    }
  }

  void StepGru(const DirectionData<T>& d, int64_t t) {
    const int64_t H = c_.hidden;
    AddRecurrent(d.r, 2 * H, gates_.data<T>());  // z and r
    for (int64_t b = 0; b < batch_; ++b) ClipAndApply(act_[0], gates_.data<T>() + b * gh_, 2 * H);
    const T* rh = d.r + 2 * H * H;
    if (c_.linear_before_reset) {
      // h~ = g(Xt*Wh^T + Wbh + r * (H*Rh^T + Rbh))
      MultiplyTransposed(h_.data<T>(), batch_, H, rh, PackedRh(), H, T{0}, scratch_.data<T>(), H, RecurrentPool(H));
      const T* scratch = scratch_.data<T>();
      for (int64_t b = 0; b < batch_; ++b) {
        T* g = gates_.data<T>() + b * gh_;
        for (int64_t j = 0; j < H; ++j) {
          const T rbh = d.bias != nullptr ? d.bias[gh_ + 2 * H + j] : T{0};
          g[2 * H + j] += g[H + j] * (scratch[b * H + j] + rbh);
        }
      }
    } else {
      // h~ = g(Xt*Wh^T + (r * H)*Rh^T + Rbh + Wbh)
      const T* gates = gates_.data<T>();
      const T* h = h_.data<T>();
      T* scratch = scratch_.data<T>();
      for (int64_t i = 0; i < batch_ * H; ++i) scratch[i] = gates[(i / H) * gh_ + H + i % H] * h[i];
      MultiplyTransposed(scratch_.data<T>(), batch_, H, rh, PackedRh(), H, T{1}, gates_.data<T>() + 2 * H, gh_,
                         RecurrentPool(H));
    }
    for (int64_t b = 0; b < batch_; ++b) {
      if (!Active(b, t)) continue;
      T* g = gates_.data<T>() + b * gh_;
      ClipAndApply(act_[1], g + 2 * H, H);
      T* h = h_.data<T>() + b * H;
      for (int64_t j = 0; j < H; ++j) h[j] = (T{1} - g[j]) * g[2 * H + j] + g[j] * h[j];
    }
  }

  void StepLstm(const DirectionData<T>& d, int64_t t) {
    const int64_t H = c_.hidden;
    AddRecurrent(d.r, gh_, gates_.data<T>());
    for (int64_t b = 0; b < batch_; ++b) {
      if (!Active(b, t)) continue;
      T* gi = gates_.data<T>() + b * gh_;
      T* go = gi + H;
      T* gf = gi + 2 * H;
      T* gc = gi + 3 * H;
      T* c = c_state_.data<T>() + b * H;
      if (d.peep != nullptr) {
        for (int64_t j = 0; j < H; ++j) {
          gi[j] += d.peep[j] * c[j];
          gf[j] += d.peep[2 * H + j] * c[j];
        }
      }
      ClipAndApply(act_[0], gi, H);
      ClipAndApply(act_[0], gf, H);
      ClipAndApply(act_[1], gc, H);
      if (c_.input_forget) {
        for (int64_t j = 0; j < H; ++j) gf[j] = T{1} - gi[j];
      }
      for (int64_t j = 0; j < H; ++j) c[j] = gf[j] * c[j] + gi[j] * gc[j];
      if (d.peep != nullptr) {
        for (int64_t j = 0; j < H; ++j) go[j] += d.peep[H + j] * c[j];
      }
      ClipAndApply(act_[0], go, H);
      T* h = h_.data<T>() + b * H;
      std::copy(c, c + H, h);
      act_[2].Apply(h, H);
      for (int64_t j = 0; j < H; ++j) h[j] *= go[j];
    }
  }

  // Y[t, dir, b, :] = H_t for active rows; rows past their sequence length stay zero.
  void WriteY(T* y, int64_t t) const {
    for (int64_t b = 0; b < batch_; ++b) {
      if (Active(b, t)) std::copy(h_.data<T>() + b * c_.hidden, h_.data<T>() + (b + 1) * c_.hidden, y + b * c_.hidden);
    }
  }

  const RnnConfig& c_;
  const std::vector<Activation>& act_;
  const int64_t seq_, batch_, input_;
  const int64_t* lens_;
  ThreadPool& pool_;
  const int64_t gh_;
  const PackedWeights* packed_ = nullptr;
  Tensor h_, c_state_, gates_, scratch_;
};

// Swaps the first two dims of a [a, b, rest] tensor into `out` ([b, a, rest]).
template <typename T>
void SwapLeadingDims(const T* in, int64_t a, int64_t b, int64_t rest, T* out) {
  for (int64_t i = 0; i < a; ++i) {
    for (int64_t j = 0; j < b; ++j) std::copy(in + (i * b + j) * rest, in + (i * b + j + 1) * rest, out + (j * a + i) * rest);
  }
}

template <Cell kCell>
class Recurrent final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    RETURN_IF_ERROR(ParseConfig(info, kCell, &config_));
    PackConstantWeights(info.ConstantInput(1), info.ConstantInput(2));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 3));
    const Tensor& x = *ctx.Input(0);
    // Every input but sequence_lens is read as X's element type.
    for (int i = 1; i < ctx.num_inputs(); ++i) {
      const Tensor* in = ctx.Input(i);
      if (i != 4 && in != nullptr && in->dtype() != x.dtype()) {
        return absl::InvalidArgumentError(absl::StrCat("input ", i, " is ", DataTypeName(in->dtype()), ", X is ",
                                                       DataTypeName(x.dtype())));
      }
    }
    if (IsHalfType(x.dtype())) return ComputeWidened(ctx);
    if (x.dtype() == DataType::kDouble) return Run<double>(ctx, [&](int i) { return ctx.Input(i); });
    return Run<float>(ctx, [&](int i) { return ctx.Input(i); });
  }

 private:
  // float16/bfloat16: float copies of every float input, a float run, narrowed outputs.
  absl::Status ComputeWidened(KernelContext& ctx) const {
    std::vector<Tensor> widened(ctx.num_inputs());
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor* in = ctx.Input(i);
      if (in != nullptr) widened[i] = i == 4 ? *in : WidenToFloat(in);
    }
    std::vector<Tensor> float_outputs(ctx.num_outputs());
    std::vector<bool> wanted(ctx.num_outputs());
    for (int i = 0; i < ctx.num_outputs(); ++i) wanted[i] = ctx.OutputWanted(i);
    KernelContext float_ctx({}, &float_outputs, wanted, &ctx.pool(), {});
    RETURN_IF_ERROR(Run<float>(float_ctx, [&](int i) -> const Tensor* {
      return i < static_cast<int>(widened.size()) && widened[i].defined() ? &widened[i] : nullptr;
    }));
    for (int i = 0; i < ctx.num_outputs(); ++i) {
      if (!float_outputs[i].defined()) continue;
      NarrowFromFloat(float_outputs[i], ctx.Output(i, ctx.Input(0)->dtype(), float_outputs[i].shape()));
    }
    return absl::OkStatus();
  }

  template <typename T, typename InputFn>
  absl::Status Run(KernelContext& ctx, InputFn input) const {
    const RnnConfig& c = config_;
    const Tensor& x = *input(0);
    const Tensor& w = *input(1);
    const Tensor& r = *input(2);
    if (x.rank() != 3) return absl::InvalidArgumentError(absl::StrCat("X ", ShapeToString(x.shape()), ": expected rank 3"));
    const int64_t seq = c.batch_major ? x.dim(1) : x.dim(0), batch = c.batch_major ? x.dim(0) : x.dim(1);
    const int64_t in_size = x.dim(2), H = c.hidden, D = c.directions, gh = c.gates * H;
    if (w.shape() != Shape{D, gh, in_size} || r.shape() != Shape{D, gh, H}) {
      return absl::InvalidArgumentError(absl::StrCat("W ", ShapeToString(w.shape()), ", R ", ShapeToString(r.shape()),
                                                     ": expected [", D, ",", gh, ",", in_size, "] and [", D, ",", gh, ",", H, "]"));
    }
    // The optional inputs are read at the offsets their spec shapes imply, so those shapes are checked first.
    auto check_shape = [](const char* name, const Tensor* t, const Shape& want) -> absl::Status {
      if (t == nullptr || t->shape() == want) return absl::OkStatus();
      return absl::InvalidArgumentError(
          absl::StrCat(name, " ", ShapeToString(t->shape()), ": expected ", ShapeToString(want)));
    };
    const Shape state = c.batch_major ? Shape{batch, D, H} : Shape{D, batch, H};
    RETURN_IF_ERROR(check_shape("B", input(3), {D, 2 * gh}));
    RETURN_IF_ERROR(check_shape("initial_h", input(5), state));
    if (kCell == Cell::kLstm) {
      RETURN_IF_ERROR(check_shape("initial_c", input(6), state));
      RETURN_IF_ERROR(check_shape("P", input(7), {D, 3 * H}));
    }
    // The input projections (seq x batch x gates * hidden) and Y are a request's length times a model's
    // width, held before any output is made: checked like tensors first.
    RETURN_IF_ERROR(CheckedByteSize(kTypeOf<T>, {seq, batch, gh}).status());
    if (ctx.OutputWanted(0)) RETURN_IF_ERROR(CheckedByteSize(kTypeOf<T>, {seq, D, batch, H}).status());
    const Tensor* sl = input(4);
    if (sl != nullptr && sl->NumElements() != batch) {
      return absl::InvalidArgumentError("sequence_lens: expected one length per batch row");
    }
    // X and the initial states time-major: the inputs themselves, or copies of batch-major ones (tensors,
    // charged to the run: they are a request's size).
    auto time_major = [&](const Tensor* t, int64_t a, int64_t b, int64_t rest, Tensor& copy) -> const T* {
      if (t == nullptr) return nullptr;
      if (!c.batch_major) return t->data<T>();
      copy = Tensor(kTypeOf<T>, {t->NumElements()});
      SwapLeadingDims(t->data<T>(), a, b, rest, copy.data<T>());
      return copy.data<T>();
    };
    Tensor x_copy, h0_copy, c0_copy;
    const T* xs = time_major(&x, batch, seq, in_size, x_copy);
    const int init_c_index = 6, peep_index = 7;
    const T* h0 = time_major(input(5), batch, D, H, h0_copy);
    const T* c0 = kCell == Cell::kLstm ? time_major(input(init_c_index), batch, D, H, c0_copy) : nullptr;
    // Where the directions write Y [seq, D, batch, H] and the last states [D, batch, H]: the outputs
    // themselves when time-major, else tensors that WriteBatchMajor turns around; nowhere for an output not
    // wanted. Made before any step runs, so that a budget they exceed stops the run before its work.
    Tensor y_buffer, y_h_buffer, y_c_buffer;
    auto time_major_output = [&](int i, const Shape& shape, Tensor& buffer) -> T* {
      if (!ctx.OutputWanted(i)) return nullptr;
      if (!c.batch_major) return ctx.Output(i, kTypeOf<T>, shape).template data<T>();
      buffer = Tensor(kTypeOf<T>, shape);
      return buffer.data<T>();
    };
    T* y = time_major_output(0, {seq, D, batch, H}, y_buffer);
    if (y != nullptr) std::fill_n(y, seq * D * batch * H, T{0});  // rows past their sequence's length stay zero
    T* y_h = time_major_output(1, {D, batch, H}, y_h_buffer);
    T* y_c = kCell == Cell::kLstm ? time_major_output(2, {D, batch, H}, y_c_buffer) : nullptr;
    // One length per row, a tensor too: X [0, 2^32, 1] is empty, but has 2^32 rows.
    Tensor lens_tensor(DataType::kInt64, {batch});
    int64_t* lens = lens_tensor.data<int64_t>();
    for (int64_t b = 0; b < batch; ++b) lens[b] = sl != nullptr ? sl->GetAsInt64(b) : seq;
    const Tensor* bias = input(3);
    const Tensor* peep = kCell == Cell::kLstm ? input(peep_index) : nullptr;
    for (int64_t d = 0; d < D; ++d) {
      DirectionData<T> data;
      data.w = w.data<T>() + d * gh * in_size;
      data.r = r.data<T>() + d * gh * H;
      if (bias != nullptr) data.bias = bias->data<T>() + d * 2 * gh;
      if (h0 != nullptr) data.init_h = h0 + d * batch * H;
      if (c0 != nullptr) data.init_c = c0 + d * batch * H;
      if (peep != nullptr) data.peep = peep->data<T>() + d * 3 * H;
      if (!packed_.empty() && std::is_same_v<T, float>) data.packed = packed_[static_cast<size_t>(d)].get();
      if (y != nullptr) data.y = y + d * batch * H;
      if (y_h != nullptr) data.y_h = y_h + d * batch * H;
      if (y_c != nullptr) data.y_c = y_c + d * batch * H;
      DirectionRunner<T> runner(c, c.activations[d], seq, batch, in_size, lens, ctx.pool());
      runner.Run(xs, data, c.reverse_only || d == 1);
    }
    if (c.batch_major) WriteBatchMajor<T>(ctx, y_buffer, y_h_buffer, y_c_buffer, seq, batch);
    return absl::OkStatus();
  }

  // The batch-major outputs from their time-major buffers (undefined for an output not wanted): Y [batch,
  // seq, D, H], Y_h and Y_c [batch, D, H].
  template <typename T>
  void WriteBatchMajor(KernelContext& ctx, const Tensor& y, const Tensor& y_h, const Tensor& y_c, int64_t seq,
                       int64_t batch) const {
    const int64_t H = config_.hidden, D = config_.directions;
    if (y.defined()) {
      T* out = ctx.Output(0, kTypeOf<T>, {batch, seq, D, H}).template data<T>();
      for (int64_t t = 0; t < seq; ++t)
        for (int64_t d = 0; d < D; ++d)
          for (int64_t b = 0; b < batch; ++b)
            std::copy_n(y.data<T>() + ((t * D + d) * batch + b) * H, H, out + ((b * seq + t) * D + d) * H);
    }
    auto state = [&](int i, const Tensor& s) {
      if (!s.defined()) return;
      SwapLeadingDims(s.data<T>(), D, batch, H, ctx.Output(i, kTypeOf<T>, {batch, D, H}).template data<T>());
    };
    state(1, y_h);
    state(2, y_c);
  }

  // Packs W and R per direction when both are float constants of the shapes the attributes imply (a shape
  // that does not match is left for Compute to report).
  void PackConstantWeights(const Tensor* w, const Tensor* r) {
    if (!PackedGemmSupported() || w == nullptr || r == nullptr || w->dtype() != DataType::kFloat ||
        r->dtype() != DataType::kFloat || w->rank() != 3) {
      return;
    }
    const int64_t H = config_.hidden, D = config_.directions, gh = config_.gates * H, in_size = w->dim(2);
    if (w->shape() != Shape{D, gh, in_size} || r->shape() != Shape{D, gh, H} || in_size == 0 || H == 0) return;
    const int64_t r_rows = kCell == Cell::kGru ? 2 * H : gh;
    for (int64_t d = 0; d < D; ++d) {
      const float* wd = w->data<float>() + d * gh * in_size;
      const float* rd = r->data<float>() + d * gh * H;
      auto packed = std::make_unique<PackedWeights>(PackedWeights{
          PackedColumns(wd, in_size, gh, in_size, /*transposed=*/true, 1.0f),
          PackedColumns(rd, H, r_rows, H, /*transposed=*/true, 1.0f), std::nullopt});
      if (kCell == Cell::kGru) packed->r_h.emplace(rd + 2 * H * H, H, H, H, /*transposed=*/true, 1.0f);
      packed_.push_back(std::move(packed));
    }
  }

  RnnConfig config_;
  std::vector<std::unique_ptr<const PackedWeights>> packed_;  // per direction; empty when not packed
};

using Rnn = Recurrent<Cell::kRnn>;
using Gru = Recurrent<Cell::kGru>;
using Lstm = Recurrent<Cell::kLstm>;

// -1 has output_sequence; -7 drops it (Y is simply optional); -14 adds layout; -22 adds bfloat16.
// GRU-3 adds linear_before_reset.
REGISTER_KERNEL(kOnnx, "RNN", 1, 6, kRnnTypes, Rnn);
REGISTER_KERNEL(kOnnx, "RNN", 7, 13, kRnnTypes, Rnn);
REGISTER_KERNEL(kOnnx, "RNN", 14, 21, kRnnTypes, Rnn);
REGISTER_KERNEL(kOnnx, "RNN", 22, kLatest, kRnn22Types, Rnn);
REGISTER_KERNEL(kOnnx, "GRU", 1, 2, kRnnTypes, Gru);
REGISTER_KERNEL(kOnnx, "GRU", 3, 6, kRnnTypes, Gru);
REGISTER_KERNEL(kOnnx, "GRU", 7, 13, kRnnTypes, Gru);
REGISTER_KERNEL(kOnnx, "GRU", 14, 21, kRnnTypes, Gru);
REGISTER_KERNEL(kOnnx, "GRU", 22, kLatest, kRnn22Types, Gru);
REGISTER_KERNEL(kOnnx, "LSTM", 1, 6, kRnnTypes, Lstm);
REGISTER_KERNEL(kOnnx, "LSTM", 7, 13, kRnnTypes, Lstm);
REGISTER_KERNEL(kOnnx, "LSTM", 14, 21, kRnnTypes, Lstm);
REGISTER_KERNEL(kOnnx, "LSTM", 22, kLatest, kRnn22Types, Lstm);

}  // namespace
}  // namespace onnxserve

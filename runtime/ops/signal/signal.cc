// Signal processing: DFT (complex, real-to-complex one-sided, inverse and inverse one-sided), STFT and
// MelWeightMatrix. Transforms compute in double with a precomputed twiddle table: an O(N log N) radix-2 FFT
// for power-of-two lengths, an O(N^2) direct DFT otherwise; signals split over the intra-op pool.
#include <cmath>
#include <complex>
#include <numbers>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/core/run_limits.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

using Complex = std::complex<double>;

template <typename T>
double ToDouble(T v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return static_cast<float>(v);
  } else {
    return static_cast<double>(v);
  }
}
template <typename T>
T FromDouble(double v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// Calls fn(T{}) for the float element types DFT and STFT accept; false for any other.
template <typename Fn>
bool DispatchFloat(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kFloat: fn(float{}); return true;
    case DataType::kDouble: fn(double{}); return true;
    case DataType::kFloat16: fn(Float16{}); return true;
    case DataType::kBFloat16: fn(BFloat16{}); return true;
    default: return false;
  }
}

// n complex values in a tensor of doubles, charged to the run: a request's dft_length or frame_length sets n,
// and the tables and scratch below, in vectors, were some 20 times a half-precision output outside the
// budget.
class ComplexBuffer {
 public:
  explicit ComplexBuffer(int64_t n) : storage_(DataType::kDouble, {2 * n}) {}
  Complex* data() { return reinterpret_cast<Complex*>(storage_.data<double>()); }
  const Complex* data() const { return reinterpret_cast<const Complex*>(storage_.data<double>()); }
  Complex& operator[](int64_t i) { return data()[i]; }

 private:
  Tensor storage_;
};

// exp(-2 pi i m / n) for m in [0, n): the forward kernel; the inverse uses the conjugates.
ComplexBuffer Twiddles(int64_t n) {
  ComplexBuffer w(n);
  for (int64_t m = 0; m < n; ++m) w[m] = std::polar(1.0, -2.0 * std::numbers::pi * static_cast<double>(m) / n);
  return w;
}

// In-place iterative radix-2 FFT of a power-of-two length n (unscaled).
void Radix2Fft(Complex* a, int64_t n, bool inverse, const Complex* w) {
  for (int64_t i = 1, j = 0; i < n; ++i) {  // bit-reversal permutation
    int64_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (int64_t len = 2; len <= n; len <<= 1) {
    const int64_t step = n / len;
    for (int64_t start = 0; start < n; start += len) {
      for (int64_t k = 0; k < len / 2; ++k) {
        const Complex t = (inverse ? std::conj(w[k * step]) : w[k * step]) * a[start + k + len / 2];
        a[start + k + len / 2] = a[start + k] - t;
        a[start + k] += t;
      }
    }
  }
}

// out[k] = sum_n in[n] * w^(+-kn) for k in [0, out_count), scaled by 1/n when inverse. `in` (n values) is
// scratch: the FFT path transforms it in place.
void ComputeDft(Complex* in, int64_t n, bool inverse, const Complex* w, int64_t out_count, Complex* out) {
  const double scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
  if ((n & (n - 1)) == 0) {
    Radix2Fft(in, n, inverse, w);
    for (int64_t k = 0; k < out_count; ++k) out[k] = in[k] * scale;
    return;
  }
  for (int64_t k = 0; k < out_count; ++k) {
    StopIfRunEnded(n);  // n^2 terms in all: a length of 2^31 + 1 from one request scalar would run for days
    Complex sum = 0;
    int64_t m = 0;  // k * j mod n, kept incrementally
    for (int64_t j = 0; j < n; ++j) {
      sum += in[j] * (inverse ? std::conj(w[m]) : w[m]);
      m += k;
      if (m >= n) m -= n;
    }
    out[k] = sum * scale;
  }
}

// ---- DFT -------------------------------------------------------------------------------------------------

class Dft final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const int64_t inverse, info.Attr<int64_t>("inverse", 0));
    ASSIGN_OR_RETURN(const int64_t onesided, info.Attr<int64_t>("onesided", 0));
    inverse_ = inverse != 0;
    onesided_ = onesided != 0;
    // DFT-17 takes the axis as an attribute (default 1); -20 as input 2 (default -2).
    axis_from_input_ = info.opset() >= 20;
    ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis", axis_from_input_ ? -2 : 1));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    const int64_t rank = x.rank();
    if (rank < 2 || (x.dim(rank - 1) != 1 && x.dim(rank - 1) != 2)) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", ShapeToString(x.shape()), ": expected [..., 1] (real) or [..., 2] (complex)"));
    }
    int64_t axis = axis_;
    if (axis_from_input_ && ctx.Input(2) != nullptr) {
      ASSIGN_OR_RETURN(axis, ScalarInput(*ctx.Input(2), "axis"));
    }
    if (axis < -rank || axis > rank - 2 || axis == -1) {
      return absl::InvalidArgumentError(absl::StrCat("axis ", axis, " for input ", ShapeToString(x.shape()),
                                                     ": expected [", -rank, ", -2] or [0, ", rank - 2, "]"));
    }
    if (axis < 0) axis += rank;
    const bool irfft = inverse_ && onesided_;
    const bool complex_in = x.dim(rank - 1) == 2;
    if ((onesided_ && !inverse_ && complex_in) || (irfft && !complex_in)) {
      return absl::InvalidArgumentError(onesided_ && !inverse_ ? "a one-sided forward DFT needs real input"
                                                               : "a one-sided inverse DFT needs complex input");
    }
    const int64_t dim = x.dim(axis);
    int64_t n = irfft ? 2 * (dim - 1) : dim;
    if (const Tensor* len = ctx.Input(1); len != nullptr) {
      ASSIGN_OR_RETURN(n, ScalarInput(*len, "dft_length"));
    }
    if (n < 1) return absl::InvalidArgumentError(absl::StrCat("dft_length ", n, ": expected >= 1"));
    Shape y_shape = x.shape();
    y_shape[axis] = onesided_ && !inverse_ ? n / 2 + 1 : n;
    y_shape[rank - 1] = irfft ? 1 : 2;
    ASSIGN_OR_RETURN(Tensor* y_tensor, ctx.CheckedOutput(0, x.dtype(), y_shape));
    Tensor& y = *y_tensor;
    // No signal to transform: dft_length may still be 2^31 (an empty output's dims are bounded only by their
    // nonzero product), and its twiddle table alone would take 32 GB.
    if (y.NumElements() == 0) return absl::OkStatus();
    SignalLayout l;
    for (int64_t d = 0; d < axis; ++d) l.outer *= x.dim(d);
    for (int64_t d = axis + 1; d < rank - 1; ++d) l.inner *= x.dim(d);
    l.in_len = dim;
    l.in_parts = x.dim(rank - 1);
    l.out_len = y_shape[axis];
    l.out_parts = y_shape[rank - 1];
    const bool ok = DispatchFloat(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      Transform(l, n, irfft, x.data<T>(), y.data<T>(), ctx.pool());
    });
    if (!ok) return absl::InvalidArgumentError(absl::StrCat("input is ", DataTypeName(x.dtype()), ": expected a float type"));
    return absl::OkStatus();
  }

 private:
  // Input [outer, in_len, inner, in_parts], output [outer, out_len, inner, out_parts].
  struct SignalLayout {
    int64_t outer = 1, inner = 1, in_len = 0, in_parts = 1, out_len = 0, out_parts = 2;
  };

  template <typename T>
  void Transform(const SignalLayout& l, int64_t n, bool irfft, const T* x, T* y, ThreadPool& pool) const {
    const ComplexBuffer w = Twiddles(n);
    pool.ParallelFor(l.outer * l.inner, 1, [&](int64_t begin, int64_t end) {
      ComplexBuffer in(n), out(l.out_len);
      for (int64_t s = begin; s < end; ++s) {
        const int64_t o = s / l.inner, i = s % l.inner;
        auto at = [&](int64_t j) {
          const T* p = x + ((o * l.in_len + j) * l.inner + i) * l.in_parts;
          return Complex(ToDouble(p[0]), l.in_parts == 2 ? ToDouble(p[1]) : 0.0);
        };
        for (int64_t j = 0; j < n; ++j) {
          // A one-sided spectrum fills its upper half by conjugate symmetry: X[n - k] = conj(X[k]).
          if (j < l.in_len) {
            in[j] = at(j);
          } else if (irfft && n - j < l.in_len) {
            in[j] = std::conj(at(n - j));
          } else {
            in[j] = 0;
          }
        }
        ComputeDft(in.data(), n, inverse_, w.data(), l.out_len, out.data());
        for (int64_t k = 0; k < l.out_len; ++k) {
          T* p = y + ((o * l.out_len + k) * l.inner + i) * l.out_parts;
          p[0] = FromDouble<T>(out[k].real());
          if (l.out_parts == 2) p[1] = FromDouble<T>(out[k].imag());
        }
      }
    });
  }

  bool inverse_ = false;
  bool onesided_ = false;
  bool axis_from_input_ = false;
  int64_t axis_ = 1;
};

REGISTER_KERNEL(kOnnx, "DFT", 17, 19, kFloatTypes, Dft);
REGISTER_KERNEL(kOnnx, "DFT", 20, kLatest, kFloatTypes, Dft);

// ---- STFT ------------------------------------------------------------------------------------------------

// Short-time Fourier transform: DFTs of windowed frames of a [batch, length, 1|2] signal.
class Stft final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const int64_t onesided, info.Attr<int64_t>("onesided", 1));
    onesided_ = onesided != 0;
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& signal = *ctx.Input(0);
    const Tensor* window = ctx.Input(2);
    const Tensor* frame_length_in = ctx.Input(3);
    if (signal.rank() != 3 || (signal.dim(2) != 1 && signal.dim(2) != 2)) {
      return absl::InvalidArgumentError(
          absl::StrCat("signal ", ShapeToString(signal.shape()), ": expected [batch, length, 1 or 2]"));
    }
    ASSIGN_OR_RETURN(const int64_t step, ScalarInput(*ctx.Input(1), "frame_step"));
    if (window == nullptr && frame_length_in == nullptr) {
      return absl::InvalidArgumentError("STFT needs a window or a frame_length");
    }
    int64_t frame = window != nullptr ? window->NumElements() : 0;
    if (frame_length_in != nullptr) {
      ASSIGN_OR_RETURN(frame, ScalarInput(*frame_length_in, "frame_length"));
    }
    if (window != nullptr && window->NumElements() != frame) {
      return absl::InvalidArgumentError(absl::StrCat("window has ", window->NumElements(),
                                                     " values: expected frame_length ", frame));
    }
    const int64_t batch = signal.dim(0), length = signal.dim(1), parts = signal.dim(2);
    if (step < 1 || frame < 1 || frame > length) {
      return absl::InvalidArgumentError(absl::StrCat("frame_step ", step, ", frame_length ", frame,
                                                     ": expected >= 1 and a frame no longer than the signal (", length, ")"));
    }
    if (onesided_ && parts == 2) return absl::InvalidArgumentError("a one-sided STFT needs a real signal");
    const int64_t frames = (length - frame) / step + 1;
    const int64_t bins = onesided_ ? frame / 2 + 1 : frame;
    Tensor& y = ctx.Output(0, signal.dtype(), {batch, frames, bins, 2});
    // No signal, no frames: an empty batch may still declare a length (and frame) of 2^31, whose window and
    // twiddle tables would take 48 GB.
    if (y.NumElements() == 0) return absl::OkStatus();
    const bool ok = DispatchFloat(signal.dtype(), [&](auto tag) {
      using T = decltype(tag);
      std::vector<double> win(static_cast<size_t>(frame), 1.0);
      if (window != nullptr) {
        for (int64_t j = 0; j < frame; ++j) win[j] = window->GetAsDouble(j);
      }
      const ComplexBuffer w = Twiddles(frame);
      const T* x = signal.data<T>();
      T* out_data = y.data<T>();
      ctx.pool().ParallelFor(batch * frames, 1, [&](int64_t begin, int64_t end) {
        ComplexBuffer in(frame), out(bins);
        for (int64_t s = begin; s < end; ++s) {
          const T* p = x + ((s / frames) * length + (s % frames) * step) * parts;
          for (int64_t j = 0; j < frame; ++j) {
            in[j] = Complex(ToDouble(p[j * parts]), parts == 2 ? ToDouble(p[j * parts + 1]) : 0.0) * win[j];
          }
          ComputeDft(in.data(), frame, false, w.data(), bins, out.data());
          for (int64_t k = 0; k < bins; ++k) {
            out_data[(s * bins + k) * 2] = FromDouble<T>(out[k].real());
            out_data[(s * bins + k) * 2 + 1] = FromDouble<T>(out[k].imag());
          }
        }
      });
    });
    if (!ok) return absl::InvalidArgumentError(absl::StrCat("signal is ", DataTypeName(signal.dtype()), ": expected a float type"));
    return absl::OkStatus();
  }

 private:
  bool onesided_ = true;
};

REGISTER_KERNEL(kOnnx, "STFT", 17, kLatest, kFloatTypes, Stft);

// ---- MelWeightMatrix -------------------------------------------------------------------------------------

// [dft_length / 2 + 1, num_mel_bins] triangular filters, evenly spaced on the mel scale between the edge
// frequencies, mapped onto spectrogram bins (as the ONNX reference computes them, bins truncated to ints).
class MelWeightMatrix final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const int64_t type, info.Attr<int64_t>("output_datatype", 1));
    output_type_ = static_cast<DataType>(type);
    if (!IsSupported(output_type_) || output_type_ == DataType::kString) {
      return absl::UnimplementedError(absl::StrCat("output_datatype ", DataTypeName(output_type_), " is not supported"));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 5));
    ASSIGN_OR_RETURN(const int64_t mel_bins, ScalarInput(*ctx.Input(0), "num_mel_bins"));
    ASSIGN_OR_RETURN(const int64_t dft_length, ScalarInput(*ctx.Input(1), "dft_length"));
    ASSIGN_OR_RETURN(const int64_t sample_rate, ScalarInput(*ctx.Input(2), "sample_rate"));
    for (int i : {3, 4}) {
      if (ctx.Input(i)->NumElements() != 1) {
        return absl::InvalidArgumentError(absl::StrCat(i == 3 ? "lower_edge_hertz" : "upper_edge_hertz",
                                                       ": expected a scalar, got ", ctx.Input(i)->DebugString()));
      }
    }
    const double lower = ctx.Input(3)->GetAsDouble(0), upper = ctx.Input(4)->GetAsDouble(0);
    if (mel_bins < 1 || dft_length < 1 || sample_rate < 1) {
      return absl::InvalidArgumentError(absl::StrCat("num_mel_bins ", mel_bins, ", dft_length ", dft_length,
                                                     ", sample_rate ", sample_rate, ": expected all >= 1"));
    }
    const int64_t spectrogram_bins = dft_length / 2 + 1;
    // The output first: it is charged to the run, and the filters are written straight into it (a few
    // scalars of a request ask for 2^32 of them; kept in a vector of doubles they were 32 GiB outside the
    // budget).
    RETURN_IF_ERROR(CheckedByteSize(output_type_, {spectrogram_bins, mel_bins}).status());
    Tensor& y = ctx.Output(0, output_type_, {spectrogram_bins, mel_bins});
    ASSIGN_OR_RETURN(const Tensor edges,
                     FilterEdges(mel_bins, dft_length, sample_rate, lower, upper, spectrogram_bins));
    const int64_t* edge = edges.data<int64_t>();
    DispatchNumeric(output_type_, [&](auto tag) {
      using T = decltype(tag);
      T* w = y.data<T>();
      std::fill_n(w, y.NumElements(), FromDouble<T>(0.0));
      for (int64_t i = 0; i < mel_bins; ++i) {
        const int64_t left = edge[i], center = edge[i + 1], right = edge[i + 2];
        if (center == left) {
          w[center * mel_bins + i] = FromDouble<T>(1.0);
        } else {
          for (int64_t j = left; j <= center; ++j) {
            w[j * mel_bins + i] = FromDouble<T>(double(j - left) / double(center - left));
          }
        }
        for (int64_t j = center; j < right; ++j) {
          w[j * mel_bins + i] = FromDouble<T>(double(right - j) / double(right - center));
        }
      }
    });
    return absl::OkStatus();
  }

 private:
  // mel_bins + 2 spectrogram bins: the left edge, the centers, the right edge; INVALID_ARGUMENT when one falls
  // outside [0, spectrogram_bins). Checked before the bin becomes an integer: edge frequencies from the
  // request may be NaN or huge, and such a double does not convert to int64.
  static absl::StatusOr<Tensor> FilterEdges(int64_t mel_bins, int64_t dft_length, int64_t sample_rate, double lower,
                                            double upper, int64_t spectrogram_bins) {
    auto to_mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
    const double low_mel = to_mel(lower);
    const double step = (to_mel(upper) - low_mel) / static_cast<double>(mel_bins + 2);
    Tensor edge_tensor(DataType::kInt64, {mel_bins + 2});  // as many as the output's bins: charged like it
    int64_t* edges = edge_tensor.data<int64_t>();
    for (int64_t i = 0; i < mel_bins + 2; ++i) {
      const double hz = 700.0 * (std::pow(10.0, (i * step + low_mel) / 2595.0) - 1.0);
      const double bin = std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate));
      if (!(bin >= 0 && bin < static_cast<double>(spectrogram_bins))) {
        return absl::InvalidArgumentError(absl::StrCat(
            "a filter edge falls on bin ", bin, ", outside [0, ", spectrogram_bins,
            "): check the edge frequencies lower_edge_hertz ", lower, " and upper_edge_hertz ", upper));
      }
      edges[i] = static_cast<int64_t>(bin);
    }
    return edge_tensor;
  }

  DataType output_type_ = DataType::kFloat;
};

REGISTER_KERNEL(kOnnx, "MelWeightMatrix", 17, kLatest, kIntegerTypes, MelWeightMatrix);

}  // namespace
}  // namespace onnxserve

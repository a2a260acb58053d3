// signal op family: DFT (opset 17 axis attribute, opset 20 axis input), STFT,
// the Hann/Hamming/Blackman windows and MelWeightMatrix.
// See op_registry.h for the infer()/compute() contract.
//
// Transforms are computed in double (complex<double>) whatever the element
// type and rounded once at the end: folding runs on small constant signals, so
// precision matters more than speed. Power-of-two lengths use an iterative
// radix-2 FFT, other lengths a direct DFT over a twiddle table.
#include <cmath>
#include <complex>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/float_math.h"

namespace onnxfold {
namespace kernels {
namespace {

using Cplx = std::complex<double>;
constexpr double kPi = 3.14159265358979323846;

void writeAll(const OpContext& ctx, Tensor& t, const std::vector<double>& v) {
  const bool ok = dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = mutableDataAs<T>(t);
    for (size_t i = 0; i < v.size(); ++i)
      p[i] = fromDouble<T>(v[i]);
  });
  if (!ok) ctx.unsupported("unsupported output type " + std::string(dataTypeName(t.dtype())));
}

// A scalar (or 1-element) integer input's value, when known.
std::optional<int64_t> knownScalarInt(const InferContext& ctx, size_t i) {
  const Tensor* v = ctx.inputValue(i);
  if (v == nullptr) return std::nullopt;
  if (v->numElements() != 1) ctx.fail("input " + std::to_string(i) + " must be a scalar");
  return toInt64Vector(ctx, *v)[0];
}

int64_t scalarInt(const OpContext& ctx, const Tensor& t) {
  if (t.numElements() != 1) ctx.fail("expected a scalar");
  return toInt64Vector(ctx, t)[0];
}

// ----------------------------------------------------------------- 1-D transforms

bool isPowerOfTwo(int64_t n) {
  return n > 0 && (n & (n - 1)) == 0;
}

// In-place iterative radix-2 FFT (sign -1 forward, +1 inverse; no scaling).
void fftPow2(std::vector<Cplx>& a, int sign) {
  const size_t n = a.size();
  for (size_t i = 1, j = 0; i < n; ++i) {
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1)
      j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (size_t len = 2; len <= n; len <<= 1) {
    const double ang = sign * 2 * kPi / static_cast<double>(len);
    for (size_t i = 0; i < n; i += len) {
      for (size_t k = 0; k < len / 2; ++k) {
        // Direct twiddles (not a running product) keep the error at one rounding.
        const Cplx w(fm::cos(ang * static_cast<double>(k)), fm::sin(ang * static_cast<double>(k)));
        const Cplx u = a[i + k];
        const Cplx v = a[i + k + len / 2] * w;
        a[i + k] = u + v;
        a[i + k + len / 2] = u - v;
      }
    }
  }
}

// A reusable plan for length-n transforms: out[k] = sum_j in[j] e^{sign 2 pi i jk/n}, k < n_out.
class Dft {
 public:
  Dft(int64_t n, bool inverse) : n_(n), sign_(inverse ? 1 : -1) {
    if (!isPowerOfTwo(n)) {
      tw_.resize(static_cast<size_t>(n));
      for (int64_t m = 0; m < n; ++m) {
        const double ang = sign_ * 2 * kPi * static_cast<double>(m) / static_cast<double>(n);
        tw_[static_cast<size_t>(m)] = Cplx(fm::cos(ang), fm::sin(ang));
      }
    }
  }
  // `buf` holds n inputs and receives the n outputs.
  void run(std::vector<Cplx>& buf, int64_t n_out) const {
    if (tw_.empty()) {
      fftPow2(buf, sign_);
      return;
    }
    tmp_.assign(static_cast<size_t>(n_out), Cplx());
    for (int64_t k = 0; k < n_out; ++k) {
      Cplx s;
      int64_t idx = 0;
      for (int64_t j = 0; j < n_; ++j) {
        s += buf[static_cast<size_t>(j)] * tw_[static_cast<size_t>(idx)];
        idx += k;
        if (idx >= n_) idx %= n_;
      }
      tmp_[static_cast<size_t>(k)] = s;
    }
    for (int64_t k = 0; k < n_out; ++k)
      buf[static_cast<size_t>(k)] = tmp_[static_cast<size_t>(k)];
  }

 private:
  int64_t n_;
  int sign_;
  std::vector<Cplx> tw_;
  mutable std::vector<Cplx> tmp_;
};

// ================================================================= DFT

struct DftParams {
  int64_t axis = -1;        // normalized; -1 when unknown
  int64_t dft_length = -1;  // -1 when not given
  bool length_unknown = false;
  bool inverse = false;
  bool onesided = false;
};

// Reads the attributes and inputs that shape a DFT; the axis and length may be unknown.
DftParams dftParams(const InferContext* ictx, const ComputeContext* cctx, int64_t rank) {
  const OpContext& ctx = ictx ? static_cast<const OpContext&>(*ictx) : *cctx;
  DftParams p;
  p.inverse = ctx.attrInt("inverse") != 0;
  p.onesided = ctx.attrInt("onesided") != 0;
  int64_t axis = 1;
  bool axis_known = true;
  if (ctx.opset() >= 20) {
    axis = -2;
    const bool has = ictx ? ictx->hasInput(2) : cctx->hasInput(2);
    if (has) {
      const Tensor* v = ictx ? ictx->inputValue(2) : &cctx->input(2);
      if (v == nullptr) {
        axis_known = false;
      } else {
        axis = scalarInt(ctx, *v);
      }
    }
  } else {
    axis = ctx.attrInt("axis");
  }
  if (axis_known && rank >= 0) {
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank - 2) {
      ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " +
               std::to_string(rank) + " (the last dim holds the complex parts)");
    }
    p.axis = axis;
  }
  const bool has_len = ictx ? ictx->hasInput(1) : cctx->hasInput(1);
  if (has_len) {
    const Tensor* v = ictx ? ictx->inputValue(1) : &cctx->input(1);
    if (v == nullptr) {
      p.length_unknown = true;
    } else {
      p.dft_length = scalarInt(ctx, *v);
      if (p.dft_length <= 0) ctx.fail("dft_length must be positive");
    }
  }
  return p;
}

// Length of the transform for an axis of `dim` input elements.
int64_t dftLength(const DftParams& p, int64_t dim) {
  if (p.dft_length > 0) return p.dft_length;
  return p.onesided && p.inverse ? 2 * (dim - 1) : dim;
}

int64_t dftOutDim(const DftParams& p, int64_t dim) {
  const int64_t n = dftLength(p, dim);
  return p.onesided && !p.inverse ? n / 2 + 1 : n;
}

void inferDft(InferContext& ctx) {
  requireFloatInput(ctx, 0);
  const DataType t = ctx.inputDtype(0);
  const Shape* s = ctx.inputShape(0);
  if (s == nullptr) {
    ctx.setOutputUnknownRank(0, t);
    return;
  }
  const auto rank = static_cast<int64_t>(s->rank());
  if (rank < 2) ctx.fail("input must have rank >= 2 ([..., signal, 1 or 2])");
  const Dim& last = s->dims.back();
  if (last.isKnown() && last.value != 1 && last.value != 2) {
    ctx.fail("the last dim must be 1 (real) or 2 (complex), got " + std::to_string(last.value));
  }
  const DftParams p = dftParams(&ctx, nullptr, rank);
  Shape out = *s;
  out.dims.back() = Dim::known(p.onesided && p.inverse ? 1 : 2);
  const bool changes_axis = p.onesided || p.dft_length > 0 || p.length_unknown;
  if (changes_axis) {
    for (int64_t d = 0; d < rank - 1; ++d) {
      if (p.axis >= 0 && d != p.axis) continue;
      Dim& o = out.dims[static_cast<size_t>(d)];
      const Dim in = s->dims[static_cast<size_t>(d)];
      const bool known = !p.length_unknown && (p.dft_length > 0 || in.isKnown());
      const int64_t n = known ? dftOutDim(p, in.isKnown() ? in.value : 0) : -1;
      // With the axis unknown, a dim keeps its size only when the transform would not change it.
      if (known && (p.axis >= 0 || (in.isKnown() && n == in.value))) {
        o = Dim::known(n);
      } else {
        o = ctx.newSymbol();
      }
    }
  }
  ctx.setOutput(0, t, std::move(out));
}

void computeDft(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const auto rank = static_cast<int64_t>(x.rank());
  const DftParams p = dftParams(nullptr, &ctx, rank);
  const std::vector<int64_t>& dims = x.dims();
  const int64_t comps = dims.back();
  const int64_t n_in = dims[static_cast<size_t>(p.axis)];
  const int64_t outer = product(dims, 0, static_cast<size_t>(p.axis));
  const int64_t inner = product(dims, static_cast<size_t>(p.axis) + 1, dims.size() - 1);
  const int64_t n = dftLength(p, n_in);
  if (n <= 0) ctx.fail("the transform length must be positive");
  const int64_t n_out = dftOutDim(p, n_in);
  const bool irfft = p.onesided && p.inverse;
  const int64_t out_comps = irfft ? 1 : 2;
  Tensor& y = ctx.output(0);
  if (y.dims()[static_cast<size_t>(p.axis)] != n_out) ctx.fail("output shape mismatch");

  const std::vector<double> in = readAll(x);
  std::vector<double> out(static_cast<size_t>(y.numElements()));
  const Dft plan(n, p.inverse);
  std::vector<Cplx> buf(static_cast<size_t>(n));
  const double scale = p.inverse ? 1.0 / static_cast<double>(n) : 1.0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) {
        const size_t base = static_cast<size_t>(((o * n_in + k) * inner + i) * comps);
        return Cplx(in[base], comps == 2 ? in[base + 1] : 0.0);
      };
      std::fill(buf.begin(), buf.end(), Cplx());
      if (irfft) {
        // Rebuild the full Hermitian spectrum from the one-sided half.
        for (int64_t k = 0; k <= n / 2; ++k) {
          if (k < n_in) buf[static_cast<size_t>(k)] = at(k);
        }
        for (int64_t k = n / 2 + 1; k < n; ++k) {
          if (n - k < n_in) buf[static_cast<size_t>(k)] = std::conj(at(n - k));
        }
      } else {
        for (int64_t k = 0; k < std::min(n, n_in); ++k)
          buf[static_cast<size_t>(k)] = at(k);
      }
      plan.run(buf, n_out);
      for (int64_t k = 0; k < n_out; ++k) {
        const size_t base = static_cast<size_t>(((o * n_out + k) * inner + i) * out_comps);
        out[base] = buf[static_cast<size_t>(k)].real() * scale;
        if (!irfft) out[base + 1] = buf[static_cast<size_t>(k)].imag() * scale;
      }
    }
  }
  writeAll(ctx, y, out);
}

// ================================================================= STFT

void inferStft(InferContext& ctx) {
  requireFloatInput(ctx, 0);
  const DataType t = ctx.inputDtype(0);
  const Shape* s = ctx.inputShape(0);
  if (s != nullptr && s->rank() != 3) ctx.fail("signal must be [batch, length, 1 or 2]");
  const bool onesided = ctx.attrInt("onesided") != 0;
  const std::optional<int64_t> step = knownScalarInt(ctx, 1);
  std::optional<int64_t> frame_length;
  if (ctx.hasInput(3)) {
    frame_length = knownScalarInt(ctx, 3);
  } else if (ctx.hasInput(2)) {
    const Shape* w = ctx.inputShape(2);
    if (w != nullptr && w->rank() == 1 && w->dims[0].isKnown()) frame_length = w->dims[0].value;
  } else {
    ctx.fail("either window or frame_length must be given");
  }
  if (step && *step <= 0) ctx.fail("frame_step must be positive");
  if (frame_length && *frame_length <= 0) ctx.fail("frame_length must be positive");
  Shape out;
  out.dims.push_back(s ? s->dims[0] : ctx.newSymbol());
  if (s && s->dims[1].isKnown() && step && frame_length) {
    const int64_t len = s->dims[1].value;
    if (len < *frame_length) ctx.fail("the signal is shorter than frame_length");
    out.dims.push_back(Dim::known((len - *frame_length) / *step + 1));
  } else {
    out.dims.push_back(ctx.newSymbol());
  }
  if (frame_length) {
    out.dims.push_back(Dim::known(onesided ? *frame_length / 2 + 1 : *frame_length));
  } else {
    out.dims.push_back(ctx.newSymbol());
  }
  out.dims.push_back(Dim::known(2));
  ctx.setOutput(0, t, std::move(out));
}

void computeStft(ComputeContext& ctx) {
  const Tensor& sig = ctx.input(0);
  const int64_t batch = sig.dims()[0];
  const int64_t len = sig.dims()[1];
  const int64_t comps = sig.dims()[2];
  if (comps != 1 && comps != 2) ctx.fail("the signal's last dim must be 1 or 2");
  const int64_t step = scalarInt(ctx, ctx.input(1));
  std::vector<double> window;
  if (ctx.hasInput(2)) window = readAll(ctx.input(2));
  const int64_t flen =
      ctx.hasInput(3) ? scalarInt(ctx, ctx.input(3)) : static_cast<int64_t>(window.size());
  if (!window.empty() && static_cast<int64_t>(window.size()) != flen) {
    ctx.fail("window length " + std::to_string(window.size()) + " differs from frame_length " +
             std::to_string(flen));
  }
  Tensor& y = ctx.output(0);
  const int64_t frames = y.dims()[1];
  const int64_t bins = y.dims()[2];
  const std::vector<double> in = readAll(sig);
  std::vector<double> out(static_cast<size_t>(y.numElements()));
  const Dft plan(flen, false);
  std::vector<Cplx> buf(static_cast<size_t>(flen));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t j = 0; j < flen; ++j) {
        const int64_t pos = f * step + j;
        const size_t base = static_cast<size_t>((b * len + pos) * comps);
        const double w = window.empty() ? 1.0 : window[static_cast<size_t>(j)];
        buf[static_cast<size_t>(j)] = Cplx(in[base] * w, comps == 2 ? in[base + 1] * w : 0.0);
      }
      plan.run(buf, bins);
      for (int64_t k = 0; k < bins; ++k) {
        const size_t base = static_cast<size_t>(((b * frames + f) * bins + k) * 2);
        out[base] = buf[static_cast<size_t>(k)].real();
        out[base + 1] = buf[static_cast<size_t>(k)].imag();
      }
    }
  }
  writeAll(ctx, y, out);
}

// ================================================================= windows

DataType outputDatatype(const OpContext& ctx) {
  const int64_t dt = ctx.attrInt("output_datatype");
  if (!isKnownDataType(static_cast<int32_t>(dt))) ctx.fail("invalid output_datatype");
  const auto t = static_cast<DataType>(dt);
  bool numeric = dispatchNumeric(t, [](auto) {});
  if (!numeric || t == DataType::kBool) {
    ctx.fail("output_datatype " + std::string(dataTypeName(t)) + " is not a numeric type");
  }
  return t;
}

void inferWindow(InferContext& ctx) {
  const DataType t = outputDatatype(ctx);
  const std::optional<int64_t> size = knownScalarInt(ctx, 0);
  if (size && *size < 0) ctx.fail("size must be non-negative");
  Shape s;
  s.dims.push_back(size ? Dim::known(*size) : ctx.newSymbol());
  ctx.setOutput(0, t, std::move(s));
}

// Generalized cosine window a0 - a1 cos(2 pi n/N) + a2 cos(4 pi n/N).
void computeCosineWindow(ComputeContext& ctx, double a0, double a1, double a2) {
  const int64_t size = scalarInt(ctx, ctx.input(0));
  const bool periodic = ctx.attrInt("periodic") != 0;
  const double denom = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> w(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) {
    // Like the reference, a 1-point symmetric window divides by zero: keep it 1.
    const double x = denom > 0 ? 2 * kPi * static_cast<double>(i) / denom : 0.0;
    w[static_cast<size_t>(i)] = a0 - a1 * fm::cos(x) + a2 * fm::cos(2 * x);
  }
  writeAll(ctx, ctx.output(0), w);
}

void computeHann(ComputeContext& ctx) {
  computeCosineWindow(ctx, 0.5, 0.5, 0.0);
}
void computeHamming(ComputeContext& ctx) {
  computeCosineWindow(ctx, 25.0 / 46.0, 1.0 - 25.0 / 46.0, 0.0);
}
void computeBlackman(ComputeContext& ctx) {
  computeCosineWindow(ctx, 0.42, 0.5, 0.08);
}

// ================================================================= MelWeightMatrix

void inferMel(InferContext& ctx) {
  const DataType t = outputDatatype(ctx);
  const std::optional<int64_t> bins = knownScalarInt(ctx, 0);
  const std::optional<int64_t> dft_length = knownScalarInt(ctx, 1);
  if (bins && *bins <= 0) ctx.fail("num_mel_bins must be positive");
  if (dft_length && *dft_length <= 0) ctx.fail("dft_length must be positive");
  Shape s;
  s.dims.push_back(dft_length ? Dim::known(*dft_length / 2 + 1) : ctx.newSymbol());
  s.dims.push_back(bins ? Dim::known(*bins) : ctx.newSymbol());
  ctx.setOutput(0, t, std::move(s));
}

void computeMel(ComputeContext& ctx) {
  const int64_t bins = scalarInt(ctx, ctx.input(0));
  const int64_t dft_length = scalarInt(ctx, ctx.input(1));
  const int64_t sample_rate = scalarInt(ctx, ctx.input(2));
  const double lower = scalarAsDouble(ctx, ctx.input(3));
  const double upper = scalarAsDouble(ctx, ctx.input(4));
  if (sample_rate <= 0) ctx.fail("sample_rate must be positive");
  const int64_t spec_bins = dft_length / 2 + 1;
  auto hzToMel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  auto melToHz = [](double mel) { return 700.0 * (fm::pow(10.0, mel / 2595.0) - 1.0); };
  const double low_mel = hzToMel(lower);
  const double high_mel = hzToMel(upper);
  const int64_t edges = ctx.sizeAdd(bins, 2);
  const double step = (high_mel - low_mel) / static_cast<double>(edges);
  std::vector<int64_t> fb(static_cast<size_t>(edges));
  for (int64_t i = 0; i < edges; ++i) {
    const double hz = melToHz(low_mel + step * static_cast<double>(i));
    const double e = std::floor(static_cast<double>(ctx.sizeAdd(dft_length, 1)) * hz /
                                static_cast<double>(sample_rate));
    // NaN or huge frequencies (hostile bounds) would not convert to int64.
    if (!(std::fabs(e) < 1e18)) ctx.fail("a mel band edge does not fit int64");
    fb[static_cast<size_t>(i)] = static_cast<int64_t>(e);
  }
  std::vector<double> w(static_cast<size_t>(ctx.sizeMul(spec_bins, bins)), 0.0);
  auto set = [&](int64_t row, int64_t col, double v) {
    if (row < 0 || row >= spec_bins) ctx.fail("a mel band edge falls outside the spectrum");
    w[static_cast<size_t>(row * bins + col)] = v;
  };
  for (int64_t i = 0; i < bins; ++i) {
    const int64_t lo = fb[static_cast<size_t>(i)];
    const int64_t center = fb[static_cast<size_t>(i) + 1];
    const int64_t hi = fb[static_cast<size_t>(i) + 2];
    const int64_t low_to_center = center - lo;
    if (low_to_center == 0) {
      set(center, i, 1.0);
    } else {
      for (int64_t j = lo; j <= center; ++j)
        set(j, i, static_cast<double>(j - lo) / static_cast<double>(low_to_center));
    }
    const int64_t center_to_high = hi - center;
    if (center_to_high > 0) {
      for (int64_t j = center; j < hi; ++j)
        set(j, i, static_cast<double>(hi - j) / static_cast<double>(center_to_high));
    }
  }
  writeAll(ctx, ctx.output(0), w);
}

}  // namespace
}  // namespace kernels

void registerSignalOps(OpRegistry& r) {
  using namespace kernels;
  r.add({"", "DFT", 17, inferDft, computeDft});
  r.add({"", "DFT", 20, inferDft, computeDft});
  r.add({"", "STFT", 17, inferStft, computeStft});
  r.add({"", "HannWindow", 17, inferWindow, computeHann});
  r.add({"", "HammingWindow", 17, inferWindow, computeHamming});
  r.add({"", "BlackmanWindow", 17, inferWindow, computeBlackman});
  r.add({"", "MelWeightMatrix", 17, inferMel, computeMel});
}

}  // namespace onnxfold

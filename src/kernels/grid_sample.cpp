// GridSample (opsets 16, 20, 22) and AffineGrid (20), which builds the sampling
// grids GridSample reads. See op_registry.h for the infer()/compute() contract.
//
// The numerics follow the ONNX reference implementation (the node tests are
// generated from it): coordinates and interpolation weights are computed in
// double, values are accumulated in double and converted to the element type
// at the end.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/op_helpers.h"

namespace onnxfold {
namespace kernels {
namespace {

// ================================================================= GridSample

enum class GsMode { kLinear, kNearest, kCubic };
enum class GsPad { kZeros, kBorder, kReflection };

struct GsAttrs {
  GsMode mode = GsMode::kLinear;
  GsPad pad = GsPad::kZeros;
  bool align = false;
};

GsAttrs readGsAttrs(const OpContext& ctx) {
  GsAttrs a;
  const bool v16 = ctx.opset() < 20;
  const std::string m = ctx.attrString("mode");
  if (m == (v16 ? "bilinear" : "linear")) {
    a.mode = GsMode::kLinear;
  } else if (m == "nearest") {
    a.mode = GsMode::kNearest;
  } else if (m == (v16 ? "bicubic" : "cubic")) {
    a.mode = GsMode::kCubic;
  } else {
    ctx.unsupported("unsupported mode '" + m + "'");
  }
  const std::string pm = ctx.attrString("padding_mode");
  if (pm == "zeros") {
    a.pad = GsPad::kZeros;
  } else if (pm == "border") {
    a.pad = GsPad::kBorder;
  } else if (pm == "reflection") {
    a.pad = GsPad::kReflection;
  } else {
    ctx.unsupported("unsupported padding_mode '" + pm + "'");
  }
  a.align = ctx.attrInt("align_corners") != 0;
  return a;
}

void inferGridSample(InferContext& ctx) {
  requireFloatInput(ctx, 1, "grid");
  const DataType t = ctx.inputDtype(0);
  const Shape* xs = ctx.inputShape(0);
  const Shape* gs = ctx.inputShape(1);
  readGsAttrs(ctx);
  size_t r = 0;
  if (xs != nullptr) {
    if (xs->rank() < 3) ctx.fail("X must have rank >= 3");
    r = xs->rank() - 2;
  } else if (gs != nullptr) {
    if (gs->rank() < 3) ctx.fail("grid must have rank >= 3");
    r = gs->rank() - 2;
  } else {
    ctx.setOutputUnknownRank(0, t);
    return;
  }
  if (ctx.opset() < 20 && r != 2) ctx.fail("GridSample-16 supports 4-D input only");
  if (gs != nullptr) {
    if (gs->rank() != r + 2) ctx.fail("grid rank does not match X");
    const Dim& last = gs->dims[r + 1];
    if (last.isKnown() && last.value != static_cast<int64_t>(r)) {
      ctx.fail("the last dim of grid must be " + std::to_string(r));
    }
  }
  Shape out;
  Dim n = xs != nullptr ? xs->dims[0] : Dim();
  if (!n.isKnown() && gs != nullptr && (gs->dims[0].isKnown() || n.param.empty())) n = gs->dims[0];
  if (!n.isKnown() && n.param.empty()) n = ctx.newSymbol();
  out.dims.push_back(n);
  out.dims.push_back(dimOr(ctx, xs, 1));
  for (size_t i = 0; i < r; ++i)
    out.dims.push_back(dimOr(ctx, gs, i + 1));
  ctx.setOutput(0, t, std::move(out));
}

// Reflects x by the borders until it lies within [lo, hi] (reference _gs_reflect).
double gsReflect(double x, double lo, double hi) {
  const double rng = hi - lo;
  if (rng <= 0) return lo;
  // The reflection count stays a double: a huge x's would not convert to int64.
  if (x < lo) {
    const double dx = lo - x;
    const double n = std::floor(dx / rng);
    const double r = dx - n * rng;
    return std::fmod(n, 2.0) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const double n = std::floor(dx / rng);
    const double r = dx - n * rng;
    return std::fmod(n, 2.0) == 0 ? hi - r : lo + r;
  }
  return x;
}

// A coordinate's integer index. NaN and huge coordinates (a hostile grid) would not convert: they
// get an index far outside the input, which reads as padding.
int64_t gsIndex(double f) {
  return f > -1e18 && f < 1e18 ? static_cast<int64_t>(f) : std::numeric_limits<int64_t>::min() / 2;
}

void gsCubicCoeffs(double t, double c[4]) {
  const double A = -0.75;
  t = std::fabs(t);
  c[0] = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A;
  c[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
  c[2] = ((A + 2) * (1 - t) - (A + 3)) * (1 - t) * (1 - t) + 1;
  c[3] = ((A * (2 - t) - 5 * A) * (2 - t) + 8 * A) * (2 - t) - 4 * A;
}

void computeGridSample(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& G = ctx.input(1);
  Tensor& Y = ctx.output(0);
  const GsAttrs a = readGsAttrs(ctx);
  const size_t r = X.rank() - 2;
  if (G.rank() != r + 2 || G.dims()[r + 1] != static_cast<int64_t>(r)) {
    ctx.fail("grid shape does not match X");
  }
  if (G.dims()[0] != X.dims()[0]) ctx.fail("grid and X have different batch sizes");
  if (Y.numElements() == 0) return;
  if (X.dtype() == DataType::kString) ctx.unsupported("string input is not supported");
  const int64_t N = X.dims()[0], C = X.dims()[1];
  std::vector<int64_t> in(X.dims().begin() + 2, X.dims().end());
  const int64_t in_size = product(in, 0, r);
  std::vector<int64_t> in_strides(r, 1);
  for (size_t d = r; d-- > 1;)
    in_strides[d - 1] = in_strides[d] * in[d];
  const int64_t out_size = product(G.dims(), 1, r + 1);
  const std::vector<double> x = toDoubles(ctx, X);
  const std::vector<double> g = toDoubles(ctx, G);
  std::vector<double> y(static_cast<size_t>(Y.numElements()));
  std::vector<double> lo(r), hi(r);
  for (size_t d = 0; d < r; ++d) {
    lo[d] = a.align ? 0.0 : -0.5;
    hi[d] = a.align ? static_cast<double>(in[d]) - 1 : static_cast<double>(in[d]) - 0.5;
  }
  // Input index for integer coordinate i on axis d after padding, or -1 (zero).
  auto pixel = [&](int64_t i, size_t d) -> int64_t {
    if (i >= 0 && i < in[d]) return i;
    if (a.pad == GsPad::kZeros) return -1;
    if (a.pad == GsPad::kBorder) return std::min(std::max<int64_t>(i, 0), in[d] - 1);
    const auto j = static_cast<int64_t>(gsReflect(static_cast<double>(i), lo[d], hi[d]));
    return std::min(std::max<int64_t>(j, 0), in[d] - 1);
  };
  const int taps = a.mode == GsMode::kNearest ? 1 : a.mode == GsMode::kLinear ? 2 : 4;
  std::vector<int64_t> tap_idx(r * taps);
  std::vector<double> tap_w(r * taps);
  int64_t combos = 1;
  for (size_t d = 0; d < r; ++d)
    combos = ctx.sizeMul(combos, taps);
  std::vector<double> xc(r);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t p = 0; p < out_size; ++p) {
      const double* gp = g.data() + (n * out_size + p) * static_cast<int64_t>(r);
      for (size_t d = 0; d < r; ++d) {
        // grid lists coordinates innermost first.
        const double v = gp[r - 1 - d];
        const auto L = static_cast<double>(in[d]);
        double c = a.align ? (v + 1) / 2.0 * (L - 1) : ((v + 1) * L - 1) / 2.0;
        c = static_cast<float>(c);  // the reference holds coordinates in float32
        if (a.mode == GsMode::kNearest) {
          // Halfway cases round to the nearest even index (the spec; the 3-D
          // node tests agree).
          c = std::nearbyint(c);
        }
        if (c < lo[d] || c > hi[d]) {
          if (a.pad == GsPad::kBorder) {
            c = std::min(std::max(c, 0.0), L - 1);
          } else if (a.pad == GsPad::kReflection) {
            c = gsReflect(c, lo[d], hi[d]);
          }
        }
        xc[d] = c;
        if (a.mode == GsMode::kNearest) {
          tap_idx[d] = pixel(gsIndex(c), d);
          tap_w[d] = 1.0;
        } else {
          const double f = std::floor(c);
          const int64_t i0 = gsIndex(f);
          const double t = c - f;
          if (a.mode == GsMode::kLinear) {
            tap_idx[d * 2] = pixel(i0, d);
            tap_idx[d * 2 + 1] = pixel(i0 + 1, d);
            tap_w[d * 2] = 1 - t;
            tap_w[d * 2 + 1] = t;
          } else {
            double cc[4];
            gsCubicCoeffs(t, cc);
            for (int k = 0; k < 4; ++k) {
              tap_idx[d * 4 + k] = pixel(i0 - 1 + k, d);
              tap_w[d * 4 + k] = cc[k];
            }
          }
        }
      }
      for (int64_t c = 0; c < C; ++c) {
        const double* xp = x.data() + (n * C + c) * in_size;
        double acc = 0;
        for (int64_t k = 0; k < combos; ++k) {
          int64_t rem = k, off = 0;
          double w = 1;
          for (size_t d = r; d-- > 0;) {
            const int64_t tk = rem % taps;
            rem /= taps;
            const int64_t id = tap_idx[d * taps + static_cast<size_t>(tk)];
            w *= tap_w[d * taps + static_cast<size_t>(tk)];
            if (id < 0) {
              off = -1;
              break;
            }
            off += id * in_strides[d];
          }
          if (off >= 0) acc += w * xp[off];
        }
        y[static_cast<size_t>((n * C + c) * out_size + p)] = acc;
      }
    }
  }
  fromDoubles(ctx, Y, y);
}

// ================================================================= AffineGrid

void inferAffineGrid(InferContext& ctx) {
  requireFloatInput(ctx, 0, "theta");
  const DataType t = ctx.inputDtype(0);
  const Shape* ts = ctx.inputShape(0);
  size_t r = 0;  // spatial rank: 2 or 3
  const std::optional<SymbolicValue> size = ctx.inputSymbolic(1);
  if (size) {
    if (size->size() != 4 && size->size() != 5) ctx.fail("size must have 4 or 5 elements");
    r = size->size() - 2;
  } else if (const Shape* ss = ctx.inputShape(1);
             ss != nullptr && ss->rank() == 1 && ss->dims[0].isKnown()) {
    r = static_cast<size_t>(ss->dims[0].value) - 2;
  } else if (ts != nullptr && ts->rank() == 3 && ts->dims[1].isKnown()) {
    r = static_cast<size_t>(ts->dims[1].value);
  }
  if (r != 2 && r != 3) {
    if (r != 0) ctx.fail("AffineGrid supports 2-D and 3-D only");
    ctx.setOutputUnknownRank(0, t);
    return;
  }
  if (ts != nullptr) {
    if (ts->rank() != 3) ctx.fail("theta must be 3-D");
    if ((ts->dims[1].isKnown() && ts->dims[1].value != static_cast<int64_t>(r)) ||
        (ts->dims[2].isKnown() && ts->dims[2].value != static_cast<int64_t>(r + 1))) {
      ctx.fail("theta must have shape [N, " + std::to_string(r) + ", " + std::to_string(r + 1) +
               "]");
    }
  }
  Shape out;
  auto sized = [&](size_t i) -> Dim {
    if (size) {
      const Dim& d = (*size)[i];
      if (d.isKnown() || !d.param.empty()) return d;
    }
    return ctx.newSymbol();
  };
  Dim n = sized(0);
  if (!n.isKnown() && ts != nullptr && ts->dims[0].isKnown()) n = ts->dims[0];
  out.dims.push_back(n);
  for (size_t i = 0; i < r; ++i)
    out.dims.push_back(sized(i + 2));
  out.dims.push_back(Dim::known(static_cast<int64_t>(r)));
  ctx.setOutput(0, t, std::move(out));
}

void computeAffineGrid(ComputeContext& ctx) {
  const Tensor& theta = ctx.input(0);
  const std::vector<int64_t> size = toInt64Vector(ctx, ctx.input(1));
  Tensor& Y = ctx.output(0);
  const bool align = ctx.attrInt("align_corners") != 0;
  const size_t r = size.size() - 2;
  const int64_t N = size[0];
  if (theta.rank() != 3 || theta.dims()[0] != N || theta.dims()[1] != static_cast<int64_t>(r) ||
      theta.dims()[2] != static_cast<int64_t>(r + 1)) {
    ctx.fail("theta shape does not match size");
  }
  const std::vector<double> th = toDoubles(ctx, theta);
  // Base coordinates per spatial axis (outermost first), evenly spaced in [-1, 1].
  std::vector<std::vector<double>> base(r);
  for (size_t d = 0; d < r; ++d) {
    const int64_t L = size[d + 2];
    base[d].resize(static_cast<size_t>(L));
    for (int64_t i = 0; i < L; ++i) {
      const auto fi = static_cast<double>(i);
      const auto fl = static_cast<double>(L);
      base[d][static_cast<size_t>(i)] =
          align ? (L > 1 ? -1.0 + 2.0 * fi / (fl - 1) : 0.0) : (2.0 * fi + 1.0) / fl - 1.0;
    }
  }
  const int64_t points = product(size, 2, size.size());
  std::vector<double> out(static_cast<size_t>(Y.numElements()));
  std::vector<int64_t> idx(r, 0);
  std::vector<double> h(r + 1);  // homogeneous point (x, y[, z], 1): innermost axis first
  for (int64_t p = 0; p < points; ++p) {
    for (size_t d = 0; d < r; ++d)
      h[d] = base[r - 1 - d][static_cast<size_t>(idx[r - 1 - d])];
    h[r] = 1.0;
    for (int64_t n = 0; n < N; ++n) {
      const double* t = th.data() + n * static_cast<int64_t>(r * (r + 1));
      double* o = out.data() + (n * points + p) * static_cast<int64_t>(r);
      for (size_t i = 0; i < r; ++i) {
        double s = 0;
        for (size_t j = 0; j <= r; ++j)
          s += t[i * (r + 1) + j] * h[j];
        o[i] = s;
      }
    }
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < size[d + 2]) break;
      idx[d] = 0;
    }
  }
  fromDoubles(ctx, Y, out);
}

}  // namespace
}  // namespace kernels

void registerGridSampleOps(OpRegistry& r) {
  using namespace kernels;
  for (int v : {16, 20, 22})
    r.add({"", "GridSample", v, inferGridSample, computeGridSample});
  r.add({"", "AffineGrid", 20, inferAffineGrid, computeAffineGrid});
}

}  // namespace onnxfold

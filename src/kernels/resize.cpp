// Resize (opsets 10, 11, 13, 18, 19). See op_registry.h for the infer()/compute()
// contract.
//
// The numerics follow the ONNX reference implementation (the node tests are
// generated from it): interpolation weights and coordinates are computed in
// double, values are accumulated in double and converted to the element type
// at the end (integers truncate, as numpy's astype does). Resize is separable:
// linear and cubic run one 1-D pass per resized axis; nearest is a gather
// that works for every element type, strings included.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/common.h"
#include "kernels/op_helpers.h"

namespace onnxfold {
namespace kernels {
namespace {

enum class Interp { kNearest, kLinear, kCubic };
enum class Coord {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize
};
enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };
enum class AspectPolicy { kStretch, kNotLarger, kNotSmaller };

struct ResizeAttrs {
  Interp mode = Interp::kNearest;
  Coord coord = Coord::kHalfPixel;
  Nearest nearest = Nearest::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
  bool antialias = false;
  std::vector<int64_t> axes;  // normalized; all axes when the attribute is absent
  AspectPolicy policy = AspectPolicy::kStretch;
};

ResizeAttrs readResizeAttrs(const OpContext& ctx, int64_t rank) {
  ResizeAttrs a;
  const int64_t opset = ctx.opset();
  const std::string mode = ctx.attrString("mode");
  if (mode == "nearest") {
    a.mode = Interp::kNearest;
  } else if (mode == "linear" || (opset < 11 && mode == "bilinear")) {
    a.mode = Interp::kLinear;
  } else if (mode == "cubic" && opset >= 11) {
    a.mode = Interp::kCubic;
  } else {
    ctx.unsupported("unsupported mode '" + mode + "'");
  }
  if (opset < 11) {
    // Resize-10 behaves like Upsample: asymmetric coordinates, legacy nearest.
    a.coord = Coord::kAsymmetric;
    a.nearest = Nearest::kSimple;
  } else {
    const std::string c = ctx.attrString("coordinate_transformation_mode");
    if (c == "half_pixel") {
      a.coord = Coord::kHalfPixel;
    } else if (c == "half_pixel_symmetric" && opset >= 19) {
      a.coord = Coord::kHalfPixelSymmetric;
    } else if (c == "pytorch_half_pixel") {
      a.coord = Coord::kPytorchHalfPixel;
    } else if (c == "align_corners") {
      a.coord = Coord::kAlignCorners;
    } else if (c == "asymmetric") {
      a.coord = Coord::kAsymmetric;
    } else if (c == "tf_half_pixel_for_nn" && opset < 13) {
      a.coord = Coord::kTfHalfPixelForNn;
    } else if (c == "tf_crop_and_resize") {
      a.coord = Coord::kTfCropAndResize;
    } else {
      ctx.unsupported("unsupported coordinate_transformation_mode '" + c + "'");
    }
    const std::string n = ctx.attrString("nearest_mode");
    if (n == "round_prefer_floor") {
      a.nearest = Nearest::kRoundPreferFloor;
    } else if (n == "round_prefer_ceil") {
      a.nearest = Nearest::kRoundPreferCeil;
    } else if (n == "floor") {
      a.nearest = Nearest::kFloor;
    } else if (n == "ceil") {
      a.nearest = Nearest::kCeil;
    } else {
      ctx.unsupported("unsupported nearest_mode '" + n + "'");
    }
    a.cubic_a = ctx.attrFloat("cubic_coeff_a");
    a.exclude_outside = ctx.attrInt("exclude_outside") != 0;
    a.extrapolation = ctx.attrFloat("extrapolation_value");
  }
  if (opset >= 18) {
    a.antialias = ctx.attrInt("antialias") != 0;
    if (a.antialias && a.mode == Interp::kNearest) {
      ctx.unsupported("antialias is only supported for the linear and cubic modes");
    }
    const std::string p = ctx.attrString("keep_aspect_ratio_policy");
    if (p == "stretch") {
      a.policy = AspectPolicy::kStretch;
    } else if (p == "not_larger") {
      a.policy = AspectPolicy::kNotLarger;
    } else if (p == "not_smaller") {
      a.policy = AspectPolicy::kNotSmaller;
    } else {
      ctx.unsupported("unsupported keep_aspect_ratio_policy '" + p + "'");
    }
    if (ctx.hasAttr("axes") && rank >= 0) {
      for (int64_t ax : ctx.attrInts("axes"))
        a.axes.push_back(normalizeAxis(ctx, ax, rank));
      for (size_t i = 0; i < a.axes.size(); ++i)
        for (size_t j = i + 1; j < a.axes.size(); ++j)
          if (a.axes[i] == a.axes[j]) ctx.fail("axes has a repeated axis");
    }
  }
  if (a.axes.empty() && rank >= 0) {
    for (int64_t i = 0; i < rank; ++i)
      a.axes.push_back(i);
  }
  return a;
}

// Input slots of roi, scales and sizes (-1: not in this version).
struct ResizeInputs {
  int roi = -1, scales = -1, sizes = -1;
};
ResizeInputs resizeInputs(int64_t opset) {
  if (opset < 11) return {-1, 1, -1};
  return {1, 2, 3};
}

// Everything the kernel needs per axis.
struct ResizePlan {
  std::vector<int64_t> out_dims;
  std::vector<double> scale;      // length_resized / length_original (as given)
  std::vector<double> out_width;  // scale * length_original: the reference's "output_width"
  std::vector<double> roi_start, roi_end;
};

// An output dim computed in double (a scaled input dim), failing where it does not convert to
// int64: a hostile scale can be huge, or inf.
int64_t scaledDim(const OpContext& ctx, double v) {
  if (!(v > -9.2e18 && v < 9.2e18)) ctx.fail("a scaled output dim does not fit int64");
  return static_cast<int64_t>(v);
}

// Builds the plan from static input dims and known scales/sizes/roi values.
ResizePlan planResize(const OpContext& ctx, const ResizeAttrs& a,
                      const std::vector<int64_t>& in_dims, const Tensor* roi, const Tensor* scales,
                      const Tensor* sizes) {
  const size_t r = in_dims.size();
  const size_t na = a.axes.size();
  ResizePlan p;
  p.out_dims = in_dims;
  p.scale.assign(r, 1.0);
  p.roi_start.assign(r, 0.0);
  p.roi_end.assign(r, 1.0);
  if (scales != nullptr && scales->numElements() == 0) scales = nullptr;
  if (sizes != nullptr && sizes->numElements() == 0) sizes = nullptr;
  if (scales != nullptr && sizes != nullptr) ctx.fail("only one of scales and sizes may be given");
  if (scales == nullptr && sizes == nullptr) ctx.fail("one of scales and sizes is required");
  if (scales != nullptr) {
    const std::vector<double> s = toDoubles(ctx, *scales);
    if (s.size() != na) {
      ctx.fail("scales has " + std::to_string(s.size()) + " elements, expected " +
               std::to_string(na));
    }
    for (size_t i = 0; i < na; ++i) {
      if (!(s[i] > 0)) ctx.fail("scales must be positive");
      const auto d = static_cast<size_t>(a.axes[i]);
      p.scale[d] = s[i];
      p.out_dims[d] = scaledDim(ctx, std::floor(s[i] * static_cast<double>(in_dims[d])));
    }
  } else {
    const std::vector<int64_t> sz = toInt64Vector(ctx, *sizes);
    if (sz.size() != na) {
      ctx.fail("sizes has " + std::to_string(sz.size()) + " elements, expected " +
               std::to_string(na));
    }
    for (size_t i = 0; i < na; ++i) {
      if (sz[i] < 0) ctx.fail("sizes must not be negative");
      if (in_dims[static_cast<size_t>(a.axes[i])] == 0 && sz[i] != 0) {
        ctx.fail("cannot resize an empty axis to a non-empty one");
      }
    }
    if (a.policy == AspectPolicy::kStretch) {
      for (size_t i = 0; i < na; ++i) {
        const auto d = static_cast<size_t>(a.axes[i]);
        p.out_dims[d] = sz[i];
        p.scale[d] = in_dims[d] == 0 ? 1.0 : static_cast<double>(sz[i]) / in_dims[d];
      }
    } else {
      double s =
          a.policy == AspectPolicy::kNotLarger ? std::numeric_limits<double>::infinity() : 0.0;
      for (size_t i = 0; i < na; ++i) {
        const auto d = static_cast<size_t>(a.axes[i]);
        if (in_dims[d] == 0) continue;
        const double si = static_cast<double>(sz[i]) / in_dims[d];
        s = a.policy == AspectPolicy::kNotLarger ? std::min(s, si) : std::max(s, si);
      }
      if (!std::isfinite(s)) s = 1.0;
      for (size_t i = 0; i < na; ++i) {
        const auto d = static_cast<size_t>(a.axes[i]);
        p.scale[d] = s;
        // round_int: halfway cases up.
        p.out_dims[d] = scaledDim(ctx, s * static_cast<double>(in_dims[d]) + 0.5);
      }
    }
  }
  if (a.coord == Coord::kTfCropAndResize && roi != nullptr && roi->numElements() > 0) {
    const std::vector<double> v = toDoubles(ctx, *roi);
    if (v.size() == 2 * na) {
      for (size_t i = 0; i < na; ++i) {
        p.roi_start[static_cast<size_t>(a.axes[i])] = v[i];
        p.roi_end[static_cast<size_t>(a.axes[i])] = v[na + i];
      }
    } else if (v.size() == 2 * r) {
      for (size_t d = 0; d < r; ++d) {
        p.roi_start[d] = v[d];
        p.roi_end[d] = v[r + d];
      }
    } else {
      ctx.fail("roi has " + std::to_string(v.size()) + " elements, expected " +
               std::to_string(2 * na));
    }
  }
  p.out_width.resize(r);
  for (size_t d = 0; d < r; ++d)
    p.out_width[d] = p.scale[d] * static_cast<double>(in_dims[d]);
  return p;
}

void inferResize(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  const Shape* xs = ctx.inputShape(0);
  if (xs == nullptr) {
    ctx.setOutputUnknownRank(0, t);
    return;
  }
  const auto rank = static_cast<int64_t>(xs->rank());
  const ResizeAttrs a = readResizeAttrs(ctx, rank);
  const ResizeInputs in = resizeInputs(ctx.opset());
  auto present = [&](int i) -> const Tensor* {
    return i >= 0 && ctx.hasInput(static_cast<size_t>(i)) ? ctx.inputValue(static_cast<size_t>(i))
                                                          : nullptr;
  };
  // An input known to be empty (scales given as [] next to sizes) counts as absent.
  auto known_empty = [&](int i) {
    if (i < 0 || !ctx.hasInput(static_cast<size_t>(i))) return true;
    if (const Tensor* v = ctx.inputValue(static_cast<size_t>(i))) return v->numElements() == 0;
    const Shape* s = ctx.inputShape(static_cast<size_t>(i));
    return s != nullptr && s->rank() == 1 && s->dims[0].isKnown() && s->dims[0].value == 0;
  };
  const Tensor* scales = present(in.scales);
  const Tensor* sizes = present(in.sizes);
  const bool use_sizes = known_empty(in.scales) && !known_empty(in.sizes);
  const bool use_scales = !known_empty(in.scales) && known_empty(in.sizes);
  const std::optional<std::vector<int64_t>> dims = staticDims(xs);

  if (dims && ((use_scales && scales != nullptr) || (use_sizes && sizes != nullptr))) {
    const ResizePlan p = planResize(ctx, a, *dims, present(in.roi), use_scales ? scales : nullptr,
                                    use_sizes ? sizes : nullptr);
    ctx.setOutput(0, t, p.out_dims);
    return;
  }
  Shape out = *xs;
  std::vector<bool> resized(static_cast<size_t>(rank), false);
  for (int64_t ax : a.axes)
    resized[static_cast<size_t>(ax)] = true;
  if (use_scales && scales != nullptr) {
    // Static scales over a partly symbolic input: scale-1 axes keep their dims.
    const std::vector<double> s = toDoubles(ctx, *scales);
    if (s.size() != a.axes.size()) ctx.fail("scales does not match the resized axes");
    for (size_t i = 0; i < s.size(); ++i) {
      const auto d = static_cast<size_t>(a.axes[i]);
      const Dim& x = xs->dims[d];
      if (s[i] == 1.0) continue;
      out.dims[d] =
          x.isKnown() ? Dim::known(scaledDim(ctx, std::floor(s[i] * static_cast<double>(x.value))))
                      : ctx.newSymbol();
    }
  } else if (use_sizes && a.policy == AspectPolicy::kStretch) {
    const std::optional<SymbolicValue> sv = ctx.inputSymbolic(static_cast<size_t>(in.sizes));
    if (sv && sv->size() == a.axes.size()) {
      for (size_t i = 0; i < sv->size(); ++i) {
        const Dim& d = (*sv)[i];
        out.dims[static_cast<size_t>(a.axes[i])] =
            d.isKnown() || !d.param.empty() ? d : ctx.newSymbol();
      }
    } else {
      for (size_t d = 0; d < resized.size(); ++d)
        if (resized[d]) out.dims[d] = ctx.newSymbol();
    }
  } else {
    for (size_t d = 0; d < resized.size(); ++d)
      if (resized[d]) out.dims[d] = ctx.newSymbol();
  }
  ctx.setOutput(0, t, std::move(out));
}

// Interpolation taps of one axis: for output coordinate o, taps [o*n, o*n+n)
// give input indices (already clamped, edge padding) and weights; `extrap[o]`
// marks coordinates outside the crop box of tf_crop_and_resize.
struct AxisTaps {
  int64_t n = 1;
  std::vector<int64_t> idx;
  std::vector<double> w;
  std::vector<char> extrap;
  bool identity = false;
};

double cubicKernel(double x, double A) {
  x = std::fabs(x);
  const double x2 = x * x, x3 = x2 * x;
  if (x <= 1) return (A + 2) * x3 - (A + 3) * x2 + 1;
  if (x < 2) return A * x3 - 5 * A * x2 + 8 * A * x - 4 * A;
  return 0.0;
}

AxisTaps axisTaps(const OpContext& ctx, const ResizeAttrs& a, const ResizePlan& p, size_t d,
                  int64_t in_len) {
  AxisTaps t;
  const int64_t out_len = p.out_dims[d];
  const double s = p.scale[d];
  const double W = p.out_width[d];
  const auto L = static_cast<double>(in_len);
  const double sc = std::min(s, 1.0);  // antialias filter stretch
  // align_corners divides by length_resized - 1: the spec's reference takes the unfloored
  // width (in_len * scale), ONNX Runtime the output length; they differ when the width is not
  // whole, and then neither value may become a constant.
  if (a.coord == Coord::kAlignCorners && W != static_cast<double>(out_len))
    ctx.unsupported("align_corners with a scaled width that is not whole (" + std::to_string(W) +
                    "): runtimes divide by different lengths");
  int64_t start = 0;  // offset of the first tap from `base`
  // floor(-reach / sc) + 1; a tiny scale's filter would not convert, nor 2 - 2 * start fit.
  auto firstTap = [&](double reach) {
    const double f = std::floor(-reach / sc);
    if (!(f > -1e18)) ctx.fail("the antialias filter of a tiny scale is too wide");
    return static_cast<int64_t>(f) + 1;
  };
  if (a.mode == Interp::kNearest) {
    t.n = 1;
  } else if (a.mode == Interp::kLinear) {
    start = a.antialias ? firstTap(1.0) : 0;
    t.n = 2 - 2 * start;
  } else {
    start = a.antialias ? firstTap(2.0) : -1;
    t.n = 2 - 2 * start;
  }
  int64_t taps = 0;
  if (!checkedMul(out_len, t.n, &taps)) ctx.fail("the resize taps overflow int64");
  t.idx.resize(static_cast<size_t>(taps));
  t.w.resize(t.idx.size());
  t.extrap.assign(static_cast<size_t>(out_len), 0);
  t.identity = out_len == in_len;
  std::vector<double> cw(static_cast<size_t>(t.n));
  for (int64_t o = 0; o < out_len; ++o) {
    const auto x = static_cast<double>(o);
    double xo = 0;
    switch (a.coord) {
      case Coord::kAlignCorners:
        xo = W == 1 ? 0.0 : x * (L - 1) / (W - 1);
        break;
      case Coord::kAsymmetric:
        xo = x / s;
        break;
      case Coord::kTfCropAndResize: {
        const double r0 = p.roi_start[d], r1 = p.roi_end[d];
        xo = W == 1 ? (r1 - r0) * (L - 1) / 2 : x * (r1 - r0) * (L - 1) / (W - 1);
        xo += r0 * (L - 1);
        if (xo < 0 || xo > L - 1) t.extrap[static_cast<size_t>(o)] = 1;
        break;
      }
      case Coord::kPytorchHalfPixel:
        // The spec's length_resized is the output's length, not the unfloored width.
        xo = out_len > 1 ? (x + 0.5) / s - 0.5 : 0.0;
        break;
      case Coord::kHalfPixel:
        xo = (x + 0.5) / s - 0.5;
        break;
      case Coord::kHalfPixelSymmetric: {
        const double adjustment = static_cast<double>(out_len) / W;
        const double offset = L / 2 * (1 - adjustment);
        xo = offset + (x + 0.5) / s - 0.5;
        break;
      }
      case Coord::kTfHalfPixelForNn:
        xo = (x + 0.5) / s;
        break;
    }
    // ratio in (0, 1]: an integral coordinate sits at base + 1 with ratio 1.
    double fl = std::floor(xo);
    int64_t base = static_cast<int64_t>(fl);
    double ratio = xo - fl;
    if (ratio == 0) {
      base -= 1;
      ratio = 1;
    }
    int64_t* ip = t.idx.data() + o * t.n;
    double* wp = t.w.data() + o * t.n;
    auto clampIdx = [&](int64_t i) { return std::min(std::max<int64_t>(i, 0), in_len - 1); };
    if (a.mode == Interp::kNearest) {
      bool up = false;  // pick base + 1 rather than base
      if (ratio == 1) {
        up = true;
      } else {
        switch (a.nearest) {
          case Nearest::kRoundPreferFloor:
            up = ratio > 0.5;
            break;
          case Nearest::kRoundPreferCeil:
            up = ratio >= 0.5;
            break;
          case Nearest::kFloor:
            up = false;
            break;
          case Nearest::kCeil:
            up = true;
            break;
          case Nearest::kSimple:
            up = s < 1;  // legacy Resize-10: ceil when downsampling, floor otherwise
            break;
        }
      }
      ip[0] = clampIdx(base + (up ? 1 : 0));
      wp[0] = 1.0;
      if (ip[0] != o || t.extrap[static_cast<size_t>(o)]) t.identity = false;
      continue;
    }
    double sum = 0;
    for (int64_t k = 0; k < t.n; ++k) {
      const int64_t i = start + k;  // tap offset from base
      double c;
      if (a.mode == Interp::kLinear) {
        c = a.antialias
                ? std::clamp(1.0 - std::fabs((static_cast<double>(i) - ratio) * sc), 0.0, 1.0)
                : (i == 0 ? 1 - ratio : ratio);
      } else {
        c = a.antialias ? cubicKernel(sc * (static_cast<double>(i) - ratio), a.cubic_a)
                        : cubicKernel(static_cast<double>(i) - ratio, a.cubic_a);
      }
      cw[static_cast<size_t>(k)] = c;
      sum += c;
    }
    if (a.antialias && sum != 0) {
      for (double& c : cw)
        c /= sum;
    }
    if (a.exclude_outside) {
      double s2 = 0;
      for (int64_t k = 0; k < t.n; ++k) {
        const int64_t i = base + start + k;
        if (i < 0 || i >= in_len) cw[static_cast<size_t>(k)] = 0;
        s2 += cw[static_cast<size_t>(k)];
      }
      if (s2 != 0) {
        for (double& c : cw)
          c /= s2;
      }
    }
    for (int64_t k = 0; k < t.n; ++k) {
      ip[k] = clampIdx(base + start + k);
      wp[k] = cw[static_cast<size_t>(k)];
      if (wp[k] != 0 && !(ip[k] == o && wp[k] == 1.0)) t.identity = false;
    }
    if (t.extrap[static_cast<size_t>(o)]) t.identity = false;
  }
  return t;
}

// Nearest: a gather of whole elements (any dtype). `src[d][o]` is the input
// index for output coordinate o on axis d, or -1 for the extrapolation value.
void resizeNearest(const Tensor& x, Tensor& y, const std::vector<std::vector<int64_t>>& src,
                   double extrapolation) {
  const std::vector<int64_t>& in_dims = x.dims();
  const std::vector<int64_t>& out_dims = y.dims();
  const size_t r = in_dims.size();
  const int64_t total = y.numElements();
  if (total == 0) return;
  std::vector<int64_t> in_strides(r, 1);
  for (size_t d = r; d-- > 1;)
    in_strides[d - 1] = in_strides[d] * in_dims[d];
  // Per axis, the input element offset contributed by each output coordinate.
  std::vector<std::vector<int64_t>> off(r);
  for (size_t d = 0; d < r; ++d) {
    off[d].resize(static_cast<size_t>(out_dims[d]));
    for (int64_t o = 0; o < out_dims[d]; ++o) {
      const int64_t s = src[d][static_cast<size_t>(o)];
      off[d][static_cast<size_t>(o)] = s < 0 ? -1 : s * in_strides[d];
    }
  }
  auto forEach = [&](auto&& write) {
    std::vector<int64_t> idx(r, 0);
    for (int64_t i = 0; i < total; ++i) {
      int64_t o = 0;
      bool ex = false;
      for (size_t d = 0; d < r; ++d) {
        const int64_t v = off[d][static_cast<size_t>(idx[d])];
        if (v < 0) ex = true;
        o += v;
      }
      write(i, ex ? -1 : o);
      for (size_t d = r; d-- > 0;) {
        if (++idx[d] < out_dims[d]) break;
        idx[d] = 0;
      }
    }
  };
  if (x.dtype() == DataType::kString) {
    const std::vector<std::string>& in = x.strings();
    std::vector<std::string>& out = y.mutableStrings();
    out.resize(static_cast<size_t>(total));
    forEach([&](int64_t i, int64_t o) {
      out[static_cast<size_t>(i)] = o < 0 ? std::string() : in[static_cast<size_t>(o)];
    });
    return;
  }
  const size_t es = x.numElements() > 0 ? x.byteSize() / static_cast<size_t>(x.numElements())
                                        : y.byteSize() / static_cast<size_t>(total);
  std::vector<uint8_t> ev(es, 0);
  dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (sizeof(T) == es) {
      const T v = fromDouble<T>(extrapolation);
      std::memcpy(ev.data(), &v, es);
    }
  });
  const uint8_t* in = x.bytes();
  uint8_t* out = y.mutableBytes();
  forEach([&](int64_t i, int64_t o) {
    std::memcpy(out + static_cast<size_t>(i) * es,
                o < 0 ? ev.data() : in + static_cast<size_t>(o) * es, es);
  });
}

// One separable pass along axis d: [outer, in_len, inner] -> [outer, out_len, inner].
template <class Acc>
void resizePass(const Acc* in, Acc* out, int64_t outer, int64_t in_len, int64_t inner,
                const AxisTaps& t, int64_t out_len, double extrapolation) {
  for (int64_t ob = 0; ob < outer; ++ob) {
    const Acc* src = in + ob * in_len * inner;
    for (int64_t o = 0; o < out_len; ++o) {
      Acc* dst = out + (ob * out_len + o) * inner;
      if (t.extrap[static_cast<size_t>(o)]) {
        std::fill(dst, dst + inner, static_cast<Acc>(extrapolation));
        continue;
      }
      const int64_t* idx = t.idx.data() + o * t.n;
      const double* w = t.w.data() + o * t.n;
      const Acc w0 = static_cast<Acc>(w[0]);
      const Acc* r0 = src + idx[0] * inner;
      for (int64_t j = 0; j < inner; ++j)
        dst[j] = w0 * r0[j];
      for (int64_t k = 1; k < t.n; ++k) {
        if (w[k] == 0) continue;
        const Acc wk = static_cast<Acc>(w[k]);
        const Acc* row = src + idx[k] * inner;
        for (int64_t j = 0; j < inner; ++j)
          dst[j] += wk * row[j];
      }
    }
  }
}

// Linear and cubic: one pass per resized axis, downsampling axes first so the
// intermediates stay small. Float types run in float (double for double); the
// last pass writes straight into the output when its type matches.
template <class Acc>
void resizeSeparable(const OpContext& ctx, const Tensor& x, Tensor& y, const ResizePlan& p,
                     const std::vector<AxisTaps>& taps, double extrapolation) {
  const size_t r = x.rank();
  std::vector<size_t> order;
  for (size_t d = 0; d < r; ++d)
    if (!taps[d].identity) order.push_back(d);
  std::stable_sort(order.begin(), order.end(), [&](size_t u, size_t v) {
    return p.out_dims[u] * x.dims()[v] < p.out_dims[v] * x.dims()[u];
  });
  std::vector<Acc> cur(static_cast<size_t>(x.numElements())), next;
  dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = dataAs<T>(x);
    for (size_t i = 0; i < cur.size(); ++i)
      cur[i] = static_cast<Acc>(toDouble(px[i]));
  });
  constexpr DataType acc_type = std::is_same_v<Acc, float> ? DataType::kFloat : DataType::kDouble;
  const bool direct = y.dtype() == acc_type && !order.empty();
  std::vector<int64_t> dims = x.dims();
  for (size_t k = 0; k < order.size(); ++k) {
    const size_t d = order[k];
    const int64_t outer = product(dims, 0, d);
    const int64_t inner = product(dims, d + 1, r);
    Acc* dst;
    const bool last = k + 1 == order.size();
    if (last && direct) {
      dst = mutableDataAs<Acc>(y);
    } else {
      next.resize(static_cast<size_t>(outer * p.out_dims[d] * inner));
      dst = next.data();
    }
    resizePass(cur.data(), dst, outer, dims[d], inner, taps[d], p.out_dims[d], extrapolation);
    dims[d] = p.out_dims[d];
    if (!(last && direct)) cur.swap(next);
  }
  if (direct) return;
  const bool ok = dispatchNumeric(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* py = mutableDataAs<T>(y);
    for (size_t i = 0; i < cur.size(); ++i)
      py[i] = fromDouble<T>(static_cast<double>(cur[i]));
  });
  if (!ok) ctx.unsupported("unsupported element type " + std::string(dataTypeName(y.dtype())));
}

void computeResize(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const auto rank = static_cast<int64_t>(x.rank());
  const ResizeAttrs a = readResizeAttrs(ctx, rank);
  const ResizeInputs in = resizeInputs(ctx.opset());
  auto opt = [&](int i) -> const Tensor* {
    return i >= 0 && ctx.hasInput(static_cast<size_t>(i)) ? &ctx.input(static_cast<size_t>(i))
                                                          : nullptr;
  };
  const ResizePlan p = planResize(ctx, a, x.dims(), opt(in.roi), opt(in.scales), opt(in.sizes));
  if (p.out_dims != y.dims()) ctx.fail("output shape does not match the resize plan");
  if (y.numElements() == 0) return;
  const size_t r = x.rank();
  std::vector<AxisTaps> taps(r);
  for (size_t d = 0; d < r; ++d)
    taps[d] = axisTaps(ctx, a, p, d, x.dims()[d]);

  if (a.mode == Interp::kNearest) {
    std::vector<std::vector<int64_t>> src(r);
    for (size_t d = 0; d < r; ++d) {
      src[d].resize(static_cast<size_t>(p.out_dims[d]));
      for (int64_t o = 0; o < p.out_dims[d]; ++o) {
        src[d][static_cast<size_t>(o)] =
            taps[d].extrap[static_cast<size_t>(o)] ? -1 : taps[d].idx[static_cast<size_t>(o)];
      }
    }
    resizeNearest(x, y, src, a.extrapolation);
    return;
  }
  if (x.dtype() == DataType::kString) ctx.fail("linear and cubic modes need a numeric input");
  if (x.dtype() == DataType::kDouble || x.dtype() == DataType::kInt64 ||
      x.dtype() == DataType::kUint64 || x.dtype() == DataType::kInt32 ||
      x.dtype() == DataType::kUint32) {
    // Wide types keep full precision through the passes.
    resizeSeparable<double>(ctx, x, y, p, taps, a.extrapolation);
  } else {
    resizeSeparable<float>(ctx, x, y, p, taps, a.extrapolation);
  }
}

}  // namespace
}  // namespace kernels

void registerResizeOps(OpRegistry& r) {
  using namespace kernels;
  for (int v : {10, 11, 13, 18, 19})
    r.add({"", "Resize", v, inferResize, computeResize});
}

}  // namespace onnxfold

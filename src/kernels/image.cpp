// image op family: Resize (10, 11, 13, 18, 19), GridSample (16, 20, 22),
// AffineGrid (20), RoiAlign (10, 16, 22), MaxRoiPool (1, 22) and
// NonMaxSuppression (10, 11). See op_registry.h for the infer()/compute()
// contract.
//
// The numerics follow the ONNX reference implementation (the node tests are
// generated from it): interpolation weights and coordinates are computed in
// double, values are accumulated in double and converted to the element type
// at the end (integers truncate, as numpy's astype does). Resize is separable:
// linear and cubic run one 1-D pass per resized axis; nearest is a gather
// that works for every element type, strings included.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/common.h"

namespace onnxfold {
namespace kernels {
namespace {

// Elements of any numeric tensor as doubles (reads with memcpy: infer() sees
// unaligned views).
std::vector<double> toDoubles(const OpContext& ctx, const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numElements()));
  const bool ok = dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = toDouble(t.at<T>(i));
  });
  if (!ok) ctx.unsupported("unsupported element type " + std::string(dataTypeName(t.dtype())));
  return v;
}

void fromDoubles(const OpContext& ctx, Tensor& t, const std::vector<double>& v) {
  const bool ok = dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = mutableDataAs<T>(t);
    for (size_t i = 0; i < v.size(); ++i)
      p[i] = fromDouble<T>(v[i]);
  });
  if (!ok) ctx.unsupported("unsupported element type " + std::string(dataTypeName(t.dtype())));
}

// The first dim of `s` (or a fresh symbol when rank or dim is unknown).
Dim dimOr(InferContext& ctx, const Shape* s, size_t i) {
  if (s != nullptr && i < s->rank()) {
    const Dim& d = s->dims[i];
    if (d.isKnown() || !d.param.empty()) return d;
  }
  return ctx.newSymbol();
}

// ================================================================= Resize

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
  const std::string mode = ctx.attrString("mode", "nearest");
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
    const std::string c = ctx.attrString("coordinate_transformation_mode", "half_pixel");
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
    const std::string n = ctx.attrString("nearest_mode", "round_prefer_floor");
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
    a.cubic_a = ctx.attrFloat("cubic_coeff_a", -0.75f);
    a.exclude_outside = ctx.attrInt("exclude_outside", 0) != 0;
    a.extrapolation = ctx.attrFloat("extrapolation_value", 0.0f);
  }
  if (opset >= 18) {
    a.antialias = ctx.attrInt("antialias", 0) != 0;
    if (a.antialias && a.mode == Interp::kNearest) {
      ctx.unsupported("antialias is only supported for the linear and cubic modes");
    }
    const std::string p = ctx.attrString("keep_aspect_ratio_policy", "stretch");
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
      p.out_dims[d] = static_cast<int64_t>(std::floor(s[i] * static_cast<double>(in_dims[d])));
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
        p.out_dims[d] = static_cast<int64_t>(s * static_cast<double>(in_dims[d]) + 0.5);
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
          x.isKnown()
              ? Dim::known(static_cast<int64_t>(std::floor(s[i] * static_cast<double>(x.value))))
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

AxisTaps axisTaps(const ResizeAttrs& a, const ResizePlan& p, size_t d, int64_t in_len) {
  AxisTaps t;
  const int64_t out_len = p.out_dims[d];
  const double s = p.scale[d];
  const double W = p.out_width[d];
  const auto L = static_cast<double>(in_len);
  const double sc = std::min(s, 1.0);  // antialias filter stretch
  int64_t start = 0;                   // offset of the first tap from `base`
  if (a.mode == Interp::kNearest) {
    t.n = 1;
  } else if (a.mode == Interp::kLinear) {
    start = a.antialias ? static_cast<int64_t>(std::floor(-1.0 / sc)) + 1 : 0;
    t.n = 2 - 2 * start;
  } else {
    start = a.antialias ? static_cast<int64_t>(std::floor(-2.0 / sc)) + 1 : -1;
    t.n = 2 - 2 * start;
  }
  t.idx.resize(static_cast<size_t>(out_len * t.n));
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
        xo = W == 1 ? -0.5 : (x + 0.5) / s - 0.5;
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
    taps[d] = axisTaps(a, p, d, x.dims()[d]);

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
  const std::string m = ctx.attrString("mode", v16 ? "bilinear" : "linear");
  if (m == (v16 ? "bilinear" : "linear")) {
    a.mode = GsMode::kLinear;
  } else if (m == "nearest") {
    a.mode = GsMode::kNearest;
  } else if (m == (v16 ? "bicubic" : "cubic")) {
    a.mode = GsMode::kCubic;
  } else {
    ctx.unsupported("unsupported mode '" + m + "'");
  }
  const std::string pm = ctx.attrString("padding_mode", "zeros");
  if (pm == "zeros") {
    a.pad = GsPad::kZeros;
  } else if (pm == "border") {
    a.pad = GsPad::kBorder;
  } else if (pm == "reflection") {
    a.pad = GsPad::kReflection;
  } else {
    ctx.unsupported("unsupported padding_mode '" + pm + "'");
  }
  a.align = ctx.attrInt("align_corners", 0) != 0;
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
  if (x < lo) {
    const double dx = lo - x;
    const auto n = static_cast<int64_t>(dx / rng);
    const double r = dx - static_cast<double>(n) * rng;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const auto n = static_cast<int64_t>(dx / rng);
    const double r = dx - static_cast<double>(n) * rng;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
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
    combos *= taps;
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
          tap_idx[d] = pixel(static_cast<int64_t>(c), d);
          tap_w[d] = 1.0;
        } else {
          const double f = std::floor(c);
          const auto i0 = static_cast<int64_t>(f);
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
  const bool align = ctx.attrInt("align_corners", 0) != 0;
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

// ================================================================= RoiAlign

void inferRoiAlign(InferContext& ctx) {
  requireFloatInput(ctx, 0, "X");
  const DataType t = ctx.inputDtype(0);
  const Shape* xs = ctx.inputShape(0);
  const Shape* rs = ctx.inputShape(1);
  const Shape* bs = ctx.inputShape(2);
  if (xs != nullptr && xs->rank() != 4) ctx.fail("X must be 4-D");
  if (rs != nullptr && (rs->rank() != 2 || (rs->dims[1].isKnown() && rs->dims[1].value != 4))) {
    ctx.fail("rois must have shape [num_rois, 4]");
  }
  if (bs != nullptr && bs->rank() != 1) ctx.fail("batch_indices must be 1-D");
  const std::string mode = ctx.attrString("mode", "avg");
  if (mode != "avg" && mode != "max") ctx.unsupported("unsupported mode '" + mode + "'");
  if (ctx.opset() >= 16) {
    const std::string c = ctx.attrString("coordinate_transformation_mode", "half_pixel");
    if (c != "half_pixel" && c != "output_half_pixel") {
      ctx.unsupported("unsupported coordinate_transformation_mode '" + c + "'");
    }
  }
  Shape out;
  Dim n = dimOr(ctx, rs, 0);
  if (!n.isKnown() && bs != nullptr && bs->dims[0].isKnown()) n = bs->dims[0];
  out.dims.push_back(n);
  out.dims.push_back(dimOr(ctx, xs, 1));
  out.dims.push_back(Dim::known(ctx.attrInt("output_height", 1)));
  out.dims.push_back(Dim::known(ctx.attrInt("output_width", 1)));
  ctx.setOutput(0, t, std::move(out));
}

void computeRoiAlign(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const std::vector<double> x = toDoubles(ctx, X);
  const std::vector<double> rois = toDoubles(ctx, ctx.input(1));
  const std::vector<int64_t> bidx = toInt64Vector(ctx, ctx.input(2));
  Tensor& Y = ctx.output(0);
  const bool max_mode = ctx.attrString("mode", "avg") == "max";
  const bool half_pixel = ctx.opset() >= 16 && ctx.attrString("coordinate_transformation_mode",
                                                              "half_pixel") == "half_pixel";
  const int64_t ph_n = ctx.attrInt("output_height", 1), pw_n = ctx.attrInt("output_width", 1);
  const int64_t sampling = ctx.attrInt("sampling_ratio", 0);
  const double scale = ctx.attrFloat("spatial_scale", 1.0f);
  const int64_t N = X.dims()[0], C = X.dims()[1], H = X.dims()[2], W = X.dims()[3];
  const auto R = static_cast<int64_t>(bidx.size());
  if (static_cast<int64_t>(rois.size()) != R * 4) ctx.fail("rois and batch_indices disagree");
  std::vector<double> y(static_cast<size_t>(Y.numElements()), 0.0);
  struct Pre {
    int64_t pos[4];
    double w[4];
  };
  for (int64_t n = 0; n < R; ++n) {
    const int64_t b = bidx[static_cast<size_t>(n)];
    if (b < 0 || b >= N) ctx.fail("batch index out of range");
    const double off = half_pixel ? 0.5 : 0.0;
    const double* rp = rois.data() + n * 4;
    const double sw = rp[0] * scale - off, sh = rp[1] * scale - off;
    const double ew = rp[2] * scale - off, eh = rp[3] * scale - off;
    double rw = ew - sw, rh = eh - sh;
    if (!half_pixel) {  // malformed ROIs become 1x1
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / static_cast<double>(ph_n), bw = rw / static_cast<double>(pw_n);
    const int64_t gh =
        sampling > 0 ? sampling : static_cast<int64_t>(std::ceil(rh / static_cast<double>(ph_n)));
    const int64_t gw =
        sampling > 0 ? sampling : static_cast<int64_t>(std::ceil(rw / static_cast<double>(pw_n)));
    const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
    // Sample positions and bilinear weights, shared by every channel.
    std::vector<Pre> pre(static_cast<size_t>(std::max<int64_t>(ph_n * pw_n * gh * gw, 0)));
    size_t k = 0;
    for (int64_t ph = 0; ph < ph_n; ++ph) {
      for (int64_t pw = 0; pw < pw_n; ++pw) {
        for (int64_t iy = 0; iy < gh; ++iy) {
          const double yy = sh + static_cast<double>(ph) * bh +
                            (static_cast<double>(iy) + 0.5) * bh / static_cast<double>(gh);
          for (int64_t ix = 0; ix < gw; ++ix, ++k) {
            double xx = sw + static_cast<double>(pw) * bw +
                        (static_cast<double>(ix) + 0.5) * bw / static_cast<double>(gw);
            double yv = yy;
            Pre& pc = pre[k];
            if (yv < -1.0 || yv > static_cast<double>(H) || xx < -1.0 ||
                xx > static_cast<double>(W)) {
              pc = Pre{{0, 0, 0, 0}, {0, 0, 0, 0}};
              continue;
            }
            yv = std::max(yv, 0.0);
            xx = std::max(xx, 0.0);
            auto yl = static_cast<int64_t>(yv), xl = static_cast<int64_t>(xx);
            int64_t yh, xh;
            if (yl >= H - 1) {
              yh = yl = H - 1;
              yv = static_cast<double>(yl);
            } else {
              yh = yl + 1;
            }
            if (xl >= W - 1) {
              xh = xl = W - 1;
              xx = static_cast<double>(xl);
            } else {
              xh = xl + 1;
            }
            const double ly = yv - static_cast<double>(yl), lx = xx - static_cast<double>(xl);
            const double hy = 1 - ly, hx = 1 - lx;
            pc = Pre{{yl * W + xl, yl * W + xh, yh * W + xl, yh * W + xh},
                     {hy * hx, hy * lx, ly * hx, ly * lx}};
          }
        }
      }
    }
    for (int64_t c = 0; c < C; ++c) {
      const double* xp = x.data() + (b * C + c) * H * W;
      double* yp = y.data() + (n * C + c) * ph_n * pw_n;
      size_t q = 0;
      for (int64_t i = 0; i < ph_n * pw_n; ++i) {
        double v = 0;
        bool first = true;
        for (int64_t s = 0; s < gh * gw; ++s, ++q) {
          const Pre& pc = pre[q];
          if (!max_mode) {
            v += pc.w[0] * xp[pc.pos[0]] + pc.w[1] * xp[pc.pos[1]] + pc.w[2] * xp[pc.pos[2]] +
                 pc.w[3] * xp[pc.pos[3]];
          } else {
            // As the reference: the max of the weighted corner values.
            const double m = std::max(std::max(pc.w[0] * xp[pc.pos[0]], pc.w[1] * xp[pc.pos[1]]),
                                      std::max(pc.w[2] * xp[pc.pos[2]], pc.w[3] * xp[pc.pos[3]]));
            v = first ? m : std::max(v, m);
            first = false;
          }
        }
        yp[i] = max_mode ? v : v / count;
      }
    }
  }
  fromDoubles(ctx, Y, y);
}

// ================================================================= MaxRoiPool

void inferMaxRoiPool(InferContext& ctx) {
  requireFloatInput(ctx, 0, "X");
  const DataType t = ctx.inputDtype(0);
  const Shape* xs = ctx.inputShape(0);
  const Shape* rs = ctx.inputShape(1);
  if (xs != nullptr && xs->rank() != 4) ctx.fail("X must be 4-D");
  if (rs != nullptr && (rs->rank() != 2 || (rs->dims[1].isKnown() && rs->dims[1].value != 5))) {
    ctx.fail("rois must have shape [num_rois, 5]");
  }
  const std::vector<int64_t> pooled = ctx.attrInts("pooled_shape");
  if (pooled.size() != 2) ctx.fail("pooled_shape must have 2 values");
  Shape out;
  out.dims.push_back(dimOr(ctx, rs, 0));
  out.dims.push_back(dimOr(ctx, xs, 1));
  out.dims.push_back(Dim::known(pooled[0]));
  out.dims.push_back(Dim::known(pooled[1]));
  ctx.setOutput(0, t, std::move(out));
}

void computeMaxRoiPool(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const std::vector<double> x = toDoubles(ctx, X);
  const std::vector<double> rois = toDoubles(ctx, ctx.input(1));
  Tensor& Y = ctx.output(0);
  const std::vector<int64_t> pooled = ctx.attrInts("pooled_shape");
  const double scale = ctx.attrFloat("spatial_scale", 1.0f);
  const int64_t N = X.dims()[0], C = X.dims()[1], H = X.dims()[2], W = X.dims()[3];
  const int64_t PH = pooled[0], PW = pooled[1];
  const int64_t R = ctx.input(1).dims()[0];
  std::vector<double> y(static_cast<size_t>(Y.numElements()), 0.0);
  for (int64_t n = 0; n < R; ++n) {
    const double* rp = rois.data() + n * 5;
    const auto b = static_cast<int64_t>(rp[0]);
    if (b < 0 || b >= N) ctx.fail("roi batch index out of range");
    // Caffe RoIPool: corners are rounded to whole cells.
    const auto sw = static_cast<int64_t>(std::round(rp[1] * scale));
    const auto sh = static_cast<int64_t>(std::round(rp[2] * scale));
    const auto ew = static_cast<int64_t>(std::round(rp[3] * scale));
    const auto eh = static_cast<int64_t>(std::round(rp[4] * scale));
    const int64_t rh = std::max<int64_t>(eh - sh + 1, 1), rw = std::max<int64_t>(ew - sw + 1, 1);
    const double bh = static_cast<double>(rh) / static_cast<double>(PH);
    const double bw = static_cast<double>(rw) / static_cast<double>(PW);
    for (int64_t c = 0; c < C; ++c) {
      const double* xp = x.data() + (b * C + c) * H * W;
      for (int64_t ph = 0; ph < PH; ++ph) {
        for (int64_t pw = 0; pw < PW; ++pw) {
          int64_t hs = static_cast<int64_t>(std::floor(static_cast<double>(ph) * bh)) + sh;
          int64_t ws = static_cast<int64_t>(std::floor(static_cast<double>(pw) * bw)) + sw;
          int64_t he = static_cast<int64_t>(std::ceil(static_cast<double>(ph + 1) * bh)) + sh;
          int64_t we = static_cast<int64_t>(std::ceil(static_cast<double>(pw + 1) * bw)) + sw;
          hs = std::min(std::max<int64_t>(hs, 0), H);
          he = std::min(std::max<int64_t>(he, 0), H);
          ws = std::min(std::max<int64_t>(ws, 0), W);
          we = std::min(std::max<int64_t>(we, 0), W);
          double m = 0;
          if (he > hs && we > ws) {
            m = -std::numeric_limits<double>::infinity();
            for (int64_t h = hs; h < he; ++h)
              for (int64_t w = ws; w < we; ++w)
                m = std::max(m, xp[h * W + w]);
          }
          y[static_cast<size_t>(((n * C + c) * PH + ph) * PW + pw)] = m;
        }
      }
    }
  }
  fromDoubles(ctx, Y, y);
}

// ================================================================= NonMaxSuppression

// Selected [batch, class, box] triples, in the reference order.
template <class GetTensor>
std::vector<std::array<int64_t, 3>> runNms(const OpContext& ctx, GetTensor&& get) {
  const Tensor* boxes_t = get(0);
  const Tensor* scores_t = get(1);
  if (boxes_t->rank() != 3 || boxes_t->dims()[2] != 4) ctx.fail("boxes must be [B, N, 4]");
  if (scores_t->rank() != 3) ctx.fail("scores must be [B, C, N]");
  const int64_t B = boxes_t->dims()[0], NB = boxes_t->dims()[1], NC = scores_t->dims()[1];
  if (scores_t->dims()[0] != B || scores_t->dims()[2] != NB) {
    ctx.fail("boxes and scores disagree on batches or boxes");
  }
  const std::vector<double> boxes = toDoubles(ctx, *boxes_t);
  const std::vector<double> scores = toDoubles(ctx, *scores_t);
  int64_t max_out = 0;
  double iou_th = 0;
  bool has_score_th = false;
  double score_th = 0;
  if (const Tensor* t = get(2); t != nullptr && t->numElements() > 0) {
    max_out = std::max<int64_t>(toInt64Vector(ctx, *t)[0], 0);
  }
  if (const Tensor* t = get(3); t != nullptr && t->numElements() > 0) {
    iou_th = toDoubles(ctx, *t)[0];
  }
  if (const Tensor* t = get(4); t != nullptr && t->numElements() > 0) {
    has_score_th = true;
    score_th = toDoubles(ctx, *t)[0];
  }
  const bool center = ctx.attrInt("center_point_box", 0) != 0;
  // Corner form [ymin, xmin, ymax, xmax] of every box.
  std::vector<std::array<double, 4>> corners(static_cast<size_t>(B * NB));
  for (size_t i = 0; i < corners.size(); ++i) {
    const double* b = boxes.data() + i * 4;
    if (center) {
      corners[i] = {b[1] - b[3] / 2, b[0] - b[2] / 2, b[1] + b[3] / 2, b[0] + b[2] / 2};
    } else {
      corners[i] = {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]),
                    std::max(b[1], b[3])};
    }
  }
  auto suppress = [&](const std::array<double, 4>& a, const std::array<double, 4>& b) {
    const double ix0 = std::max(a[1], b[1]), ix1 = std::min(a[3], b[3]);
    if (ix1 <= ix0) return false;
    const double iy0 = std::max(a[0], b[0]), iy1 = std::min(a[2], b[2]);
    if (iy1 <= iy0) return false;
    const double inter = (ix1 - ix0) * (iy1 - iy0);
    const double a1 = (a[3] - a[1]) * (a[2] - a[0]);
    const double a2 = (b[3] - b[1]) * (b[2] - b[0]);
    const double uni = a1 + a2 - inter;
    if (inter <= 0 || a1 <= 0 || a2 <= 0 || uni <= 0) return false;
    return inter / uni > iou_th;
  };
  std::vector<std::array<int64_t, 3>> out;
  if (max_out == 0) return out;
  std::vector<int64_t> cand, sel;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t c = 0; c < NC; ++c) {
      const double* sc = scores.data() + (b * NC + c) * NB;
      cand.clear();
      for (int64_t i = 0; i < NB; ++i)
        if (!has_score_th || sc[i] > score_th) cand.push_back(i);
      // Highest score first; ties keep the lower box index first.
      std::stable_sort(cand.begin(), cand.end(),
                       [&](int64_t u, int64_t v) { return sc[u] > sc[v]; });
      sel.clear();
      for (int64_t i : cand) {
        if (static_cast<int64_t>(sel.size()) >= max_out) break;
        bool keep = true;
        for (int64_t s : sel) {
          if (suppress(corners[static_cast<size_t>(b * NB + i)],
                       corners[static_cast<size_t>(b * NB + s)])) {
            keep = false;
            break;
          }
        }
        if (keep) {
          sel.push_back(i);
          out.push_back({b, c, i});
        }
      }
    }
  }
  return out;
}

void inferNms(InferContext& ctx) {
  const Shape* bs = ctx.inputShape(0);
  const Shape* ss = ctx.inputShape(1);
  if (bs != nullptr && bs->rank() != 3) ctx.fail("boxes must be 3-D");
  if (ss != nullptr && ss->rank() != 3) ctx.fail("scores must be 3-D");
  if (ctx.allInputValuesKnown() && ctx.hasInput(0) && ctx.hasInput(1)) {
    // The count depends on the values: run the selection now.
    const auto sel = runNms(ctx, [&](size_t i) { return ctx.inputValue(i); });
    ctx.setOutput(0, DataType::kInt64, std::vector<int64_t>{static_cast<int64_t>(sel.size()), 3});
    return;
  }
  Shape out;
  out.dims.push_back(ctx.newSymbol());
  out.dims.push_back(Dim::known(3));
  ctx.setOutput(0, DataType::kInt64, std::move(out));
}

void computeNms(ComputeContext& ctx) {
  const auto sel = runNms(ctx, [&](size_t i) { return ctx.hasInput(i) ? &ctx.input(i) : nullptr; });
  Tensor& Y = ctx.output(0);
  if (Y.numElements() != static_cast<int64_t>(sel.size() * 3)) {
    ctx.fail("selected count does not match the inferred shape");
  }
  auto* p = mutableDataAs<int64_t>(Y);
  for (size_t i = 0; i < sel.size(); ++i)
    for (size_t j = 0; j < 3; ++j)
      p[i * 3 + j] = sel[i][j];
}

}  // namespace
}  // namespace kernels

void registerImageOps(OpRegistry& r) {
  using namespace kernels;
  for (int v : {10, 11, 13, 18, 19})
    r.add({"", "Resize", v, inferResize, computeResize});
  for (int v : {16, 20, 22})
    r.add({"", "GridSample", v, inferGridSample, computeGridSample});
  r.add({"", "AffineGrid", 20, inferAffineGrid, computeAffineGrid});
  for (int v : {10, 16, 22})
    r.add({"", "RoiAlign", v, inferRoiAlign, computeRoiAlign});
  for (int v : {1, 22})
    r.add({"", "MaxRoiPool", v, inferMaxRoiPool, computeMaxRoiPool});
  for (int v : {10, 11})
    r.add({"", "NonMaxSuppression", v, inferNms, computeNms});
}

}  // namespace onnxfold

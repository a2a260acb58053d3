// Reduce op family: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd,
// ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare, and the
// softmax family (Softmax, LogSoftmax, Hardmax).
//
// Every reduction is computed as a row reduction: when the reduced axes are
// not already the innermost ones, the input is first permuted into a scratch
// buffer (kept axes first), so each output element reduces one contiguous row.
// float32 rows use Highway kernels (sum, |x| sum, sum of squares, max, min,
// shifted exp sum, softmax rows); each has a scalar reference beside it in
// reduce_simd, which reduce_test.cpp compares against. 16-bit floats compute in
// float, integers in 64-bit.
//
// Versions: the `axes` attribute became an input at opset 13 for ReduceSum
// and at 18 for the others (with noop_with_empty_axes); softmax-family ops
// coerce the input to 2-D at `axis` before opset 13 and work along one axis after.
#include "kernels/reduce.h"

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>

#include "kernels/common.h"
#include "kernels/elementwise.h"
#include "kernels/float_math.h"

namespace onnxfold {
namespace kernels::reduce_simd {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;

// exp() arguments are clamped here: exp(-88) is already below float's normal
// range, and Highway's Exp is only specified for finite inputs.
constexpr float kExpFloor = -88.0f;

// ---------------------------------------------------------------- scalar references

float sumScalar(const float* x, size_t n) {
  float s = 0;
  for (size_t i = 0; i < n; ++i)
    s += x[i];
  return s;
}
float sumAbsScalar(const float* x, size_t n) {
  float s = 0;
  for (size_t i = 0; i < n; ++i)
    s += std::fabs(x[i]);
  return s;
}
float sumSquaresScalar(const float* x, size_t n) {
  float s = 0;
  for (size_t i = 0; i < n; ++i)
    s += x[i] * x[i];
  return s;
}
float maxScalar(const float* x, size_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < n; ++i)
    m = std::max(m, x[i]);
  return m;
}
float minScalar(const float* x, size_t n) {
  float m = std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < n; ++i)
    m = std::min(m, x[i]);
  return m;
}
float sumExpShiftedScalar(const float* x, size_t n, float shift) {
  float s = 0;
  for (size_t i = 0; i < n; ++i)
    s += fm::exp(x[i] - shift);
  return s;
}
void softmaxScalar(const float* x, float* y, size_t n) {
  const float m = maxScalar(x, n);
  float s = 0;
  for (size_t i = 0; i < n; ++i) {
    y[i] = fm::exp(x[i] - m);
    s += y[i];
  }
  for (size_t i = 0; i < n; ++i)
    y[i] /= s;
}
void logSoftmaxScalar(const float* x, float* y, size_t n) {
  const float m = maxScalar(x, n);
  const float c = m + fm::log(sumExpShiftedScalar(x, n, m));
  for (size_t i = 0; i < n; ++i)
    y[i] = x[i] - c;
}

// ---------------------------------------------------------------- Highway kernels

// Four independent accumulators hide the add latency; the tail is scalar.
template <class Map>
HWY_INLINE float sumMapped(const float* x, size_t n, Map map) {
  const DF d;
  const size_t N = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    a0 = hn::Add(a0, map(d, hn::LoadU(d, x + i)));
    a1 = hn::Add(a1, map(d, hn::LoadU(d, x + i + N)));
    a2 = hn::Add(a2, map(d, hn::LoadU(d, x + i + 2 * N)));
    a3 = hn::Add(a3, map(d, hn::LoadU(d, x + i + 3 * N)));
  }
  for (; i + N <= n; i += N)
    a0 = hn::Add(a0, map(d, hn::LoadU(d, x + i)));
  float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < n; ++i)
    s += hn::GetLane(map(hn::CappedTag<float, 1>(), hn::Set(hn::CappedTag<float, 1>(), x[i])));
  return s;
}

float sum(const float* x, size_t n) {
  return sumMapped(x, n, [](auto, auto v) { return v; });
}
float sumAbs(const float* x, size_t n) {
  return sumMapped(x, n, [](auto, auto v) { return hn::Abs(v); });
}
float sumSquares(const float* x, size_t n) {
  return sumMapped(x, n, [](auto, auto v) { return hn::Mul(v, v); });
}
float sumExpShifted(const float* x, size_t n, float shift) {
  return sumMapped(x, n, [shift](auto d, auto v) {
    return hn::Exp(d, hn::Max(hn::Sub(v, hn::Set(d, shift)), hn::Set(d, kExpFloor)));
  });
}

template <bool kMax>
HWY_INLINE float extremum(const float* x, size_t n) {
  const DF d;
  const size_t N = hn::Lanes(d);
  if (n < N) return kMax ? maxScalar(x, n) : minScalar(x, n);
  auto a0 = hn::LoadU(d, x), a1 = a0;
  size_t i = N;
  for (; i + 2 * N <= n; i += 2 * N) {
    a0 = kMax ? hn::Max(a0, hn::LoadU(d, x + i)) : hn::Min(a0, hn::LoadU(d, x + i));
    a1 = kMax ? hn::Max(a1, hn::LoadU(d, x + i + N)) : hn::Min(a1, hn::LoadU(d, x + i + N));
  }
  // The last (possibly overlapping) vector covers the tail without scalar code.
  const auto last = hn::LoadU(d, x + n - N);
  a0 = kMax ? hn::Max(hn::Max(a0, a1), last) : hn::Min(hn::Min(a0, a1), last);
  for (; i + N <= n; i += N)
    a0 = kMax ? hn::Max(a0, hn::LoadU(d, x + i)) : hn::Min(a0, hn::LoadU(d, x + i));
  return hn::GetLane(kMax ? hn::MaxOfLanes(d, a0) : hn::MinOfLanes(d, a0));
}

float max(const float* x, size_t n) {
  return extremum<true>(x, n);
}
float min(const float* x, size_t n) {
  return extremum<false>(x, n);
}

void softmax(const float* x, float* y, size_t n) {
  const DF d;
  const size_t N = hn::Lanes(d);
  const float m = max(x, n);
  const auto vm = hn::Set(d, m);
  const auto floor = hn::Set(d, kExpFloor);
  auto acc = hn::Zero(d);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto e = hn::Exp(d, hn::Max(hn::Sub(hn::LoadU(d, x + i), vm), floor));
    hn::StoreU(e, d, y + i);
    acc = hn::Add(acc, e);
  }
  float s = hn::GetLane(hn::SumOfLanes(d, acc));
  for (; i < n; ++i) {
    y[i] = fm::exp(std::max(x[i] - m, kExpFloor));
    s += y[i];
  }
  const float inv = 1.0f / s;
  const auto vinv = hn::Set(d, inv);
  for (i = 0; i + N <= n; i += N)
    hn::StoreU(hn::Mul(hn::LoadU(d, y + i), vinv), d, y + i);
  for (; i < n; ++i)
    y[i] *= inv;
}

void logSoftmax(const float* x, float* y, size_t n) {
  const DF d;
  const size_t N = hn::Lanes(d);
  const float m = max(x, n);
  const float c = m + fm::log(sumExpShifted(x, n, m));
  const auto vc = hn::Set(d, c);
  size_t i = 0;
  for (; i + N <= n; i += N)
    hn::StoreU(hn::Sub(hn::LoadU(d, x + i), vc), d, y + i);
  for (; i < n; ++i)
    y[i] = x[i] - c;
}

}  // namespace kernels::reduce_simd

namespace {

using namespace kernels;
using kernels::elementwise::wrapAdd;
using kernels::elementwise::wrapMul;
using kernels::elementwise::wrapNeg;
namespace simd = kernels::reduce_simd;

enum class ROp { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

ROp reduceOpOf(const OpContext& ctx) {
  const std::string_view t = ctx.opType();
  if (t == "ReduceSum") return ROp::kSum;
  if (t == "ReduceMean") return ROp::kMean;
  if (t == "ReduceMax") return ROp::kMax;
  if (t == "ReduceMin") return ROp::kMin;
  if (t == "ReduceProd") return ROp::kProd;
  if (t == "ReduceL1") return ROp::kL1;
  if (t == "ReduceL2") return ROp::kL2;
  if (t == "ReduceLogSum") return ROp::kLogSum;
  if (t == "ReduceLogSumExp") return ROp::kLogSumExp;
  if (t == "ReduceSumSquare") return ROp::kSumSquare;
  ctx.fail("internal: not a reduce op");
}

// The opset from which `axes` is an input instead of an attribute.
int64_t axesInputSince(ROp op) {
  return op == ROp::kSum ? 13 : 18;
}

// Which axes are reduced. `known` is false when the axes input has no value.
struct ReduceAxes {
  bool known = true;
  bool noop = false;  // empty axes with noop_with_empty_axes: the output is the input
  std::vector<bool> reduced;
};

ReduceAxes readReduceAxes(const OpContext& ctx, int64_t rank, bool axes_present,
                          const Tensor* axes_value) {
  ReduceAxes ra;
  std::vector<int64_t> axes;
  if (ctx.opset() < axesInputSince(reduceOpOf(ctx))) {
    axes = ctx.attrInts("axes");
  } else {
    if (axes_present && axes_value == nullptr) {
      ra.known = false;
      return ra;
    }
    if (axes_value != nullptr) axes = toInt64Vector(ctx, *axes_value);
    if (axes.empty() && ctx.attrInt("noop_with_empty_axes") != 0) {
      ra.noop = true;
      ra.reduced.assign(static_cast<size_t>(rank), false);
      return ra;
    }
  }
  ra.reduced.assign(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) {
    const auto k = static_cast<size_t>(normalizeAxis(ctx, a, rank));
    if (ra.reduced[k]) ctx.fail("axes must not repeat");
    ra.reduced[k] = true;
  }
  return ra;
}

void inferReduce(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  const Shape* xs = ctx.inputShape(0);
  if (xs == nullptr) {
    ctx.setOutputUnknownRank(0, dt);
    return;
  }
  const bool keep = ctx.attrInt("keepdims") != 0;
  const bool input_axes = ctx.opset() >= axesInputSince(reduceOpOf(ctx));
  // An axes input of static shape [0] is known to be empty even without its value.
  const Shape* as = input_axes ? ctx.inputShape(1) : nullptr;
  const bool axes_empty =
      as != nullptr && as->rank() == 1 && as->dims[0].isKnown() && as->dims[0].value == 0;
  const ReduceAxes ra = readReduceAxes(ctx, static_cast<int64_t>(xs->rank()),
                                       input_axes && ctx.hasInput(1) && !axes_empty,
                                       input_axes && !axes_empty ? ctx.inputValue(1) : nullptr);
  if (!ra.known) {
    // Unknown axes: with keepdims the rank stays, and only dims of 1 are certain.
    if (!keep) {
      // Without keepdims the rank drops by the number of axes, when that is known.
      const bool count_known = as != nullptr && as->rank() == 1 && as->dims[0].isKnown() &&
                               as->dims[0].value <= static_cast<int64_t>(xs->rank());
      if (!count_known) {
        ctx.setOutputUnknownRank(0, dt);
        return;
      }
      Shape out;
      for (int64_t k = as->dims[0].value; k < static_cast<int64_t>(xs->rank()); ++k)
        out.dims.push_back(ctx.newSymbol());
      ctx.setOutput(0, dt, out);
      return;
    }
    Shape out = *xs;
    for (Dim& d : out.dims) {
      if (!(d.isKnown() && d.value == 1)) d = ctx.newSymbol();
    }
    ctx.setOutput(0, dt, out);
    return;
  }
  Shape out;
  for (size_t a = 0; a < xs->rank(); ++a) {
    if (!ra.reduced[a])
      out.dims.push_back(xs->dims[a]);
    else if (keep)
      out.dims.push_back(Dim::known(1));
  }
  ctx.setOutput(0, dt, out);
}

template <class T>
using WorkT = std::conditional_t<
    std::is_same_v<T, float> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float,
    std::conditional_t<
        std::is_same_v<T, double>, double,
        std::conditional_t<std::is_unsigned_v<T> && !std::is_same_v<T, bool>, uint64_t, int64_t>>>;

// Result of reducing an empty row.
template <class W>
W emptyReduction(ROp op) {
  constexpr bool kFloat = std::is_floating_point_v<W>;
  constexpr W kInf = kFloat ? std::numeric_limits<W>::infinity() : std::numeric_limits<W>::max();
  constexpr W kNegInf =
      kFloat ? -std::numeric_limits<W>::infinity() : std::numeric_limits<W>::lowest();
  switch (op) {
    case ROp::kProd:
      return W(1);
    case ROp::kMax:
    case ROp::kLogSum:
    case ROp::kLogSumExp:
      return kNegInf;
    case ROp::kMin:
      return kInf;
    case ROp::kMean:
      return kFloat ? std::numeric_limits<W>::quiet_NaN() : W(0);
    default:
      return W(0);
  }
}

// Reduces one non-empty row of work-type values.
template <class W>
W reduceRow(ROp op, const W* x, size_t n) {
  if constexpr (std::is_same_v<W, float>) {
    switch (op) {
      case ROp::kSum:
        return simd::sum(x, n);
      case ROp::kMean:
        return simd::sum(x, n) / static_cast<float>(n);
      case ROp::kMax:
        return simd::max(x, n);
      case ROp::kMin:
        return simd::min(x, n);
      case ROp::kL1:
        return simd::sumAbs(x, n);
      case ROp::kL2:
        return std::sqrt(simd::sumSquares(x, n));
      case ROp::kSumSquare:
        return simd::sumSquares(x, n);
      case ROp::kLogSum:
        return fm::log(simd::sum(x, n));
      case ROp::kLogSumExp: {
        const float m = simd::max(x, n);
        if (std::isinf(m)) return m;
        return m + fm::log(simd::sumExpShifted(x, n, m));
      }
      case ROp::kProd:
        break;
    }
  }
  W acc{};
  switch (op) {
    case ROp::kSum:
    case ROp::kMean:
      for (size_t i = 0; i < n; ++i)
        acc = wrapAdd(acc, x[i]);
      return op == ROp::kMean ? static_cast<W>(acc / static_cast<W>(n)) : acc;
    case ROp::kMax:
      acc = x[0];
      for (size_t i = 1; i < n; ++i)
        acc = std::max(acc, x[i]);
      return acc;
    case ROp::kMin:
      acc = x[0];
      for (size_t i = 1; i < n; ++i)
        acc = std::min(acc, x[i]);
      return acc;
    case ROp::kProd:
      acc = W(1);
      for (size_t i = 0; i < n; ++i)
        acc = wrapMul(acc, x[i]);
      return acc;
    case ROp::kL1:
      for (size_t i = 0; i < n; ++i) {
        if constexpr (std::is_unsigned_v<W>)
          acc = wrapAdd(acc, x[i]);
        else
          acc = wrapAdd(acc, x[i] < 0 ? wrapNeg(x[i]) : x[i]);
      }
      return acc;
    case ROp::kL2:
    case ROp::kSumSquare:
      for (size_t i = 0; i < n; ++i)
        acc = wrapAdd(acc, wrapMul(x[i], x[i]));
      // A wrapped negative integer sum gives NaN: fromDouble keeps that defined.
      return op == ROp::kL2 ? fromDouble<W>(std::sqrt(static_cast<double>(acc))) : acc;
    case ROp::kLogSum:
      for (size_t i = 0; i < n; ++i)
        acc = wrapAdd(acc, x[i]);
      return fromDouble<W>(fm::log(static_cast<double>(acc)));  // -inf, NaN on integers
    case ROp::kLogSumExp: {
      double m = static_cast<double>(x[0]);
      for (size_t i = 1; i < n; ++i)
        m = std::max(m, static_cast<double>(x[i]));
      if (std::isinf(m)) return static_cast<W>(m);
      double s = 0;
      for (size_t i = 0; i < n; ++i)
        s += fm::exp(static_cast<double>(x[i]) - m);
      return fromDouble<W>(m + fm::log(s));  // near INT64_MAX it rounds out of range
    }
  }
  return acc;
}

template <class T>
constexpr bool kIsHalf = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <class T, class W>
T fromWork(W w) {
  if constexpr (kIsHalf<T>)
    return fromDouble<T>(static_cast<double>(w));
  else
    return static_cast<T>(w);
}

// out[r] = reduce(in[r*n .. r*n+n)) for every row.
template <class T>
void reduceRows(ROp op, const T* in, T* out, int64_t rows, int64_t n) {
  using W = WorkT<T>;
  if (n == 0) {
    for (int64_t r = 0; r < rows; ++r)
      out[r] = fromWork<T>(emptyReduction<W>(op));
    return;
  }
  std::vector<W> buf;
  if constexpr (!std::is_same_v<T, W>) buf.resize(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    const T* x = in + r * n;
    const W* w;
    if constexpr (std::is_same_v<T, W>) {
      w = x;
    } else {
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (kIsHalf<T>)
          buf[static_cast<size_t>(i)] = static_cast<float>(toDouble(x[i]));
        else
          buf[static_cast<size_t>(i)] = static_cast<W>(x[i]);
      }
      w = buf.data();
    }
    out[r] = fromWork<T>(reduceRow<W>(op, w, static_cast<size_t>(n)));
  }
}

void computeReduce(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  const ROp op = reduceOpOf(ctx);
  const auto& xd = x.dims();
  const size_t r = xd.size();
  const bool input_axes = ctx.opset() >= axesInputSince(op);
  const ReduceAxes ra = readReduceAxes(ctx, static_cast<int64_t>(r), input_axes && ctx.hasInput(1),
                                       input_axes && ctx.hasInput(1) ? &ctx.input(1) : nullptr);
  // Kept axes first, reduced axes last; dims of 1 do not affect the order.
  std::vector<size_t> perm;
  for (size_t a = 0; a < r; ++a) {
    if (!ra.reduced[a]) perm.push_back(a);
  }
  const int64_t rows = [&] {
    int64_t p = 1;
    for (size_t a : perm)
      p *= xd[a];
    return p;
  }();
  for (size_t a = 0; a < r; ++a) {
    if (ra.reduced[a]) perm.push_back(a);
  }
  const int64_t total = x.numElements();
  const int64_t n = rows == 0 ? 0 : total / rows;
  bool in_order = true;
  size_t last = 0;
  bool first = true;
  for (size_t a : perm) {
    if (xd[a] == 1) continue;
    if (!first && a < last) in_order = false;
    last = a;
    first = false;
  }
  const bool ok = dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = dataAs<T>(x);
    T* o = mutableDataAs<T>(out);
    std::unique_ptr<T[]> scratch;  // not std::vector: vector<bool> has no data()
    if (!in_order) {
      std::vector<int64_t> pdims, pstrides;
      std::vector<int64_t> strides(r, 1);
      for (size_t a = r; a-- > 1;)
        strides[a - 1] = strides[a] * xd[a];
      for (size_t a : perm) {
        pdims.push_back(xd[a]);
        pstrides.push_back(strides[a]);
      }
      scratch.reset(new T[static_cast<size_t>(total)]);
      forEachBroadcast(pdims, {pstrides}, [&](int64_t i, const std::vector<int64_t>& off) {
        scratch[i] = in[off[0]];
      });
      in = scratch.get();
    }
    reduceRows(op, in, o, rows, n);
  });
  if (!ok)
    ctx.unsupported("element type " + std::string(dataTypeName(x.dtype())) + " is not supported");
}

// ---------------------------------------------------------------- softmax family

enum class SOp { kSoftmax, kLogSoftmax, kHardmax };

SOp softOpOf(const OpContext& ctx) {
  const std::string_view t = ctx.opType();
  if (t == "Softmax") return SOp::kSoftmax;
  if (t == "LogSoftmax") return SOp::kLogSoftmax;
  return SOp::kHardmax;
}

// Before opset 13 the input is coerced to 2-D [prod(d[:axis]), prod(d[axis:])].
int64_t softAxis(const OpContext& ctx, int64_t rank) {
  const bool legacy = ctx.opset() < 13;
  const int64_t axis = ctx.attrInt("axis");
  if (legacy && rank == 0) return 0;
  // Legacy axis may equal rank (coerce to [N, 1]).
  if (legacy && (axis == rank)) return rank;
  return normalizeAxis(ctx, axis, rank);
}

void inferSoft(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  const Shape* xs = ctx.inputShape(0);
  if (xs == nullptr) {
    ctx.setOutputUnknownRank(0, dt);
    return;
  }
  softAxis(ctx, static_cast<int64_t>(xs->rank()));
  ctx.setOutput(0, dt, *xs);
}

// One row of n values in float or double.
template <class W>
void softRow(SOp op, const W* x, W* y, size_t n) {
  if (n == 0) return;
  if (op == SOp::kHardmax) {
    size_t best = 0;
    for (size_t i = 1; i < n; ++i) {
      if (x[i] > x[best]) best = i;
    }
    for (size_t i = 0; i < n; ++i)
      y[i] = i == best ? W(1) : W(0);
    return;
  }
  if constexpr (std::is_same_v<W, float>) {
    if (op == SOp::kSoftmax)
      simd::softmax(x, y, n);
    else
      simd::logSoftmax(x, y, n);
  } else {
    W m = x[0];
    for (size_t i = 1; i < n; ++i)
      m = std::max(m, x[i]);
    W s = 0;
    for (size_t i = 0; i < n; ++i)
      s += fm::exp(x[i] - m);
    for (size_t i = 0; i < n; ++i)
      y[i] = op == SOp::kSoftmax ? fm::exp(x[i] - m) / s : x[i] - m - fm::log(s);
  }
}

void computeSoft(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  const SOp op = softOpOf(ctx);
  const auto& xd = x.dims();
  const auto axis = static_cast<size_t>(softAxis(ctx, static_cast<int64_t>(xd.size())));
  int64_t outer, n, inner;
  if (ctx.opset() < 13) {
    outer = product(xd, 0, axis);
    n = product(xd, axis, xd.size());
    inner = 1;
  } else {
    outer = product(xd, 0, axis);
    n = xd.empty() ? 1 : xd[axis];
    inner = xd.empty() ? 1 : product(xd, axis + 1, xd.size());
  }
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    using W = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* in = dataAs<T>(x);
    T* o = mutableDataAs<T>(out);
    // Contiguous float rows go straight through; others are gathered first.
    const bool direct = std::is_same_v<T, W> && inner == 1;
    std::vector<W> xs(direct ? 0 : static_cast<size_t>(n)), ys(direct ? 0 : static_cast<size_t>(n));
    for (int64_t b = 0; b < outer; ++b) {
      for (int64_t j = 0; j < inner; ++j) {
        const int64_t base = b * n * inner + j;
        if constexpr (std::is_same_v<T, W>) {
          if (direct) {
            softRow<W>(op, in + base, o + base, static_cast<size_t>(n));
            continue;
          }
        }
        for (int64_t i = 0; i < n; ++i)
          xs[static_cast<size_t>(i)] = static_cast<W>(toDouble(in[base + i * inner]));
        softRow<W>(op, xs.data(), ys.data(), static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i)
          o[base + i * inner] = fromDouble<T>(static_cast<double>(ys[static_cast<size_t>(i)]));
      }
    }
  };
  switch (x.dtype()) {
    case DataType::kFloat:
      run(Tag<float>{});
      break;
    case DataType::kDouble:
      run(Tag<double>{});
      break;
    case DataType::kFloat16:
      run(Tag<Half>{});
      break;
    case DataType::kBfloat16:
      run(Tag<BFloat16>{});
      break;
    default:
      ctx.unsupported("element type " + std::string(dataTypeName(x.dtype())) + " is not supported");
  }
}

}  // namespace

void registerReduceOps(OpRegistry& r) {
  for (const char* op : {"ReduceMean", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
                         "ReduceLogSumExp", "ReduceSumSquare"}) {
    for (int v : {1, 11, 13, 18})
      r.add({"", op, v, inferReduce, computeReduce});
  }
  for (int v : {1, 11, 13})
    r.add({"", "ReduceSum", v, inferReduce, computeReduce});
  for (const char* op : {"ReduceMax", "ReduceMin"}) {
    for (int v : {1, 11, 12, 13, 18, 20})
      r.add({"", op, v, inferReduce, computeReduce});
  }
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    for (int v : {1, 11, 13})
      r.add({"", op, v, inferSoft, computeSoft});
  }
}

}  // namespace onnxfold

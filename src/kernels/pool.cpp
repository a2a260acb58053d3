// pool op family: AveragePool, MaxPool (with indices), LpPool, the Global*Pool
// ops and MaxUnpool. See op_registry.h for the infer()/compute() contract.
// The windowed pools share Conv's geometry (conv_geometry.h) and accumulate in
// double.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/common.h"
#include "kernels/conv_geometry.h"
#include "kernels/float_math.h"
#include "kernels/op_helpers.h"

namespace onnxfold {
namespace kernels {
namespace {

enum class PoolKind { kAverage, kMax, kLp };

// One instance per kind: the registry takes plain functions.
template <PoolKind kind>
void inferPool(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  if (kind == PoolKind::kMax) {
    requireType(ctx, 0,
                t == DataType::kUndefined || isFloatType(t) || t == DataType::kInt8 ||
                    t == DataType::kUint8,
                "a float type, int8 or uint8");
  } else {
    requireType(ctx, 0, t == DataType::kUndefined || isFloatType(t), "a float type");
  }
  const Shape* x = ctx.inputShape(0);
  if (x == nullptr) {
    ctx.setOutputUnknownRank(0, t);
    if (ctx.numOutputs() > 1) ctx.setOutputUnknownRank(1, DataType::kInt64);
    return;
  }
  if (x->rank() < 3) ctx.fail("X must have rank >= 3 (N, C, spatial...)");
  const std::vector<int64_t> kernel = ctx.attrInts("kernel_shape");
  if (kernel.size() != x->rank() - 2) ctx.fail("kernel_shape must have one value per spatial axis");
  // AveragePool has dilations from opset 19, MaxPool from 10, LpPool from 18.
  const Geom g = makeGeom(ctx, spatialDims(*x), kernel, ctx.attrInt("ceil_mode", 0) != 0);
  const Shape s = spatialOutputShape(x->dims[0], x->dims[1], g);
  ctx.setOutput(0, t, s);
  if (ctx.numOutputs() > 1) ctx.setOutput(1, DataType::kInt64, s);
}

// LpPool's p (2 when absent), an int attribute or a float one.
double lpOrder(const OpContext& ctx) {
  const Attribute* pa = ctx.attr("p");
  if (pa == nullptr) return 2.0;
  return pa->type == AttrType::kFloat ? pa->f : static_cast<double>(pa->i);
}

template <class T>
void poolImpl(ComputeContext& ctx, PoolKind kind, const Geom& g) {
  const Tensor& X = ctx.input(0);
  Tensor& Y = ctx.output(0);
  Tensor* I = ctx.hasOutput(1) ? &ctx.output(1) : nullptr;
  const T* x = dataAs<T>(X);
  T* y = mutableDataAs<T>(Y);
  const size_t nd = g.rank();
  const int64_t planes = X.dims()[0] * X.dims()[1];
  const int64_t isize = product(g.in, 0, nd), osize = product(g.out, 0, nd);
  // -pad_b and in + pad_e below: hostile pads (INT64_MIN, INT64_MAX) must fail, not overflow.
  for (size_t d = 0; d < nd; ++d) {
    geomMul(ctx, g.pad_b[d], -1);
    geomAdd(ctx, g.in[d], g.pad_e[d]);
  }
  const int64_t ksize = product(g.kernel, 0, nd);
  const bool include_pad = ctx.attrInt("count_include_pad", 0) != 0;
  const bool col_major = ctx.attrInt("storage_order", 0) != 0;
  const double p = lpOrder(ctx);  // read by LpPool only
  std::vector<int64_t> rstride(nd, 1), cstride(nd, 1);
  // Checked: an empty X's spatial dims may multiply out of int64 from either end.
  for (size_t d = nd - 1; d-- > 0;)
    rstride[d] = geomMul(ctx, rstride[d + 1], g.in[d + 1]);
  for (size_t d = 1; d < nd; ++d)
    cstride[d] = geomMul(ctx, cstride[d - 1], g.in[d - 1]);
  std::vector<int64_t> oi(nd), kk(nd), start(nd);
  for (int64_t plane = 0; plane < planes; ++plane) {
    const T* xp = x + plane * isize;
    std::fill(oi.begin(), oi.end(), 0);
    for (int64_t o = 0; o < osize; ++o) {
      for (size_t d = 0; d < nd; ++d)
        start[d] = oi[d] * g.strides[d] - g.pad_b[d];
      double acc = kind == PoolKind::kMax ? -std::numeric_limits<double>::infinity() : 0.0;
      int64_t best = -1, count = 0, padded_count = 0;
      std::fill(kk.begin(), kk.end(), 0);
      for (int64_t k = 0; k < ksize; ++k) {
        bool inside = true, in_padded = true;
        int64_t off = 0, coff = 0;
        for (size_t d = 0; d < nd; ++d) {
          const int64_t id = start[d] + kk[d] * g.dilations[d];
          if (id < -g.pad_b[d] || id >= g.in[d] + g.pad_e[d]) in_padded = false;
          if (id < 0 || id >= g.in[d]) {
            inside = false;  // offsets only matter inside (a far padding id could overflow)
            continue;
          }
          off += id * rstride[d];
          coff += id * cstride[d];
        }
        if (in_padded) ++padded_count;
        if (inside) {
          const double v = toDouble(xp[off]);
          ++count;
          if (kind == PoolKind::kMax) {
            if (v > acc || best < 0) {
              if (!(std::isnan(v) && best >= 0)) {
                acc = v;
                best = col_major ? coff : off;
              }
            }
          } else if (kind == PoolKind::kAverage) {
            acc += v;
          } else {
            acc += fm::pow(std::fabs(v), p);
          }
        }
        for (size_t d = nd; d-- > 0;) {
          if (++kk[d] < g.kernel[d]) break;
          kk[d] = 0;
        }
      }
      double out = acc;
      if (kind == PoolKind::kAverage) {
        const int64_t div = include_pad ? padded_count : count;
        out = div > 0 ? acc / static_cast<double>(div) : std::nan("");
      } else if (kind == PoolKind::kLp) {
        out = fm::pow(acc, 1.0 / p);
      }
      y[plane * osize + o] = fromDouble<T>(out);
      if (I != nullptr) mutableDataAs<int64_t>(*I)[plane * osize + o] = plane * isize + best;
      for (size_t d = nd; d-- > 0;) {
        if (++oi[d] < g.out[d]) break;
        oi[d] = 0;
      }
    }
  }
}

template <PoolKind kind>
void computePool(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const std::vector<int64_t> in(X.dims().begin() + 2, X.dims().end());
  const Geom g = makeGeom(ctx, in, ctx.attrInts("kernel_shape"), ctx.attrInt("ceil_mode", 0) != 0);
  if (!dispatchNumeric(X.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, bool>) {
          ctx.unsupported("bool is not supported");
        } else {
          poolImpl<T>(ctx, kind, g);
        }
      })) {
    ctx.unsupported("unsupported type");
  }
}

void inferGlobalPool(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  requireType(ctx, 0, t == DataType::kUndefined || isFloatType(t), "a float type");
  const Shape* x = ctx.inputShape(0);
  if (x == nullptr) {
    ctx.setOutputUnknownRank(0, t);
    return;
  }
  if (x->rank() < 2) ctx.fail("X must have rank >= 2");
  Shape s = *x;
  for (size_t i = 2; i < s.rank(); ++i)
    s.dims[i] = Dim::known(1);
  ctx.setOutput(0, t, s);
}

// The Global*Pool ops: one window over all spatial axes of each plane. GlobalLpPool (opset 2)
// gives (sum |x|^p)^(1/p).
template <PoolKind kind>
void computeGlobalPool(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  Tensor& Y = ctx.output(0);
  const int64_t planes = X.dims()[0] * X.dims()[1];
  const int64_t size = product(X.dims(), 2, X.rank());
  const double p = lpOrder(ctx);  // read by GlobalLpPool only
  dispatchNumeric(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      const T* x = dataAs<T>(X);
      T* y = mutableDataAs<T>(Y);
      for (int64_t pl = 0; pl < planes; ++pl) {
        double acc = kind == PoolKind::kMax ? -std::numeric_limits<double>::infinity() : 0.0;
        for (int64_t i = 0; i < size; ++i) {
          const double v = toDouble(x[pl * size + i]);
          if (kind == PoolKind::kMax) {
            acc = (v > acc || std::isnan(v)) ? v : acc;
          } else if (kind == PoolKind::kLp) {
            acc += fm::pow(std::fabs(v), p);
          } else {
            acc += v;
          }
        }
        if (kind == PoolKind::kLp) {
          y[pl] = fromDouble<T>(fm::pow(acc, 1.0 / p));
        } else {
          y[pl] = fromDouble<T>(kind == PoolKind::kMax ? acc : acc / static_cast<double>(size));
        }
      }
    }
  });
}

// ================================================================= MaxUnpool

// (in - 1) * stride - pad_b - pad_e + kernel, failing instead of overflowing on hostile
// attributes (pads of INT64_MIN cannot be negated either).
int64_t unpooledDim(const OpContext& ctx, int64_t in, int64_t stride, int64_t pad_b, int64_t pad_e,
                    int64_t kernel) {
  int64_t v = geomMul(ctx, in - 1, stride);
  v = geomAdd(ctx, v, geomMul(ctx, pad_b, -1));
  v = geomAdd(ctx, v, geomMul(ctx, pad_e, -1));
  return geomAdd(ctx, v, kernel);
}

void inferMaxUnpool(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  requireType(ctx, 0, t == DataType::kUndefined || isFloatType(t), "a float type");
  const Shape* x = ctx.inputShape(0);
  if (ctx.hasInput(2)) {
    if (const Tensor* os = ctx.inputValue(2)) {
      ctx.setOutput(0, t, toInt64Vector(ctx, *os));
      return;
    }
    if (auto sym = ctx.inputSymbolic(2)) {
      Shape s;
      s.dims = *sym;
      ctx.setOutput(0, t, s);
      return;
    }
    const Shape* os = ctx.inputShape(2);
    if (os != nullptr && os->rank() == 1 && os->dims[0].isKnown() &&
        os->dims[0].value <= kMaxDeclaredRank) {  // a declared length is not trusted further
      Shape s;
      s.dims.assign(static_cast<size_t>(os->dims[0].value), unknownDim());
      ctx.setOutput(0, t, s);
    } else {
      ctx.setOutputUnknownRank(0, t);
    }
    return;
  }
  if (x == nullptr) {
    ctx.setOutputUnknownRank(0, t);
    return;
  }
  if (x->rank() < 3) ctx.fail("X must have rank >= 3");
  const size_t nsp = x->rank() - 2;
  const std::vector<int64_t> kernel = ctx.attrInts("kernel_shape");
  if (kernel.size() != nsp) ctx.fail("kernel_shape must have one value per spatial axis");
  std::vector<int64_t> strides = ctx.attrInts("strides", std::vector<int64_t>(nsp, 1));
  std::vector<int64_t> pads = ctx.attrInts("pads", std::vector<int64_t>(2 * nsp, 0));
  if (strides.size() != nsp || pads.size() != 2 * nsp) ctx.fail("strides/pads size mismatch");
  Shape s;
  s.dims = {x->dims[0], x->dims[1]};
  for (size_t i = 0; i < nsp; ++i) {
    const Dim& d = x->dims[i + 2];
    s.dims.push_back(d.isKnown() ? Dim::known(unpooledDim(ctx, d.value, strides[i], pads[i],
                                                          pads[i + nsp], kernel[i]))
                                 : unknownDim());
  }
  ctx.setOutput(0, t, s);
}

void computeMaxUnpool(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& I = ctx.input(1);
  Tensor& Y = ctx.output(0);
  const std::vector<int64_t> idx = toInt64Vector(ctx, I);
  // Indices address the default unpooled shape (from kernel/strides/pads);
  // with an explicit output_shape the values keep their coordinates.
  const size_t nsp = X.rank() - 2;
  const std::vector<int64_t> kernel = ctx.attrInts("kernel_shape");
  std::vector<int64_t> strides = ctx.attrInts("strides", std::vector<int64_t>(nsp, 1));
  std::vector<int64_t> pads = ctx.attrInts("pads", std::vector<int64_t>(2 * nsp, 0));
  if (kernel.size() != nsp || strides.size() != nsp || pads.size() != 2 * nsp) {
    ctx.fail("kernel_shape/strides/pads sizes do not match the spatial rank");
  }
  std::vector<int64_t> dflt = {X.dims()[0], X.dims()[1]};
  for (size_t i = 0; i < nsp; ++i)
    dflt.push_back(
        unpooledDim(ctx, X.dims()[i + 2], strides[i], pads[i], pads[i + nsp], kernel[i]));
  const std::vector<int64_t>& od = Y.dims();
  if (od.size() != dflt.size()) ctx.fail("output_shape has the wrong rank");
  const int64_t total = product(dflt, 0, dflt.size());
  auto target = [&](int64_t flat) {
    int64_t out = 0, mul = 1;
    for (size_t d = dflt.size(); d-- > 0;) {
      const int64_t c = flat % dflt[d];
      flat /= dflt[d];
      if (c >= od[d]) return int64_t{-1};
      out += c * mul;
      mul *= od[d];
    }
    return out;
  };
  dispatchNumeric(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = dataAs<T>(X);
    T* y = mutableDataAs<T>(Y);
    for (size_t i = 0; i < idx.size(); ++i) {
      if (idx[i] < 0 || idx[i] >= total) ctx.fail("index out of range");
      const int64_t t = od == dflt ? idx[i] : target(idx[i]);
      if (t >= 0) y[t] = x[i];
    }
  });
}

}  // namespace
}  // namespace kernels

void registerPoolOps(OpRegistry& r) {
  using namespace kernels;
  for (int v : {1, 7, 10, 11, 19, 22})
    r.add({"", "AveragePool", v, inferPool<PoolKind::kAverage>, computePool<PoolKind::kAverage>});
  for (int v : {1, 8, 10, 11, 12, 22})
    r.add({"", "MaxPool", v, inferPool<PoolKind::kMax>, computePool<PoolKind::kMax>});
  for (int v : {1, 2, 11, 18, 22})
    r.add({"", "LpPool", v, inferPool<PoolKind::kLp>, computePool<PoolKind::kLp>});
  for (int v : {1, 22}) {
    r.add({"", "GlobalAveragePool", v, inferGlobalPool, computeGlobalPool<PoolKind::kAverage>});
    r.add({"", "GlobalMaxPool", v, inferGlobalPool, computeGlobalPool<PoolKind::kMax>});
  }
  for (int v : {1, 2, 22})
    r.add({"", "GlobalLpPool", v, inferGlobalPool, computeGlobalPool<PoolKind::kLp>});
  for (int v : {9, 11, 22})
    r.add({"", "MaxUnpool", v, inferMaxUnpool, computeMaxUnpool});
}

}  // namespace onnxfold

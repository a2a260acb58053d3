// Indexing ops outside the gather/slice, scatter and sorting families: OneHot,
// Compress and NonZero (selection by condition), the cumulative scans CumSum and
// CumProd, and ReverseSequence. See op_registry.h for the infer()/compute()
// contract; indexing.h holds the helpers all the indexing files share.
//
// Data-dependent output sizes (NonZero, Compress) are read from the input
// values when they are known and are fresh symbols otherwise. Pure data
// movement copies raw element bytes, so it covers every fixed-width dtype and
// strings; the cumulative ops dispatch over the numeric types and compute
// 16-bit floats in float.
#include "kernels/indexing.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/common.h"
#include "kernels/elementwise.h"
#include "kernels/op_helpers.h"

namespace onnxfold {
namespace {

using namespace kernels;

// ------------------------------------------------------------------ OneHot

int64_t oneHotDepth(const OpContext& ctx, const Tensor& depth) {
  const double d = scalarAsDouble(ctx, depth);
  if (!(d >= 0)) ctx.fail("depth must be >= 0");
  // 2^63 and above do not convert to int64 (undefined behaviour).
  if (d >= 9223372036854775808.0) ctx.fail("depth is too large");
  return static_cast<int64_t>(d);
}

void inferOneHot(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(2);
  const Shape* is = ctx.inputShape(0);
  if (is == nullptr) {
    ctx.setOutputUnknownRank(0, dt);
    return;
  }
  const auto r = static_cast<int64_t>(is->rank());
  const int64_t axis = normalizeAxis(ctx, ctx.attrInt("axis"), r + 1);
  Shape out = *is;
  const Tensor* dv = ctx.inputValue(1);
  out.dims.insert(out.dims.begin() + axis,
                  dv ? Dim::known(oneHotDepth(ctx, *dv)) : ctx.newSymbol());
  ctx.setOutput(0, dt, out);
}

void computeOneHot(ComputeContext& ctx) {
  const Tensor& indices = ctx.input(0);
  const Tensor& values = ctx.input(2);
  Tensor& out = ctx.output(0);
  if (values.numElements() != 2) ctx.fail("values must hold [off_value, on_value]");
  const int64_t depth = oneHotDepth(ctx, ctx.input(1));
  const auto r = static_cast<int64_t>(indices.rank());
  const auto axis = static_cast<size_t>(normalizeAxis(ctx, ctx.attrInt("axis"), r + 1));
  // Indices may be any numeric type; non-integers are truncated toward zero.
  std::vector<int64_t> idx(static_cast<size_t>(indices.numElements()));
  if (!dispatchNumeric(indices.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* p = dataAs<T>(indices);
        for (size_t i = 0; i < idx.size(); ++i)
          idx[i] = fromDouble<int64_t>(toDouble(p[i]));  // NaN is 0; huge saturates (off)
      })) {
    ctx.fail("indices must be numeric");
  }
  const int64_t outer = product(indices.dims(), 0, axis);
  const int64_t inner = product(indices.dims(), axis, indices.rank());
  Copier cp(ctx, values, out);
  const int64_t total = out.numElements();
  for (int64_t i = 0; i < total; ++i)
    cp(i, 0, 1);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      int64_t v = idx[static_cast<size_t>(o * inner + j)];
      if (v < 0) v += depth;
      if (v < 0 || v >= depth) continue;  // out of range: the row stays off
      cp((o * depth + v) * inner + j, 1, 1);
    }
  }
}

// ------------------------------------------------------------------ Compress

// The kept positions along the compressed axis (or of the flattened input).
std::vector<int64_t> compressKept(const OpContext& ctx, const Tensor& cond, int64_t n) {
  if (cond.dtype() != DataType::kBool) ctx.fail("condition must be bool");
  if (cond.rank() != 1) ctx.fail("condition must be 1-D");
  const int64_t len = cond.numElements();
  if (n >= 0 && len > n) ctx.fail("condition is longer than the compressed axis");
  std::vector<int64_t> kept;
  const bool* c = dataAs<bool>(cond);
  for (int64_t i = 0; i < len; ++i) {
    if (c[i]) kept.push_back(i);
  }
  return kept;
}

void inferCompress(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  const Shape* xs = ctx.inputShape(0);
  const Tensor* cv = ctx.inputValue(1);
  const bool has_axis = ctx.hasAttr("axis");
  if (!has_axis) {
    int64_t n = -1;
    if (auto d = inputStaticDims(ctx, 0)) n = numel(*d);
    Shape out;
    out.dims.push_back(cv ? Dim::known(static_cast<int64_t>(compressKept(ctx, *cv, n).size()))
                          : ctx.newSymbol());
    ctx.setOutput(0, dt, out);
    return;
  }
  if (xs == nullptr) {
    ctx.setOutputUnknownRank(0, dt);
    return;
  }
  const int64_t axis = normalizeAxis(ctx, ctx.attrInt("axis", 0), static_cast<int64_t>(xs->rank()));
  Shape out = *xs;
  Dim& d = out.dims[static_cast<size_t>(axis)];
  d = cv ? Dim::known(static_cast<int64_t>(compressKept(ctx, *cv, d.value).size()))
         : ctx.newSymbol();
  ctx.setOutput(0, dt, out);
}

void computeCompress(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  Copier cp(ctx, x, out);
  if (!ctx.hasAttr("axis")) {
    const std::vector<int64_t> kept = compressKept(ctx, ctx.input(1), x.numElements());
    for (size_t i = 0; i < kept.size(); ++i)
      cp(static_cast<int64_t>(i), kept[i], 1);
    return;
  }
  const auto& xd = x.dims();
  const auto axis = static_cast<size_t>(
      normalizeAxis(ctx, ctx.attrInt("axis", 0), static_cast<int64_t>(xd.size())));
  const std::vector<int64_t> kept = compressKept(ctx, ctx.input(1), xd[axis]);
  const int64_t outer = product(xd, 0, axis);
  const int64_t inner = product(xd, axis + 1, xd.size());
  const auto m = static_cast<int64_t>(kept.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < m; ++j)
      cp((o * m + j) * inner, (o * xd[axis] + kept[static_cast<size_t>(j)]) * inner, inner);
  }
}

// ------------------------------------------------------------------ NonZero

// Flat positions of the non-zero elements (strings: non-empty).
std::vector<int64_t> nonZeroPositions(const OpContext& ctx, const Tensor& x) {
  std::vector<int64_t> pos;
  const int64_t n = x.numElements();
  if (x.dtype() == DataType::kString) {
    for (int64_t i = 0; i < n; ++i) {
      if (!x.strings()[static_cast<size_t>(i)].empty()) pos.push_back(i);
    }
    return pos;
  }
  if (!dispatchNumeric(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* p = dataAs<T>(x);
        for (int64_t i = 0; i < n; ++i) {
          if (toDouble(p[i]) != 0) pos.push_back(i);
        }
      })) {
    ctx.unsupported("element type " + std::string(dataTypeName(x.dtype())) + " is not supported");
  }
  return pos;
}

void inferNonZero(InferContext& ctx) {
  const Shape* xs = ctx.inputShape(0);
  Shape out;
  // A scalar behaves as a 1-element vector (numpy's nonzero on 0-d).
  out.dims.push_back(xs ? Dim::known(std::max<int64_t>(1, static_cast<int64_t>(xs->rank())))
                        : Dim());
  const Tensor* xv = ctx.inputValue(0);
  out.dims.push_back(xv ? Dim::known(static_cast<int64_t>(nonZeroPositions(ctx, *xv).size()))
                        : ctx.newSymbol());
  ctx.setOutput(0, DataType::kInt64, out);
}

void computeNonZero(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  const std::vector<int64_t> pos = nonZeroPositions(ctx, x);
  std::vector<int64_t> dims = x.dims();
  if (dims.empty()) dims.push_back(1);
  const std::vector<int64_t> strides = stridesOf(dims);
  int64_t* o = mutableDataAs<int64_t>(out);
  const size_t nnz = pos.size();
  for (size_t i = 0; i < nnz; ++i) {
    for (size_t a = 0; a < dims.size(); ++a)
      o[a * nnz + i] = (pos[i] / strides[a]) % dims[a];
  }
}

// ------------------------------------------------------------------ CumSum / CumProd

// X seen as [outer, n, inner] around CumSum's axis, and the attributes of the walk.
struct CumulativeAxis {
  int64_t outer = 0, n = 0, inner = 0;
  bool exclusive = false, reverse = false;
};

CumulativeAxis cumulativeAxis(const ComputeContext& ctx) {
  const std::vector<int64_t> av = toInt64Vector(ctx, ctx.input(1));
  if (av.size() != 1) ctx.fail("axis must hold one value");
  const auto& xd = ctx.input(0).dims();
  const auto axis = static_cast<size_t>(normalizeAxis(ctx, av[0], static_cast<int64_t>(xd.size())));
  CumulativeAxis c;
  c.exclusive = ctx.attrInt("exclusive") != 0;
  c.reverse = ctx.attrInt("reverse") != 0;
  c.outer = product(xd, 0, axis);
  c.n = xd[axis];
  c.inner = product(xd, axis + 1, xd.size());
  return c;
}

// The type and shape of X; a known axis must lie within X's known rank (ONNX Runtime
// refuses the node otherwise).
void inferCumulative(InferContext& ctx) {
  const Shape* x = ctx.inputShape(0);
  const Tensor* axis = ctx.inputValue(1);
  if (x != nullptr && axis != nullptr) {
    const std::vector<int64_t> av = toInt64Vector(ctx, *axis);
    if (av.size() != 1) ctx.fail("axis must hold one value");
    normalizeAxis(ctx, av[0], static_cast<int64_t>(x->rank()));
  }
  inferSameAsInput0(ctx);
}

// Runs the sums (products) along the axis in Acc: load(off) reads element off of X as Acc,
// store(off, acc) writes it to Y.
template <bool kProduct, class Acc, class Load, class Store>
void cumulate(const CumulativeAxis& c, Load&& load, Store&& store) {
  for (int64_t b = 0; b < c.outer; ++b) {
    for (int64_t j = 0; j < c.inner; ++j) {
      Acc acc = kProduct ? Acc(1) : Acc(0);
      for (int64_t t = 0; t < c.n; ++t) {
        const int64_t i = c.reverse ? c.n - 1 - t : t;
        const int64_t off = (b * c.n + i) * c.inner + j;
        const Acc v = load(off);
        // Integers wrap (signed overflow is undefined behaviour).
        if (!c.exclusive)
          acc = kProduct ? elementwise::wrapMul(acc, v) : elementwise::wrapAdd(acc, v);
        store(off, acc);
        if (c.exclusive)
          acc = kProduct ? elementwise::wrapMul(acc, v) : elementwise::wrapAdd(acc, v);
      }
    }
  }
}

template <bool kProduct>
void computeCumulative(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  const CumulativeAxis c = cumulativeAxis(ctx);
  const bool ok = dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    // 16-bit floats accumulate in float; other types in their own type.
    using Acc = std::conditional_t<kIsHalfLike<T>, float,
                                   std::conditional_t<std::is_same_v<T, bool>, int64_t, T>>;
    const T* in = dataAs<T>(x);
    T* o = mutableDataAs<T>(out);
    cumulate<kProduct, Acc>(
        c, [&](int64_t off) { return static_cast<Acc>(toDouble(in[off])); },
        [&](int64_t off, Acc acc) { o[off] = fromDouble<T>(static_cast<double>(acc)); });
  });
  if (!ok)
    ctx.unsupported("element type " + std::string(dataTypeName(x.dtype())) + " is not supported");
}

// 64-bit integers must not pass through double: accumulate them exactly.
template <bool kProduct>
void computeCumulativeDispatch(ComputeContext& ctx) {
  const DataType dt = ctx.input(0).dtype();
  if (dt != DataType::kInt64 && dt != DataType::kUint64) {
    computeCumulative<kProduct>(ctx);
    return;
  }
  // Unsigned arithmetic wraps like two's complement for both signednesses.
  const uint64_t* in = dataAs<uint64_t>(ctx.input(0));
  uint64_t* o = mutableDataAs<uint64_t>(ctx.output(0));
  cumulate<kProduct, uint64_t>(
      cumulativeAxis(ctx), [&](int64_t off) { return in[off]; },
      [&](int64_t off, uint64_t acc) { o[off] = acc; });
}

// ------------------------------------------------------------------ ReverseSequence

void computeReverseSequence(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  const auto& xd = x.dims();
  const auto r = static_cast<int64_t>(xd.size());
  if (r < 2) ctx.fail("input must have rank >= 2");
  const auto batch_axis = static_cast<size_t>(normalizeAxis(ctx, ctx.attrInt("batch_axis"), r));
  const auto time_axis = static_cast<size_t>(normalizeAxis(ctx, ctx.attrInt("time_axis"), r));
  if (batch_axis > 1 || time_axis > 1 || batch_axis == time_axis)
    ctx.fail("batch_axis and time_axis must be 0 and 1 in some order");
  const std::vector<int64_t> lens = toInt64Vector(ctx, ctx.input(1));
  if (static_cast<int64_t>(lens.size()) != xd[batch_axis])
    ctx.fail("sequence_lens must have batch_size elements");
  const std::vector<int64_t> strides = stridesOf(xd);
  const int64_t inner = product(xd, 2, xd.size());
  Copier cp(ctx, x, out);
  for (int64_t b = 0; b < xd[batch_axis]; ++b) {
    const int64_t len = lens[static_cast<size_t>(b)];
    if (len < 0 || len > xd[time_axis]) ctx.fail("sequence length out of range");
    for (int64_t t = 0; t < xd[time_axis]; ++t) {
      const int64_t src_t = t < len ? len - 1 - t : t;
      cp(b * strides[batch_axis] + t * strides[time_axis],
         b * strides[batch_axis] + src_t * strides[time_axis], inner);
    }
  }
}

}  // namespace

void registerIndexingOps(OpRegistry& r) {
  for (int v : {9, 11})
    r.add({"", "OneHot", v, inferOneHot, computeOneHot});
  for (int v : {9, 11})
    r.add({"", "Compress", v, inferCompress, computeCompress});
  for (int v : {9, 13})
    r.add({"", "NonZero", v, inferNonZero, computeNonZero});
  for (int v : {11, 14})
    r.add({"", "CumSum", v, inferCumulative, computeCumulativeDispatch<false>});
  r.add({"", "CumProd", 26, inferCumulative, computeCumulativeDispatch<true>});
  r.add({"", "ReverseSequence", 10, inferSameAsInput0, computeReverseSequence});
}

}  // namespace onnxfold

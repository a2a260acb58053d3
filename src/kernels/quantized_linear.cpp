// quantized_linear op family: the integer products MatMulInteger and
// ConvInteger (int32 results) and their requantizing forms QLinearMatMul and
// QLinearConv. See op_registry.h for the infer()/compute() contract. Inputs
// minus their zero points are multiplied in int32 through the generic GEMM
// (gemm.h) and the plans of MatMul (matmul.h) and Conv (conv.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/common.h"
#include "kernels/conv.h"
#include "kernels/elementwise.h"
#include "kernels/gemm.h"
#include "kernels/matmul.h"
#include "kernels/op_helpers.h"

namespace onnxfold {
namespace kernels {
namespace {

// Float value of a scale input (float, float16, bfloat16) at element i.
double elemAsDouble(const Tensor& t, int64_t i) {
  double out = 0;
  dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = toDouble(dataAs<T>(t)[i]);
  });
  return out;
}

// Rounds half to even and saturates into the range of T (QLinear* outputs).
template <class T>
T saturateRound(double v) {
  double r = std::nearbyint(v);  // default rounding mode: half to even
  if (r != r) return T{0};       // NaN (a zero y_scale) would not convert
  r = std::min<double>(std::max<double>(r, std::numeric_limits<T>::min()),
                       std::numeric_limits<T>::max());
  return static_cast<T>(r);
}

// ================================================================= MatMulInteger / QLinearMatMul

// Integer inputs minus their zero points, as int32, plus the batched plan. Values are read
// through fromDouble and wrapSub: a hostile zero point of another type must not be UB.
// Zero points: scalar, per row of A ([M] or [..., M, 1]) / per column of B
// ([N] or [..., 1, N]).
std::vector<int32_t> dequantZeroPointA(const Tensor& a, const Tensor* zp, int64_t m, int64_t k) {
  const int64_t total = a.numElements();
  std::vector<int32_t> out(static_cast<size_t>(total));
  const int64_t rows = k > 0 ? total / k : 0;
  const int64_t zn = zp ? zp->numElements() : 0;
  for (int64_t r = 0; r < rows; ++r) {
    int32_t z = 0;
    if (zn == 1) {
      z = fromDouble<int32_t>(elemAsDouble(*zp, 0));
    } else if (zn > 1) {
      z = fromDouble<int32_t>(elemAsDouble(*zp, zn == rows ? r : r % m));
    }
    for (int64_t p = 0; p < k; ++p) {
      const int64_t i = r * k + p;
      out[i] = elementwise::wrapSub(fromDouble<int32_t>(elemAsDouble(a, i)), z);
    }
  }
  return out;
}

std::vector<int32_t> dequantZeroPointB(const Tensor& b, const Tensor* zp, int64_t k, int64_t n) {
  const int64_t total = b.numElements();
  std::vector<int32_t> out(static_cast<size_t>(total));
  const int64_t zn = zp ? zp->numElements() : 0;
  for (int64_t i = 0; i < total; ++i) {
    int32_t z = 0;
    if (zn == 1) {
      z = fromDouble<int32_t>(elemAsDouble(*zp, 0));
    } else if (zn > 1) {
      const int64_t col = i % n;
      const int64_t mat = i / (k * n);
      z = fromDouble<int32_t>(elemAsDouble(*zp, zn == n ? col : (mat * n + col) % zn));
    }
    out[i] = elementwise::wrapSub(fromDouble<int32_t>(elemAsDouble(b, i)), z);
  }
  return out;
}

std::vector<int32_t> integerMatmul(const ComputeContext& ctx, const Tensor& A, const Tensor* azp,
                                   const Tensor& B, const Tensor* bzp, MatmulPlan& p) {
  p = planMatmul(ctx, A.dims(), B.dims());
  const auto a = dequantZeroPointA(A, azp, p.m, p.k);
  const auto b = dequantZeroPointB(B, bzp, p.k, p.n);
  std::vector<int32_t> y(p.pairs.size() * p.m * p.n);
  for (size_t bi = 0; bi < p.pairs.size(); ++bi) {
    gemmGeneric<int32_t>(p.m, p.n, p.k, a.data() + p.pairs[bi].first * p.m * p.k, p.k,
                         b.data() + p.pairs[bi].second * p.k * p.n, p.n, y.data() + bi * p.m * p.n,
                         p.n);
  }
  return y;
}

// Scales and zero points index their elements modulo their count: an empty one (hostile but
// parseable) would divide by zero or read nothing.
void requireElements(const ComputeContext& ctx, const Tensor* t, const char* name) {
  if (t != nullptr && t->numElements() == 0) ctx.fail(std::string(name) + " has no elements");
}

bool isInt8Like(DataType t) {
  return t == DataType::kInt8 || t == DataType::kUint8;
}

// Checks that x (input 0) and w (input wi) are int8 or uint8 and gives the output type: int32
// (MatMulInteger, ConvInteger) or, for the QLinear ops, y_zero_point's (input 7, else x's).
DataType integerOperandsOutputType(const InferContext& ctx, size_t wi, bool qlinear) {
  requireType(ctx, 0, isInt8Like(ctx.inputDtype(0)), "int8 or uint8");
  requireType(ctx, wi, isInt8Like(ctx.inputDtype(wi)), "int8 or uint8");
  if (!qlinear) return DataType::kInt32;
  const DataType out = ctx.inputDtype(7);
  return out == DataType::kUndefined ? ctx.inputDtype(0) : out;
}

void inferMatMulInteger(InferContext& ctx) {
  inferMatmulShape(ctx, integerOperandsOutputType(ctx, 1, false), 0, 1);
}

void computeMatMulInteger(ComputeContext& ctx) {
  MatmulPlan p;
  const auto y = integerMatmul(ctx, ctx.input(0), ctx.hasInput(2) ? &ctx.input(2) : nullptr,
                               ctx.input(1), ctx.hasInput(3) ? &ctx.input(3) : nullptr, p);
  std::memcpy(mutableDataAs<int32_t>(ctx.output(0)), y.data(), y.size() * sizeof(int32_t));
}

void inferQLinearMatMul(InferContext& ctx) {
  inferMatmulShape(ctx, integerOperandsOutputType(ctx, 3, true), 0, 3);
}

void computeQLinearMatMul(ComputeContext& ctx) {
  MatmulPlan p;
  const Tensor& as = ctx.input(1);
  const Tensor& bs = ctx.input(4);
  const Tensor& ys = ctx.input(6);
  const Tensor& yzp = ctx.input(7);
  requireElements(ctx, &as, "a_scale");
  requireElements(ctx, &ctx.input(2), "a_zero_point");
  requireElements(ctx, &bs, "b_scale");
  requireElements(ctx, &ctx.input(5), "b_zero_point");
  requireElements(ctx, &ys, "y_scale");
  requireElements(ctx, &yzp, "y_zero_point");
  const auto acc = integerMatmul(ctx, ctx.input(0), &ctx.input(2), ctx.input(3), &ctx.input(5), p);
  Tensor& Y = ctx.output(0);
  const double y_scale = elemAsDouble(ys, 0);
  const double y_zero = elemAsDouble(yzp, 0);
  const int64_t an = as.numElements(), bn = bs.numElements();
  const bool half_scales = as.dtype() != DataType::kFloat;
  for (size_t bi = 0; bi < p.pairs.size(); ++bi) {
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        const int64_t yi = (static_cast<int64_t>(bi) * p.m + i) * p.n + j;
        const double sa = elemAsDouble(as, an == 1 ? 0 : (p.pairs[bi].first * p.m + i) % an);
        const double sb = elemAsDouble(bs, bn == 1 ? 0 : (p.pairs[bi].second * p.n + j) % bn);
        // Scales are applied in float32 like the reference (and in float for
        // float16 scales, whose products are computed before rounding).
        float scale = static_cast<float>(sa) * static_cast<float>(sb) / static_cast<float>(y_scale);
        if (half_scales) scale = static_cast<float>(sa * sb / y_scale);
        const double v = static_cast<double>(static_cast<float>(acc[yi]) * scale) + y_zero;
        if (Y.dtype() == DataType::kUint8) {
          mutableDataAs<uint8_t>(Y)[yi] = saturateRound<uint8_t>(v);
        } else {
          mutableDataAs<int8_t>(Y)[yi] = saturateRound<int8_t>(v);
        }
      }
    }
  }
}

// ================================================================= ConvInteger / QLinearConv

// ConvInteger and QLinearConv: int32 conv of zero-point-shifted inputs.
// x_zero_point is per tensor; w_zero_point per tensor or per output channel.
std::vector<int32_t> integerConv(const ComputeContext& ctx, const Tensor& X, const Tensor* xzp,
                                 const Tensor& W, const Tensor* wzp, const Tensor* bias,
                                 const Geom& g) {
  const int64_t group = ctx.attrInt("group");
  const int64_t batch = X.dims()[0], channels = X.dims()[1], m = W.dims()[0];
  std::vector<int32_t> x(static_cast<size_t>(X.numElements()));
  const int32_t xz = xzp ? fromDouble<int32_t>(elemAsDouble(*xzp, 0)) : 0;
  for (int64_t i = 0; i < X.numElements(); ++i)
    x[i] = elementwise::wrapSub(fromDouble<int32_t>(elemAsDouble(X, i)), xz);
  std::vector<int32_t> w(static_cast<size_t>(W.numElements()));
  const int64_t per_m = m > 0 ? W.numElements() / m : 0;
  const int64_t wzn = wzp ? wzp->numElements() : 0;
  for (int64_t i = 0; i < W.numElements(); ++i) {
    const int32_t z =
        wzn == 0 ? 0 : fromDouble<int32_t>(elemAsDouble(*wzp, wzn == 1 ? 0 : (i / per_m) % wzn));
    w[i] = elementwise::wrapSub(fromDouble<int32_t>(elemAsDouble(W, i)), z);
  }
  std::vector<int32_t> b;
  if (bias) {
    b.resize(static_cast<size_t>(bias->numElements()));
    for (int64_t i = 0; i < bias->numElements(); ++i)
      b[i] = dataAs<int32_t>(*bias)[i];
  }
  std::vector<int32_t> y(static_cast<size_t>(batch * m * product(g.out, 0, g.rank())));
  convIm2col<int32_t>(x.data(), w.data(), bias ? b.data() : nullptr, y.data(), batch, channels, m,
                      group, g);
  return y;
}

void inferConvInteger(InferContext& ctx) {
  inferConvLike(ctx, 0, 1, integerOperandsOutputType(ctx, 1, false));
}

void computeConvInteger(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  const Geom g = convGeom(ctx, X.dims(), W.dims());
  requireElements(ctx, ctx.hasInput(2) ? &ctx.input(2) : nullptr, "x_zero_point");
  const auto y = integerConv(ctx, X, ctx.hasInput(2) ? &ctx.input(2) : nullptr, W,
                             ctx.hasInput(3) ? &ctx.input(3) : nullptr, nullptr, g);
  std::memcpy(mutableDataAs<int32_t>(ctx.output(0)), y.data(), y.size() * sizeof(int32_t));
}

void inferQLinearConv(InferContext& ctx) {
  inferConvLike(ctx, 0, 3, integerOperandsOutputType(ctx, 3, true));
}

void computeQLinearConv(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(3);
  const Geom g = convGeom(ctx, X.dims(), W.dims());
  const char* const names[] = {"",        "x_scale",      "x_zero_point", "",
                               "w_scale", "w_zero_point", "y_scale",      "y_zero_point"};
  for (size_t i : {1, 2, 4, 5, 6, 7})
    requireElements(ctx, &ctx.input(i), names[i]);
  if (ctx.hasInput(8) &&
      (ctx.input(8).dtype() != DataType::kInt32 || ctx.input(8).numElements() != W.dims()[0]))
    ctx.fail("B must be int32 with one value per output channel");
  const auto acc = integerConv(ctx, X, &ctx.input(2), W, &ctx.input(5),
                               ctx.hasInput(8) ? &ctx.input(8) : nullptr, g);
  const double xs = elemAsDouble(ctx.input(1), 0);
  const Tensor& ws = ctx.input(4);
  const double ys = elemAsDouble(ctx.input(6), 0);
  const double yz = elemAsDouble(ctx.input(7), 0);
  Tensor& Y = ctx.output(0);
  const int64_t m = W.dims()[0];
  const int64_t osize = product(g.out, 0, g.rank());
  const int64_t wsn = ws.numElements();
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t ch = (static_cast<int64_t>(i) / osize) % m;
    const float scale = static_cast<float>(xs) *
                        static_cast<float>(elemAsDouble(ws, wsn == 1 ? 0 : ch % wsn)) /
                        static_cast<float>(ys);
    const double v = static_cast<double>(static_cast<float>(acc[i]) * scale) + yz;
    if (Y.dtype() == DataType::kUint8) {
      mutableDataAs<uint8_t>(Y)[i] = saturateRound<uint8_t>(v);
    } else {
      mutableDataAs<int8_t>(Y)[i] = saturateRound<int8_t>(v);
    }
  }
}

}  // namespace
}  // namespace kernels

void registerQuantizedLinearOps(OpRegistry& r) {
  using namespace kernels;
  r.add({"", "MatMulInteger", 10, inferMatMulInteger, computeMatMulInteger});
  for (int v : {10, 21})
    r.add({"", "QLinearMatMul", v, inferQLinearMatMul, computeQLinearMatMul});
  r.add({"", "ConvInteger", 10, inferConvInteger, computeConvInteger});
  r.add({"", "QLinearConv", 10, inferQLinearConv, computeQLinearConv});
}

}  // namespace onnxfold

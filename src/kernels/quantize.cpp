// The quantization ops: QuantizeLinear and DequantizeLinear (per tensor, per
// axis and blocked; integer, float8 and float4 types) and DynamicQuantizeLinear.
// See op_registry.h for the contract of infer() and compute().
//
// Elements are read and written through the codecs of cast.h; the float32 ->
// int8/uint8 loop has a Highway kernel beside its scalar reference.
#include "kernels/quantize.h"

#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cast.h"
#include "kernels/common.h"
#include "kernels/op_helpers.h"

namespace onnxfold {
namespace kernels {

namespace hn = hwy::HWY_NAMESPACE;

// ------------------------------------------------------------ float32 -> int8/uint8 quantization

// y = saturate(round_half_even(x / scale) + zp); NaN quantizes to zp. Clamping
// x / scale to [qmin - zp, qmax - zp] before rounding equals saturating after,
// because the bounds are integers.
template <class Q>
void quantizeF32Scalar(const float* x, size_t n, float scale, int32_t zp, Q* out) {
  const auto lo = static_cast<float>(int32_t{std::numeric_limits<Q>::min()} - zp);
  const auto hi = static_cast<float>(int32_t{std::numeric_limits<Q>::max()} - zp);
  for (size_t i = 0; i < n; ++i) {
    float v = x[i] / scale;
    if (std::isnan(v)) v = 0;
    v = std::min(std::max(v, lo), hi);
    out[i] = static_cast<Q>(static_cast<int32_t>(std::nearbyint(v)) + zp);
  }
}

template <class Q>
void quantizeF32Hwy(const float* x, size_t n, float scale, int32_t zp, Q* out) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<Q, decltype(di)> dq;
  const size_t lanes = hn::Lanes(df);
  const auto lo = hn::Set(df, static_cast<float>(int32_t{std::numeric_limits<Q>::min()} - zp));
  const auto hi = hn::Set(df, static_cast<float>(int32_t{std::numeric_limits<Q>::max()} - zp));
  const auto vscale = hn::Set(df, scale);
  const auto vzp = hn::Set(di, zp);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    auto v = hn::Div(hn::LoadU(df, x + i), vscale);
    v = hn::IfThenElseZero(hn::Eq(v, v), v);
    v = hn::Min(hn::Max(v, lo), hi);
    hn::StoreU(hn::DemoteTo(dq, hn::Add(hn::NearestInt(v), vzp)), dq, out + i);
  }
  if (i < n) quantizeF32Scalar(x + i, n - i, scale, zp, out + i);
}

template void quantizeF32Scalar<int8_t>(const float*, size_t, float, int32_t, int8_t*);
template void quantizeF32Scalar<uint8_t>(const float*, size_t, float, int32_t, uint8_t*);
template void quantizeF32Hwy<int8_t>(const float*, size_t, float, int32_t, int8_t*);
template void quantizeF32Hwy<uint8_t>(const float*, size_t, float, int32_t, uint8_t*);

}  // namespace kernels

namespace {

using namespace kernels;

// ------------------------------------------------------------ QuantizeLinear / DequantizeLinear

// Maps each element of x to its scale/zero-point index: per tensor, per axis
// (1-D scale along `axis`) or blocked (scale dims = x dims with axis ceil-divided).
struct QuantLayout {
  enum Mode { kTensor, kAxis, kBlocked } mode = kTensor;
  int64_t outer = 1, axis_dim = 1, inner = 1, scale_axis = 1, block = 1;
  size_t scaleIndex(int64_t o, int64_t a, int64_t j) const {
    switch (mode) {
      case kTensor:
        return 0;
      case kAxis:
        return static_cast<size_t>(a);
      case kBlocked:
        return static_cast<size_t>((o * scale_axis + a / block) * inner + j);
    }
    return 0;
  }
};

QuantLayout quantLayout(const OpContext& ctx, const std::vector<int64_t>& x_dims,
                        const std::vector<int64_t>& s_dims) {
  QuantLayout l;
  const auto rank = static_cast<int64_t>(x_dims.size());
  const int64_t block = ctx.attrInt("block_size", 0);
  // One scale: every dim 1 (a product of declared dims could overflow int64).
  const bool single = std::all_of(s_dims.begin(), s_dims.end(), [](int64_t d) { return d == 1; });
  if (block < 0) ctx.fail("block_size must be >= 0");
  if (block == 0 && single && s_dims.size() <= 1) {
    l.inner = product(x_dims, 0, x_dims.size());
    return l;
  }
  const int64_t axis = normalizeAxis(ctx, ctx.attrInt("axis", 1), rank);
  l.outer = product(x_dims, 0, static_cast<size_t>(axis));
  l.axis_dim = x_dims[static_cast<size_t>(axis)];
  l.inner = product(x_dims, static_cast<size_t>(axis) + 1, x_dims.size());
  if (block == 0) {
    if (s_dims.size() != 1 || s_dims[0] != l.axis_dim) {
      ctx.fail("per-axis scale must be 1-D with the length of axis " + std::to_string(axis));
    }
    l.mode = QuantLayout::kAxis;
    return l;
  }
  if (static_cast<int64_t>(s_dims.size()) != rank) ctx.fail("blocked scale must have x's rank");
  for (int64_t k = 0; k < rank; ++k) {
    const auto uk = static_cast<size_t>(k);
    if (k == axis) {
      // ceil(x / block) without x + block - 1, which overflows for a huge block_size or dim.
      if (s_dims[uk] != x_dims[uk] / block + (x_dims[uk] % block != 0 ? 1 : 0)) {
        ctx.fail("blocked scale dim " + std::to_string(s_dims[uk]) + " does not match ceil(" +
                 std::to_string(x_dims[uk]) + " / block_size " + std::to_string(block) + ")");
      }
    } else if (s_dims[uk] != x_dims[uk]) {
      ctx.fail("blocked scale shape must equal x's shape except on the blocked axis");
    }
  }
  l.mode = QuantLayout::kBlocked;
  l.block = block;
  l.scale_axis = s_dims[static_cast<size_t>(axis)];
  return l;
}

bool isQuantType(DataType t) {
  switch (t) {
    case DataType::kInt8:
    case DataType::kUint8:
    case DataType::kInt16:
    case DataType::kUint16:
    case DataType::kInt4:
    case DataType::kUint4:
    case DataType::kInt2:
    case DataType::kUint2:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kFloat4E2M1:
      return true;
    default:
      return false;
  }
}

DataType quantizeOutputType(const InferContext& ctx) {
  const auto attr = static_cast<DataType>(ctx.attrInt("output_dtype", 0));
  const DataType zp = ctx.hasInput(2) ? ctx.inputDtype(2) : DataType::kUndefined;
  if (attr != DataType::kUndefined && zp != DataType::kUndefined && attr != zp) {
    ctx.fail("output_dtype and y_zero_point's type differ");
  }
  DataType t = attr != DataType::kUndefined ? attr
               : zp != DataType::kUndefined ? zp
                                            : DataType::kUint8;
  if (!isQuantType(t))
    ctx.unsupported("unsupported quantized type " + std::string(dataTypeName(t)));
  return t;
}

void checkScaleShapes(InferContext& ctx) {
  const Shape* x = ctx.inputShape(0);
  const Shape* s = ctx.inputShape(1);
  auto xd = staticDims(x), sd = staticDims(s);
  if (xd && sd) (void)quantLayout(ctx, *xd, *sd);  // validates
}

void inferQuantize(InferContext& ctx) {
  const DataType t = quantizeOutputType(ctx);
  checkScaleShapes(ctx);
  setSameShape(ctx, 0, t, 0);
}

// Integer range of a quantized integer type.
void quantRange(DataType t, int64_t& lo, int64_t& hi) {
  switch (t) {
    case DataType::kInt8:
      lo = -128, hi = 127;
      break;
    case DataType::kUint8:
      lo = 0, hi = 255;
      break;
    case DataType::kInt16:
      lo = -32768, hi = 32767;
      break;
    case DataType::kUint16:
      lo = 0, hi = 65535;
      break;
    case DataType::kInt4:
      lo = -8, hi = 7;
      break;
    case DataType::kUint4:
      lo = 0, hi = 15;
      break;
    case DataType::kInt2:
      lo = -2, hi = 1;
      break;
    case DataType::kUint2:
      lo = 0, hi = 3;
      break;
    default:
      lo = hi = 0;
  }
}

// Element i of a float-like or integer tensor as float (the precision of the
// quantize division and the dequantize multiplication).
std::vector<float> floatsOf(const Tensor& t) {
  const auto n = static_cast<size_t>(t.numElements());
  std::vector<float> v(n);
  if (t.dtype() == DataType::kFloat) {
    if (n) std::memcpy(v.data(), t.bytes(), n * 4);
    return v;
  }
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(readElement(t, i).asDouble());
  return v;
}

void computeQuantize(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.hasInput(2) ? &ctx.input(2) : nullptr;
  Tensor& y = ctx.output(0);
  const DataType qt = y.dtype();
  const QuantLayout l = quantLayout(ctx, x.dims(), scale.dims());
  const std::vector<float> sc = floatsOf(scale);
  const auto ns = sc.size();
  std::vector<double> zpv(ns, 0.0);
  if (zp != nullptr) {
    if (static_cast<size_t>(zp->numElements()) != ns)
      ctx.fail("zero point size differs from scale");
    for (size_t k = 0; k < ns; ++k)
      zpv[k] = readElement(*zp, k).asDouble();
  }
  const int64_t inner = l.inner;
  // Fast path: float32 input and scale, int8/uint8 output, scale constant over `inner`.
  if (x.dtype() == DataType::kFloat && scale.dtype() == DataType::kFloat &&
      (qt == DataType::kInt8 || qt == DataType::kUint8) && l.mode != QuantLayout::kBlocked) {
    const float* xs = dataAs<float>(x);
    const int64_t run = l.mode == QuantLayout::kTensor ? x.numElements() : inner;
    const int64_t runs = run == 0 ? 0 : x.numElements() / run;
    for (int64_t r = 0; r < runs; ++r) {
      const size_t si = l.mode == QuantLayout::kTensor ? 0 : static_cast<size_t>(r % l.axis_dim);
      const auto z = static_cast<int32_t>(zpv[si]);
      const size_t off = static_cast<size_t>(r * run);
      if (qt == DataType::kInt8) {
        quantizeF32Hwy(xs + off, static_cast<size_t>(run), sc[si], z,
                       mutableDataAs<int8_t>(y) + off);
      } else {
        quantizeF32Hwy(xs + off, static_cast<size_t>(run), sc[si], z,
                       mutableDataAs<uint8_t>(y) + off);
      }
    }
    return;
  }
  const std::vector<float> xv = floatsOf(x);
  uint8_t* bytes = y.mutableBytes();
  const MiniFloat* mf = miniFloatOf(qt);
  const bool saturate = ctx.attrInt("saturate", 1) != 0;
  int64_t lo = 0, hi = 0;
  quantRange(qt, lo, hi);
  CastOptions opts;
  size_t i = 0;
  for (int64_t o = 0; o < l.outer; ++o) {
    for (int64_t a = 0; a < l.axis_dim; ++a) {
      for (int64_t j = 0; j < inner; ++j, ++i) {
        const size_t si = l.scaleIndex(o, a, j);
        const float v = xv[i] / sc[si];
        Scalar s;
        if (mf != nullptr) {
          // Float targets: round the (float) quotient plus zero point to the target.
          s.f = static_cast<double>(v) + zpv[si];
          if (qt == DataType::kFloat4E2M1) {
            writePacked(bytes, i, 4, encodeMiniFloat(*mf, s.f, true));
          } else {
            bytes[i] = static_cast<uint8_t>(encodeMiniFloat(*mf, s.f, saturate));
          }
          continue;
        }
        double q = std::isnan(v) ? 0.0 : std::nearbyint(static_cast<double>(v)) + zpv[si];
        q = std::min(std::max(q, static_cast<double>(lo)), static_cast<double>(hi));
        s.kind = Scalar::kI;
        s.i = static_cast<int64_t>(q);
        writeElement(y, bytes, i, s, opts, DataType::kInt64);
      }
    }
  }
}

void inferDequantize(InferContext& ctx) {
  const DataType xt = ctx.inputDtype(0);
  if (xt != DataType::kUndefined && xt != DataType::kInt32 && !isQuantType(xt)) {
    ctx.unsupported("unsupported quantized input type " + std::string(dataTypeName(xt)));
  }
  if (ctx.hasInput(2) && ctx.inputDtype(2) != DataType::kUndefined && xt != DataType::kUndefined &&
      ctx.inputDtype(2) != xt) {
    ctx.fail("x and x_zero_point types differ");
  }
  const auto attr = static_cast<DataType>(ctx.attrInt("output_dtype", 0));
  DataType out = attr != DataType::kUndefined ? attr : ctx.inputDtype(1);
  if (out == DataType::kFloat8E8M0)
    out = DataType::kFloat;  // not an output type: needs output_dtype
  if (out != DataType::kFloat && out != DataType::kFloat16 && out != DataType::kBfloat16 &&
      out != DataType::kUndefined) {
    ctx.unsupported("unsupported output type " + std::string(dataTypeName(out)));
  }
  checkScaleShapes(ctx);
  setSameShape(ctx, 0, out, 0);
}

// y = float(x - zp) * scale for 8-bit x: the difference is exact, one float multiply.
template <class Q>
void dequantize8(const Q* x, size_t n, float scale, int32_t zp, float* out) {
  for (size_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(static_cast<int32_t>(x[i]) - zp) * scale;
}

void computeDequantize(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.hasInput(2) ? &ctx.input(2) : nullptr;
  Tensor& y = ctx.output(0);
  const QuantLayout l = quantLayout(ctx, x.dims(), scale.dims());
  const std::vector<float> sc = floatsOf(scale);
  std::vector<double> zpv(sc.size(), 0.0);
  if (zp != nullptr) {
    if (zp->numElements() != static_cast<int64_t>(sc.size())) {
      ctx.fail("zero point size differs from scale");
    }
    for (size_t k = 0; k < sc.size(); ++k)
      zpv[k] = readElement(*zp, k).asDouble();
  }
  const DataType yt = y.dtype();
  // Fast path: 8-bit integers to float32, scale constant over `inner` (weights kept behind
  // their DequantizeLinear are evaluated by inference and validation, element by element
  // through readElement this was two thirds of a QDQ mobilenet_v2's optimize). The same
  // arithmetic: the exact integer difference times the scale, in float.
  if ((x.dtype() == DataType::kInt8 || x.dtype() == DataType::kUint8) && yt == DataType::kFloat &&
      l.mode != QuantLayout::kBlocked) {
    const int64_t run = l.mode == QuantLayout::kTensor ? x.numElements() : l.inner;
    const int64_t runs = run == 0 ? 0 : x.numElements() / run;
    float* out = mutableDataAs<float>(y);
    for (int64_t r = 0; r < runs; ++r) {
      const size_t si = l.mode == QuantLayout::kTensor ? 0 : static_cast<size_t>(r % l.axis_dim);
      const auto z = static_cast<int32_t>(zpv[si]);
      const size_t off = static_cast<size_t>(r * run);
      if (x.dtype() == DataType::kInt8) {
        dequantize8(dataAs<int8_t>(x) + off, static_cast<size_t>(run), sc[si], z, out + off);
      } else {
        dequantize8(dataAs<uint8_t>(x) + off, static_cast<size_t>(run), sc[si], z, out + off);
      }
    }
    return;
  }
  uint8_t* bytes = y.mutableBytes();
  const bool int_x = x.dtype() != DataType::kInt32 && miniFloatOf(x.dtype()) == nullptr;
  size_t i = 0;
  for (int64_t o = 0; o < l.outer; ++o) {
    for (int64_t a = 0; a < l.axis_dim; ++a) {
      for (int64_t j = 0; j < l.inner; ++j, ++i) {
        const size_t si = l.scaleIndex(o, a, j);
        const double xv = readElement(x, i).asDouble();
        // Integer differences are exact; float8 ones are taken in float.
        const auto d = static_cast<float>(
            int_x ? xv - zpv[si] : static_cast<float>(xv) - static_cast<float>(zpv[si]));
        const float v = d * sc[si];
        if (yt == DataType::kFloat) {
          std::memcpy(bytes + i * 4, &v, 4);
        } else {
          const uint16_t h = yt == DataType::kFloat16 ? floatToHalf(v) : floatToBfloat16(v);
          std::memcpy(bytes + i * 2, &h, 2);
        }
      }
    }
  }
}

// ------------------------------------------------------------ DynamicQuantizeLinear

void inferDynamicQuantize(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  if (t != DataType::kFloat && t != DataType::kUndefined) ctx.fail("x must be float");
  setSameShape(ctx, 0, DataType::kUint8, 0);
  ctx.setOutput(1, DataType::kFloat, std::vector<int64_t>{});
  ctx.setOutput(2, DataType::kUint8, std::vector<int64_t>{});
}

void computeDynamicQuantize(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const float* xs = dataAs<float>(x);
  const auto n = static_cast<size_t>(x.numElements());
  float mn = 0, mx = 0;  // the range always includes 0
  for (size_t i = 0; i < n; ++i) {
    mn = std::min(mn, xs[i]);
    mx = std::max(mx, xs[i]);
  }
  const float scale = (mx - mn) / 255.0f;
  float zpf =
      scale == 0 ? 0.0f : std::nearbyint(std::min(std::max(0.0f - mn / scale, 0.0f), 255.0f));
  const auto zp = kernels::fromDouble<int32_t>(zpf);  // NaN (an infinite input) gives 0
  if (ctx.hasOutput(0)) {
    uint8_t* y = mutableDataAs<uint8_t>(ctx.output(0));
    if (scale == 0) {
      std::memset(y, 0, n);
    } else {
      quantizeF32Hwy(xs, n, scale, zp, y);
    }
  }
  if (ctx.hasOutput(1)) *mutableDataAs<float>(ctx.output(1)) = scale;
  if (ctx.hasOutput(2)) *mutableDataAs<uint8_t>(ctx.output(2)) = static_cast<uint8_t>(zp);
}

}  // namespace

void registerQuantizeOps(OpRegistry& r) {
  for (int v : {10, 13, 19, 21, 23, 24, 25}) {
    r.add({"", "QuantizeLinear", v, inferQuantize, computeQuantize});
    r.add({"", "DequantizeLinear", v, inferDequantize, computeDequantize});
  }
  r.add({"", "DynamicQuantizeLinear", 11, inferDynamicQuantize, computeDynamicQuantize});
}

}  // namespace onnxfold

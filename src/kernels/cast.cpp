// cast op family: Cast, CastLike, BitCast, QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear. See op_registry.h for the contract of infer() and compute().
//
// Conversions between the standard element types run as one typed loop per
// (source, destination) pair. The exotic types (float8, float4, float8e8m0,
// packed int4/int2, string) go element by element through a small tagged
// scalar (double, int64 or uint64), which keeps one encoder and one decoder
// per exotic type. float32 <-> float16 and the float32 -> int8/uint8
// quantization loops have Highway kernels beside their scalar references.
#include "kernels/cast.h"

#include <hwy/highway.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include "kernels/common.h"

namespace onnxfold {
namespace kernels {

namespace hn = hwy::HWY_NAMESPACE;

// ------------------------------------------------------------ float16 bulk conversion

void floatToHalfScalar(const float* in, uint16_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = floatToHalf(in[i]);
}

void halfToFloatScalar(const uint16_t* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = halfToFloat(in[i]);
}

// Bit-exact with floatToHalf (round to nearest even, NaN payload kept): the
// hardware-free Highway DemoteTo truncates and mishandles Inf/NaN, so the
// rounding is done on the integer bits (subnormals by a float add of 0.5).
void floatToHalfHwy(const float* in, uint16_t* out, size_t n) {
  const hn::ScalableTag<int32_t> di;
  const hn::RebindToFloat<decltype(di)> df;
  const hn::Rebind<uint16_t, decltype(di)> du16;
  const size_t lanes = hn::Lanes(di);
  const auto abs_mask = hn::Set(di, 0x7fffffff);
  const auto f32_inf = hn::Set(di, 0x7f800000);
  const auto f16_overflow = hn::Set(di, 0x477fefff);  // >= 0x477ff000 rounds to Inf
  const auto min_normal = hn::Set(di, 0x38800000);    // 2^-14
  const auto denorm_magic_f = hn::Set(df, 0.5f);
  const auto denorm_magic_i = hn::Set(di, 0x3f000000);
  const auto rebias = hn::Set(di, -0x38000000 + 0xfff);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto x = hn::BitCast(di, hn::LoadU(df, in + i));
    const auto a = hn::And(x, abs_mask);
    const auto sign = hn::And(hn::ShiftRight<16>(x), hn::Set(di, 0x8000));
    const auto is_nan = hn::Gt(a, f32_inf);
    const auto is_big = hn::Gt(a, f16_overflow);
    const auto nan_bits =
        hn::Or(hn::Set(di, 0x7e00), hn::And(hn::ShiftRight<13>(a), hn::Set(di, 0x3ff)));
    const auto special = hn::IfThenElse(is_nan, nan_bits, hn::Set(di, 0x7c00));
    const auto mant_odd = hn::And(hn::ShiftRight<13>(a), hn::Set(di, 1));
    const auto normal = hn::ShiftRight<13>(hn::Add(hn::Add(a, rebias), mant_odd));
    const auto sub =
        hn::Sub(hn::BitCast(di, hn::Add(hn::BitCast(df, a), denorm_magic_f)), denorm_magic_i);
    auto h = hn::IfThenElse(hn::Lt(a, min_normal), sub, normal);
    h = hn::Or(hn::IfThenElse(is_big, special, h), sign);
    hn::StoreU(hn::DemoteTo(du16, h), du16, out + i);
  }
  for (; i < n; ++i)
    out[i] = floatToHalf(in[i]);
}

// Bit-exact with halfToFloat: exponent rebias, Inf/NaN and subnormals fixed up.
void halfToFloatHwy(const uint16_t* in, float* out, size_t n) {
  const hn::ScalableTag<int32_t> di;
  const hn::RebindToFloat<decltype(di)> df;
  const hn::Rebind<uint16_t, decltype(di)> du16;
  const size_t lanes = hn::Lanes(di);
  const auto exp_mask = hn::Set(di, 0x0f800000);
  const auto rebias = hn::Set(di, 112 << 23);
  const auto magic = hn::BitCast(df, hn::Set(di, 113 << 23));
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto h = hn::PromoteTo(di, hn::LoadU(du16, in + i));
    auto o = hn::ShiftLeft<13>(hn::And(h, hn::Set(di, 0x7fff)));
    const auto e = hn::And(o, exp_mask);
    o = hn::Add(o, rebias);
    const auto inf_nan = hn::Add(o, rebias);
    const auto sub =
        hn::BitCast(di, hn::Sub(hn::BitCast(df, hn::Add(o, hn::Set(di, 1 << 23))), magic));
    o = hn::IfThenElse(hn::Eq(e, exp_mask), inf_nan, o);
    o = hn::IfThenElse(hn::Eq(e, hn::Zero(di)), sub, o);
    o = hn::Or(o, hn::ShiftLeft<16>(hn::And(h, hn::Set(di, 0x8000))));
    hn::StoreU(hn::BitCast(df, o), df, out + i);
  }
  for (; i < n; ++i)
    out[i] = halfToFloat(in[i]);
}

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

// ------------------------------------------------------------ minifloats

struct MiniFloat {
  int exp_bits;
  int man_bits;
  int bias;
  enum Nan { kIeee, kAllOnes, kNegZero, kNone } nan;  // E5M2 / E4M3FN / *FNUZ / float4
  double max;
};

const MiniFloat* miniFloatOf(DataType t) {
  static const MiniFloat e4m3fn{4, 3, 7, MiniFloat::kAllOnes, 448.0};
  static const MiniFloat e4m3fnuz{4, 3, 8, MiniFloat::kNegZero, 240.0};
  static const MiniFloat e5m2{5, 2, 15, MiniFloat::kIeee, 57344.0};
  static const MiniFloat e5m2fnuz{5, 2, 16, MiniFloat::kNegZero, 57344.0};
  static const MiniFloat e2m1{2, 1, 1, MiniFloat::kNone, 6.0};
  switch (t) {
    case DataType::kFloat8E4M3FN:
      return &e4m3fn;
    case DataType::kFloat8E4M3FNUZ:
      return &e4m3fnuz;
    case DataType::kFloat8E5M2:
      return &e5m2;
    case DataType::kFloat8E5M2FNUZ:
      return &e5m2fnuz;
    case DataType::kFloat4E2M1:
      return &e2m1;
    default:
      return nullptr;
  }
}

double decodeMiniFloat(const MiniFloat& m, uint32_t bits) {
  const int nbits = 1 + m.exp_bits + m.man_bits;
  const uint32_t sign_bit = 1u << (nbits - 1);
  const uint32_t mag = bits & (sign_bit - 1);
  const uint32_t exp_all = (1u << m.exp_bits) - 1;
  const uint32_t e = mag >> m.man_bits;
  const uint32_t man = mag & ((1u << m.man_bits) - 1);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (m.nan == MiniFloat::kNegZero && bits == sign_bit) return nan;
  if (m.nan == MiniFloat::kAllOnes && mag == (sign_bit - 1)) return bits & sign_bit ? -nan : nan;
  if (m.nan == MiniFloat::kIeee && e == exp_all) {
    if (man != 0) return bits & sign_bit ? -nan : nan;
    return bits & sign_bit ? -HUGE_VAL : HUGE_VAL;
  }
  double v = e == 0 ? std::ldexp(static_cast<double>(man), 1 - m.bias - m.man_bits)
                    : std::ldexp(1.0 + std::ldexp(static_cast<double>(man), -m.man_bits),
                                 static_cast<int>(e) - m.bias);
  return bits & sign_bit ? -v : v;
}

// Round to nearest even at the target precision; out-of-range values follow
// the Cast tables (saturate: +-max; otherwise NaN, or Inf for E5M2).
uint32_t encodeMiniFloat(const MiniFloat& m, double x, bool saturate) {
  const int nbits = 1 + m.exp_bits + m.man_bits;
  const uint32_t sign_bit = 1u << (nbits - 1);
  const bool neg = std::signbit(x);
  const uint32_t sign = neg ? sign_bit : 0;
  const uint32_t max_bits = m.nan == MiniFloat::kAllOnes ? sign_bit - 2
                            : m.nan == MiniFloat::kIeee ? (((1u << m.exp_bits) - 2) << m.man_bits) |
                                                              ((1u << m.man_bits) - 1)
                                                        : sign_bit - 1;
  auto overflow = [&]() -> uint32_t {
    if (saturate || m.nan == MiniFloat::kNone) return sign | max_bits;
    if (m.nan == MiniFloat::kNegZero) return sign_bit;
    if (m.nan == MiniFloat::kAllOnes) return sign | (sign_bit - 1);
    return sign | (((1u << m.exp_bits) - 1) << m.man_bits);  // Inf
  };
  if (std::isnan(x)) {
    switch (m.nan) {
      case MiniFloat::kNegZero:
        return sign_bit;
      case MiniFloat::kAllOnes:
        return sign | (sign_bit - 1);
      case MiniFloat::kIeee:
        return sign | (((1u << m.exp_bits) - 1) << m.man_bits) | (1u << (m.man_bits - 1));
      case MiniFloat::kNone:
        return sign_bit;  // as ml_dtypes (the reference data): NaN -> 0x8
    }
  }
  if (std::isinf(x)) return overflow();
  const double a = std::fabs(x);
  const uint32_t zero = m.nan == MiniFloat::kNegZero ? 0 : sign;
  if (a == 0) return zero;
  const int emin = 1 - m.bias;
  int e = std::max(std::ilogb(a), emin);
  double q = std::nearbyint(std::ldexp(a, m.man_bits - e));
  if (std::ldexp(q, e - m.man_bits) > m.max) return overflow();
  if (q == 0) return zero;
  auto qi = static_cast<uint32_t>(q);
  if (qi == (2u << m.man_bits)) {
    ++e;
    qi >>= 1;
  }
  if (qi < (1u << m.man_bits)) return sign | qi;  // subnormal (e == emin)
  return sign | (static_cast<uint32_t>(e + m.bias) << m.man_bits) | (qi - (1u << m.man_bits));
}

double decodeE8M0(uint8_t b) {
  return b == 0xff ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, int{b} - 127);
}

uint8_t encodeE8M0(double x, bool saturate, const std::string& round_mode) {
  if (std::isnan(x)) return 0xff;
  if (std::isinf(x)) return x > 0 && saturate ? 0xfe : (saturate ? 0 : 0xff);
  if (x <= 0) return saturate ? 0 : 0xff;
  int e = std::ilogb(x);
  const double frac = std::ldexp(x, -e);  // [1, 2)
  if (round_mode == "up" ? frac > 1.0 : round_mode == "nearest" ? frac >= 1.5 : false) ++e;
  const int biased = e + 127;
  if (biased > 254) return saturate ? 0xfe : 0xff;
  if (biased < 0) return saturate ? 0 : 0xff;
  return static_cast<uint8_t>(biased);
}

// ------------------------------------------------------------ generic element access

// One element of any type: a float value, a signed or an unsigned integer.
struct Scalar {
  enum Kind { kF, kI, kU } kind = kF;
  double f = 0;
  int64_t i = 0;
  uint64_t u = 0;
  double asDouble() const {
    return kind == kF ? f : kind == kI ? static_cast<double>(i) : static_cast<double>(u);
  }
};

// Float -> integer truncation without UB: NaN and out-of-range give INT64_MIN
// (what x86 conversions produce), which then wraps like any integer.
int64_t truncToInt64(double d) {
  if (!(std::fabs(d) < 9.2233720368547758e18)) {
    if (d >= 9.2233720368547758e18 && d < 1.8446744073709552e19) {
      return static_cast<int64_t>(static_cast<uint64_t>(d));
    }
    return std::numeric_limits<int64_t>::min();
  }
  return static_cast<int64_t>(d);
}

bool isSubByte(DataType t) {
  return t == DataType::kInt4 || t == DataType::kUint4 || t == DataType::kInt2 ||
         t == DataType::kUint2 || t == DataType::kFloat4E2M1;
}

uint32_t readPacked(const uint8_t* bytes, size_t i, int bits) {
  const size_t per = 8 / bits;
  return (bytes[i / per] >> ((i % per) * bits)) & ((1u << bits) - 1);
}

void writePacked(uint8_t* bytes, size_t i, int bits, uint32_t v) {
  const size_t per = 8 / bits;
  const int shift = static_cast<int>((i % per) * bits);
  const uint32_t mask = ((1u << bits) - 1) << shift;
  bytes[i / per] = static_cast<uint8_t>((bytes[i / per] & ~mask) | ((v << shift) & mask));
}

template <class T>
Scalar scalarOf(T v) {
  Scalar s;
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> ||
                std::is_floating_point_v<T>) {
    s.kind = Scalar::kF;
    s.f = toDouble(v);
  } else if constexpr (std::is_same_v<T, bool> || std::is_signed_v<T>) {
    s.kind = Scalar::kI;
    s.i = static_cast<int64_t>(v);
  } else {
    s.kind = Scalar::kU;
    s.u = static_cast<uint64_t>(v);
  }
  return s;
}

// Converts a Scalar to a standard element type following the Cast rules.
template <class U>
U convertScalar(const Scalar& s) {
  if constexpr (std::is_same_v<U, bool>) {
    return s.kind == Scalar::kF ? s.f != 0 : s.kind == Scalar::kI ? s.i != 0 : s.u != 0;
  } else if constexpr (std::is_same_v<U, Half> || std::is_same_v<U, BFloat16> ||
                       std::is_same_v<U, float>) {
    float f = s.kind == Scalar::kF   ? static_cast<float>(s.f)
              : s.kind == Scalar::kI ? static_cast<float>(s.i)
                                     : static_cast<float>(s.u);
    if constexpr (std::is_same_v<U, float>)
      return f;
    else
      return fromDouble<U>(f);
  } else if constexpr (std::is_same_v<U, double>) {
    return s.asDouble();
  } else {
    if (s.kind == Scalar::kF) return static_cast<U>(truncToInt64(s.f));
    return s.kind == Scalar::kI ? static_cast<U>(s.i) : static_cast<U>(s.u);
  }
}

// The element conversion for standard pairs: the same rules, typed.
template <class U, class T>
inline U convertElement(T v) {
  if constexpr (std::is_same_v<U, T>) {
    return v;
  } else if constexpr (std::is_same_v<U, bool>) {
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
      return toDouble(v) != 0;
    else
      return v != 0;
  } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return convertScalar<U>(scalarOf(v));
  } else if constexpr (std::is_same_v<U, Half> || std::is_same_v<U, BFloat16>) {
    return fromDouble<U>(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<T> && std::is_integral_v<U>) {
    return static_cast<U>(truncToInt64(static_cast<double>(v)));
  } else {
    return static_cast<U>(v);
  }
}

struct CastOptions {
  bool saturate = true;
  std::string round_mode = "up";
};

std::string formatNumber(const Scalar& s, DataType src) {
  if (s.kind == Scalar::kI) {
    if (src == DataType::kBool) return s.i ? "True" : "False";
    return std::to_string(s.i);
  }
  if (s.kind == Scalar::kU) return std::to_string(s.u);
  const double d = s.f;
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "INF" : "-INF";
  // Shortest representation that reads back to the same value of the source width.
  const bool single = src != DataType::kDouble;
  char buf[64];
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*g", p, d);
    const double back = std::strtod(buf, nullptr);
    if (single ? static_cast<float>(back) == static_cast<float>(d) : back == d) break;
  }
  return buf;
}

Scalar parseString(const std::string& str) {
  Scalar s;
  const char* b = str.c_str();
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(b, &end, 10);
  if (end != b && *end == '\0' && errno == 0) {
    s.kind = Scalar::kI;
    s.i = v;
    return s;
  }
  s.kind = Scalar::kF;
  s.f = std::strtod(b, &end);  // also reads INF, +INF, -inf, NaN in any case
  return s;
}

Scalar readElement(const Tensor& t, size_t i) {
  const DataType dt = t.dtype();
  Scalar s;
  if (dispatchNumeric(dt, [&](auto tag) {
        using T = typename decltype(tag)::type;
        s = scalarOf(t.at<T>(i));
      })) {
    return s;
  }
  switch (dt) {
    case DataType::kString:
      return parseString(t.strings()[i]);
    case DataType::kInt4:
    case DataType::kInt2: {
      const int bits = bitsPerElement(dt);
      const uint32_t r = readPacked(t.bytes(), i, bits);
      s.kind = Scalar::kI;
      s.i = r & (1u << (bits - 1)) ? static_cast<int64_t>(r) - (int64_t{1} << bits) : r;
      return s;
    }
    case DataType::kUint4:
    case DataType::kUint2:
      s.kind = Scalar::kU;
      s.u = readPacked(t.bytes(), i, bitsPerElement(dt));
      return s;
    case DataType::kFloat4E2M1:
      s.f = decodeMiniFloat(*miniFloatOf(dt), readPacked(t.bytes(), i, 4));
      return s;
    case DataType::kFloat8E8M0:
      s.f = decodeE8M0(t.bytes()[i]);
      return s;
    default:
      if (const MiniFloat* m = miniFloatOf(dt)) {
        s.f = decodeMiniFloat(*m, t.bytes()[i]);
        return s;
      }
      return s;
  }
}

// Writes element i of `out` (preallocated). `src` is the source dtype, used
// for string formatting.
void writeElement(Tensor& out, uint8_t* bytes, size_t i, const Scalar& s, const CastOptions& o,
                  DataType src) {
  const DataType dt = out.dtype();
  if (dispatchNumeric(dt, [&](auto tag) {
        using U = typename decltype(tag)::type;
        const U v = convertScalar<U>(s);
        std::memcpy(bytes + i * sizeof(U), &v, sizeof(U));
      })) {
    return;
  }
  switch (dt) {
    case DataType::kString:
      out.mutableStrings()[i] = formatNumber(s, src);
      return;
    case DataType::kInt4:
    case DataType::kInt2:
    case DataType::kUint4:
    case DataType::kUint2: {
      const int64_t v = s.kind == Scalar::kF   ? truncToInt64(s.f)
                        : s.kind == Scalar::kI ? s.i
                                               : static_cast<int64_t>(s.u);
      writePacked(bytes, i, bitsPerElement(dt), static_cast<uint32_t>(v));  // wraps
      return;
    }
    case DataType::kFloat4E2M1:
      writePacked(bytes, i, 4, encodeMiniFloat(*miniFloatOf(dt), s.asDouble(), true));
      return;
    case DataType::kFloat8E8M0:
      bytes[i] = encodeE8M0(s.asDouble(), o.saturate, o.round_mode);
      return;
    default:
      if (const MiniFloat* m = miniFloatOf(dt)) {
        bytes[i] = static_cast<uint8_t>(encodeMiniFloat(*m, s.asDouble(), o.saturate));
      }
      return;
  }
}

// Casts `in` into the preallocated `out` (same element count).
void castTensor(const Tensor& in, Tensor& out, const CastOptions& o) {
  const auto n = static_cast<size_t>(in.numElements());
  const DataType from = in.dtype(), to = out.dtype();
  if (n == 0) return;
  if (from == to && from != DataType::kString) {
    std::memcpy(out.mutableBytes(), in.bytes(), in.byteSize());
    return;
  }
  if (from == DataType::kString && to == DataType::kString) {
    out.mutableStrings() = in.strings();
    return;
  }
  if (from == DataType::kFloat && to == DataType::kFloat16) {
    floatToHalfHwy(dataAs<float>(in), mutableDataAs<uint16_t>(out), n);
    return;
  }
  if (from == DataType::kFloat16 && to == DataType::kFloat) {
    halfToFloatHwy(dataAs<uint16_t>(in), mutableDataAs<float>(out), n);
    return;
  }
  bool done = false;
  dispatchNumeric(from, [&](auto tin) {
    using T = typename decltype(tin)::type;
    done = dispatchNumeric(to, [&](auto tout) {
      using U = typename decltype(tout)::type;
      const T* src = dataAs<T>(in);
      U* dst = mutableDataAs<U>(out);
      for (size_t i = 0; i < n; ++i)
        dst[i] = convertElement<U>(src[i]);
    });
  });
  if (done) return;
  uint8_t* bytes = to == DataType::kString ? nullptr : out.mutableBytes();
  for (size_t i = 0; i < n; ++i)
    writeElement(out, bytes, i, readElement(in, i), o, from);
}

}  // namespace kernels

namespace {

using namespace kernels;

// The first opset whose Cast accepts each newer element type.
int castMinOpset(DataType t) {
  switch (t) {
    case DataType::kBfloat16:
      return 13;
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
      return 19;
    case DataType::kInt4:
    case DataType::kUint4:
      return 21;
    case DataType::kFloat4E2M1:
      return 23;
    case DataType::kFloat8E8M0:
      return 24;
    case DataType::kInt2:
    case DataType::kUint2:
      return 25;
    default:
      return 1;
  }
}

void checkCastType(const InferContext& ctx, DataType t, const char* what) {
  if (t == DataType::kUndefined) return;
  if (t == DataType::kComplex64 || t == DataType::kComplex128) {
    ctx.fail(std::string(what) + " type " + std::string(dataTypeName(t)) + " is not castable");
  }
  // Cast-1 .. CastLike-15 predate the newer types; a model using them there is invalid.
  if (castMinOpset(t) > ctx.opset()) {
    ctx.fail(std::string(what) + " type " + std::string(dataTypeName(t)) +
             " needs opset >= " + std::to_string(castMinOpset(t)));
  }
}

DataType dtypeFromName(const std::string& s) {
  for (int32_t v = 1; v <= kMaxDataType; ++v) {
    if (dataTypeProtoName(static_cast<DataType>(v)) == s) return static_cast<DataType>(v);
  }
  return DataType::kUndefined;
}

// Cast-1 gave `to` as a type name ("FLOAT"); later versions as the enum value.
DataType castTarget(const OpContext& ctx) {
  const Attribute* a = ctx.attr("to");
  if (a == nullptr) ctx.fail("attribute 'to' is required");
  DataType t = DataType::kUndefined;
  if (a->type == AttrType::kString) {
    t = dtypeFromName(a->s);
  } else if (a->type == AttrType::kInt && isKnownDataType(static_cast<int32_t>(a->i))) {
    t = static_cast<DataType>(a->i);
  }
  if (t == DataType::kUndefined) ctx.fail("attribute 'to' is not a valid data type");
  return t;
}

// Output i keeps input 0's shape (or unknown rank) with element type `dt`.
void sameShapeAs(InferContext& ctx, size_t out, DataType dt) {
  if (const Shape* s = ctx.inputShape(0))
    ctx.setOutput(out, dt, *s);
  else
    ctx.setOutputUnknownRank(out, dt);
}

void propagateIntSymbolic(InferContext& ctx, DataType to) {
  const DataType from = ctx.inputDtype(0);
  const bool int_in = from == DataType::kInt64 || from == DataType::kInt32;
  const bool int_out = to == DataType::kInt64 || to == DataType::kInt32;
  if (!int_in || !int_out) return;
  if (auto sym = ctx.inputSymbolic(0)) ctx.setOutputSymbolic(0, *sym);
}

void inferCast(InferContext& ctx) {
  const DataType to = castTarget(ctx);
  checkCastType(ctx, to, "target");
  checkCastType(ctx, ctx.inputDtype(0), "input");
  sameShapeAs(ctx, 0, to);
  propagateIntSymbolic(ctx, to);
}

CastOptions castOptions(const OpContext& ctx) {
  CastOptions o;
  o.saturate = ctx.attrInt("saturate", 1) != 0;
  o.round_mode = ctx.attrString("round_mode", "up");
  return o;
}

void computeCast(ComputeContext& ctx) {
  castTensor(ctx.input(0), ctx.output(0), castOptions(ctx));
}

void inferCastLike(InferContext& ctx) {
  const DataType to = ctx.inputDtype(1);
  if (!ctx.hasInput(1)) ctx.fail("input 'target_type' is required");
  checkCastType(ctx, to, "target");
  checkCastType(ctx, ctx.inputDtype(0), "input");
  sameShapeAs(ctx, 0, to);
  propagateIntSymbolic(ctx, to);
}

void inferBitCast(InferContext& ctx) {
  const DataType to = castTarget(ctx);
  const DataType from = ctx.inputDtype(0);
  if (to == DataType::kString || from == DataType::kString) ctx.fail("strings cannot be bitcast");
  if (from != DataType::kUndefined && bitsPerElement(from) != bitsPerElement(to)) {
    ctx.fail("bit widths differ: " + std::string(dataTypeName(from)) + " and " +
             std::string(dataTypeName(to)));
  }
  sameShapeAs(ctx, 0, to);
}

void computeBitCast(ComputeContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  if (in.byteSize() != 0) std::memcpy(out.mutableBytes(), in.bytes(), in.byteSize());
}

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
  int64_t s_count = 1;
  for (int64_t d : s_dims)
    s_count *= d;
  if (block < 0) ctx.fail("block_size must be >= 0");
  if (block == 0 && s_count == 1 && s_dims.size() <= 1) {
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
      if (s_dims[uk] != (x_dims[uk] + block - 1) / block) {
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
  sameShapeAs(ctx, 0, t);
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
  sameShapeAs(ctx, 0, out);
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
  sameShapeAs(ctx, 0, DataType::kUint8);
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
  const auto zp = static_cast<int32_t>(zpf);
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

void registerCastOps(OpRegistry& r) {
  for (int v : {1, 6, 9, 13, 19, 21, 23, 24, 25})
    r.add({"", "Cast", v, inferCast, computeCast});
  for (int v : {15, 19, 21, 23, 24, 25})
    r.add({"", "CastLike", v, inferCastLike, computeCast});
  r.add({"", "BitCast", 26, inferBitCast, computeBitCast});
  for (int v : {10, 13, 19, 21, 23, 24, 25}) {
    r.add({"", "QuantizeLinear", v, inferQuantize, computeQuantize});
    r.add({"", "DequantizeLinear", v, inferDequantize, computeDequantize});
  }
  r.add({"", "DynamicQuantizeLinear", 11, inferDynamicQuantize, computeDynamicQuantize});
}

}  // namespace onnxfold

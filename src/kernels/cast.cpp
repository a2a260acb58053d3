// cast op family: Cast, CastLike and BitCast. See op_registry.h for the contract
// of infer() and compute().
//
// Conversions between the standard element types run as one typed loop per
// (source, destination) pair. The exotic types (float8, float4, float8e8m0,
// packed int4/int2, string) go element by element through a small tagged
// scalar (double, int64 or uint64), which keeps one encoder and one decoder
// per exotic type; QuantizeLinear (quantize.cpp) shares them through cast.h.
// float32 <-> float16 has Highway kernels beside their scalar references.
#include "kernels/cast.h"

#include <hwy/highway.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include "ir/error.h"
#include "kernels/common.h"
#include "kernels/op_helpers.h"

namespace onnxfold {
namespace kernels {

namespace hn = hwy::HWY_NAMESPACE;

// ------------------------------------------------------------ float16 bulk conversion

void floatToHalfScalar(const float* in, uint16_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = floatToHalf(in[i]);
}

void floatToHalfSaturatedScalar(const float* in, uint16_t* out, size_t n) {
  constexpr auto kMax = static_cast<float>(kFloat16Max);
  for (size_t i = 0; i < n; ++i) {
    float x = in[i];
    if (std::isfinite(x) && std::fabs(x) > kMax) x = x < 0 ? -kMax : kMax;
    out[i] = floatToHalf(x);
  }
}

void halfToFloatScalar(const uint16_t* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = halfToFloat(in[i]);
}

namespace {

// Bit-exact with floatToHalf (round to nearest even, NaN payload kept): the
// hardware-free Highway DemoteTo truncates and mishandles Inf/NaN, so the
// rounding is done on the integer bits (subnormals by a float add of 0.5).
// kSaturate: finite values past float16's range become +-65504 instead of Inf.
template <bool kSaturate>
void floatToHalfLanes(const float* in, uint16_t* out, size_t n) {
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
    auto big = hn::Set(di, 0x7c00);
    if (kSaturate) big = hn::IfThenElse(hn::Eq(a, f32_inf), big, hn::Set(di, 0x7bff));
    const auto special = hn::IfThenElse(is_nan, nan_bits, big);
    const auto mant_odd = hn::And(hn::ShiftRight<13>(a), hn::Set(di, 1));
    const auto normal = hn::ShiftRight<13>(hn::Add(hn::Add(a, rebias), mant_odd));
    const auto sub =
        hn::Sub(hn::BitCast(di, hn::Add(hn::BitCast(df, a), denorm_magic_f)), denorm_magic_i);
    auto h = hn::IfThenElse(hn::Lt(a, min_normal), sub, normal);
    h = hn::Or(hn::IfThenElse(is_big, special, h), sign);
    hn::StoreU(hn::DemoteTo(du16, h), du16, out + i);
  }
  if (kSaturate)
    floatToHalfSaturatedScalar(in + i, out + i, n - i);
  else
    floatToHalfScalar(in + i, out + i, n - i);
}

}  // namespace

void floatToHalfHwy(const float* in, uint16_t* out, size_t n) {
  floatToHalfLanes<false>(in, out, n);
}

void floatToHalfSaturatedHwy(const float* in, uint16_t* out, size_t n) {
  floatToHalfLanes<true>(in, out, n);
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

// ------------------------------------------------------------ minifloats

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

// A string as ONNX Runtime reads it for the target type (std::stod, std::stoll, std::stoull:
// leading blanks skipped, the longest number prefix, integers in base 10, then converted as a
// number of that kind), so a fold gives what the runtime computes; what it refuses (no number,
// out of range) fails here too, and is not folded.
Scalar parseStringAs(const std::string& str, DataType to) {
  const std::string shown = str.size() > 32 ? str.substr(0, 32) + "..." : str;
  const char* b = str.c_str();
  char* end = nullptr;
  errno = 0;
  Scalar s;
  if (isFloatingPoint(to)) {
    s.kind = Scalar::kF;
    s.f = std::strtod(b, &end);
  } else if (isSignedInteger(to) && to != DataType::kInt4 && to != DataType::kInt2) {
    s.kind = Scalar::kI;
    s.i = std::strtoll(b, &end, 10);
  } else if (isUnsignedInteger(to) && to != DataType::kUint4 && to != DataType::kUint2) {
    s.kind = Scalar::kU;
    s.u = std::strtoull(b, &end, 10);
  } else {
    throw UnsupportedError("Cast from string to " + std::string(dataTypeName(to)) +
                           " is not folded");
  }
  if (end == b) throw Error("Cast: '" + shown + "' is not a number");
  if (errno == ERANGE) {
    throw Error("Cast: '" + shown + "' is out of the range of " +
                (s.kind == Scalar::kF   ? "double"
                 : s.kind == Scalar::kI ? "int64"
                                        : "uint64"));
  }
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
      return parseStringAs(t.strings()[i], DataType::kDouble);
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
  for (size_t i = 0; i < n; ++i) {
    const Scalar s =
        from == DataType::kString ? parseStringAs(in.strings()[i], to) : readElement(in, i);
    writeElement(out, bytes, i, s, o, from);
  }
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
  setSameShape(ctx, 0, to, 0);
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
  setSameShape(ctx, 0, to, 0);
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
  setSameShape(ctx, 0, to, 0);
}

void computeBitCast(ComputeContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  if (in.byteSize() != 0) std::memcpy(out.mutableBytes(), in.bytes(), in.byteSize());
}

}  // namespace

void registerCastOps(OpRegistry& r) {
  for (int v : {1, 6, 9, 13, 19, 21, 23, 24, 25})
    r.add({"", "Cast", v, inferCast, computeCast});
  for (int v : {15, 19, 21, 23, 24, 25})
    r.add({"", "CastLike", v, inferCastLike, computeCast});
  r.add({"", "BitCast", 26, inferBitCast, computeBitCast});
}

}  // namespace onnxfold

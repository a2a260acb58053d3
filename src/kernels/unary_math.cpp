// Unary math: Abs, Acos, ..., Tanh, Not, BitwiseNot, and IsNaN/IsInf (float8
// included, by bit pattern). See op_registry.h for the infer()/compute()
// contract and elementwise.h for the shared kernel template.
//
// Neg also negates partly symbolic int64/int32 shape values.
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/elementwise.h"
#include "kernels/float_math.h"

namespace onnxfold {
namespace {

using kernels::dataAs;
using kernels::mutableDataAs;
using namespace kernels::elementwise;

ONNXFOLD_FLOAT_UNARY(FAcos, fm::acos(x))
ONNXFOLD_FLOAT_UNARY(FAcosh, fm::acosh(x))
ONNXFOLD_FLOAT_UNARY(FAsin, fm::asin(x))
ONNXFOLD_FLOAT_UNARY(FAsinh, fm::asinh(x))
ONNXFOLD_FLOAT_UNARY(FAtan, fm::atan(x))
ONNXFOLD_FLOAT_UNARY(FAtanh, fm::atanh(x))
ONNXFOLD_FLOAT_UNARY(FCeil, std::ceil(x))
ONNXFOLD_FLOAT_UNARY(FCos, fm::cos(x))
ONNXFOLD_FLOAT_UNARY(FCosh, fm::cosh(x))
ONNXFOLD_FLOAT_UNARY(FExp, fm::exp(x))
ONNXFOLD_FLOAT_UNARY(FFloor, std::floor(x))
ONNXFOLD_FLOAT_UNARY(FLog, fm::log(x))
ONNXFOLD_FLOAT_UNARY(FReciprocal, C{1} / x)
ONNXFOLD_FLOAT_UNARY(FRound, std::nearbyint(x))  // default rounding mode: half to even
ONNXFOLD_FLOAT_UNARY(FSin, fm::sin(x))
ONNXFOLD_FLOAT_UNARY(FSinh, fm::sinh(x))
ONNXFOLD_FLOAT_UNARY(FTan, fm::tan(x))
ONNXFOLD_FLOAT_UNARY(FTanh, fm::tanh(x))
ONNXFOLD_FLOAT_UNARY(FNot, !x)
ONNXFOLD_FLOAT_UNARY(FBitwiseNot, ~x)

struct FErf : UnaryBase {
  using UnaryBase::UnaryBase;
  static constexpr bool kIntAsDouble = true;  // Erf-9/13 also take integers
  template <class C>
  C operator()(C x) const {
    return fm::erf(x);
  }
};

struct FSqrt : UnaryBase {
  using UnaryBase::UnaryBase;
  static constexpr int kHwy = static_cast<int>(kernels::ew::UnaryF32::kSqrt);
  template <class C>
  C operator()(C x) const {
    return std::sqrt(x);
  }
};

struct FAbs : UnaryBase {
  using UnaryBase::UnaryBase;
  static constexpr int kHwy = static_cast<int>(kernels::ew::UnaryF32::kAbs);
  template <class C>
  C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>)
      return x;
    else if constexpr (std::is_integral_v<C>)
      return x < 0 ? wrapNeg(x) : x;
    else
      return std::fabs(x);
  }
};

struct FNeg : UnaryBase {
  using UnaryBase::UnaryBase;
  static constexpr int kHwy = static_cast<int>(kernels::ew::UnaryF32::kNeg);
  template <class C>
  C operator()(C x) const {
    if constexpr (std::is_integral_v<C>)
      return wrapNeg(x);
    else
      return -x;
  }
};

struct FSign : UnaryBase {
  using UnaryBase::UnaryBase;
  template <class C>
  C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) {
      return x > 0 ? C{1} : C{0};
    } else {
      if (x != x) return x;  // NaN stays NaN (numpy)
      return x > 0 ? C{1} : (x < 0 ? C{-1} : C{0});
    }
  }
};

// Neg also negates partly symbolic shape values (known elements only).
void inferNeg(InferContext& ctx) {
  inferUnary<kSNum>(ctx);
  const DataType dt = ctx.inputDtype(0);
  if ((dt != DataType::kInt64 && dt != DataType::kInt32) || ctx.allInputValuesKnown()) return;
  const Shape* s = ctx.inputShape(0);
  if (s == nullptr || s->rank() > 1) return;
  std::optional<std::vector<SymElem>> a = symbolicElems(ctx, 0);
  if (!a) return;
  SymbolicValue out;
  for (const SymElem& e : *a) {
    Dim d;
    if (e.known)
      d.value = dt == DataType::kInt32 ? static_cast<int32_t>(wrapNeg(e.v)) : wrapNeg(e.v);
    else
      d = ctx.newSymbol();  // unnamed, it would read as the value -1
    out.push_back(d);
  }
  ctx.setOutputSymbolic(0, std::move(out));
}

// IsNaN / IsInf: float in, bool out.
template <uint32_t kMask>
void inferUnaryBool(InferContext& ctx) {
  requireType(ctx, ctx.inputDtype(0), kMask);
  kernels::setSameShape(ctx, 0, DataType::kBool, 0);
}

// float8 NaN/Inf by bit pattern: E4M3FN has NaN at S.1111.111 and no Inf; the
// FNUZ formats have NaN at 0x80 only; E5M2 is IEEE-like (Inf 0x7C, NaN 0x7D-0x7F).
inline bool float8IsNan(DataType t, uint8_t b) {
  switch (t) {
    case DataType::kFloat8E4M3FN:
      return (b & 0x7f) == 0x7f;
    case DataType::kFloat8E5M2:
      return (b & 0x7f) > 0x7c;
    default:
      return b == 0x80;
  }
}
inline int float8InfSign(DataType t, uint8_t b) {
  if (t != DataType::kFloat8E5M2 || (b & 0x7f) != 0x7c) return 0;
  return (b & 0x80) ? -1 : 1;
}

template <bool kIsInf>
void computeIsNanInf(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  bool* py = mutableDataAs<bool>(ctx.output(0));
  const auto n = static_cast<size_t>(x.numElements());
  const bool neg = ctx.attrInt("detect_negative", 1) != 0;
  const bool pos = ctx.attrInt("detect_positive", 1) != 0;
  if (classOf(x.dtype()) == kF8) {
    const uint8_t* px = dataAs<uint8_t>(x);
    for (size_t i = 0; i < n; ++i) {
      if constexpr (kIsInf) {
        const int s = float8InfSign(x.dtype(), px[i]);
        py[i] = s > 0 ? pos : (s < 0 ? neg : false);
      } else {
        py[i] = float8IsNan(x.dtype(), px[i]);
      }
    }
    return;
  }
  bool supported = true;
  const bool numeric = kernels::dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (classOfT<T>() == kF) {
      using C = Calc<T, false>;
      const T* px = dataAs<T>(x);
      for (size_t i = 0; i < n; ++i) {
        const C v = toCalc<C>(px[i]);
        if constexpr (kIsInf)
          py[i] = std::isinf(v) && (v > 0 ? pos : neg);
        else
          py[i] = std::isnan(v);
      }
    } else {
      supported = false;
    }
  });
  if (!numeric || !supported) failType(ctx, x.dtype());
}

}  // namespace

void registerUnaryMathOps(OpRegistry& r) {
  addUnary<FAbs, kNum>(r, "Abs", {1, 6, 13});
  addUnary<FAcos, kF>(r, "Acos", {7, 22});
  addUnary<FAcosh, kF>(r, "Acosh", {9, 22});
  addUnary<FAsin, kF>(r, "Asin", {7, 22});
  addUnary<FAsinh, kF>(r, "Asinh", {9, 22});
  addUnary<FAtan, kF>(r, "Atan", {7, 22});
  addUnary<FAtanh, kF>(r, "Atanh", {9, 22});
  addUnary<FCeil, kF>(r, "Ceil", {1, 6, 13});
  addUnary<FCos, kF>(r, "Cos", {7, 22});
  addUnary<FCosh, kF>(r, "Cosh", {9, 22});
  addUnary<FErf, kNum>(r, "Erf", {9, 13});
  addUnary<FExp, kF>(r, "Exp", {1, 6, 13});
  addUnary<FFloor, kF>(r, "Floor", {1, 6, 13});
  addUnary<FLog, kF>(r, "Log", {1, 6, 13});
  addVersions(r, "Neg", {1, 6, 13}, &inferNeg, &computeUnary<FNeg, kSNum>);
  addUnary<FReciprocal, kF>(r, "Reciprocal", {1, 6, 13});
  addUnary<FRound, kF>(r, "Round", {11, 22});
  addUnary<FSign, kNum>(r, "Sign", {9, 13});
  addUnary<FSin, kF>(r, "Sin", {7, 22});
  addUnary<FSinh, kF>(r, "Sinh", {9, 22});
  addUnary<FSqrt, kF>(r, "Sqrt", {1, 6, 13});
  addUnary<FTan, kF>(r, "Tan", {7, 22});
  addUnary<FTanh, kF>(r, "Tanh", {1, 6, 13});
  addUnary<FNot, kB>(r, "Not", {1});
  addUnary<FBitwiseNot, kInt>(r, "BitwiseNot", {18});
  addVersions(r, "IsNaN", {9, 13, 20}, &inferUnaryBool<kF | kF8>, &computeIsNanInf<false>);
  addVersions(r, "IsInf", {10, 20}, &inferUnaryBool<kF | kF8>, &computeIsNanInf<true>);
}

}  // namespace onnxfold

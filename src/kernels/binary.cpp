// Binary ops with numpy broadcasting: arithmetic (Add, Sub, Mul, Div, Mod, Pow),
// bitwise ops and shifts, logic (And, Or, Xor), comparison (Equal, Less, ...),
// and the variadic Max, Min, Sum and Mean. See op_registry.h for the
// infer()/compute() contract and elementwise.h for the broadcasting engine.
//
// Add/Sub/Mul/Div and Equal on small int64/int32 tensors also propagate partly
// symbolic contents (shape arithmetic on a dynamic batch), as InferContext
// describes.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kernels/elementwise.h"
#include "kernels/float_math.h"

namespace onnxfold {
namespace {

using kernels::dataAs;
using kernels::mutableDataAs;
using namespace kernels::elementwise;

// Add/Sub/Mul/Div of partly symbolic int64/int32 values: known op known gives
// known; x+0, x-0, x*1, x/1 keep x's symbol; 0*x and x-x are 0, x/x is 1; anything else
// unknown.
void propagateSymbolicArith(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  if (!symbolicCandidate(ctx, dt)) return;
  std::optional<SymPair> p = symbolicPair(ctx, 0, 1);
  if (!p || p->n == 0) return;  // nothing to learn
  const size_t n = p->n;
  const std::string_view op = ctx.opType();
  std::vector<SymElem> r(n);
  for (size_t i = 0; i < n; ++i) {
    const SymElem& x = p->a[i];
    const SymElem& y = p->b[i];
    SymElem& z = r[i];
    if (x.known && y.known) {
      z.known = true;
      if (op == "Add") {
        z.v = wrapAdd(x.v, y.v);
      } else if (op == "Sub") {
        z.v = wrapSub(x.v, y.v);
      } else if (op == "Mul") {
        z.v = wrapMul(x.v, y.v);
      } else if (y.v == 0) {
        z.known = false;
      } else {
        z.v = y.v == -1 ? wrapNeg(x.v) : x.v / y.v;
      }
    } else if (op == "Add" && x.known && x.v == 0) {
      z = y;
    } else if ((op == "Add" || op == "Sub") && y.known && y.v == 0) {
      z = x;
    } else if ((op == "Mul" || op == "Div") && y.known && y.v == 1) {
      z = x;
    } else if (op == "Mul" && x.known && x.v == 1) {
      z = y;
    } else if ((op == "Mul" && ((x.known && x.v == 0) || (y.known && y.v == 0))) ||
               (op == "Sub" && !x.known && !y.known && !x.dim.param.empty() &&
                x.dim.param == y.dim.param)) {
      z.known = true;  // 0 * x and x - x
      z.v = 0;
    } else if (op == "Div" && !x.known && !y.known && !x.dim.param.empty() &&
               x.dim.param == y.dim.param) {
      // x / x: a dim over itself (a Tile's repeats as Shape(target) / Shape(x)). For a 0-sized
      // dim the original divides by zero, which has no defined result to keep.
      z.known = true;
      z.v = 1;
    }
  }
  if (dt == DataType::kInt32) {
    for (SymElem& z : r)
      if (z.known) z.v = static_cast<int32_t>(z.v);
  }
  setSymbolicResult(ctx, dt, r, p->scalar);
}

// Equal on partly symbolic shape values, when every element is decidable: two
// known values, the same symbol (equal), or a symbol (a dim, >= 0) against a
// negative value (different). The result becomes a constant.
void propagateSymbolicEqual(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  if (!symbolicCandidate(ctx, dt)) return;
  std::optional<SymPair> p = symbolicPair(ctx, 0, 1);
  if (!p) return;
  Tensor t(DataType::kBool,
           p->scalar ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(p->n)});
  bool* out = mutableDataAs<bool>(t);
  for (size_t i = 0; i < p->n; ++i) {
    const SymElem& x = p->a[i];
    const SymElem& y = p->b[i];
    if (x.known && y.known) {
      out[i] = x.v == y.v;
    } else if (!x.known && !y.known && !x.dim.param.empty() && x.dim.param == y.dim.param) {
      out[i] = true;
    } else if ((x.known && x.v < 0 && !y.dim.param.empty()) ||
               (y.known && y.v < 0 && !x.dim.param.empty())) {
      out[i] = false;
    } else {
      return;
    }
  }
  ctx.setOutputValue(0, std::move(t));
}

// Add, Sub and Mul (integers wrap); K also picks the Highway kernel for float32.
template <kernels::ew::BinaryF32 K>
struct FArith : BinaryBase {
  using BinaryBase::BinaryBase;
  static constexpr int kHwy = static_cast<int>(K);
  template <class C>
  C operator()(C a, C b) const {
    if constexpr (K == kernels::ew::BinaryF32::kAdd) {
      return wrapAdd(a, b);
    } else if constexpr (K == kernels::ew::BinaryF32::kSub) {
      return wrapSub(a, b);
    } else {
      static_assert(K == kernels::ew::BinaryF32::kMul);
      return wrapMul(a, b);
    }
  }
};
using FAdd = FArith<kernels::ew::BinaryF32::kAdd>;
using FSub = FArith<kernels::ew::BinaryF32::kSub>;
using FMul = FArith<kernels::ew::BinaryF32::kMul>;
// Div and Mod: an integer division by zero gives 0 and is flagged, and the node then fails
// (checkDivByZero).
struct IntDivBase : BinaryBase {
  using BinaryBase::BinaryBase;
  mutable bool div_by_zero = false;
  template <class C>
  bool byZero(C b) const {
    if (b != 0) return false;
    div_by_zero = true;
    return true;
  }
};
// Integer division truncates toward zero (C++ and ONNX agree), and INT_MIN / -1 wraps.
struct FDiv : IntDivBase {
  using IntDivBase::IntDivBase;
  static constexpr int kHwy = static_cast<int>(kernels::ew::BinaryF32::kDiv);
  template <class C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (byZero(b)) return C{0};
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return wrapNeg(a);
      }
    }
    return a / b;
  }
};
struct FMod : IntDivBase {
  bool fmod;
  explicit FMod(const OpContext& c) : IntDivBase(c), fmod(c.attrInt("fmod") != 0) {}
  template <class C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (byZero(b)) return C{0};
      C r;
      if constexpr (std::is_signed_v<C>)
        r = b == -1 ? C{0} : static_cast<C>(a % b);
      else
        r = static_cast<C>(a % b);
      if constexpr (std::is_signed_v<C>) {
        // Python %: the result takes the divisor's sign.
        if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
      }
      return r;
    } else {
      C r = std::fmod(a, b);
      if (!fmod) {
        if (r != 0 && ((r < 0) != (b < 0)))
          r += b;
        else if (r == 0)
          r = std::copysign(C{0}, b);
      }
      return r;
    }
  }
};
struct FBitShift : BinaryBase {
  bool left;
  explicit FBitShift(const OpContext& c) : BinaryBase(c) {
    const std::string d = c.attrString("direction", "");
    if (d != "LEFT" && d != "RIGHT") c.fail("direction must be \"LEFT\" or \"RIGHT\", not " + d);
    left = d == "LEFT";
  }
  template <class C>
  C operator()(C a, C b) const {
    if (b >= sizeof(C) * 8) return C{0};
    return left ? static_cast<C>(static_cast<Wide<C>>(a) << b) : static_cast<C>(a >> b);
  }
};
struct FBitAnd : BinaryBase {
  using BinaryBase::BinaryBase;
  template <class C>
  C operator()(C a, C b) const {
    return static_cast<C>(a & b);
  }
};
struct FBitOr : BinaryBase {
  using BinaryBase::BinaryBase;
  template <class C>
  C operator()(C a, C b) const {
    return static_cast<C>(a | b);
  }
};
struct FBitXor : BinaryBase {
  using BinaryBase::BinaryBase;
  template <class C>
  C operator()(C a, C b) const {
    return static_cast<C>(a ^ b);
  }
};
struct FAnd : BinaryBase {
  using BinaryBase::BinaryBase;
  template <class C>
  bool operator()(C a, C b) const {
    return a && b;
  }
};
struct FOr : BinaryBase {
  using BinaryBase::BinaryBase;
  template <class C>
  bool operator()(C a, C b) const {
    return a || b;
  }
};
struct FXor : BinaryBase {
  using BinaryBase::BinaryBase;
  template <class C>
  bool operator()(C a, C b) const {
    return a != b;
  }
};
struct FEqual : BinaryBase {
  using BinaryBase::BinaryBase;
  template <class C>
  bool operator()(C a, C b) const {
    return a == b;
  }
};
struct FLess : BinaryBase {
  using BinaryBase::BinaryBase;
  template <class C>
  bool operator()(C a, C b) const {
    return a < b;
  }
};
struct FLessOrEqual : BinaryBase {
  using BinaryBase::BinaryBase;
  template <class C>
  bool operator()(C a, C b) const {
    return a <= b;
  }
};
struct FGreater : BinaryBase {
  using BinaryBase::BinaryBase;
  template <class C>
  bool operator()(C a, C b) const {
    return a > b;
  }
};
struct FGreaterOrEqual : BinaryBase {
  using BinaryBase::BinaryBase;
  template <class C>
  bool operator()(C a, C b) const {
    return a >= b;
  }
};
// numpy maximum/minimum: NaN propagates.
struct FMax : BinaryBase {
  using BinaryBase::BinaryBase;
  template <class C>
  C operator()(C a, C b) const {
    return (a > b || a != a) ? a : b;
  }
};
struct FMin : BinaryBase {
  using BinaryBase::BinaryBase;
  template <class C>
  C operator()(C a, C b) const {
    return (a < b || a != a) ? a : b;
  }
};

template <class F>
void checkDivByZero(const ComputeContext& ctx, const F& f) {
  if constexpr (std::is_base_of_v<IntDivBase, F>) {
    if (f.div_by_zero) ctx.fail("integer division by zero");
  }
}

enum SymMode { kSymNone, kSymArith, kSymEqual };

template <uint32_t kMask, bool kBoolOut, int kSym>
void inferBinary(InferContext& ctx) {
  requireSameTypes(ctx, 0, 2);
  const DataType t = firstKnownDtype(ctx, 0, 2);
  requireType(ctx, t, kMask);
  inferBroadcast(ctx, 0, 2, kBoolOut ? DataType::kBool : t);
  if constexpr (kSym == kSymArith) propagateSymbolicArith(ctx);
  if constexpr (kSym == kSymEqual) propagateSymbolicEqual(ctx);
}

// Equal at opset 19+ also compares strings.
void computeEqualStrings(ComputeContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& out = ctx.output(0);
  const Plan plan = makePlan(ctx, out.dims(), {a.dims(), b.dims()});
  const std::string* pa = a.strings().data();
  const std::string* pb = b.strings().data();
  bool* po = mutableDataAs<bool>(out);
  runPlan(plan, [&](int64_t o, const int64_t* off, int64_t n, const int64_t* s) {
    for (int64_t i = 0; i < n; ++i)
      po[o + i] = pa[off[0] + i * s[0]] == pb[off[1] + i * s[1]];
  });
}

template <class F, uint32_t kMask, bool kBoolOut>
void computeBinary(ComputeContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& out = ctx.output(0);
  if (a.dtype() != b.dtype()) ctx.fail("inputs have different types");
  if (a.dtype() == DataType::kString && (kMask & kStr) != 0) {
    computeEqualStrings(ctx);
    return;
  }
  const F f(ctx);
  const Plan plan = makePlan(ctx, out.dims(), {a.dims(), effectiveDimsB(ctx, a, b)});
  bool supported = true;
  const bool numeric = kernels::dispatchNumeric(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr ((classOfT<T>() & kMask) != 0) {
      runBinary<T, kBoolOut>(plan, dataAs<T>(a), dataAs<T>(b), out.mutableBytes(), f);
    } else {
      supported = false;
    }
  });
  if (!numeric || !supported) failType(ctx, a.dtype());
  checkDivByZero(ctx, f);
}

// ------------------------------------------------------------ Pow

void inferPow(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  requireType(ctx, t, kF | kS | kU, "base");
  requireType(ctx, ctx.inputDtype(1), kNum, "exponent");
  inferBroadcast(ctx, 0, 2, t);
}

template <class T>
T intPow(T base, int64_t e) {
  if (e < 0) {
    // Integer results of negative powers: only |base| == 1 is not truncated to 0.
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<T>) {
      if (base == -1) return (e % 2 == 0) ? 1 : -1;
    }
    return 0;
  }
  T r = 1;
  while (e > 0) {
    if (e & 1) r = wrapMul(r, base);
    base = wrapMul(base, base);
    e >>= 1;
  }
  return r;
}

// Pow with any base/exponent type pair: the exponent is read as int64 when it
// is an integer type (exact integer powers), else as double.
void computePow(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& y = ctx.input(1);
  Tensor& out = ctx.output(0);
  const Plan plan = makePlan(ctx, out.dims(), {x.dims(), effectiveDimsB(ctx, x, y)});
  const auto ny = static_cast<size_t>(y.numElements());
  const bool int_exp = isInteger(y.dtype()) || y.dtype() == DataType::kBool;
  std::vector<int64_t> ei;
  std::vector<double> ed;
  const bool ok_y = kernels::dispatchNumeric(y.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* py = dataAs<U>(y);
    if constexpr (std::is_integral_v<U>) {
      ei.resize(ny);
      for (size_t i = 0; i < ny; ++i)
        ei[i] = static_cast<int64_t>(py[i]);
    } else {
      ed.resize(ny);
      for (size_t i = 0; i < ny; ++i)
        ed[i] = kernels::toDouble(py[i]);
    }
  });
  if (!ok_y) failType(ctx, y.dtype());
  bool supported = true;
  const bool numeric = kernels::dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (classOfT<T>() == kF || classOfT<T>() == kS || classOfT<T>() == kU) {
      const T* px = dataAs<T>(x);
      T* po = mutableDataAs<T>(out);
      runPlan(plan, [&](int64_t o, const int64_t* off, int64_t n, const int64_t* s) {
        for (int64_t i = 0; i < n; ++i) {
          const T base = px[off[0] + i * s[0]];
          const size_t k = static_cast<size_t>(off[1] + i * s[1]);
          if constexpr (std::is_integral_v<T>) {
            po[o + i] = int_exp ? intPow<T>(base, ei[k])
                                : fromCalc<T>(fm::pow(static_cast<double>(base), ed[k]));
          } else {
            using C = Calc<T, false>;
            const double e = int_exp ? static_cast<double>(ei[k]) : ed[k];
            // float bases: compute in the base's precision as numpy/onnxruntime do
            po[o + i] = fromCalc<T>(fm::pow(toCalc<C>(base), static_cast<C>(e)));
          }
        }
      });
    } else {
      supported = false;
    }
  });
  if (!numeric || !supported) failType(ctx, x.dtype());
}

// ------------------------------------------------------------ variadic ops

template <uint32_t kMask>
void inferVariadic(InferContext& ctx) {
  if (ctx.numInputs() == 0) ctx.fail("needs at least one input");
  requireSameTypes(ctx, 0, ctx.numInputs());
  const DataType t = firstKnownDtype(ctx, 0, ctx.numInputs());
  requireType(ctx, t, kMask);
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    if (!ctx.hasInput(i)) ctx.fail("input " + std::to_string(i) + " is missing");
  }
  inferBroadcast(ctx, 0, ctx.numInputs(), t);
}

struct FTakeB : BinaryBase {
  using BinaryBase::BinaryBase;
  template <class C>
  C operator()(C, C b) const {
    return b;
  }
};

template <class F, uint32_t kMask, bool kMean>
void computeVariadic(ComputeContext& ctx) {
  Tensor& out = ctx.output(0);
  const DataType t = out.dtype();
  const F f(ctx);
  const FTakeB take(ctx);
  bool supported = true;
  const bool numeric = kernels::dispatchNumeric(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr ((classOfT<T>() & kMask) != 0) {
      T* po = mutableDataAs<T>(out);
      for (size_t k = 0; k < ctx.numInputs(); ++k) {
        const Tensor& in = ctx.input(k);
        if (in.dtype() != t) ctx.fail("inputs have different types");
        // Accumulate in place: the output is its own first operand (same offsets).
        const Plan plan = makePlan(ctx, out.dims(), {out.dims(), in.dims()});
        if (k == 0)
          runBinary<T, false>(plan, po, dataAs<T>(in), po, take);
        else
          runBinary<T, false>(plan, po, dataAs<T>(in), po, f);
      }
      if constexpr (kMean) {
        using C = Calc<T, false>;
        const auto n = static_cast<size_t>(out.numElements());
        const C count = static_cast<C>(ctx.numInputs());
        for (size_t i = 0; i < n; ++i)
          po[i] = fromCalc<T>(toCalc<C>(po[i]) / count);
      }
    } else {
      supported = false;
    }
  });
  if (!numeric || !supported) failType(ctx, t);
}

template <class F, uint32_t kMask, bool kBoolOut = false, int kSym = kSymNone>
void addBinary(OpRegistry& r, std::string_view op, std::initializer_list<int> versions) {
  addVersions(r, op, versions, &inferBinary<kMask, kBoolOut, kSym>,
              &computeBinary<F, kMask, kBoolOut>);
}

}  // namespace

void registerBinaryOps(OpRegistry& r) {
  // Binary arithmetic (Add/Sub/Mul/Div also do shape arithmetic).
  addBinary<FAdd, kNum, false, kSymArith>(r, "Add", {1, 6, 7, 13, 14});
  addBinary<FSub, kNum, false, kSymArith>(r, "Sub", {1, 6, 7, 13, 14});
  addBinary<FMul, kNum, false, kSymArith>(r, "Mul", {1, 6, 7, 13, 14});
  addBinary<FDiv, kNum, false, kSymArith>(r, "Div", {1, 6, 7, 13, 14});
  addVersions(r, "Pow", {1, 7, 12, 13, 15}, &inferPow, &computePow);
  addBinary<FMod, kNum>(r, "Mod", {10, 13});
  addBinary<FBitShift, kU>(r, "BitShift", {11});
  addBinary<FBitAnd, kInt>(r, "BitwiseAnd", {18});
  addBinary<FBitOr, kInt>(r, "BitwiseOr", {18});
  addBinary<FBitXor, kInt>(r, "BitwiseXor", {18});

  // Logic and comparison.
  addBinary<FAnd, kB, true>(r, "And", {1, 7});
  addBinary<FOr, kB, true>(r, "Or", {1, 7});
  addBinary<FXor, kB, true>(r, "Xor", {1, 7});
  addBinary<FEqual, kAllNum, true, kSymEqual>(r, "Equal", {1, 7, 11, 13});
  addBinary<FEqual, kAllNum | kStr, true, kSymEqual>(r, "Equal", {19});
  addBinary<FLess, kNum, true>(r, "Less", {1, 7, 9, 13});
  addBinary<FLessOrEqual, kNum, true>(r, "LessOrEqual", {12, 16});
  addBinary<FGreater, kNum, true>(r, "Greater", {1, 7, 9, 13});
  addBinary<FGreaterOrEqual, kNum, true>(r, "GreaterOrEqual", {12, 16});

  // Variadic.
  addVersions(r, "Max", {1, 6, 8, 12, 13}, &inferVariadic<kNum>,
              &computeVariadic<FMax, kNum, false>);
  addVersions(r, "Min", {1, 6, 8, 12, 13}, &inferVariadic<kNum>,
              &computeVariadic<FMin, kNum, false>);
  addVersions(r, "Sum", {1, 6, 8, 13}, &inferVariadic<kF>, &computeVariadic<FAdd, kF, false>);
  addVersions(r, "Mean", {1, 6, 8, 13}, &inferVariadic<kF>, &computeVariadic<FAdd, kF, true>);
}

}  // namespace onnxfold

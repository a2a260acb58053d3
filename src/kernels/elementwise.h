// The machinery the elementwise op files share (unary_math.cpp,
// activations.cpp, binary.cpp, where_clip_dropout.cpp), with the non-template
// parts in elementwise.cpp: type classes, the computation type, wrapping
// integer arithmetic, one broadcasting engine, the inference helpers, the
// unary kernel template and the binary inner loop.
//
// The broadcasting engine collapses the output dims and each input's dims into
// as few axes as possible (adjacent axes merge when every input broadcasts the
// same way on both), so the innermost loop runs over a long contiguous or
// scalar run. float32 Add/Sub/Mul/Div and the common float activations then go
// through the Highway kernels of elementwise_hwy.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kernels/common.h"
#include "kernels/elementwise_hwy.h"
#include "kernels/op_helpers.h"

namespace onnxfold::kernels::elementwise {

// ------------------------------------------------------------ dtype classes

// Type classes for the ops' type constraints (the union over their versions).
constexpr uint32_t kF = 1;     // float, double, float16, bfloat16
constexpr uint32_t kS = 2;     // int8..int64
constexpr uint32_t kU = 4;     // uint8..uint64
constexpr uint32_t kB = 8;     // bool
constexpr uint32_t kStr = 16;  // string
constexpr uint32_t kF8 = 32;   // the four float8 formats (IsNaN/IsInf/Dropout only)
constexpr uint32_t kInt = kS | kU;
constexpr uint32_t kNum = kF | kS | kU;
constexpr uint32_t kSNum = kF | kS;
constexpr uint32_t kAllNum = kNum | kB;

// The class of `t`; 0 for a type in none (complex, sub-byte, float8e8m0).
uint32_t classOf(DataType t);

template <class T>
constexpr uint32_t classOfT() {
  if constexpr (std::is_same_v<T, bool>) return kB;
  if constexpr (std::is_floating_point_v<T> || kIsHalfLike<T>) return kF;
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) return kS;
  if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) return kU;
  return 0;
}

// Accepts kUndefined (type not known yet); fails for a type outside `mask`.
void requireType(const OpContext& ctx, DataType t, uint32_t mask, const char* what = "input");

[[noreturn]] void failType(const OpContext& ctx, DataType t);

// The type a kernel computes in: 16-bit floats in float, integers in double
// when the op is a float formula (Erf, Shrink on integers), else T itself.
template <class T, bool kIntAsDouble>
using Calc = std::conditional_t<
    kIsHalfLike<T>, float,
    std::conditional_t<kIntAsDouble && std::is_integral_v<T> && !std::is_same_v<T, bool>, double,
                       T>>;

template <class C, class T>
inline C toCalc(T v) {
  if constexpr (std::is_same_v<T, Half>)
    return static_cast<C>(kernels::halfToFloat(v.bits));
  else if constexpr (std::is_same_v<T, BFloat16>)
    return static_cast<C>(kernels::bfloat16ToFloat(v.bits));
  else
    return static_cast<C>(v);
}

template <class T, class C>
inline T fromCalc(C v) {
  if constexpr (std::is_same_v<T, Half>)
    return Half{kernels::floatToHalf(static_cast<float>(v))};
  else if constexpr (std::is_same_v<T, BFloat16>)
    return BFloat16{kernels::floatToBfloat16(static_cast<float>(v))};
  else if constexpr (std::is_integral_v<T> && std::is_floating_point_v<C>) {
    // Float formula on an integer tensor: NaN and out-of-range results would be UB.
    if (!(v == v)) return T{0};
    if (v <= static_cast<C>(std::numeric_limits<T>::lowest()))
      return std::numeric_limits<T>::lowest();
    if (v >= static_cast<C>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

// Two's-complement wrapping integer arithmetic (signed overflow is UB in C++).
template <class C>
using Wide = std::conditional_t<sizeof(C) < 4, uint32_t, std::make_unsigned_t<C>>;
template <class C>
inline C wrapAdd(C a, C b) {
  if constexpr (std::is_integral_v<C>)
    return static_cast<C>(static_cast<Wide<C>>(a) + static_cast<Wide<C>>(b));
  else
    return a + b;
}
template <class C>
inline C wrapSub(C a, C b) {
  if constexpr (std::is_integral_v<C>)
    return static_cast<C>(static_cast<Wide<C>>(a) - static_cast<Wide<C>>(b));
  else
    return a - b;
}
template <class C>
inline C wrapMul(C a, C b) {
  if constexpr (std::is_integral_v<C>)
    return static_cast<C>(static_cast<Wide<C>>(a) * static_cast<Wide<C>>(b));
  else
    return a * b;
}
template <class C>
inline C wrapNeg(C a) {
  return wrapSub(C{0}, a);
}

// ------------------------------------------------------------ broadcasting engine

// Output dims and per-input strides collapsed to the fewest axes; the last
// axis is the inner loop, where every input's stride is 0 or 1.
struct Plan {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;
  int64_t total = 0;
};

Plan makePlan(const OpContext& ctx, const std::vector<int64_t>& out,
              const std::vector<std::vector<int64_t>>& ins);

// Calls inner(out_offset, in_offsets, n, inner_strides) once per inner run.
template <class Inner>
void runPlan(const Plan& p, Inner&& inner) {
  if (p.total == 0) return;
  const size_t r = p.dims.size();
  const size_t k = p.strides.size();
  const int64_t n = p.dims[r - 1];
  std::vector<int64_t> inner_strides(k), off(k, 0), idx(r - 1, 0);
  for (size_t j = 0; j < k; ++j)
    inner_strides[j] = p.strides[j][r - 1];
  const int64_t outer = p.total / n;
  for (int64_t o = 0; o < outer; ++o) {
    inner(o * n, off.data(), n, inner_strides.data());
    for (size_t ax = r - 1; ax-- > 0;) {
      if (++idx[ax] < p.dims[ax]) {
        for (size_t j = 0; j < k; ++j)
          off[j] += p.strides[j][ax];
        break;
      }
      for (size_t j = 0; j < k; ++j)
        off[j] -= p.strides[j][ax] * (p.dims[ax] - 1);
      idx[ax] = 0;
    }
  }
}

// out[i] = f(a[i*sa], b[i*sb]) with the stride pattern hoisted so each case
// compiles to a simple (auto-vectorizable) loop.
template <class TA, class TB, class TO, class G>
inline void innerBinary(const TA* a, int64_t sa, const TB* b, int64_t sb, TO* o, int64_t n, G&& g) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i)
      o[i] = g(a[i], b[i]);
  } else if (sa == 1) {
    const TB bv = b[0];
    for (int64_t i = 0; i < n; ++i)
      o[i] = g(a[i], bv);
  } else if (sb == 1) {
    const TA av = a[0];
    for (int64_t i = 0; i < n; ++i)
      o[i] = g(av, b[i]);
  } else {
    const TO v = g(a[0], b[0]);
    for (int64_t i = 0; i < n; ++i)
      o[i] = v;
  }
}

// B's dims, padded for the legacy (opset < 7) broadcast=1 with `axis`.
std::vector<int64_t> effectiveDimsB(const OpContext& ctx, const Tensor& a, const Tensor& b);

// ------------------------------------------------------------ inference helpers

// Output 0 gets dtype and the broadcast of the shapes of inputs [first, first + count).
void inferBroadcast(InferContext& ctx, size_t first, size_t count, DataType dtype);
// The first known element type of those inputs (kUndefined when none is known).
DataType firstKnownDtype(const InferContext& ctx, size_t first, size_t count);
// Fails when two of those inputs have different known element types.
void requireSameTypes(const InferContext& ctx, size_t first, size_t count);

// ------------------------------------------------------------ shape arithmetic

// One element of a small int tensor: known value, or a Dim that may be symbolic.
struct SymElem {
  bool known = false;
  int64_t v = 0;
  Dim dim;
};

// Whether values of type dt may be propagated symbolically: int64/int32 values that are not all
// known (compute() folds those).
inline bool symbolicCandidate(const InferContext& ctx, DataType dt) {
  return (dt == DataType::kInt64 || dt == DataType::kInt32) && !ctx.allInputValuesKnown();
}

// The elements of a small (rank <= 1) int64/int32 input i, from its value or
// its symbolic value; nullopt when neither is known.
std::optional<std::vector<SymElem>> symbolicElems(const InferContext& ctx, size_t i);

// Small int tensors (rank <= 1) a, b broadcast elementwise; nullopt otherwise.
struct SymPair {
  std::vector<SymElem> a, b;
  size_t n = 0;
  bool scalar = false;
};
std::optional<SymPair> symbolicPair(const InferContext& ctx, size_t ia, size_t ib);

// Output 0 of type dt from elementwise results r (a scalar, or [r.size()]): a constant when
// every element is known, else a symbolic value.
void setSymbolicResult(InferContext& ctx, DataType dt, const std::vector<SymElem>& r, bool scalar);

// ------------------------------------------------------------ unary ops

struct UnaryBase {
  static constexpr int kHwy = -1;  // an ew::UnaryF32 value for the float32 Highway path
  static constexpr bool kIntAsDouble = false;
  explicit UnaryBase(const OpContext&) {}
};

// A unary functor `Name` computing `expr` of x in the computation type C.
#define ONNXFOLD_FLOAT_UNARY(Name, expr) \
  struct Name : UnaryBase {              \
    using UnaryBase::UnaryBase;          \
    template <class C>                   \
    C operator()(C x) const {            \
      return static_cast<C>(expr);       \
    }                                    \
  };

template <uint32_t kMask>
void inferUnary(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  requireType(ctx, t, kMask);
  setSameShape(ctx, 0, t, 0);
}

template <class F, uint32_t kMask>
void computeUnary(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const F f(ctx);
  const auto n = static_cast<size_t>(x.numElements());
  bool supported = true;
  const bool numeric = kernels::dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr ((classOfT<T>() & kMask) != 0) {
      using C = Calc<T, F::kIntAsDouble>;
      const T* px = dataAs<T>(x);
      T* py = mutableDataAs<T>(y);
      if constexpr (std::is_same_v<T, float> && F::kHwy >= 0) {
        constexpr auto op = static_cast<kernels::ew::UnaryF32>(F::kHwy);
        kernels::ew::unaryHwy<op>(px, py, n);
      } else {
        for (size_t i = 0; i < n; ++i)
          py[i] = fromCalc<T>(f(toCalc<C>(px[i])));
      }
    } else {
      supported = false;
    }
  });
  if (!numeric || !supported) failType(ctx, x.dtype());
}

// ------------------------------------------------------------ binary ops

struct BinaryBase {
  static constexpr int kHwy = -1;  // an ew::BinaryF32 value for the float32 Highway path
  explicit BinaryBase(const OpContext&) {}
};

// Broadcast binary kernel: out = f(a, b) over `plan`. kBoolOut: f returns bool.
template <class T, bool kBoolOut, class F>
void runBinary(const Plan& plan, const T* pa, const T* pb, void* out, const F& f) {
  using C = Calc<T, false>;
  using R = std::conditional_t<kBoolOut, bool, T>;
  R* po = static_cast<R*>(out);
  if constexpr (std::is_same_v<T, float> && !kBoolOut && F::kHwy >= 0) {
    constexpr auto op = static_cast<kernels::ew::BinaryF32>(F::kHwy);
    runPlan(plan, [&](int64_t o, const int64_t* off, int64_t n, const int64_t* s) {
      if (s[0] == 0 && s[1] == 0) {
        std::fill(po + o, po + o + n, kernels::ew::binaryScalar<op>(pa[off[0]], pb[off[1]]));
      } else {
        kernels::ew::binaryHwy<op>(pa + off[0], static_cast<size_t>(s[0]), pb + off[1],
                                   static_cast<size_t>(s[1]), po + o, static_cast<size_t>(n));
      }
    });
  } else {
    runPlan(plan, [&](int64_t o, const int64_t* off, int64_t n, const int64_t* s) {
      innerBinary(pa + off[0], s[0], pb + off[1], s[1], po + o, n, [&](T a, T b) -> R {
        if constexpr (kBoolOut)
          return f(toCalc<C>(a), toCalc<C>(b));
        else
          return fromCalc<T>(f(toCalc<C>(a), toCalc<C>(b)));
      });
    });
  }
}

// ------------------------------------------------------------ registration

// One registry entry of `op` (default domain and flags) per version.
void addVersions(OpRegistry& r, std::string_view op, std::initializer_list<int> versions,
                 InferFn infer, ComputeFn compute);

template <class F, uint32_t kMask>
void addUnary(OpRegistry& r, std::string_view op, std::initializer_list<int> versions) {
  addVersions(r, op, versions, &inferUnary<kMask>, &computeUnary<F, kMask>);
}

}  // namespace onnxfold::kernels::elementwise

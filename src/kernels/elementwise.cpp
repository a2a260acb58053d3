// Elementwise op family: unary math, activations, binary arithmetic/logic/
// comparison with numpy broadcasting, variadic Max/Min/Sum/Mean, Where, Clip,
// Dropout (inference). See op_registry.h for the infer()/compute() contract.
//
// One broadcasting engine serves every op: the output dims and each input's
// dims are collapsed into as few axes as possible (adjacent axes merge when
// every input broadcasts the same way on both), so the innermost loop runs over
// a long contiguous or scalar run. float32 Add/Sub/Mul/Div and the common float
// activations then go through the Highway kernels of elementwise_hwy.h.
//
// Add/Sub/Mul/Div on small int64/int32 tensors also propagate partly symbolic
// contents (shape arithmetic on a dynamic batch), as InferContext describes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/common.h"
#include "kernels/elementwise_hwy.h"

namespace onnxfold {
namespace {

using kernels::BFloat16;
using kernels::dataAs;
using kernels::Half;
using kernels::mutableDataAs;
using kernels::Tag;

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

uint32_t classOf(DataType t) {
  if (t == DataType::kBool) return kB;
  if (t == DataType::kString) return kStr;
  if (t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 ||
      t == DataType::kBfloat16) {
    return kF;
  }
  if (isSignedInteger(t)) return kS;
  if (isUnsignedInteger(t)) return kU;
  if (t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E4M3FNUZ ||
      t == DataType::kFloat8E5M2 || t == DataType::kFloat8E5M2FNUZ) {
    return kF8;
  }
  return 0;
}

template <class T>
constexpr bool kHalfLike = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <class T>
constexpr uint32_t classOfT() {
  if constexpr (std::is_same_v<T, bool>) return kB;
  if constexpr (std::is_floating_point_v<T> || kHalfLike<T>) return kF;
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) return kS;
  if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) return kU;
  return 0;
}

// Accepts kUndefined (type not known yet); fails for a type outside `mask`.
void requireType(const OpContext& ctx, DataType t, uint32_t mask, const char* what = "input") {
  if (t == DataType::kUndefined || (classOf(t) & mask) != 0) return;
  ctx.unsupported(std::string(what) + " type " + std::string(dataTypeName(t)) +
                  " is not supported");
}

[[noreturn]] void failType(const OpContext& ctx, DataType t) {
  ctx.unsupported("type " + std::string(dataTypeName(t)) + " is not supported");
}

// The type a kernel computes in: 16-bit floats in float, integers in double
// when the op is a float formula (Erf, Shrink on integers), else T itself.
template <class T, bool kIntAsDouble>
using Calc = std::conditional_t<
    kHalfLike<T>, float,
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
              const std::vector<std::vector<int64_t>>& ins) {
  const size_t rank = out.size();
  const size_t k = ins.size();
  Plan p;
  p.total = kernels::product(out, 0, rank);
  std::vector<std::vector<bool>> flags;  // per collapsed axis: input broadcasts there
  for (size_t ax = 0; ax < rank; ++ax) {
    if (out[ax] == 1) continue;
    std::vector<bool> f(k);
    for (size_t j = 0; j < k; ++j) {
      const size_t r = ins[j].size();
      if (r > rank) ctx.fail("an input has a higher rank than the output");
      const int64_t d = ax < rank - r ? 1 : ins[j][ax - (rank - r)];
      if (d != 1 && d != out[ax]) ctx.fail("input shapes do not broadcast to the output");
      f[j] = d == 1;
    }
    if (!flags.empty() && flags.back() == f) {
      p.dims.back() *= out[ax];
    } else {
      p.dims.push_back(out[ax]);
      flags.push_back(std::move(f));
    }
  }
  if (p.dims.empty()) {
    p.dims.push_back(1);
    flags.emplace_back(k, true);
  }
  p.strides.assign(k, std::vector<int64_t>(p.dims.size(), 0));
  for (size_t j = 0; j < k; ++j) {
    int64_t s = 1;
    for (size_t c = p.dims.size(); c-- > 0;) {
      if (flags[c][j]) continue;
      p.strides[j][c] = s;
      s *= p.dims[c];
    }
  }
  return p;
}

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

// Legacy (opset < 7) broadcasting: with broadcast=1 and `axis`, B's dims align
// with A's starting at `axis`; pad B with trailing 1s so numpy rules apply.
bool legacyAxisBroadcast(const OpContext& ctx) {
  return ctx.opset() < 7 && ctx.attrInt("broadcast", 0) == 1 && ctx.hasAttr("axis");
}
template <class D>
std::vector<D> legacyPad(const OpContext& ctx, size_t rank_a, std::vector<D> b, D one) {
  int64_t axis = ctx.attrInt("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(rank_a);
  if (axis < 0 || axis + static_cast<int64_t>(b.size()) > static_cast<int64_t>(rank_a)) {
    ctx.fail("legacy broadcast axis " + std::to_string(axis) + " does not fit");
  }
  b.resize(rank_a - static_cast<size_t>(axis), one);
  return b;
}

std::vector<int64_t> effectiveDimsB(const OpContext& ctx, const Tensor& a, const Tensor& b) {
  if (!legacyAxisBroadcast(ctx)) return b.dims();
  return legacyPad<int64_t>(ctx, a.rank(), b.dims(), 1);
}

// ------------------------------------------------------------ inference helpers

// Output `out` gets dtype and the broadcast of the present inputs' shapes.
void inferBroadcast(InferContext& ctx, size_t first, size_t count, DataType dtype) {
  std::optional<Shape> s;
  for (size_t i = first; i < first + count; ++i) {
    const Shape* si = ctx.inputShape(i);
    if (si == nullptr) {
      ctx.setOutputUnknownRank(0, dtype);
      return;
    }
    Shape cur = *si;
    if (i == 1 && first == 0 && legacyAxisBroadcast(ctx) && ctx.inputShape(0) != nullptr) {
      cur.dims = legacyPad<Dim>(ctx, ctx.inputShape(0)->rank(), cur.dims, Dim::known(1));
    }
    if (!s) {
      s = std::move(cur);
      continue;
    }
    std::optional<Shape> b = kernels::broadcastShapes(*s, cur);
    if (!b) ctx.fail("input shapes cannot be broadcast together");
    s = std::move(b);
  }
  ctx.setOutput(0, dtype, std::move(*s));
}

DataType firstKnownDtype(const InferContext& ctx, size_t first, size_t count) {
  for (size_t i = first; i < first + count; ++i) {
    const DataType t = ctx.inputDtype(i);
    if (t != DataType::kUndefined) return t;
  }
  return DataType::kUndefined;
}

void requireSameTypes(const InferContext& ctx, size_t first, size_t count) {
  const DataType t = firstKnownDtype(ctx, first, count);
  for (size_t i = first; i < first + count; ++i) {
    const DataType u = ctx.inputDtype(i);
    if (u != DataType::kUndefined && u != t) {
      ctx.fail("inputs have different types (" + std::string(dataTypeName(t)) + " and " +
               std::string(dataTypeName(u)) + ")");
    }
  }
}

// ------------------------------------------------------------ shape arithmetic

// One element of a small int tensor: known value, or a Dim that may be symbolic.
struct SymElem {
  bool known = false;
  int64_t v = 0;
  Dim dim;
};

std::optional<std::vector<SymElem>> symbolicElems(const InferContext& ctx, size_t i) {
  std::vector<SymElem> out;
  if (const Tensor* t = ctx.inputValue(i)) {
    if (t->rank() > 1 || t->numElements() > 64) return std::nullopt;
    if (t->dtype() != DataType::kInt64 && t->dtype() != DataType::kInt32) return std::nullopt;
    for (int64_t k = 0; k < t->numElements(); ++k) {
      SymElem e;
      e.known = true;
      e.v = t->dtype() == DataType::kInt64 ? t->at<int64_t>(static_cast<size_t>(k))
                                           : t->at<int32_t>(static_cast<size_t>(k));
      out.push_back(e);
    }
    return out;
  }
  std::optional<SymbolicValue> sv = ctx.inputSymbolic(i);
  if (!sv) return std::nullopt;
  for (const Dim& d : *sv) {
    SymElem e;
    // A -1 without a symbol is ambiguous (unknown dim or the value -1); other
    // negative values without a symbol are plain values.
    e.known = d.isKnown() || (d.param.empty() && d.value < -1);
    e.v = d.value;
    e.dim = d;
    out.push_back(e);
  }
  return out;
}

// Add/Sub/Mul/Div of partly symbolic int64/int32 values: known op known gives
// known; x+0, x-0, x*1, x/1 keep x's symbol; 0*x is 0; anything else unknown.
void propagateSymbolicArith(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  if (dt != DataType::kInt64 && dt != DataType::kInt32) return;
  if (ctx.allInputValuesKnown()) return;  // compute() folds it
  const Shape* s0 = ctx.inputShape(0);
  const Shape* s1 = ctx.inputShape(1);
  if (s0 == nullptr || s1 == nullptr || s0->rank() > 1 || s1->rank() > 1) return;
  std::optional<std::vector<SymElem>> a = symbolicElems(ctx, 0);
  std::optional<std::vector<SymElem>> b = symbolicElems(ctx, 1);
  if (!a || !b) return;
  const size_t na = a->size(), nb = b->size();
  if (na == 0 || nb == 0) return;  // nothing to learn (and no element 0 to broadcast)
  if (na != nb && na != 1 && nb != 1) return;
  const size_t n = std::max(na, nb);
  const std::string_view op = ctx.opType();
  std::vector<SymElem> r(n);
  bool all_known = true;
  for (size_t i = 0; i < n; ++i) {
    const SymElem& x = (*a)[na == 1 ? 0 : i];
    const SymElem& y = (*b)[nb == 1 ? 0 : i];
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
    }
    all_known = all_known && z.known;
  }
  if (dt == DataType::kInt32) {
    for (SymElem& z : r)
      if (z.known) z.v = static_cast<int32_t>(z.v);
  }
  const bool scalar = s0->rank() == 0 && s1->rank() == 0;
  if (all_known) {
    Tensor t(dt, scalar ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(n)});
    for (size_t i = 0; i < n; ++i) {
      if (dt == DataType::kInt64) {
        mutableDataAs<int64_t>(t)[i] = r[i].v;
      } else {
        mutableDataAs<int32_t>(t)[i] = static_cast<int32_t>(r[i].v);
      }
    }
    ctx.setOutputValue(0, std::move(t));
    return;
  }
  SymbolicValue out;
  for (const SymElem& z : r) {
    if (z.known) {
      Dim d;
      d.value = z.v;  // negative values stay values (a -1 in a Reshape target)
      out.push_back(d);
    } else {
      out.push_back(z.dim);
    }
  }
  ctx.setOutputSymbolic(0, std::move(out));
}

// Small int tensors (rank <= 1) a, b broadcast elementwise; nullopt otherwise.
struct SymPair {
  std::vector<SymElem> a, b;
  size_t n = 0;
  bool scalar = false;
};
std::optional<SymPair> symbolicPair(const InferContext& ctx, size_t ia, size_t ib) {
  const Shape* s0 = ctx.inputShape(ia);
  const Shape* s1 = ctx.inputShape(ib);
  if (s0 == nullptr || s1 == nullptr || s0->rank() > 1 || s1->rank() > 1) return std::nullopt;
  std::optional<std::vector<SymElem>> a = symbolicElems(ctx, ia);
  std::optional<std::vector<SymElem>> b = symbolicElems(ctx, ib);
  if (!a || !b) return std::nullopt;
  const size_t na = a->size(), nb = b->size();
  if (na != nb && na != 1 && nb != 1) return std::nullopt;
  SymPair p;
  p.n = std::max(na, nb);
  p.scalar = s0->rank() == 0 && s1->rank() == 0;
  for (size_t i = 0; i < p.n; ++i) {
    p.a.push_back((*a)[na == 1 ? 0 : i]);
    p.b.push_back((*b)[nb == 1 ? 0 : i]);
  }
  return p;
}

// Equal on partly symbolic shape values, when every element is decidable: two
// known values, the same symbol (equal), or a symbol (a dim, >= 0) against a
// negative value (different). The result becomes a constant.
void propagateSymbolicEqual(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  if (dt != DataType::kInt64 && dt != DataType::kInt32) return;
  if (ctx.allInputValuesKnown()) return;
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

// Where with a constant condition over partly symbolic shape values selects
// symbols elementwise (Where(Equal(s, 0), default, s) in exported shape code).
void propagateSymbolicWhere(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(1);
  if (dt != DataType::kInt64 && dt != DataType::kInt32) return;
  if (ctx.allInputValuesKnown()) return;
  const Tensor* c = ctx.inputValue(0);
  if (c == nullptr || c->dtype() != DataType::kBool || c->rank() > 1) return;
  std::optional<SymPair> p = symbolicPair(ctx, 1, 2);
  if (!p) return;
  const auto nc = static_cast<size_t>(c->numElements());
  if (nc != p->n && nc != 1 && p->n != 1) return;
  const size_t n = std::max(nc, p->n);
  std::vector<SymElem> r(n);
  bool all_known = true;
  for (size_t i = 0; i < n; ++i) {
    const size_t k = p->n == 1 ? 0 : i;
    r[i] = c->at<bool>(nc == 1 ? 0 : i) ? p->a[k] : p->b[k];
    all_known = all_known && r[i].known;
  }
  const bool scalar = p->scalar && c->rank() == 0;
  if (all_known) {
    Tensor t(dt, scalar ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(n)});
    for (size_t i = 0; i < n; ++i) {
      if (dt == DataType::kInt64)
        mutableDataAs<int64_t>(t)[i] = r[i].v;
      else
        mutableDataAs<int32_t>(t)[i] = static_cast<int32_t>(r[i].v);
    }
    ctx.setOutputValue(0, std::move(t));
    return;
  }
  SymbolicValue out;
  for (const SymElem& z : r) {
    Dim d = z.dim;
    if (z.known) {
      d = Dim();
      d.value = z.v;
    }
    out.push_back(d);
  }
  ctx.setOutputSymbolic(0, std::move(out));
}

// ------------------------------------------------------------ unary ops

struct UnaryBase {
  static constexpr int kHwy = -1;  // an ew::UnaryF32 value for the float32 Highway path
  static constexpr bool kIntAsDouble = false;
  explicit UnaryBase(const OpContext&) {}
};

#define ONNXFOLD_FLOAT_UNARY(Name, expr) \
  struct Name : UnaryBase {              \
    using UnaryBase::UnaryBase;          \
    template <class C>                   \
    C operator()(C x) const {            \
      return static_cast<C>(expr);       \
    }                                    \
  };

ONNXFOLD_FLOAT_UNARY(FAcos, std::acos(x))
ONNXFOLD_FLOAT_UNARY(FAcosh, std::acosh(x))
ONNXFOLD_FLOAT_UNARY(FAsin, std::asin(x))
ONNXFOLD_FLOAT_UNARY(FAsinh, std::asinh(x))
ONNXFOLD_FLOAT_UNARY(FAtan, std::atan(x))
ONNXFOLD_FLOAT_UNARY(FAtanh, std::atanh(x))
ONNXFOLD_FLOAT_UNARY(FCeil, std::ceil(x))
ONNXFOLD_FLOAT_UNARY(FCos, std::cos(x))
ONNXFOLD_FLOAT_UNARY(FCosh, std::cosh(x))
ONNXFOLD_FLOAT_UNARY(FExp, std::exp(x))
ONNXFOLD_FLOAT_UNARY(FFloor, std::floor(x))
ONNXFOLD_FLOAT_UNARY(FLog, std::log(x))
ONNXFOLD_FLOAT_UNARY(FReciprocal, C{1} / x)
ONNXFOLD_FLOAT_UNARY(FRound, std::nearbyint(x))  // default rounding mode: half to even
ONNXFOLD_FLOAT_UNARY(FSin, std::sin(x))
ONNXFOLD_FLOAT_UNARY(FSinh, std::sinh(x))
ONNXFOLD_FLOAT_UNARY(FTan, std::tan(x))
ONNXFOLD_FLOAT_UNARY(FTanh, std::tanh(x))
ONNXFOLD_FLOAT_UNARY(FSoftsign, x / (C{1} + std::fabs(x)))
ONNXFOLD_FLOAT_UNARY(FNot, !x)
ONNXFOLD_FLOAT_UNARY(FBitwiseNot, ~x)
#undef ONNXFOLD_FLOAT_UNARY

struct FErf : UnaryBase {
  using UnaryBase::UnaryBase;
  static constexpr bool kIntAsDouble = true;  // Erf-9/13 also take integers
  template <class C>
  C operator()(C x) const {
    return std::erf(x);
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

struct FRelu : UnaryBase {
  using UnaryBase::UnaryBase;
  static constexpr int kHwy = static_cast<int>(kernels::ew::UnaryF32::kRelu);
  template <class C>
  C operator()(C x) const {
    return x < 0 ? C{0} : x;
  }
};

// Sigmoid through exp(-|x|): no overflow, and tiny results keep their precision.
template <class C>
inline C sigmoidOf(C x) {
  const C t = std::exp(-std::fabs(x));
  const C r = C{1} / (C{1} + t);
  return x >= 0 ? r : t * r;
}

struct FSigmoid : UnaryBase {
  using UnaryBase::UnaryBase;
  static constexpr int kHwy = static_cast<int>(kernels::ew::UnaryF32::kSigmoid);
  template <class C>
  C operator()(C x) const {
    return sigmoidOf(x);
  }
};

struct FLeakyRelu : UnaryBase {
  double alpha;
  explicit FLeakyRelu(const OpContext& c) : UnaryBase(c), alpha(c.attrFloat("alpha", 0.01f)) {}
  template <class C>
  C operator()(C x) const {
    return x < 0 ? static_cast<C>(alpha) * x : x;
  }
};

struct FElu : UnaryBase {
  double alpha;
  explicit FElu(const OpContext& c) : UnaryBase(c), alpha(c.attrFloat("alpha", 1.0f)) {}
  template <class C>
  C operator()(C x) const {
    return x < 0 ? static_cast<C>(alpha) * std::expm1(x) : x;
  }
};

struct FCelu : UnaryBase {
  double alpha;
  explicit FCelu(const OpContext& c) : UnaryBase(c), alpha(c.attrFloat("alpha", 1.0f)) {
    if (alpha == 0) c.fail("alpha must not be 0");
  }
  template <class C>
  C operator()(C x) const {
    const C a = static_cast<C>(alpha);
    return std::max(C{0}, x) + std::min(C{0}, a * std::expm1(x / a));
  }
};

struct FSelu : UnaryBase {
  double alpha, gamma;
  explicit FSelu(const OpContext& c)
      : UnaryBase(c),
        alpha(c.attrFloat("alpha", 1.67326319217681884765625f)),
        gamma(c.attrFloat("gamma", 1.05070102214813232421875f)) {}
  template <class C>
  C operator()(C x) const {
    const C g = static_cast<C>(gamma), a = static_cast<C>(alpha);
    return x > 0 ? g * x : g * (a * std::exp(x) - a);
  }
};

struct FHardSigmoid : UnaryBase {
  double alpha, beta;
  explicit FHardSigmoid(const OpContext& c)
      : UnaryBase(c), alpha(c.attrFloat("alpha", 0.2f)), beta(c.attrFloat("beta", 0.5f)) {}
  template <class C>
  C operator()(C x) const {
    const C y = static_cast<C>(alpha) * x + static_cast<C>(beta);
    return std::max(C{0}, std::min(C{1}, y));
  }
};

struct FHardSwish : UnaryBase {
  using UnaryBase::UnaryBase;
  template <class C>
  C operator()(C x) const {
    return x * std::max(C{0}, std::min(C{1}, x / C{6} + C{0.5}));
  }
};

struct FSoftplus : UnaryBase {
  using UnaryBase::UnaryBase;
  template <class C>
  C operator()(C x) const {
    // log(1 + e^x) without overflow for large x.
    return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  }
};

struct FMish : UnaryBase {
  using UnaryBase::UnaryBase;
  template <class C>
  C operator()(C x) const {
    const C sp = x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    return x * std::tanh(sp);
  }
};

struct FGelu : UnaryBase {
  bool tanh_approx;
  explicit FGelu(const OpContext& c) : UnaryBase(c) {
    const std::string a = c.attrString("approximate", "none");
    if (a != "none" && a != "tanh") c.fail("approximate must be \"none\" or \"tanh\", not " + a);
    tanh_approx = a == "tanh";
  }
  template <class C>
  C operator()(C x) const {
    if (tanh_approx) {
      const C k = static_cast<C>(0.7978845608028654);  // sqrt(2/pi)
      return C{0.5} * x * (C{1} + std::tanh(k * (x + static_cast<C>(0.044715) * x * x * x)));
    }
    return C{0.5} * x * (C{1} + std::erf(x * static_cast<C>(0.7071067811865476)));
  }
};

struct FShrink : UnaryBase {
  static constexpr bool kIntAsDouble = true;
  double lambd, bias;
  explicit FShrink(const OpContext& c)
      : UnaryBase(c), lambd(c.attrFloat("lambd", 0.5f)), bias(c.attrFloat("bias", 0.0f)) {}
  template <class C>
  C operator()(C x) const {
    const C l = static_cast<C>(lambd), b = static_cast<C>(bias);
    return x < -l ? x + b : (x > l ? x - b : C{0});
  }
};

struct FThresholdedRelu : UnaryBase {
  double alpha;
  explicit FThresholdedRelu(const OpContext& c) : UnaryBase(c), alpha(c.attrFloat("alpha", 1.0f)) {}
  template <class C>
  C operator()(C x) const {
    return x > static_cast<C>(alpha) ? x : C{0};
  }
};

struct FSwish : UnaryBase {
  double alpha;
  explicit FSwish(const OpContext& c) : UnaryBase(c), alpha(c.attrFloat("alpha", 1.0f)) {}
  template <class C>
  C operator()(C x) const {
    return x * sigmoidOf(static_cast<C>(alpha) * x);
  }
};

template <uint32_t kMask>
void inferUnary(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  requireType(ctx, t, kMask);
  if (const Shape* s = ctx.inputShape(0))
    ctx.setOutput(0, t, *s);
  else
    ctx.setOutputUnknownRank(0, t);
}

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
    out.push_back(d);
  }
  ctx.setOutputSymbolic(0, std::move(out));
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

// IsNaN / IsInf: float in, bool out.
template <uint32_t kMask>
void inferUnaryBool(InferContext& ctx) {
  requireType(ctx, ctx.inputDtype(0), kMask);
  if (const Shape* s = ctx.inputShape(0))
    ctx.setOutput(0, DataType::kBool, *s);
  else
    ctx.setOutputUnknownRank(0, DataType::kBool);
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

// ------------------------------------------------------------ binary ops

struct BinaryBase {
  static constexpr int kHwy = -1;  // an ew::BinaryF32 value for the float32 Highway path
  explicit BinaryBase(const OpContext&) {}
};

struct FAdd : BinaryBase {
  using BinaryBase::BinaryBase;
  static constexpr int kHwy = static_cast<int>(kernels::ew::BinaryF32::kAdd);
  template <class C>
  C operator()(C a, C b) const {
    return wrapAdd(a, b);
  }
};
struct FSub : BinaryBase {
  using BinaryBase::BinaryBase;
  static constexpr int kHwy = static_cast<int>(kernels::ew::BinaryF32::kSub);
  template <class C>
  C operator()(C a, C b) const {
    return wrapSub(a, b);
  }
};
struct FMul : BinaryBase {
  using BinaryBase::BinaryBase;
  static constexpr int kHwy = static_cast<int>(kernels::ew::BinaryF32::kMul);
  template <class C>
  C operator()(C a, C b) const {
    return wrapMul(a, b);
  }
};
// Integer division truncates toward zero (C++ and ONNX agree); division by
// zero is flagged, and INT_MIN / -1 wraps.
struct FDiv : BinaryBase {
  using BinaryBase::BinaryBase;
  static constexpr int kHwy = static_cast<int>(kernels::ew::BinaryF32::kDiv);
  mutable bool div_by_zero = false;
  template <class C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) {
        div_by_zero = true;
        return C{0};
      }
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return wrapNeg(a);
      }
    }
    return a / b;
  }
};
struct FMod : BinaryBase {
  bool fmod;
  mutable bool div_by_zero = false;
  explicit FMod(const OpContext& c) : BinaryBase(c), fmod(c.attrInt("fmod", 0) != 0) {}
  template <class C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) {
        div_by_zero = true;
        return C{0};
      }
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
    const std::string d = c.attrString("direction");
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
struct FPRelu : BinaryBase {
  using BinaryBase::BinaryBase;
  template <class C>
  C operator()(C x, C slope) const {
    return x < 0 ? wrapMul(slope, x) : x;
  }
};

template <class F>
void checkDivByZero(const ComputeContext& ctx, const F& f) {
  if constexpr (std::is_same_v<F, FDiv> || std::is_same_v<F, FMod>) {
    if (f.div_by_zero) ctx.fail("integer division by zero");
  }
}

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

// PRelu: slope broadcasts unidirectionally to X; output has X's shape.
void inferPRelu(InferContext& ctx) {
  requireSameTypes(ctx, 0, 2);
  const DataType t = ctx.inputDtype(0);
  requireType(ctx, t, kNum);
  const Shape* x = ctx.inputShape(0);
  const Shape* slope = ctx.inputShape(1);
  if (x == nullptr) {
    ctx.setOutputUnknownRank(0, t);
    return;
  }
  // PRelu-1/6: a per-channel slope [C] against [N, C, ...] (as computePRelu applies it).
  const bool per_channel = ctx.opset() < 7 && slope != nullptr && slope->rank() == 1 &&
                           x->rank() >= 2 &&
                           (!slope->dims[0].isKnown() || !x->dims[1].isKnown() ||
                            slope->dims[0].value == x->dims[1].value);
  if (slope != nullptr && !per_channel) {
    std::optional<Shape> b = kernels::broadcastShapes(*x, *slope);
    if (!b || b->rank() != x->rank()) ctx.fail("slope does not broadcast to X");
    for (size_t i = 0; i < x->rank(); ++i) {
      if (x->dims[i].isKnown() && b->dims[i].isKnown() && x->dims[i].value != b->dims[i].value)
        ctx.fail("slope does not broadcast to X");
    }
  }
  ctx.setOutput(0, t, *x);
}

void computePRelu(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& slope = ctx.input(1);
  Tensor& out = ctx.output(0);
  if (x.dtype() != slope.dtype()) ctx.fail("inputs have different types");
  const FPRelu f(ctx);
  std::vector<int64_t> sdims = slope.dims();
  // PRelu-1/6 had a per-channel slope [C] against [N, C, ...] (not numpy rules).
  if (ctx.opset() < 7 && sdims.size() == 1 && x.rank() >= 2 && sdims[0] == x.dims()[1] &&
      sdims[0] != x.dims().back()) {
    sdims.resize(x.rank() - 1, 1);
  }
  const Plan plan = makePlan(ctx, out.dims(), {x.dims(), sdims});
  bool supported = true;
  const bool numeric = kernels::dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr ((classOfT<T>() & kNum) != 0) {
      runBinary<T, false>(plan, dataAs<T>(x), dataAs<T>(slope), out.mutableBytes(), f);
    } else {
      supported = false;
    }
  });
  if (!numeric || !supported) failType(ctx, x.dtype());
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
                                : fromCalc<T>(std::pow(static_cast<double>(base), ed[k]));
          } else {
            using C = Calc<T, false>;
            const double e = int_exp ? static_cast<double>(ei[k]) : ed[k];
            // float bases: compute in the base's precision as numpy/onnxruntime do
            po[o + i] = fromCalc<T>(std::pow(toCalc<C>(base), static_cast<C>(e)));
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

// ------------------------------------------------------------ Where

void inferWhere(InferContext& ctx) {
  requireType(ctx, ctx.inputDtype(0), kB, "condition");
  requireSameTypes(ctx, 1, 2);
  inferBroadcast(ctx, 0, 3, firstKnownDtype(ctx, 1, 2));
  propagateSymbolicWhere(ctx);
}

template <class E>
void whereCopy(const Plan& plan, const bool* c, const E* x, const E* y, E* o) {
  runPlan(plan, [&](int64_t base, const int64_t* off, int64_t n, const int64_t* s) {
    const bool* pc = c + off[0];
    const E* px = x + off[1];
    const E* py = y + off[2];
    E* po = o + base;
    for (int64_t i = 0; i < n; ++i)
      po[i] = pc[i * s[0]] ? px[i * s[1]] : py[i * s[2]];
  });
}

// Where only moves elements, so it dispatches on element width, not type.
void computeWhere(ComputeContext& ctx) {
  const Tensor& c = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  Tensor& out = ctx.output(0);
  if (c.dtype() != DataType::kBool) ctx.fail("condition must be bool");
  if (x.dtype() != y.dtype()) ctx.fail("X and Y have different types");
  const Plan plan = makePlan(ctx, out.dims(), {c.dims(), x.dims(), y.dims()});
  const bool* pc = dataAs<bool>(c);
  if (x.dtype() == DataType::kString) {
    whereCopy(plan, pc, x.strings().data(), y.strings().data(), out.mutableStrings().data());
    return;
  }
  switch (bitsPerElement(x.dtype())) {
    case 8:
      whereCopy(plan, pc, dataAs<uint8_t>(x), dataAs<uint8_t>(y), mutableDataAs<uint8_t>(out));
      break;
    case 16:
      whereCopy(plan, pc, dataAs<uint16_t>(x), dataAs<uint16_t>(y), mutableDataAs<uint16_t>(out));
      break;
    case 32:
      whereCopy(plan, pc, dataAs<uint32_t>(x), dataAs<uint32_t>(y), mutableDataAs<uint32_t>(out));
      break;
    case 64:
      whereCopy(plan, pc, dataAs<uint64_t>(x), dataAs<uint64_t>(y), mutableDataAs<uint64_t>(out));
      break;
    case 128: {
      struct E128 {
        uint64_t lo, hi;
      };
      whereCopy(plan, pc, dataAs<E128>(x), dataAs<E128>(y), mutableDataAs<E128>(out));
      break;
    }
    default:
      failType(ctx, x.dtype());
  }
}

// ------------------------------------------------------------ Clip

void inferClip(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  requireType(ctx, t, kNum);
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.hasInput(i)) continue;
    const DataType u = ctx.inputDtype(i);
    if (u != DataType::kUndefined && t != DataType::kUndefined && u != t)
      ctx.fail(std::string(i == 1 ? "min" : "max") + " has a different type than input");
    const Shape* s = ctx.inputShape(i);
    if (s != nullptr && s->isStatic()) {
      int64_t n = 1;
      for (const Dim& d : s->dims)
        n *= d.value;
      if (n != 1) ctx.fail(std::string(i == 1 ? "min" : "max") + " must be a scalar");
    }
  }
  if (const Shape* s = ctx.inputShape(0))
    ctx.setOutput(0, t, *s);
  else
    ctx.setOutputUnknownRank(0, t);
}

void computeClip(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  const auto n = static_cast<size_t>(x.numElements());
  bool supported = true;
  const bool numeric = kernels::dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr ((classOfT<T>() & kNum) != 0) {
      using C = Calc<T, false>;
      C lo, hi;
      if constexpr (std::is_floating_point_v<C>) {
        lo = -std::numeric_limits<C>::infinity();
        hi = std::numeric_limits<C>::infinity();
      } else {
        lo = std::numeric_limits<C>::lowest();
        hi = std::numeric_limits<C>::max();
      }
      if (ctx.opset() < 11) {
        if (ctx.hasAttr("min")) lo = static_cast<C>(ctx.attrFloat("min", 0));
        if (ctx.hasAttr("max")) hi = static_cast<C>(ctx.attrFloat("max", 0));
      } else {
        for (size_t i = 1; i < 3; ++i) {
          if (!ctx.hasInput(i)) continue;
          const Tensor& b = ctx.input(i);
          if (b.dtype() != x.dtype()) ctx.fail("min/max have a different type than input");
          if (b.numElements() != 1) ctx.fail("min/max must be scalars");
          (i == 1 ? lo : hi) = toCalc<C>(dataAs<T>(b)[0]);
        }
      }
      const T* px = dataAs<T>(x);
      T* po = mutableDataAs<T>(out);
      // Min(max, Max(x, min)): min > max gives max everywhere; NaN stays NaN.
      for (size_t i = 0; i < n; ++i) {
        C v = toCalc<C>(px[i]);
        v = v < lo ? lo : v;
        v = v > hi ? hi : v;
        po[i] = fromCalc<T>(v);
      }
    } else {
      supported = false;
    }
  });
  if (!numeric || !supported) failType(ctx, x.dtype());
}

// ------------------------------------------------------------ Dropout

DataType dropoutMaskType(const OpContext& ctx, DataType t) {
  return ctx.opset() < 10 ? t : DataType::kBool;  // the mask was of type T before opset 10
}

void inferDropout(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  requireType(ctx, t, kF | kF8);
  const Shape* s = ctx.inputShape(0);
  for (size_t i = 0; i < ctx.numOutputs() && i < 2; ++i) {
    const DataType ot = i == 0 ? t : dropoutMaskType(ctx, t);
    if (s != nullptr)
      ctx.setOutput(i, ot, *s);
    else
      ctx.setOutputUnknownRank(i, ot);
  }
}

void computeDropout(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  double ratio = 0.5;
  bool training = false;
  if (ctx.opset() < 7) {
    ratio = ctx.attrFloat("ratio", 0.5f);
    training = ctx.attrInt("is_test", 0) == 0;
  } else if (ctx.opset() < 12) {
    ratio = ctx.attrFloat("ratio", 0.5f);
  } else {
    if (ctx.hasInput(2)) {
      const Tensor& tm = ctx.input(2);
      if (tm.dtype() != DataType::kBool || tm.numElements() != 1)
        ctx.fail("training_mode must be a bool scalar");
      training = dataAs<bool>(tm)[0];
    }
    // The ratio only matters in training mode (it may even be float8 otherwise).
    if (training && ctx.hasInput(1)) ratio = kernels::scalarAsDouble(ctx, ctx.input(1));
  }
  if (training && ratio > 0) ctx.fail("training-mode Dropout is random");
  Tensor& y = ctx.output(0);
  if (x.byteSize() != 0) std::memcpy(y.mutableBytes(), x.bytes(), x.byteSize());
  if (ctx.hasOutput(1)) {
    Tensor& mask = ctx.output(1);
    const auto n = static_cast<size_t>(mask.numElements());
    kernels::dispatchNumeric(mask.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* pm = mutableDataAs<T>(mask);
      for (size_t i = 0; i < n; ++i)
        pm[i] = kernels::fromDouble<T>(1.0);
    });
  }
}

// ------------------------------------------------------------ registration

void addVersions(OpRegistry& r, std::string_view op, std::initializer_list<int> versions,
                 InferFn infer, ComputeFn compute) {
  for (int v : versions)
    r.add(OpEntry{"", op, v, infer, compute, kOpDefault});
}

template <class F, uint32_t kMask>
void addUnary(OpRegistry& r, std::string_view op, std::initializer_list<int> versions) {
  addVersions(r, op, versions, &inferUnary<kMask>, &computeUnary<F, kMask>);
}

template <class F, uint32_t kMask, bool kBoolOut = false, int kSym = kSymNone>
void addBinary(OpRegistry& r, std::string_view op, std::initializer_list<int> versions) {
  addVersions(r, op, versions, &inferBinary<kMask, kBoolOut, kSym>,
              &computeBinary<F, kMask, kBoolOut>);
}

}  // namespace

void registerElementwiseOps(OpRegistry& r) {
  // Unary math.
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

  // Activations.
  addUnary<FRelu, kSNum>(r, "Relu", {1, 6, 13, 14});
  addUnary<FLeakyRelu, kF>(r, "LeakyRelu", {1, 6, 16});
  addVersions(r, "PRelu", {1, 6, 7, 9, 16}, &inferPRelu, &computePRelu);
  addUnary<FElu, kF>(r, "Elu", {1, 6, 22});
  addUnary<FCelu, kF>(r, "Celu", {12, 28});
  addUnary<FSelu, kF>(r, "Selu", {1, 6, 22});
  addUnary<FSigmoid, kF>(r, "Sigmoid", {1, 6, 13});
  addUnary<FHardSigmoid, kF>(r, "HardSigmoid", {1, 6, 22});
  addUnary<FHardSwish, kF>(r, "HardSwish", {14, 22});
  addUnary<FSoftplus, kF>(r, "Softplus", {1, 22});
  addUnary<FSoftsign, kF>(r, "Softsign", {1, 22});
  addUnary<FMish, kF>(r, "Mish", {18, 22});
  addUnary<FGelu, kF>(r, "Gelu", {20});
  addUnary<FShrink, kNum>(r, "Shrink", {9});
  addUnary<FThresholdedRelu, kF>(r, "ThresholdedRelu", {10, 22});
  addUnary<FSwish, kF>(r, "Swish", {24});

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

  // Selection and clamping.
  addVersions(r, "Where", {9, 16}, &inferWhere, &computeWhere);
  addVersions(r, "Clip", {1, 6, 11, 12, 13}, &inferClip, &computeClip);
  addVersions(r, "Dropout", {1, 6, 7, 10, 12, 13, 22}, &inferDropout, &computeDropout);
}

}  // namespace onnxfold

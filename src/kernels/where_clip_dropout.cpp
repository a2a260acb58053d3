// Where (selection, also over partly symbolic shape values), Clip (clamping,
// bounds from attributes before opset 11 and from inputs since) and Dropout
// (inference only: a copy and an all-true mask). See op_registry.h for the
// infer()/compute() contract and elementwise.h for the broadcasting engine.
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "kernels/elementwise.h"

namespace onnxfold {
namespace {

using kernels::dataAs;
using kernels::mutableDataAs;
using namespace kernels::elementwise;

// Where with a constant condition over partly symbolic shape values selects
// symbols elementwise (Where(Equal(s, 0), default, s) in exported shape code).
void propagateSymbolicWhere(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(1);
  if (!symbolicCandidate(ctx, dt)) return;
  const Tensor* c = ctx.inputValue(0);
  if (c == nullptr || c->dtype() != DataType::kBool || c->rank() > 1) return;
  std::optional<SymPair> p = symbolicPair(ctx, 1, 2);
  if (!p) return;
  const auto nc = static_cast<size_t>(c->numElements());
  if (nc != p->n && nc != 1 && p->n != 1) return;
  const size_t n = std::max(nc, p->n);
  std::vector<SymElem> r(n);
  for (size_t i = 0; i < n; ++i) {
    const size_t k = p->n == 1 ? 0 : i;
    r[i] = c->at<bool>(nc == 1 ? 0 : i) ? p->a[k] : p->b[k];
  }
  setSymbolicResult(ctx, dt, r, p->scalar && c->rank() == 0);
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
      for (const Dim& d : s->dims) {
        if (!checkedMul(n, d.value, &n)) n = 0;  // overflowing declared dims: not 1 either
      }
      if (n != 1) ctx.fail(std::string(i == 1 ? "min" : "max") + " must be a scalar");
    }
  }
  kernels::setSameShape(ctx, 0, t, 0);
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
        // fromDouble: an out-of-range bound on an integer input saturates (a cast is UB).
        if (ctx.hasAttr("min")) lo = kernels::fromDouble<C>(ctx.attrFloat("min", 0));
        if (ctx.hasAttr("max")) hi = kernels::fromDouble<C>(ctx.attrFloat("max", 0));
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
    ratio = ctx.attrFloat("ratio");
    training = ctx.attrInt("is_test") == 0;
  } else if (ctx.opset() < 12) {
    ratio = ctx.attrFloat("ratio");
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

}  // namespace

void registerWhereClipDropoutOps(OpRegistry& r) {
  addVersions(r, "Where", {9, 16}, &inferWhere, &computeWhere);
  addVersions(r, "Clip", {1, 6, 11, 12, 13}, &inferClip, &computeClip);
  addVersions(r, "Dropout", {1, 6, 7, 10, 12, 13, 22}, &inferDropout, &computeDropout);
}

}  // namespace onnxfold

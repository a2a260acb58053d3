// gated activation family: SwiGLU (28), Y = A * Sigmoid(alpha * A) * B.
// See op_registry.h for the infer()/compute() contract.
//
// A and B must have the same shape (the op does not broadcast). float16 and
// bfloat16 are computed in float and rounded once, as the reference computes
// them in float32 and casts the result; double is computed in double.
#include <cmath>
#include <string>
#include <type_traits>

#include "kernels/common.h"
#include "kernels/float_math.h"

namespace onnxfold {
namespace kernels {
namespace {

void inferSwiGLU(InferContext& ctx) {
  requireFloatInput(ctx, 0, "A");
  requireFloatInput(ctx, 1, "B");
  const DataType ta = ctx.inputDtype(0), tb = ctx.inputDtype(1);
  if (ta != DataType::kUndefined && tb != DataType::kUndefined && ta != tb) {
    ctx.fail("A and B must have the same element type (" + std::string(dataTypeName(ta)) + " and " +
             std::string(dataTypeName(tb)) + ")");
  }
  const DataType t = ta != DataType::kUndefined ? ta : tb;
  const Shape* a = ctx.inputShape(0);
  const Shape* b = ctx.inputShape(1);
  if (a == nullptr && b == nullptr) {
    ctx.setOutputUnknownRank(0, t);
    return;
  }
  if (a == nullptr || b == nullptr) {
    ctx.setOutput(0, t, a != nullptr ? *a : *b);
    return;
  }
  if (a->rank() != b->rank()) ctx.fail("A and B must have the same shape (no broadcasting)");
  Shape y = *a;
  for (size_t i = 0; i < y.rank(); ++i) {
    const Dim& da = a->dims[i];
    const Dim& db = b->dims[i];
    if (da.isKnown() && db.isKnown() && da.value != db.value) {
      ctx.fail("A and B must have the same shape (no broadcasting): dim " + std::to_string(i) +
               " is " + std::to_string(da.value) + " and " + std::to_string(db.value));
    }
    if (!da.isKnown() && db.isKnown()) y.dims[i] = db;
  }
  ctx.setOutput(0, t, std::move(y));
}

// 1 / (1 + e^-x) without overflowing e^-x for very negative x.
template <class C>
C sigmoid(C x) {
  if (x >= 0) return C(1) / (C(1) + fm::exp(-x));
  const C e = fm::exp(x);
  return e / (C(1) + e);
}

void computeSwiGLU(ComputeContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  if (A.dims() != B.dims()) ctx.fail("A and B must have the same shape (no broadcasting)");
  if (A.dtype() != B.dtype()) ctx.fail("A and B must have the same element type");
  const double alpha = ctx.attrFloat("alpha");
  const auto n = static_cast<size_t>(A.numElements());
  Tensor& Y = ctx.output(0);
  const bool ok = dispatchNumeric(A.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float> || kIsHalfLike<T>) {
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const T* a = dataAs<T>(A);
      const T* b = dataAs<T>(B);
      T* y = mutableDataAs<T>(Y);
      const C al = static_cast<C>(alpha);
      for (size_t i = 0; i < n; ++i) {
        const C x = static_cast<C>(toDouble(a[i]));
        y[i] = fromDouble<T>(x * sigmoid(al * x) * static_cast<C>(toDouble(b[i])));
      }
    } else {
      ctx.fail("A must be float, double, float16 or bfloat16, not " +
               std::string(dataTypeName(A.dtype())));
    }
  });
  if (!ok) ctx.fail("unsupported element type " + std::string(dataTypeName(A.dtype())));
}

}  // namespace
}  // namespace kernels

void registerSwiGLUOps(OpRegistry& r) {
  r.add({"", "SwiGLU", 28, kernels::inferSwiGLU, kernels::computeSwiGLU, kOpWritesWholeOutputs});
}

}  // namespace onnxfold

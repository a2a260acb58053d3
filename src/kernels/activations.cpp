// Activations: Relu, LeakyRelu, PRelu, Elu, Celu, Selu, Sigmoid, HardSigmoid,
// HardSwish, Softplus, Softsign, Mish, Gelu, Shrink, ThresholdedRelu, Swish.
// See op_registry.h for the infer()/compute() contract and elementwise.h for
// the shared kernels; float32 Relu and Sigmoid run through Highway.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "kernels/elementwise.h"
#include "kernels/float_math.h"

namespace onnxfold {
namespace {

using kernels::dataAs;
using namespace kernels::elementwise;

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
  const C t = fm::exp(-std::fabs(x));
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
  explicit FLeakyRelu(const OpContext& c) : UnaryBase(c), alpha(c.attrFloat("alpha")) {}
  template <class C>
  C operator()(C x) const {
    return x < 0 ? static_cast<C>(alpha) * x : x;
  }
};

struct FElu : UnaryBase {
  double alpha;
  explicit FElu(const OpContext& c) : UnaryBase(c), alpha(c.attrFloat("alpha")) {}
  template <class C>
  C operator()(C x) const {
    return x < 0 ? static_cast<C>(alpha) * fm::expm1(x) : x;
  }
};

struct FCelu : UnaryBase {
  double alpha;
  explicit FCelu(const OpContext& c) : UnaryBase(c), alpha(c.attrFloat("alpha")) {
    if (alpha == 0) c.fail("alpha must not be 0");
  }
  template <class C>
  C operator()(C x) const {
    const C a = static_cast<C>(alpha);
    return std::max(C{0}, x) + std::min(C{0}, a * fm::expm1(x / a));
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
    return x > 0 ? g * x : g * (a * fm::exp(x) - a);
  }
};

struct FHardSigmoid : UnaryBase {
  double alpha, beta;
  explicit FHardSigmoid(const OpContext& c)
      : UnaryBase(c), alpha(c.attrFloat("alpha")), beta(c.attrFloat("beta")) {}
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
    return x > 0 ? x + fm::log1p(fm::exp(-x)) : fm::log1p(fm::exp(x));
  }
};

struct FMish : UnaryBase {
  using UnaryBase::UnaryBase;
  template <class C>
  C operator()(C x) const {
    const C sp = x > 0 ? x + fm::log1p(fm::exp(-x)) : fm::log1p(fm::exp(x));
    return x * fm::tanh(sp);
  }
};

struct FGelu : UnaryBase {
  bool tanh_approx;
  explicit FGelu(const OpContext& c) : UnaryBase(c) {
    const std::string a = c.attrString("approximate");
    if (a != "none" && a != "tanh") c.fail("approximate must be \"none\" or \"tanh\", not " + a);
    tanh_approx = a == "tanh";
  }
  template <class C>
  C operator()(C x) const {
    if (tanh_approx) {
      const C k = static_cast<C>(0.7978845608028654);  // sqrt(2/pi)
      return C{0.5} * x * (C{1} + fm::tanh(k * (x + static_cast<C>(0.044715) * x * x * x)));
    }
    return C{0.5} * x * (C{1} + fm::erf(x * static_cast<C>(0.7071067811865476)));
  }
};

struct FShrink : UnaryBase {
  static constexpr bool kIntAsDouble = true;
  double lambd, bias;
  explicit FShrink(const OpContext& c)
      : UnaryBase(c), lambd(c.attrFloat("lambd")), bias(c.attrFloat("bias")) {}
  template <class C>
  C operator()(C x) const {
    const C l = static_cast<C>(lambd), b = static_cast<C>(bias);
    return x < -l ? x + b : (x > l ? x - b : C{0});
  }
};

struct FThresholdedRelu : UnaryBase {
  double alpha;
  explicit FThresholdedRelu(const OpContext& c) : UnaryBase(c), alpha(c.attrFloat("alpha")) {}
  template <class C>
  C operator()(C x) const {
    return x > static_cast<C>(alpha) ? x : C{0};
  }
};

struct FSwish : UnaryBase {
  double alpha;
  explicit FSwish(const OpContext& c) : UnaryBase(c), alpha(c.attrFloat("alpha")) {}
  template <class C>
  C operator()(C x) const {
    return x * sigmoidOf(static_cast<C>(alpha) * x);
  }
};

ONNXFOLD_FLOAT_UNARY(FSoftsign, x / (C{1} + std::fabs(x)))

struct FPRelu : BinaryBase {
  using BinaryBase::BinaryBase;
  template <class C>
  C operator()(C x, C slope) const {
    return x < 0 ? wrapMul(slope, x) : x;
  }
};

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

}  // namespace

void registerActivationOps(OpRegistry& r) {
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
}

}  // namespace onnxfold

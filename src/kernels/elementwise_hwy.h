// Highway kernels for the hot float32 elementwise ops (Add/Sub/Mul/Div with
// same-shape or scalar operands, Relu, Neg, Abs, Sqrt, Sigmoid), each beside its
// scalar reference. Static dispatch only: one target chosen at compile time
// (SSSE3/SSE4/AVX2 natively, WASM SIMD128 with emcc), so the same source builds
// for both. The tails fall back to the scalar reference, so the vector kernel
// and the reference agree bit for bit on the exact ops.
#pragma once

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include <cmath>
#include <cstddef>

#include "kernels/float_math.h"

namespace onnxfold::kernels::ew {

enum class BinaryF32 { kAdd, kSub, kMul, kDiv };
enum class UnaryF32 { kRelu, kNeg, kAbs, kSqrt, kSigmoid };

// ------------------------------------------------------------ scalar references

template <BinaryF32 op>
inline float binaryScalar(float a, float b) {
  if constexpr (op == BinaryF32::kAdd) return a + b;
  if constexpr (op == BinaryF32::kSub) return a - b;
  if constexpr (op == BinaryF32::kMul) return a * b;
  if constexpr (op == BinaryF32::kDiv) return a / b;
}

// Sigmoid through exp(-|x|) so that nothing overflows and tiny results keep
// their relative precision: x >= 0 gives 1/(1+t), x < 0 gives t/(1+t).
inline float sigmoidScalar(float x) {
  const float t = fm::exp(-std::fabs(x));
  const float r = 1.0f / (1.0f + t);
  return x >= 0 ? r : t * r;
}

template <UnaryF32 op>
inline float unaryScalar(float x) {
  if constexpr (op == UnaryF32::kRelu) return x < 0 ? 0.0f : x;  // keeps NaN
  if constexpr (op == UnaryF32::kNeg) return -x;
  if constexpr (op == UnaryF32::kAbs) return std::fabs(x);
  if constexpr (op == UnaryF32::kSqrt) return std::sqrt(x);
  if constexpr (op == UnaryF32::kSigmoid) return sigmoidScalar(x);
}

// out[i] = a[i*sa] op b[i*sb] with sa, sb in {0, 1}.
template <BinaryF32 op>
inline void binaryRef(const float* a, size_t sa, const float* b, size_t sb, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = binaryScalar<op>(a[i * sa], b[i * sb]);
}

template <UnaryF32 op>
inline void unaryRef(const float* x, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = unaryScalar<op>(x[i]);
}

}  // namespace onnxfold::kernels::ew

// ------------------------------------------------------------ Highway kernels

HWY_BEFORE_NAMESPACE();
namespace onnxfold::kernels::ew {
namespace hn = hwy::HWY_NAMESPACE;

namespace detail {
template <BinaryF32 op, class V>
HWY_INLINE V binaryVec(V a, V b) {
  if constexpr (op == BinaryF32::kAdd) return hn::Add(a, b);
  if constexpr (op == BinaryF32::kSub) return hn::Sub(a, b);
  if constexpr (op == BinaryF32::kMul) return hn::Mul(a, b);
  if constexpr (op == BinaryF32::kDiv) return hn::Div(a, b);
}

template <UnaryF32 op, class D, class V>
HWY_INLINE V unaryVec(D d, V x) {
  if constexpr (op == UnaryF32::kRelu) return hn::IfThenZeroElse(hn::Lt(x, hn::Zero(d)), x);
  if constexpr (op == UnaryF32::kNeg) return hn::Neg(x);
  if constexpr (op == UnaryF32::kAbs) return hn::Abs(x);
  if constexpr (op == UnaryF32::kSqrt) return hn::Sqrt(x);
  if constexpr (op == UnaryF32::kSigmoid) {
    const V one = hn::Set(d, 1.0f);
    const V t = hn::Exp(d, hn::Neg(hn::Abs(x)));
    const V r = hn::Div(one, hn::Add(one, t));
    const V y = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Mul(t, r), r);
    return hn::IfThenElse(hn::IsNaN(x), x, y);  // Exp maps NaN to 0; keep NaN
  }
}
}  // namespace detail

// Vector version of binaryRef (sa, sb in {0, 1}; not both 0).
template <BinaryF32 op>
inline void binaryHwy(const float* a, size_t sa, const float* b, size_t sb, float* out, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  if (sa == 1 && sb == 1) {
    for (; i + N <= n; i += N)
      hn::StoreU(detail::binaryVec<op>(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
  } else if (sa == 1) {
    const auto vb = hn::Set(d, b[0]);
    for (; i + N <= n; i += N)
      hn::StoreU(detail::binaryVec<op>(hn::LoadU(d, a + i), vb), d, out + i);
  } else if (sb == 1) {
    const auto va = hn::Set(d, a[0]);
    for (; i + N <= n; i += N)
      hn::StoreU(detail::binaryVec<op>(va, hn::LoadU(d, b + i)), d, out + i);
  }
  binaryRef<op>(a + i * sa, sa, b + i * sb, sb, out + i, n - i);
}

template <UnaryF32 op>
inline void unaryHwy(const float* x, float* out, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + N <= n; i += N)
    hn::StoreU(detail::unaryVec<op>(d, hn::LoadU(d, x + i)), d, out + i);
  unaryRef<op>(x + i, out + i, n - i);
}

}  // namespace onnxfold::kernels::ew
HWY_AFTER_NAMESPACE();

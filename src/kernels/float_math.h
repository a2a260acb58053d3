// The C library's math for kernels, float arguments computed in double and rounded once.
//
// Why: native builds link glibc and wasm builds musl, whose float functions (cosf, expf, ...)
// round differently, so a folded Cos or Softmax gave different bytes natively and in the
// browser. Their double functions are both accurate to under one ulp of a double, so rounding
// to float agrees except where the exact value lies within a double ulp of a float rounding
// boundary (about 2^-29 of inputs), and the float result is nearly always correctly rounded.
// Arguments of other types go to std:: unchanged. (Highway's vector math is the same in both
// builds already: the native build targets 128-bit SIMD without FMA, like wasm SIMD128.)
#pragma once

#include <cmath>
#include <type_traits>

namespace onnxfold::fm {

#define ONNXFOLD_FM_UNARY(fn)                                     \
  template <class T>                                              \
  inline auto fn(T x) {                                           \
    if constexpr (std::is_same_v<T, float>)                       \
      return static_cast<float>(std::fn(static_cast<double>(x))); \
    else                                                          \
      return std::fn(x);                                          \
  }
ONNXFOLD_FM_UNARY(acos)
ONNXFOLD_FM_UNARY(acosh)
ONNXFOLD_FM_UNARY(asin)
ONNXFOLD_FM_UNARY(asinh)
ONNXFOLD_FM_UNARY(atan)
ONNXFOLD_FM_UNARY(atanh)
ONNXFOLD_FM_UNARY(cos)
ONNXFOLD_FM_UNARY(cosh)
ONNXFOLD_FM_UNARY(erf)
ONNXFOLD_FM_UNARY(exp)
ONNXFOLD_FM_UNARY(expm1)
ONNXFOLD_FM_UNARY(log)
ONNXFOLD_FM_UNARY(log1p)
ONNXFOLD_FM_UNARY(sin)
ONNXFOLD_FM_UNARY(sinh)
ONNXFOLD_FM_UNARY(tan)
ONNXFOLD_FM_UNARY(tanh)
#undef ONNXFOLD_FM_UNARY

template <class A, class B>
inline auto pow(A a, B b) {
  if constexpr (std::is_same_v<A, float> && std::is_same_v<B, float>)
    return static_cast<float>(std::pow(static_cast<double>(a), static_cast<double>(b)));
  else
    return std::pow(a, b);
}

}  // namespace onnxfold::fm

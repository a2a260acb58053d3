// The portable GEMM of MatMul, Gemm and the convolutions (gemm.cpp): used
// wherever XNNPACK is not (always in wasm). Float32 goes through a blocked
// Highway kernel beside its scalar reference, other types through a generic
// templated loop; half and bfloat16 are computed in float (runInFloat stages
// them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/common.h"
#include "kernels/elementwise.h"

namespace onnxfold::kernels {

// Reference: C[M,N] = A[M,K] * B[K,N] (row-major with leading dims), i-k-j order.
void gemmF32Scalar(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                   int64_t ldb, float* c, int64_t ldc);

// Blocked Highway GEMM, same contract as gemmF32Scalar.
void gemmF32(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
             int64_t ldb, float* c, int64_t ldc);

// Generic GEMM for double and integers (overwrites C); integers wrap (two's complement).
template <class T>
void gemmGeneric(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
                 T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    T* crow = c + i * ldc;
    for (int64_t j = 0; j < n; ++j)
      crow[j] = T(0);
    for (int64_t p = 0; p < k; ++p) {
      const T av = a[i * lda + p];
      const T* brow = b + p * ldb;
      for (int64_t j = 0; j < n; ++j)
        crow[j] = elementwise::wrapAdd(crow[j], elementwise::wrapMul(av, brow[j]));  // ints wrap
    }
  }
}

template <class T>
void gemmAny(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
             T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    gemmF32(m, n, k, a, lda, b, ldb, c, ldc);
  } else {
    gemmGeneric<T>(m, n, k, a, lda, b, ldb, c, ldc);
  }
}

// ------------------------------------------------------------ half and bfloat16 staged in float

template <class T>
std::vector<float> toFloatVec(const T* p, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(toDouble(p[i]));
  return v;
}
template <class T>
void fromFloatVec(const std::vector<float>& v, T* p) {
  for (size_t i = 0; i < v.size(); ++i)
    p[i] = fromDouble<T>(v[i]);
}

// A float kernel run for T = float, half or bfloat16: `run(in, y)` gets the inputs (null where
// an optional input is absent) and Y as float. Float passes its buffers; half and bfloat16 are
// widened, and the float Y narrowed into `out`.
template <class T, size_t N, class Run>
void runInFloat(const Tensor* const (&inputs)[N], Tensor& out, Run&& run) {
  const float* in[N] = {};
  if constexpr (std::is_same_v<T, float>) {
    for (size_t i = 0; i < N; ++i)
      in[i] = inputs[i] != nullptr ? dataAs<float>(*inputs[i]) : nullptr;
    run(in, mutableDataAs<float>(out));
  } else {
    std::vector<float> wide[N];
    for (size_t i = 0; i < N; ++i) {
      if (inputs[i] == nullptr) continue;
      wide[i] = toFloatVec(dataAs<T>(*inputs[i]), inputs[i]->numElements());
      in[i] = wide[i].data();
    }
    std::vector<float> y(static_cast<size_t>(out.numElements()));
    run(in, y.data());
    fromFloatVec(y, mutableDataAs<T>(out));
  }
}

}  // namespace onnxfold::kernels

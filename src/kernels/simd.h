// Highway helpers that several kernel families share (simd.cpp), each beside
// its scalar reference, which simd_test.cpp checks it against. Static dispatch
// like the rest of the kernels: one target chosen at compile time (SSE/AVX
// natively, SIMD128 in wasm).
#pragma once

#include <cstdint>

namespace onnxfold::kernels::simd {

// Reference: sum of a[i] * b[i].
float dotScalar(const float* a, const float* b, int64_t n);
double dotScalar(const double* a, const double* b, int64_t n);
// Highway dot products. The double one is the scalar loop where Highway has no
// float64 vectors (1.0.3 on wasm SIMD128).
float dotHwy(const float* a, const float* b, int64_t n);
double dotHwy(const double* a, const double* b, int64_t n);

// Reference: y[i] += alpha * x[i].
void axpyScalar(float alpha, const float* x, float* y, int64_t n);
void axpyScalar(double alpha, const double* x, double* y, int64_t n);
void axpyHwy(float alpha, const float* x, float* y, int64_t n);

}  // namespace onnxfold::kernels::simd

// The float32 row kernels of reduce.cpp: Highway kernels beside their scalar
// references, declared for reduce_test.cpp, which checks each kernel against
// its reference.
#pragma once

#include <cstddef>

namespace onnxfold::kernels::reduce_simd {

float sum(const float* x, size_t n);
float sumScalar(const float* x, size_t n);
float sumAbs(const float* x, size_t n);
float sumAbsScalar(const float* x, size_t n);
float sumSquares(const float* x, size_t n);
float sumSquaresScalar(const float* x, size_t n);
float max(const float* x, size_t n);
float maxScalar(const float* x, size_t n);
float min(const float* x, size_t n);
float minScalar(const float* x, size_t n);
float sumExpShifted(const float* x, size_t n, float shift);
float sumExpShiftedScalar(const float* x, size_t n, float shift);
void softmax(const float* x, float* y, size_t n);
void softmaxScalar(const float* x, float* y, size_t n);
void logSoftmax(const float* x, float* y, size_t n);
void logSoftmaxScalar(const float* x, float* y, size_t n);

}  // namespace onnxfold::kernels::reduce_simd

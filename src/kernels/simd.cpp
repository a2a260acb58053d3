// The Highway helpers of simd.h and their scalar references.
#include "kernels/simd.h"

#include <hwy/highway.h>

namespace onnxfold::kernels::simd {

namespace hn = hwy::HWY_NAMESPACE;

namespace {

template <class T>
T dotLoop(const T* a, const T* b, int64_t n) {
  T s = 0;
  for (int64_t i = 0; i < n; ++i)
    s += a[i] * b[i];
  return s;
}

// Two vector accumulators hide the FMA latency; the tail is scalar.
template <class T>
T dotVectors(const T* a, const T* b, int64_t n) {
  const hn::ScalableTag<T> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  auto acc0 = hn::Zero(d), acc1 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    acc0 = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), acc0);
    acc1 = hn::MulAdd(hn::LoadU(d, a + i + lanes), hn::LoadU(d, b + i + lanes), acc1);
  }
  for (; i + lanes <= n; i += lanes)
    acc0 = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), acc0);
  T s = hn::GetLane(hn::SumOfLanes(d, hn::Add(acc0, acc1)));
  for (; i < n; ++i)
    s += a[i] * b[i];
  return s;
}

template <class T>
void axpyLoop(T alpha, const T* x, T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] += alpha * x[i];
}

}  // namespace

float dotScalar(const float* a, const float* b, int64_t n) {
  return dotLoop(a, b, n);
}
double dotScalar(const double* a, const double* b, int64_t n) {
  return dotLoop(a, b, n);
}

float dotHwy(const float* a, const float* b, int64_t n) {
  return dotVectors(a, b, n);
}
double dotHwy(const double* a, const double* b, int64_t n) {
#if !HWY_HAVE_FLOAT64
  return dotLoop(a, b, n);
#else
  return dotVectors(a, b, n);
#endif
}

void axpyScalar(float alpha, const float* x, float* y, int64_t n) {
  axpyLoop(alpha, x, y, n);
}
void axpyScalar(double alpha, const double* x, double* y, int64_t n) {
  axpyLoop(alpha, x, y, n);
}

void axpyHwy(float alpha, const float* x, float* y, int64_t n) {
  const hn::ScalableTag<float> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto va = hn::Set(d, alpha);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(hn::MulAdd(va, hn::LoadU(d, x + i), hn::LoadU(d, y + i)), d, y + i);
  for (; i < n; ++i)
    y[i] += alpha * x[i];
}

}  // namespace onnxfold::kernels::simd

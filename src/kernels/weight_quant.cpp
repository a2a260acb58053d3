// Highway kernels of weight_quant.h. Each loop's tail is the scalar form of the same math, so a
// row gives the same values whatever its length.
#include "kernels/weight_quant.h"

#include <hwy/highway.h>

#include <algorithm>
#include <cmath>

namespace onnxfold::kernels::wquant {

namespace hn = hwy::HWY_NAMESPACE;

namespace {

using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using DI16 = hn::Rebind<int16_t, DF>;

inline int16_t quantizeScalar(float x, float s, float z, float qmin, float qmax) {
  return static_cast<int16_t>(std::clamp(std::nearbyint(x / s) + z, qmin, qmax));
}

// Scale and zero point per lane (columns) or one for all (run).
template <bool kColumns>
struct Params {
  const float* scale;
  const float* zero;
  float s, z;
  hn::Vec<DF> vs(DF d, int64_t j) const {
    if constexpr (kColumns) return hn::LoadU(d, scale + j);
    return hn::Set(d, s);
  }
  hn::Vec<DF> vz(DF d, int64_t j) const {
    if constexpr (kColumns) return hn::LoadU(d, zero + j);
    return hn::Set(d, z);
  }
  float ss(int64_t j) const {
    if constexpr (kColumns) return scale[j];
    return s;
  }
  float sz(int64_t j) const {
    if constexpr (kColumns) return zero[j];
    return z;
  }
};

template <bool kColumns>
void quantizeLoop(const float* x, Params<kColumns> p, float qmin, float qmax, int64_t n,
                  int16_t* q) {
  const DF d;
  const DI di;
  const DI16 di16;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto lo = hn::Set(d, qmin);
  const auto hi = hn::Set(d, qmax);
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    const auto r = hn::Add(hn::Round(hn::Div(hn::LoadU(d, x + j), p.vs(d, j))), p.vz(d, j));
    hn::StoreU(hn::DemoteTo(di16, hn::ConvertTo(di, hn::Min(hn::Max(r, lo), hi))), di16, q + j);
  }
  for (; j < n; ++j)
    q[j] = quantizeScalar(x[j], p.ss(j), p.sz(j), qmin, qmax);
}

template <bool kColumns>
void errorLoop(const float* x, const int16_t* q, Params<kColumns> p, int64_t n, double* err,
               double* ref) {
  const DF d;
  const DI di;
  const DI16 di16;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  auto e = hn::Zero(d);
  auto r = hn::Zero(d);
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    const auto v = hn::LoadU(d, x + j);
    const auto qf = hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(di16, q + j)));
    const auto diff = hn::Sub(v, hn::Mul(hn::Sub(qf, p.vz(d, j)), p.vs(d, j)));
    e = hn::MulAdd(diff, diff, e);
    r = hn::MulAdd(v, v, r);
  }
  double es = hn::GetLane(hn::SumOfLanes(d, e));
  double rs = hn::GetLane(hn::SumOfLanes(d, r));
  for (; j < n; ++j) {
    const float diff = x[j] - (static_cast<float>(q[j]) - p.sz(j)) * p.ss(j);
    es += static_cast<double>(diff) * diff;
    rs += static_cast<double>(x[j]) * x[j];
  }
  *err += es;
  *ref += rs;
}

}  // namespace

bool minMaxColumns(const float* x, int64_t n, float* lo, float* hi) {
  const DF d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  // x - x is 0 for a finite x and NaN otherwise; the sum stays 0 only if all are finite.
  auto bad = hn::Zero(d);
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    const auto v = hn::LoadU(d, x + j);
    bad = hn::Add(bad, hn::Sub(v, v));
    hn::StoreU(hn::Min(hn::LoadU(d, lo + j), v), d, lo + j);
    hn::StoreU(hn::Max(hn::LoadU(d, hi + j), v), d, hi + j);
  }
  bool ok = hn::GetLane(hn::SumOfLanes(d, bad)) == 0.0F;
  for (; j < n; ++j) {
    ok = ok && std::isfinite(x[j]);
    lo[j] = std::min(lo[j], x[j]);
    hi[j] = std::max(hi[j], x[j]);
  }
  return ok;
}

bool minMaxRun(const float* x, int64_t n, float* lo, float* hi) {
  const DF d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  auto bad = hn::Zero(d);
  auto vlo = hn::Set(d, *lo);
  auto vhi = hn::Set(d, *hi);
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    const auto v = hn::LoadU(d, x + j);
    bad = hn::Add(bad, hn::Sub(v, v));
    vlo = hn::Min(vlo, v);
    vhi = hn::Max(vhi, v);
  }
  bool ok = hn::GetLane(hn::SumOfLanes(d, bad)) == 0.0F;
  float l = hn::GetLane(hn::MinOfLanes(d, vlo));
  float h = hn::GetLane(hn::MaxOfLanes(d, vhi));
  for (; j < n; ++j) {
    ok = ok && std::isfinite(x[j]);
    l = std::min(l, x[j]);
    h = std::max(h, x[j]);
  }
  *lo = l;
  *hi = h;
  return ok;
}

void quantizeColumns(const float* x, const float* scale, const float* zero, float qmin, float qmax,
                     int64_t n, int16_t* q) {
  quantizeLoop<true>(x, {scale, zero, 0, 0}, qmin, qmax, n, q);
}

void quantizeRun(const float* x, float scale, float zero, float qmin, float qmax, int64_t n,
                 int16_t* q) {
  quantizeLoop<false>(x, {nullptr, nullptr, scale, zero}, qmin, qmax, n, q);
}

void errorColumns(const float* x, const int16_t* q, const float* scale, const float* zero,
                  int64_t n, double* err, double* ref) {
  errorLoop<true>(x, q, {scale, zero, 0, 0}, n, err, ref);
}

void errorRun(const float* x, const int16_t* q, float scale, float zero, int64_t n, double* err,
              double* ref) {
  errorLoop<false>(x, q, {nullptr, nullptr, scale, zero}, n, err, ref);
}

}  // namespace onnxfold::kernels::wquant

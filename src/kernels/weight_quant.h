// Row kernels of weight-only quantization (passes/quantized_weight.cpp): Highway with static
// dispatch (SSE/AVX natively, SIMD128 in wasm), equal bit for bit to the scalar math of
// passes/quantize_weights.h, q = clamp(round_half_even(x / s) + z, qmin, qmax), which
// weight_quant_test.cpp checks. "Columns" kernels take one scale / zero point per element of a
// row (W [K, N] quantized per column); "run" kernels one for the whole run.
#pragma once

#include <cstdint>

namespace onnxfold::kernels::wquant {

// lo[j] = min(lo[j], x[j]), hi[j] = max(hi[j], x[j]) for j < n. False if some x[j] is not
// finite (lo and hi are then unspecified).
bool minMaxColumns(const float* x, int64_t n, float* lo, float* hi);
// The range of x[0..n) folded into *lo and *hi; false if some x is not finite.
bool minMaxRun(const float* x, int64_t n, float* lo, float* hi);

// q[j] = clamp(round(x[j] / scale[j]) + zero[j], qmin, qmax).
void quantizeColumns(const float* x, const float* scale, const float* zero, float qmin, float qmax,
                     int64_t n, int16_t* q);
void quantizeRun(const float* x, float scale, float zero, float qmin, float qmax, int64_t n,
                 int16_t* q);

// Adds sum (x[j] - (q[j] - zero[j]) * scale[j])^2 to *err and sum x[j]^2 to *ref (the relative
// RMS error of the report; partial sums in float, totals in double).
void errorColumns(const float* x, const int16_t* q, const float* scale, const float* zero,
                  int64_t n, double* err, double* ref);
void errorRun(const float* x, const int16_t* q, float scale, float zero, int64_t n, double* err,
              double* ref);

}  // namespace onnxfold::kernels::wquant

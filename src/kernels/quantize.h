// The Highway quantization kernel of quantize.cpp with its scalar reference,
// declared for quantize_test.cpp, which checks one against the other.
#pragma once

#include <cstddef>
#include <cstdint>

namespace onnxfold::kernels {

// y = saturate(round_half_even(x / scale) + zp); defined for int8_t and uint8_t.
template <class Q>
void quantizeF32Scalar(const float* x, size_t n, float scale, int32_t zp, Q* out);
template <class Q>
void quantizeF32Hwy(const float* x, size_t n, float scale, int32_t zp, Q* out);

}  // namespace onnxfold::kernels

// The Highway kernels of cast.cpp with their scalar references, declared for
// cast_test.cpp, which checks each kernel against its reference.
#pragma once

#include <cstddef>
#include <cstdint>

namespace onnxfold::kernels {

// float32 <-> float16 bit patterns, bit-exact with floatToHalf/halfToFloat.
void floatToHalfScalar(const float* in, uint16_t* out, size_t n);
void floatToHalfHwy(const float* in, uint16_t* out, size_t n);
void halfToFloatScalar(const uint16_t* in, float* out, size_t n);
void halfToFloatHwy(const uint16_t* in, float* out, size_t n);

// y = saturate(round_half_even(x / scale) + zp); defined for int8_t and uint8_t.
template <class Q>
void quantizeF32Scalar(const float* x, size_t n, float scale, int32_t zp, Q* out);
template <class Q>
void quantizeF32Hwy(const float* x, size_t n, float scale, int32_t zp, Q* out);

}  // namespace onnxfold::kernels

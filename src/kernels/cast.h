// What cast.cpp shares: the element codecs QuantizeLinear (quantize.cpp) also
// encodes and decodes with, and the Highway float16 kernels with their scalar
// references, declared for cast_test.cpp, which checks each kernel against its
// reference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/tensor.h"

namespace onnxfold::kernels {

// float16's largest finite value.
constexpr double kFloat16Max = 65504.0;

// float32 <-> float16 bit patterns, bit-exact with floatToHalf/halfToFloat.
void floatToHalfScalar(const float* in, uint16_t* out, size_t n);
void floatToHalfHwy(const float* in, uint16_t* out, size_t n);
// As above, but finite values past float16's range become +-65504 (weights converted to
// float16 keep their sign and stay finite; Inf and NaN stay what they are).
void floatToHalfSaturatedScalar(const float* in, uint16_t* out, size_t n);
void floatToHalfSaturatedHwy(const float* in, uint16_t* out, size_t n);
void halfToFloatScalar(const uint16_t* in, float* out, size_t n);
void halfToFloatHwy(const uint16_t* in, float* out, size_t n);

// ------------------------------------------------------------ minifloats

// A float8 or float4 format.
struct MiniFloat {
  int exp_bits;
  int man_bits;
  int bias;
  enum Nan { kIeee, kAllOnes, kNegZero, kNone } nan;  // E5M2 / E4M3FN / *FNUZ / float4
  double max;
};

// The format of a float8 (but E8M0) or float4 element type; null for other types.
const MiniFloat* miniFloatOf(DataType t);

// Round to nearest even at the target precision; out-of-range values follow
// the Cast tables (saturate: +-max; otherwise NaN, or Inf for E5M2).
uint32_t encodeMiniFloat(const MiniFloat& m, double x, bool saturate);

// ------------------------------------------------------------ generic element access

// One element of any type: a float value, a signed or an unsigned integer.
struct Scalar {
  enum Kind { kF, kI, kU } kind = kF;
  double f = 0;
  int64_t i = 0;
  uint64_t u = 0;
  double asDouble() const {
    return kind == kF ? f : kind == kI ? static_cast<double>(i) : static_cast<double>(u);
  }
};

// Element i of packed storage of `bits`-bit elements, low bits first.
void writePacked(uint8_t* bytes, size_t i, int bits, uint32_t v);

// The Cast attributes the exotic encoders read.
struct CastOptions {
  bool saturate = true;
  std::string round_mode = "up";
};

// Element i of any tensor (strings parsed as numbers).
Scalar readElement(const Tensor& t, size_t i);
// Writes element i of `out` (preallocated). `src` is the source dtype, used
// for string formatting.
void writeElement(Tensor& out, uint8_t* bytes, size_t i, const Scalar& s, const CastOptions& o,
                  DataType src);

}  // namespace onnxfold::kernels

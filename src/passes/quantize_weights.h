// Weight-only quantization math (the quantize-weights pass, --quantize), in scalar form: the
// reference that quantized_weight.h's streaming engine and its Highway kernels are tested
// against (quantized_weight_test.cpp). The engine shares paramsFromRange; the rest is the
// reference and the tests' decoder.
//
// A group of float weights (a block of K rows of one output column, or one output channel)
// gets one scale s and zero point z; each weight w becomes q = clamp(round(w / s) + z), round
// half to even, the division in float32 as QuantizeLinear computes it, and stands for
// (q - z) * s.
//   symmetric: signed grid, z = 0, s = max|w| / (2^(bits-1) - 1)   (int4: -7..7, int8: -127..127;
//              the clamp allows -8 / -128, which the scale never reaches)
//   asymmetric: unsigned grid 0..2^bits-1, lo = min(0, min w), hi = max(0, max w),
//              s = (hi - lo) / (2^bits - 1), z = clamp(round(-lo / s))
// An all-zero group gets s = 1 (so every q is z).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace onnxfold::wq {

struct Grid {
  int bits = 4;
  bool symmetric = true;
  int32_t qmin() const { return symmetric ? -(1 << (bits - 1)) : 0; }
  int32_t qmax() const { return symmetric ? (1 << (bits - 1)) - 1 : (1 << bits) - 1; }
};

struct GroupParams {
  float scale = 1;
  int32_t zero_point = 0;
};

// Parameters for a group whose values lie in [lo, hi] (lo <= 0 <= hi: the range includes 0).
GroupParams paramsFromRange(float lo, float hi, Grid g);
// Parameters for the n values v[0], v[stride], ..., v[(n - 1) * stride].
GroupParams chooseParams(const float* v, size_t n, size_t stride, Grid g);
int32_t quantizeValue(float w, GroupParams p, Grid g);
inline float dequantizeValue(int32_t q, GroupParams p) {
  return static_cast<float>(q - p.zero_point) * p.scale;
}

// A quantized weight: values q (one per weight, in the weight's order) and one parameter pair
// per group.
struct Quantized {
  std::vector<int16_t> q;  // the grid's values: -8..7, 0..15, -128..127 or 0..255
  std::vector<GroupParams> params;
};

// W [K, N] row-major, groups = blocks of `block` rows of one column; params[b * N + n] for
// block b = k / block (ceil(K / block) blocks; the last may be short).
Quantized quantizeBlockwiseK(const float* w, int64_t k, int64_t n, int64_t block, Grid g);
// W of `dims`, one group per index of `axis` (per output channel); params[c].
Quantized quantizePerChannel(const float* w, const std::vector<int64_t>& dims, size_t axis, Grid g);

// Packs 4-bit values two per byte, element 2i in the low nibble (ONNX INT4/UINT4 and
// MatMulNBits order); an odd count leaves the last high nibble 0.
std::vector<uint8_t> packNibbles(const std::vector<int16_t>& q);

// MatMulNBits B: [N, ceil(K / block), block / 2] bytes from blockwise q of W [K, N]; values are
// stored unsigned (signed q + 8 when symmetric: the op's default zero point is 8). Rows past K in
// the last block hold the zero point.
std::vector<uint8_t> packMatMulNBits(const Quantized& qw, int64_t k, int64_t n, int64_t block,
                                     Grid g);
// MatMulNBits zero_points: [N * ceil(ceil(K / block) / 2)] bytes, blocks of one column in nibbles.
std::vector<uint8_t> packMatMulNBitsZeroPoints(const Quantized& qw, int64_t k, int64_t n,
                                               int64_t block);

// sqrt(sum (w - dequant(q))^2 / sum w^2) over blockwise (block > 0, W [K, N]) or per-channel
// (block == 0) quantization; 0 for an all-zero weight.
double relativeRmsError(const float* w, const std::vector<int64_t>& dims, const Quantized& qw,
                        int64_t block, size_t axis);

}  // namespace onnxfold::wq

// The settings of weight-only quantization (the quantize-weights pass), defined once: the
// public Options and the passes' PassOptions both hold one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onnxfold {

struct WeightQuantization {
  // "" (off), "int4" (blocked MatMul weights), "int8" (per-channel MatMul/Gemm/Conv weights)
  // or "q8" (DynamicQuantizeLinear + MatMulInteger with uint8 MatMul weights).
  std::string mode;
  // "qdq" (DequantizeLinear; int4 needs opset 21) or "ort" (int4 as com.microsoft MatMulNBits).
  std::string format = "qdq";
  int64_t block_size = 32;  // int4 block along K: a power of two 16..256
  bool symmetric = true;
  std::vector<std::string> ops;      // op types to quantize (empty: by mode)
  std::vector<std::string> exclude;  // node-name globs left float
  int64_t accuracy_level = 0;        // MatMulNBits accuracy_level 0-4 (0: not written)
};

}  // namespace onnxfold

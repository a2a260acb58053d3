// quant-fuse-integer: quantized Conv / MatMul / Gemm become ConvInteger /
// MatMulInteger with a float rescale; output quantizations stay as
// QuantizeLinear. Clip/Relu before a QuantizeLinear and data movement between
// matching DQ and Q run in the integer domain, DQ -> Q pairs cancel.
#include "passes/quant/quant.h"
#include "passes/quant/quant_fuse.h"

namespace onnxfold {

std::unique_ptr<Pass> createQuantFuseInteger() {
  using namespace quant;
  return makePatternPass(
      {"quant-fuse-integer",
       "DQ -> Conv/MatMul/Gemm to ConvInteger/MatMulInteger + Cast + Mul, data movement and "
       "Clip/Relu in the integer domain",
       {{addFoldClipIntoQuantizePatterns, addCancelDequantizeQuantizePatterns,
         addIntegerDataMovementPatterns, addConvIntegerPatterns, addMatMulIntegerPatterns}},
       quant::noteOpsetKept});
}

}  // namespace onnxfold

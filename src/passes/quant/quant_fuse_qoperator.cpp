// quant-fuse-qoperator: QDQ groups become QLinear* ops (standard domain).
//
// Phase 1 (per quantized output): Clip/Relu folded into the output
// quantization, DQ -> Q pairs cancelled, data movement in the integer domain,
// DQ -> Conv -> Q to QLinearConv, DQ -> MatMul -> Q to QLinearMatMul.
// Phase 2 (what has no output quantization): Conv to ConvInteger and
// MatMul / Gemm to MatMulInteger, each with a float rescale. The phases are
// separate so a Conv is never turned into ConvInteger before its Q is seen.
// No op used needs a newer opset than a QDQ model already imports
// (QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger: 10; per-channel
// weights in QLinearConv: 10; the integer Clip is only made from opset 12).
#include "passes/quant/quant.h"
#include "passes/quant/quant_fuse.h"

namespace onnxfold {

std::unique_ptr<Pass> createQuantFuseQOperator() {
  using namespace quant;
  return makePatternPass(
      {"quant-fuse-qoperator",
       "DQ -> Conv/MatMul -> Q to QLinearConv/QLinearMatMul, the rest to ConvInteger / "
       "MatMulInteger, data movement and Clip/Relu in the integer domain",
       {{addFoldClipIntoQuantizePatterns, addCancelDequantizeQuantizePatterns,
         addIntegerDataMovementPatterns, addQLinearConvPatterns, addQLinearMatMulPatterns},
        {addConvIntegerPatterns, addMatMulIntegerPatterns}},
       quant::noteOpsetKept});
}

}  // namespace onnxfold

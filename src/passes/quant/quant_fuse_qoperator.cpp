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

namespace {

using namespace quant;

class QuantFuseQOperator : public Pass {
 public:
  std::string_view name() const override { return "quant-fuse-qoperator"; }
  std::string_view description() const override {
    return "DQ -> Conv/MatMul -> Q to QLinearConv/QLinearMatMul, the rest to ConvInteger / "
           "MatMulInteger, data movement and Clip/Relu in the integer domain";
  }

  bool run(Model& model, PassContext& ctx) override {
    PatternList phase1, phase2;
    addFoldClipIntoQuantizePatterns(phase1);
    addCancelDequantizeQuantizePatterns(phase1);
    addIntegerDataMovementPatterns(phase1);
    addQLinearConvPatterns(phase1);
    addQLinearMatMulPatterns(phase1);
    addConvIntegerPatterns(phase2);
    addMatMulIntegerPatterns(phase2);
    bool changed = false;
    forEachGraph(model, [&](Graph& g) {
      changed |= applyPatternsGreedily(model, g, phase1, ctx).changed;
      changed |= applyPatternsGreedily(model, g, phase2, ctx).changed;
    });
    if (changed) {
      // The report says whether the opset had to change: it never does, the
      // integer ops are in opset 10 and Q/DQ need 10 (13 per axis) already.
      ctx.note("opset " + std::to_string(model.opsetVersion("")) +
               " kept: the integer ops used need opset 10 (an integer Clip 12)");
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> createQuantFuseQOperator() {
  return std::make_unique<QuantFuseQOperator>();
}

}  // namespace onnxfold

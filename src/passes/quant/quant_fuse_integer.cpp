// quant-fuse-integer: quantized Conv / MatMul / Gemm become ConvInteger /
// MatMulInteger with a float rescale; output quantizations stay as
// QuantizeLinear. Clip/Relu before a QuantizeLinear and data movement between
// matching DQ and Q run in the integer domain, DQ -> Q pairs cancel.
#include "passes/quant/quant.h"
#include "passes/quant/quant_fuse.h"

namespace onnxfold {

namespace {

using namespace quant;

class QuantFuseInteger : public Pass {
 public:
  std::string_view name() const override { return "quant-fuse-integer"; }
  std::string_view description() const override {
    return "DQ -> Conv/MatMul/Gemm to ConvInteger/MatMulInteger + Cast + Mul, data movement and "
           "Clip/Relu in the integer domain";
  }

  bool run(Model& model, PassContext& ctx) override {
    PatternList patterns;
    addFoldClipIntoQuantizePatterns(patterns);
    addCancelDequantizeQuantizePatterns(patterns);
    addIntegerDataMovementPatterns(patterns);
    addConvIntegerPatterns(patterns);
    addMatMulIntegerPatterns(patterns);
    bool changed = false;
    forEachGraph(model, [&](Graph& g) {
      changed |= applyPatternsGreedily(model, g, patterns, ctx).changed;
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

std::unique_ptr<Pass> createQuantFuseInteger() {
  return std::make_unique<QuantFuseInteger>();
}

}  // namespace onnxfold

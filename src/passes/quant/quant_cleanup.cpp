// quant-cleanup: DQ -> Q pairs with identical parameters removed (exact; see
// patterns/cancel_dequantize_quantize.cpp), dead Q/DQ erased. Duplicate
// scales and zero points are pooled afterwards by pool-constants, then cse
// merges the DequantizeLinear nodes that became identical.
#include "passes/quant/quant.h"
#include "passes/quant/quant_fuse.h"

namespace onnxfold {

namespace {

using namespace quant;

class QuantCleanup : public Pass {
 public:
  std::string_view name() const override { return "quant-cleanup"; }
  std::string_view description() const override {
    return "remove DequantizeLinear -> QuantizeLinear pairs with identical parameters";
  }

  bool run(Model& model, PassContext& ctx) override {
    PatternList patterns;
    addCancelDequantizeQuantizePatterns(patterns);
    bool changed = false;
    forEachGraph(model, [&](Graph& g) {
      changed |= applyPatternsGreedily(model, g, patterns, ctx).changed;
    });
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> createQuantCleanup() {
  return std::make_unique<QuantCleanup>();
}

}  // namespace onnxfold

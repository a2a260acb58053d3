// freezing-patterns: applies the freezing rewrite patterns with the greedy
// pattern driver (rewrite.h), in every graph including subgraphs.
//
// The patterns (src/passes/patterns/): Conv/ConvTranspose + inference
// BatchNormalization. Each pattern documents its Before/After, conditions and
// algebra in its file, and leaves the graph alone when unsure.
#include "passes/passes.h"
#include "passes/patterns/patterns.h"

namespace onnxfold {

namespace {

class FreezingPatterns : public Pass {
 public:
  std::string_view name() const override { return "freezing-patterns"; }
  std::string_view description() const override {
    return "Conv+BatchNorm folding and other freezing rewrites, by one pattern driver";
  }

  bool run(Model& model, PassContext& ctx) override {
    PatternList patterns;
    addFuseBatchNormPatterns(patterns);
    bool changed = false;
    forEachGraph(model, [&](Graph& g) {
      changed |= applyPatternsGreedily(model, g, patterns, ctx).changed;
    });
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> createFreezingPatterns() {
  return std::make_unique<FreezingPatterns>();
}

}  // namespace onnxfold

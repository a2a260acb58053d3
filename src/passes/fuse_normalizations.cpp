// fuse-normalizations: decomposed normalizations and activations become the standard ops
// that compute them (issue 23), with the greedy pattern driver (rewrite.h), in every graph:
//   patterns/fuse_normalization.cpp   ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div(/Mul/Add)
//                                     -> LayerNormalization (opset 17); the same without the
//                                     mean -> RMSNormalization (opset 23)
//   patterns/fuse_gelu.cpp            x * 0.5 * (1 + Erf(x / sqrt 2)) and the tanh form
//                                     -> Gelu (opset 20)
// Each fires only at the opset in force for its graph (--target-opset raises the model's
// first, upgrade_opset.cpp) and only on exact matches: the fused op computes the same
// function. The report counts each fusion ("pattern fuse-gelu", ...).
#include "passes/passes.h"
#include "passes/patterns/patterns.h"

namespace onnxfold {

std::unique_ptr<Pass> createFuseNormalizations() {
  return makePatternPass({"fuse-normalizations",
                          "Decomposed LayerNormalization, RMSNormalization and Gelu into the "
                          "standard ops (where the opset has them)",
                          {{addFuseNormalizationPatterns, addFuseGeluPatterns}},
                          nullptr});
}

}  // namespace onnxfold

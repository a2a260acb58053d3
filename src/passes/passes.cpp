#include "passes/passes.h"

#include "passes/quant/quant_fuse.h"
#include "passes/unflatten/unflatten_passes.h"

namespace onnxfold {

std::vector<PassFactory> builtinPassFactories() {
  return {createDeadCodeElimination,
          createEliminateIdentity,
          createFoldConstants,
          createInferShapes,
          createFreeze,
          createFreezingPatterns,
          createFuseNormalizations,
          createPoolConstants,
          createEliminateCommonSubexpressions,
          createConvertFloat16,
          createOutlineFunctions,
          createInlineFunctions,
          createQuantFoldWeights,
          createQuantFuseQOperator,
          createQuantFuseInteger,
          createQuantCleanup,
          createQuantizeWeights};
}

}  // namespace onnxfold

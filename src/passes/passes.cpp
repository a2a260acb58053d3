#include "passes/passes.h"

namespace onnxfold {

std::vector<PassFactory> builtinPassFactories() {
  return {createDeadCodeElimination,
          createEliminateIdentity,
          createFoldConstants,
          createInferShapes,
          createFreeze,
          createFreezingPatterns,
          createPoolConstants,
          createEliminateCommonSubexpressions};
}

}  // namespace onnxfold

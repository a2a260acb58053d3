#include "passes/passes.h"

namespace onnxfold {

std::vector<PassFactory> builtinPassFactories() {
  return {createDeadCodeElimination,
          createEliminateIdentity,
          createFoldConstants,
          createInferShapes,
          createFreeze,
          createPoolConstants,
          createEliminateCommonSubexpressions};
}

}  // namespace onnxfold

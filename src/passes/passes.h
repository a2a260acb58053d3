// Factories of the built-in passes, one per pass file.
#pragma once

#include <memory>
#include <vector>

#include "passes/registry.h"

namespace onnxfold {

std::unique_ptr<Pass> createDeadCodeElimination();            // dead_code_elimination.cpp
std::unique_ptr<Pass> createEliminateIdentity();              // eliminate_identity.cpp
std::unique_ptr<Pass> createFoldConstants();                  // fold_constants.cpp
std::unique_ptr<Pass> createInferShapes();                    // infer_shapes.cpp
std::unique_ptr<Pass> createFreeze();                         // freeze.cpp
std::unique_ptr<Pass> createFreezingPatterns();               // freezing_patterns.cpp
std::unique_ptr<Pass> createFuseNormalizations();             // fuse_normalizations.cpp
std::unique_ptr<Pass> createPoolConstants();                  // pool_constants.cpp
std::unique_ptr<Pass> createEliminateCommonSubexpressions();  // eliminate_common_subexpressions.cpp
std::unique_ptr<Pass> createConvertFloat16();                 // convert_float16.cpp
std::unique_ptr<Pass> createQuantizeWeights();                // quantize_weights.cpp

// Every built-in pass, for the registry.
std::vector<PassFactory> builtinPassFactories();

}  // namespace onnxfold

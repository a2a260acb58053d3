// The quant-* passes and the quantization-finalize pipelines.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace onnxfold {

std::unique_ptr<Pass> createQuantFoldWeights();    // quant/quant_fold_weights.cpp
std::unique_ptr<Pass> createQuantFuseQOperator();  // quant/quant_fuse_qoperator.cpp
std::unique_ptr<Pass> createQuantFuseInteger();    // quant/quant_fuse_integer.cpp
std::unique_ptr<Pass> createQuantCleanup();        // quant/quant_cleanup.cpp

// The pass pipeline of a quantization-finalize mode ("qoperator", "integer",
// "qdq-clean"; quant/quant_pipeline.cpp); throws Error naming the valid modes
// for any other.
std::vector<std::string> quantPipeline(const std::string& mode);
// The modes quantPipeline takes (Options::quant, --quant).
const std::vector<std::string>& quantModes();

}  // namespace onnxfold

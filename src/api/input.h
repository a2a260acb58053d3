// Reading a ModelInput: bytes in memory directly, a Source through its skeleton
// (so the weights it holds inline stay in it as ranges).
#pragma once

#include <memory>

#include "api/onnxfold.h"
#include "ir/graph.h"
#include "onnx/reader.h"

namespace onnxfold {

std::unique_ptr<Model> readInput(const ModelInput& in, ReadOptions ro);

}  // namespace onnxfold

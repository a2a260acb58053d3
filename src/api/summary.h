// ModelSummary from the IR (internal to the api layer).
#pragma once

#include "api/onnxfold.h"
#include "ir/graph.h"

namespace onnxfold {

ModelSummary summarize(const Model& model);

}  // namespace onnxfold

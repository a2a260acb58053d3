// The key to the IR's structural mutators (GraphEdit) for code that builds graphs whole: the ONNX
// reader, a detached scratch graph of one node (FoldRecipe), tests, fuzzers and benchmarks.
//
// Passes change a model's graphs through the Rewriter (passes/rewrite.h), which holds its own
// key; they do not include this header (tests/lint/graph_mutators.cmake checks it).
#pragma once

#include "ir/graph.h"

namespace onnxfold {

struct GraphBuilder {
  static GraphEdit key() { return GraphEdit(); }
};

}  // namespace onnxfold

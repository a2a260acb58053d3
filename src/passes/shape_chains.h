// Shape chains: a Reshape or Expand whose shape is computed from its own input's Shape
// gets a constant shape instead (what ONNX Runtime's basic level and onnxsim catch).
//
// Before:  %s = Shape(%x: [N, 64, 7, 7]); %b = Slice(%s, 0, 1); %t = Concat(%b, [-1])
//          %y = Reshape(%x, %t)
// After:   %y = Reshape(%x, [0, -1])          (the Shape -> Slice -> Concat chain dies)
//
// Propagation knows the chain's content element by element (a known size, or a
// symbolic dim such as N). An element that is x's own dim at the same position becomes
// 0 for Reshape (copy, when allowzero is 0) and 1 for Expand (keep, right-aligned
// broadcasting); one element that is neither becomes -1 for Reshape, only when every
// other element is a known size > 0 (then -1 is inferred exactly as the original dims
// were, even for an empty input). Anything else keeps its chain.
#pragma once

#include <optional>

#include "ir/graph.h"
#include "passes/propagation.h"

namespace onnxfold {

// The constant to use as input 1 of `n` (a Reshape or Expand whose input 1 is not yet
// constant), or nullopt when its partly known content does not determine one.
std::optional<Tensor> constantShapeInput(const Node& n, const Propagation& prop);

}  // namespace onnxfold

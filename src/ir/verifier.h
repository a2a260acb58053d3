// Structural checks of the IR: what a transform can break, reported with the
// node that is wrong. Run after every pass in tests and debug builds.
//
// Checked: node list links; every input defined before its use (topological
// order, SSA) in the node's graph or an enclosing one (subgraph captures);
// use lists matching inputs exactly; unique value names per graph; graph
// outputs defined; each node's domain imported, with one version per domain.
#pragma once

#include <string>

#include "ir/graph.h"

namespace onnxfold {

struct VerifyResult {
  bool ok = true;
  std::string message;  // the first problem found
  explicit operator bool() const { return ok; }
};

VerifyResult verify(const Model& model);
VerifyResult verifyGraph(const Graph& graph);

}  // namespace onnxfold

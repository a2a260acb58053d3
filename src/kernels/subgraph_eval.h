// Evaluation of a subgraph (a graph attribute: FlexAttention's score_mod, an
// If branch, a Loop or Scan body) on constant tensors, node by node in order,
// with the op registry's kernels.
//
// The body's nodes run at the opsets the model imports, which a kernel does
// not know from its node alone, and may use values of the enclosing graphs
// (implicit captures): the caller supplies both through a SubgraphEnv. Nested
// If nodes run the taken branch; other nodes holding subgraphs run only when
// their kernel evaluates them itself (kOpEvaluatesSubgraphs).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace onnxfold {

struct SubgraphEnv {
  // The opset version in force for `domain` ("" is the default domain) at the body's
  // nodes; negative when the domain is not imported.
  std::function<int64_t(std::string_view domain)> opset;
  // The content of a value of an enclosing graph the body uses, or null when it is not
  // known (then evaluation fails). May be empty: no captures are known.
  std::function<const Tensor*(const Value*)> outer;
  // Set for the nodes of a body: the values they compute count against the run's
  // evaluation bytes (kernels/eval_budget.h); node evaluations always count as steps.
  bool in_body = false;
};

// Runs `body` on `inputs` (one per formal input of the body, in order) and returns
// its outputs in order. Throws Error (UnsupportedError where a kernel lacks a case)
// naming the graph and the node that failed, or the captured value that is unknown.
std::vector<Tensor> evaluateSubgraph(const Graph& body, const std::vector<const Tensor*>& inputs,
                                     const SubgraphEnv& env);

}  // namespace onnxfold

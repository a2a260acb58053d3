#include "passes/pass.h"

#include "schema/op_schema.h"

namespace onnxfold {

bool ownsKnownSubgraphs(const Node& n) {
  return OpSchemas::instance().knowsDomain(n.domain);
}

void forEachGraphIn(Graph& graph, const std::function<void(Graph&)>& f) {
  for (Node* n : graph.nodes()) {
    if (ownsKnownSubgraphs(*n)) n->forEachSubgraph([&f](Graph& sg) { forEachGraphIn(sg, f); });
  }
  f(graph);
}

void forEachGraph(Model& model, const std::function<void(Graph&)>& f) {
  forEachGraphIn(*model.graph, f);
  for (Function& fn : model.functions)
    forEachGraphIn(*fn.body, f);
  for (TrainingInfo& t : model.training_info) {
    if (t.initialization) forEachGraphIn(*t.initialization, f);
    if (t.algorithm) forEachGraphIn(*t.algorithm, f);
  }
}

}  // namespace onnxfold

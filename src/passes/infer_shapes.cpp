// infer-shapes: type and shape inference for every value, written to value_info.
//
// Runs the propagation interpreter (passes/propagation.h) over the main graph,
// its subgraphs and function bodies: each node's rule from the op registry
// gives its outputs a dtype and a shape, symbolic where the inputs are
// ("batch"), with shape arithmetic followed through Shape/Gather/Concat.
// A declared type that contradicts inference is kept and reported.
#include "passes/passes.h"
#include "passes/propagation.h"

namespace onnxfold {

namespace {

class InferShapes : public Pass {
 public:
  std::string_view name() const override { return "infer-shapes"; }
  std::string_view description() const override {
    return "infer a type and (symbolic) shape for every value; write them to value_info";
  }

  bool run(Model& model, PassContext& ctx) override {
    Propagation prop(model);
    bool changed = walk(*model.graph, prop, ctx);
    for (Function& f : model.functions) {
      prop.setFunctionScope(f.body.get(), &f.opset_import);
      changed |= walk(*f.body, prop, ctx);
    }
    for (std::string& w : prop.takeWarnings())
      ctx.note(std::move(w));
    return changed;
  }

 private:
  bool walk(Graph& g, Propagation& prop, PassContext& ctx) {
    bool changed = false;
    for (Node* n : g.nodes()) {
      prop.seedSubgraphInputs(*n);
      if (ownsKnownSubgraphs(*n))
        n->forEachSubgraph([&](Graph& sg) { changed |= walk(sg, prop, ctx); });
      std::vector<Type> before;
      for (const Value* v : n->outputs())
        before.push_back(v ? v->type : Type());
      const NodeInference r = prop.inferNode(*n);
      if (!r.ok) {
        ctx.count("nodes without inference");
        ctx.explain(*n, r.error);
      }
      for (size_t i = 0; i < n->numOutputs(); ++i) {
        Value* v = n->output(i);
        if (v == nullptr || v->type.isNone()) continue;
        if (v->type != before[i]) changed = true;
        if (!v->in_value_info && !v->isGraphOutput()) {
          v->in_value_info = true;
          changed = true;
        }
      }
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> createInferShapes() {
  return std::make_unique<InferShapes>();
}

}  // namespace onnxfold

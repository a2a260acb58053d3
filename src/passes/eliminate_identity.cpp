// eliminate-identity: removes Identity nodes (and opset >= 13 Identity on any type).
//
// Before:  %y = Identity(%x); %z = Relu(%y)
// After:   %z = Relu(%x)
//
// When %y is a graph output its name is the model's interface: %x takes that
// name instead, which is only done when %x is a node output of the same graph
// that is not itself a graph output. Otherwise (%x is a graph input, an
// initializer, an outer-scope value, or already an output) the Identity stays.
#include "passes/passes.h"

namespace onnxfold {

namespace {

class EliminateIdentity : public Pass {
 public:
  std::string_view name() const override { return "eliminate-identity"; }
  std::string_view description() const override {
    return "remove Identity nodes, keeping output names";
  }

  bool run(Model& model, PassContext& ctx) override {
    bool changed = false;
    forEachGraph(model, [&](Graph& g) {
      for (Node* n : g.nodes()) {
        if (!n->isOp("Identity") || n->numInputs() != 1 || n->numOutputs() != 1) continue;
        Value* x = n->input(0);
        Value* y = n->output(0);
        if (x == nullptr || y == nullptr) continue;
        if (y->isGraphOutput()) {
          const bool renamable =
              x->producer() != nullptr && x->graph() == &g && !x->isGraphOutput();
          if (!renamable) continue;
          g.replaceOutput(y, x);
        }
        y->replaceAllUsesWith(x);
        g.eraseNode(n);
        ctx.count("Identity removed");
        changed = true;
      }
    });
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> createEliminateIdentity() {
  return std::make_unique<EliminateIdentity>();
}

}  // namespace onnxfold

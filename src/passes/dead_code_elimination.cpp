// dce: removes what no graph output needs.
//
// Before:  %a = Relu(%x); %b = Neg(%x); return %a      (initializer %w unused)
// After:   %a = Relu(%x); return %a
//
// Removed: nodes none of whose outputs is used or is a graph output (walking
// backwards, so whole dead chains go in one sweep; subgraphs first, which may
// free captured outer values); initializers nobody uses that are not graph
// inputs and not named by a training binding; value_info entries that name no
// value; local functions no node calls. Graph inputs are the model's interface
// and are never removed.
#include <set>
#include <tuple>

#include "passes/passes.h"
#include "passes/rewrite.h"

namespace onnxfold {

namespace {

using FunctionId = std::tuple<std::string, std::string, std::string>;  // domain, name, overload

class DeadCodeElimination : public Pass {
 public:
  std::string_view name() const override { return "dce"; }
  std::string_view description() const override {
    return "remove nodes, initializers, value_info and functions no output needs";
  }

  bool run(Model& model, PassContext& ctx) override {
    std::set<std::string> bound;  // initializer names that training updates or initializes
    for (const TrainingInfo& t : model.training_info) {
      for (const auto& [k, v] : t.update_binding)
        bound.insert(k);
      for (const auto& [k, v] : t.initialization_binding)
        bound.insert(k);
    }
    bool changed = false;
    for (Function& f : model.functions)
      changed |= sweep(model, *f.body, bound, ctx);
    for (TrainingInfo& t : model.training_info) {
      if (t.initialization) changed |= sweep(model, *t.initialization, bound, ctx);
      if (t.algorithm) changed |= sweep(model, *t.algorithm, bound, ctx);
    }
    changed |= sweep(model, *model.graph, bound, ctx);
    changed |= removeUnusedFunctions(model, ctx);
    return changed;
  }

 private:
  static bool isDead(const Node* n) {
    for (const Value* v : n->outputs()) {
      if (v != nullptr && (v->hasUses() || v->isGraphOutput())) return false;
    }
    return true;
  }

  bool sweep(Model& model, Graph& g, const std::set<std::string>& bound, PassContext& ctx) {
    bool changed = false;
    Rewriter rw(model, g, /*notify=*/false);  // one backward walk: no worklist to tell
    for (Node* n = g.lastNode(); n != nullptr;) {
      Node* prev = n->prev();
      if (isDead(n)) {
        rw.erase(n);
        ctx.count("nodes removed");
        changed = true;
      } else if (ownsKnownSubgraphs(*n)) {
        n->forEachSubgraph([&](Graph& sg) { changed |= sweep(model, sg, bound, ctx); });
      }
      n = prev;
    }
    const std::vector<Value*> inits = g.initializers();
    for (Value* v : inits) {
      if (!v->hasUses() && !v->isGraphOutput() && !v->isGraphInput() && !bound.count(v->name())) {
        rw.removeConstant(v);
        ctx.count("initializers removed");
        changed = true;
      }
    }
    const std::vector<Value*> sparse = g.sparseInitializers();
    for (Value* v : sparse) {
      if (!v->hasUses() && !v->isGraphOutput() && !v->isGraphInput() && !bound.count(v->name())) {
        rw.removeConstant(v);
        ctx.count("initializers removed");
        changed = true;
      }
    }
    if (!g.orphan_value_info.empty()) {
      ctx.count("value_info removed", static_cast<int64_t>(g.orphan_value_info.size()));
      g.orphan_value_info.clear();
      changed = true;
    }
    return changed;
  }

  static void collectCalls(const Graph& g, std::set<FunctionId>& out) {
    for (const Node* n : g.nodes()) {
      out.emplace(n->domain, n->op_type, n->overload);
      n->forEachSubgraph([&out](Graph& sg) { collectCalls(sg, out); });
    }
  }

  bool removeUnusedFunctions(Model& model, PassContext& ctx) {
    if (model.functions.empty()) return false;
    std::set<FunctionId> called;
    collectCalls(*model.graph, called);
    for (const TrainingInfo& t : model.training_info) {
      if (t.initialization) collectCalls(*t.initialization, called);
      if (t.algorithm) collectCalls(*t.algorithm, called);
    }
    // Functions may call functions: grow the set until it is stable.
    std::vector<bool> live(model.functions.size(), false);
    for (bool grew = true; grew;) {
      grew = false;
      for (size_t i = 0; i < model.functions.size(); ++i) {
        const Function& f = model.functions[i];
        if (!live[i] && called.count({f.domain, f.name, f.overload})) {
          live[i] = true;
          collectCalls(*f.body, called);
          grew = true;
        }
      }
    }
    std::vector<Function> kept;
    for (size_t i = 0; i < model.functions.size(); ++i) {
      if (live[i])
        kept.push_back(std::move(model.functions[i]));
      else
        ctx.note("removed unused function '" + model.functions[i].name + "'");
    }
    const bool changed = kept.size() != model.functions.size();
    model.functions = std::move(kept);
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> createDeadCodeElimination() {
  return std::make_unique<DeadCodeElimination>();
}

}  // namespace onnxfold

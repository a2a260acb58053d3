#include "ir/verifier.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace onnxfold {

namespace {

class Verifier {
 public:
  // Values defined in the graphs verified, in walk order, their uses, and the node inputs
  // naming them: equal totals (with every use naming a slot that holds its value) mean each
  // input is recorded once. A defined value is visible where its graph is open (the graph
  // being walked or one enclosing it): values of finished sibling subgraphs are not.
  std::unordered_set<const Value*> defined;
  std::unordered_set<const Value*> outer;   // of enclosing graphs, when a subgraph is verified
  std::vector<const Graph*> open;           // the graphs being walked, outermost first
  std::unordered_set<const Graph*> region;  // the graphs verified (training graphs use too)
  size_t slots = 0;

  // Uses of the defined values by nodes of the verified graphs.
  size_t usesInRegion() const {
    size_t n = 0;
    for (const Value* v : defined) {
      for (const Use& u : v->uses())
        n += region.count(u.user->graph());
    }
    return n;
  }
  std::string error;

  bool fail(const Graph& g, const std::string& what) {
    if (error.empty()) error = "graph '" + g.name + "': " + what;
    return false;
  }

  // `slot`: v is a node input, counted when v is one of the values verified here.
  bool visible(const Value* v, bool slot = false) {
    if (defined.count(v) != 0) {
      slots += slot ? 1 : 0;
      // Innermost first: most inputs are local.
      for (auto it = open.rbegin(); it != open.rend(); ++it) {
        if (*it == v->graph()) return true;
      }
      return false;
    }
    return outer.count(v) != 0;
  }

  bool checkUses(const Graph& g, const Value* v) {
    for (const Use& u : v->uses()) {
      if (u.user == nullptr || u.user->input(u.index) != v) {
        return fail(g, "use list of '" + v->name() + "' names a node input that is not it");
      }
    }
    defined.insert(v);
    return true;
  }

  bool define(const Graph& g, const Value* v) {
    if (v->graph() != &g) return fail(g, "value '" + v->name() + "' belongs to another graph");
    // The scope maps a name to one value: a second value of the same name is not in it.
    if (const Value* in_scope = g.lookupLocal(v->name()); in_scope != v) {
      if (in_scope != nullptr && defined.count(in_scope) != 0) {
        return fail(g, "value name '" + v->name() + "' is defined twice");
      }
      return fail(g, "value '" + v->name() + "' is missing from its graph's name scope");
    }
    return checkUses(g, v);
  }

  bool graph(const Graph& g) {
    region.insert(&g);
    open.push_back(&g);
    bool ok = walk(g);
    open.pop_back();
    return ok;
  }

  bool walk(const Graph& g) {
    for (const Value* v : g.initializers()) {
      if (!v->isInitializer()) return fail(g, "initializer '" + v->name() + "' has no data");
      if (!define(g, v)) return false;
    }
    for (const Value* v : g.sparseInitializers()) {
      if (!define(g, v)) return false;
    }
    for (const Value* v : g.inputs()) {
      if (!v->isGraphInput()) return fail(g, "input '" + v->name() + "' is not marked as input");
      if (v->isInitializer() || v->isSparseInitializer()) continue;  // defined above
      if (!define(g, v)) return false;
    }
    size_t count = 0;
    const Node* prev = nullptr;
    for (const Node* n : g.nodes()) {
      ++count;
      // Built only on failure: displayName() of an unnamed node counts its predecessors.
      const auto where = [n] { return "node " + n->displayName() + " (" + n->op_type + ")"; };
      if (n->graph() != &g) return fail(g, where() + " belongs to another graph");
      if (n->prev() != prev) return fail(g, where() + " has a broken list link");
      prev = n;
      if (n->op_type.empty()) return fail(g, where() + " has no op_type");
      for (size_t i = 0; i < n->numInputs(); ++i) {
        const Value* v = n->input(i);
        if (v == nullptr) continue;
        if (!visible(v, /*slot=*/true)) {
          return fail(g, where() + " input " + std::to_string(i) + " '" + v->name() +
                             "' is not defined before it (order or scope)");
        }
        // Recorded where the node says; with the totals compared at the end (every use
        // names a slot holding its value), exactly once. Linear in the number of uses.
        if (!n->inputRecorded(i)) {
          return fail(g, where() + " input " + std::to_string(i) + " '" + v->name() +
                             "' is not recorded in its use list");
        }
      }
      // Subgraphs see everything defined so far; their own names come after.
      bool sub_ok = true;
      n->forEachSubgraph([&](Graph& sg) {
        if (!sub_ok) return;
        if (sg.parent() != &g) {
          sub_ok = fail(g, where() + " holds subgraph '" + sg.name + "' whose parent is wrong");
          return;
        }
        sub_ok = graph(sg);
      });
      if (!sub_ok) return false;
      for (size_t i = 0; i < n->numOutputs(); ++i) {
        const Value* v = n->output(i);
        if (v == nullptr) continue;
        if (v->producer() != n || v->producerIndex() != i) {
          return fail(g, where() + " output '" + v->name() + "' does not point back to it");
        }
        if (v->name().empty()) return fail(g, where() + " has an output without a name");
        if (!define(g, v)) return false;
      }
    }
    if (count != g.numNodes()) return fail(g, "node count is out of sync with the node list");
    if (prev != g.lastNode()) return fail(g, "the last node link is broken");
    for (const Value* v : g.outputs()) {
      if (v == nullptr || !visible(v)) {
        return fail(g, "graph output '" + (v ? v->name() : std::string("?")) + "' is not defined");
      }
      if (!v->isGraphOutput()) return fail(g, "output '" + v->name() + "' is not marked as output");
    }
    return true;
  }
};

void collectDomains(const Graph& g, std::unordered_set<std::string_view>& out) {
  for (const Node* n : g.nodes()) {
    out.insert(isDefaultDomain(n->domain) ? std::string_view() : std::string_view(n->domain));
    n->forEachSubgraph([&out](Graph& sg) { collectDomains(sg, out); });
  }
}

std::string checkOpsets(const std::vector<OpsetId>& opsets, const Graph& g,
                        const std::string& what) {
  std::unordered_map<std::string, int64_t> seen;
  for (const OpsetId& o : opsets) {
    const std::string d = isDefaultDomain(o.domain) ? std::string() : o.domain;
    if (!seen.emplace(d, o.version).second) {
      return what + ": domain '" + o.domain + "' is imported twice";
    }
  }
  std::unordered_set<std::string_view> used;
  collectDomains(g, used);
  for (std::string_view d : used) {
    if (!seen.count(std::string(d))) {
      return what + ": nodes use domain '" + std::string(d) + "' but it is not imported";
    }
  }
  return {};
}

}  // namespace

VerifyResult verifyGraph(const Graph& graph) {
  Verifier v;
  // Enclosing graphs' values are visible to a subgraph verified on its own.
  std::vector<const Graph*> chain;
  for (const Graph* p = graph.parent(); p != nullptr; p = p->parent())
    chain.push_back(p);
  for (const Graph* p : chain) {
    for (const Value* x : p->inputs())
      v.outer.insert(x);
    for (const Value* x : p->initializers())
      v.outer.insert(x);
    for (const Node* n : p->nodes()) {
      for (const Value* x : n->outputs()) {
        if (x) v.outer.insert(x);
      }
    }
  }
  VerifyResult r;
  r.ok = v.graph(graph);
  r.message = v.error;
  if (const size_t uses = r.ok ? v.usesInRegion() : 0; r.ok && uses != v.slots) {
    r.ok = false;
    r.message = "graph '" + graph.name + "': use lists record " + std::to_string(uses) +
                " uses for " + std::to_string(v.slots) + " node inputs";
  }
  return r;
}

VerifyResult verify(const Model& model) {
  VerifyResult r = verifyGraph(*model.graph);
  if (!r.ok) return r;
  std::string opset_error = checkOpsets(model.opset_import, *model.graph, "model");
  if (opset_error.empty()) {
    for (const Function& f : model.functions) {
      VerifyResult fr = verifyGraph(*f.body);
      if (!fr.ok) return {false, "function '" + f.name + "': " + fr.message};
      opset_error = checkOpsets(f.opset_import.empty() ? model.opset_import : f.opset_import,
                                *f.body, "function '" + f.name + "'");
      if (!opset_error.empty()) break;
    }
  }
  for (const TrainingInfo& t : model.training_info) {
    for (const Graph* g : {t.initialization.get(), t.algorithm.get()}) {
      if (g == nullptr) continue;
      VerifyResult tr = verifyGraph(*g);
      if (!tr.ok) return {false, "training info: " + tr.message};
    }
  }
  if (!opset_error.empty()) return {false, opset_error};
  return r;
}

}  // namespace onnxfold

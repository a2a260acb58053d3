#include "passes/split_constants.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"
#include "kernels/op_registry.h"
#include "passes/fold_policy.h"
#include "passes/passes.h"
#include "passes/rewrite.h"

namespace onnxfold {

namespace {

Type typeOf(const Tensor& t) {
  Shape s;
  for (int64_t d : t.dims())
    s.dims.push_back(Dim::known(d));
  return Type::tensor(t.dtype(), s);
}

Tensor detached(const Tensor& src, const std::string& name) {
  Tensor t = src;
  t.name = name;
  t.external.reset();  // written inline: the bytes are loaded
  t.segment.reset();
  return t;
}

// The computed values of the constant nodes of `g`, in order.
struct ConstantNodes {
  std::unordered_map<const Value*, const Tensor*> known;
  std::unordered_map<const Value*, Tensor> computed;
  std::unordered_set<const Node*> nodes;
  size_t skipped_over_budget = 0;
};

ConstantNodes evaluateConstantNodes(const Model& model, const PassOptions& options) {
  const Graph& g = *model.graph;
  ConstantNodes c;
  for (const Value* v : g.initializers()) {
    if (v->isConstant() && v->initializer()->isLoaded()) c.known[v] = v->initializer();
  }
  const KnownValue known = [&c](const Value* v) -> const Tensor* {
    auto it = v ? c.known.find(v) : c.known.end();
    return it == c.known.end() ? nullptr : it->second;
  };
  for (const Node* n : g.nodes()) {
    if (n->hasSubgraphs()) continue;
    std::vector<const Tensor*> ins;
    bool inputs_known = true;
    int64_t input_bytes = 0;
    for (const Value* v : n->inputs()) {
      const Tensor* t = v ? known(v) : nullptr;
      if (v != nullptr && t == nullptr) inputs_known = false;
      if (t != nullptr) input_bytes += static_cast<int64_t>(t->storedBytes());
      ins.push_back(t);
    }
    if (!inputs_known) continue;
    const int64_t opset = model.opsetVersion(n->domain);
    const OpEntry* e = OpRegistry::instance().find(n->domain, n->op_type, opset);
    if (e == nullptr || e->compute == nullptr || !foldGuard(*n, e, known, options).empty())
      continue;
    // The budget, by inferred sizes before anything is allocated: a result may be as large as
    // what it is computed from, plus the budget (main holds it instead of those weights).
    const std::optional<int64_t> bytes =
        inferredOutputBytes(*n, inferredOutputTypes(*n, opset, ins));
    if (bytes && !overBudget(*n, *bytes - input_bytes, options).empty()) {
      ++c.skipped_over_budget;
      continue;
    }
    std::vector<Tensor> outs;
    try {
      outs = evaluateNode(*n, opset, ins);
    } catch (const ResourceError&) {
      throw;  // out of memory: the run fails, as folding does
    } catch (const std::exception&) {
      continue;  // the folder would leave it too
    }
    int64_t out_bytes = 0;
    for (const Tensor& t : outs)
      out_bytes += static_cast<int64_t>(t.storedBytes());
    if (!overBudget(*n, out_bytes - input_bytes, options).empty()) {
      ++c.skipped_over_budget;
      continue;
    }
    c.nodes.insert(n);
    for (size_t k = 0; k < n->numOutputs() && k < outs.size(); ++k) {
      if (const Value* v = n->output(k)) {
        Tensor& t = c.computed[v] = std::move(outs[k]);
        c.known[v] = &t;
      }
    }
  }
  return c;
}

}  // namespace

ConstantSplit splitConstantGraph(const Model& model, const PassOptions& options,
                                 const std::string& producer_version) {
  const Graph& g = *model.graph;
  ConstantNodes c = evaluateConstantNodes(model, options);
  ConstantSplit split;
  split.skipped_over_budget = c.skipped_over_budget;

  // Constant values the rest of the graph reads.
  std::vector<const Value*> boundary;
  for (const Node* n : g.nodes()) {
    if (c.nodes.count(n) == 0) continue;
    for (const Value* v : n->outputs()) {
      if (v == nullptr) continue;
      bool needed = v->isGraphOutput();
      for (const Use& u : v->uses())
        needed |= c.nodes.count(g.enclosingNode(u.user)) == 0;
      if (needed) boundary.push_back(v);
    }
  }
  if (boundary.empty()) {
    std::string hint;
    for (const Value* v : g.initializers()) {
      if (v->isGraphInput()) {
        hint =
            " (its initializers are also graph inputs, so none is a constant: freeze them first, "
            "e.g. `onnxfold optimize --passes freeze`)";
        break;
      }
    }
    if (hint.empty() && c.skipped_over_budget != 0) {
      hint = " (" + std::to_string(c.skipped_over_budget) +
             " constant nodes are over the size budget; raise it to split them)";
    }
    // A result, not an error: the model is already as split as it gets.
    split.nothing_to_split = "no node of the model computes from weights alone" + hint;
  }

  // prep: the constant nodes the boundary needs, weights as inputs and initializers.
  std::unordered_set<const Node*> needed;
  std::vector<const Node*> work;
  for (const Value* v : boundary) {
    if (needed.insert(v->producer()).second) work.push_back(v->producer());
  }
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    for (const Value* v : n->inputs()) {
      if (v != nullptr && v->producer() != nullptr && needed.insert(v->producer()).second)
        work.push_back(v->producer());
    }
  }
  split.prep = std::make_unique<Model>();
  Model& prep = *split.prep;
  prep.ir_version = std::max<int64_t>(model.ir_version, 4);  // initializers as inputs
  prep.opset_import = model.opset_import;
  prep.producer_name = "onnxfold split-constants";
  prep.producer_version = producer_version;
  Graph& pg = *prep.graph;
  pg.name = g.name.empty() ? "prep" : g.name + "_prep";
  Rewriter prw(prep, pg, /*notify=*/false);
  std::unordered_map<const Value*, Value*> map;
  for (const Node* n : g.nodes()) {
    if (needed.count(n) == 0) continue;
    for (const Value* v : n->inputs()) {
      if (v == nullptr || map.count(v) != 0 || !v->isInitializer()) continue;
      Value* w = prw.constantInput(detached(*v->initializer(), v->name()));
      ++split.prep_inputs;
      map[v] = w;
    }
    Node* cn = prw.clone(
        *n, [&map](Value* v) { return map.at(v); }, nullptr);
    for (size_t k = 0; k < n->numOutputs(); ++k) {
      if (n->output(k) != nullptr) map[n->output(k)] = cn->output(k);
    }
  }

  // main: the boundary values become inputs backed by the computed initializers.
  split.main = model.clone();
  Graph& mg = *split.main->graph;
  Rewriter mrw(*split.main, mg, /*notify=*/false);
  for (const Value* v : boundary) {
    const Tensor& t = c.computed.at(v);
    Value* mv = mg.lookupLocal(v->name());
    if (mv == nullptr)
      throw Error("split-constants: value '" + v->name() + "' is missing from the copy");
    std::string iface = v->name();
    // The interface value takes v's name, unless v is a graph output, which keeps it (an
    // Identity of the interface value carries it).
    if (mv->isGraphOutput())
      iface = mg.uniqueName(v->name() + "__prep");
    else
      mrw.rename(mv, mg.uniqueName(v->name() + "__computed"));
    Value* init = mrw.constantInput(detached(t, iface));
    mrw.replaceValue(mv, init);
    Value* pv = map.at(v);
    if (pv->name() != iface) prw.rename(pv, iface);
    pv->type = typeOf(t);
    prw.addGraphOutput(pv);
    split.values.push_back(iface);
    split.value_bytes += t.byteSize();
  }
  PassContext ctx(options);
  createDeadCodeElimination()->run(*split.main, ctx);
  return split;
}

}  // namespace onnxfold

// fold-constants: computes every node whose inputs are all known and replaces
// its outputs with initializers (PyTorch's ConstantFolder, re-thought for ONNX).
//
// Before:  %s = Shape(%x: [batch,3,8]); %c = Gather(%s, 1); %y = Reshape(%x, %t)
// After:   initializer %c = 3 (the Shape and Gather nodes are gone)
//
// Known inputs: initializers that are not graph inputs, Constant nodes, outputs
// folded earlier in the walk, and contents inference knows without the input
// data (Shape of a static value, Gather of static dims of a dynamic shape).
// A folded output keeps its name, so graph outputs and value names are stable.
//
// Never folded:
//  - nondeterministic ops (RandomNormal, Bernoulli, training-mode Dropout, ...);
//  - DequantizeLinear of an integer weight initializer, kept so quantization
//    finalize can fuse it (option fold_dequantize_weights folds it);
//  - folds that would grow the written model by more than the size budget, net
//    of the constant inputs they make dead; constructors (ConstantOfShape,
//    Expand, Tile, Range, EyeLike) have a smaller budget of their own
//    (PyTorch's skip_constructors: materialized weights stay nodes, though their
//    value may feed folds). The growth budget (PassOptions::max_model_bytes) still
//    takes larger folds while the whole model stays within it.
// If with a constant condition is replaced by the taken branch. A large result
// is computed later, when written (see fold_recipe.h).
//
// Every node that stays gets an explanation in the report.
#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>

#include "kernels/op_registry.h"
#include "kernels/subgraph_eval.h"
#include "passes/fold_policy.h"
#include "passes/fold_recipe.h"
#include "passes/passes.h"
#include "passes/propagation.h"
#include "passes/rewrite.h"
#include "passes/shape_chains.h"
#include "passes/structured_values.h"

namespace onnxfold {

namespace {

class FoldConstants : public Pass {
 public:
  std::string_view name() const override { return "fold-constants"; }
  std::string_view description() const override {
    return "compute nodes whose inputs are all known and replace them with constants";
  }

  bool run(Model& model, PassContext& ctx) override {
    Propagation prop(model);
    GrowthBudget growth(model, ctx.options());
    growth_ = &growth;
    bool changed = foldGraph(model, *model.graph, prop, ctx, true);
    for (Function& f : model.functions) {
      prop.setFunctionScope(f.body.get(), &f.opset_import);
      changed |= foldGraph(model, *f.body, prop, ctx, false);
    }
    prop.setFunctionScope(nullptr, nullptr);
    growth_ = nullptr;
    node_names_.clear();
    next_suffix_.clear();
    for (std::string& w : prop.takeWarnings())
      ctx.note(std::move(w));
    return changed;
  }

 private:
  GrowthBudget* growth_ = nullptr;  // this run's
  // The node names of each graph a branch was inlined into (built on first use, this run's):
  // two branches may name their nodes alike, and a graph's node names stay distinct.
  std::unordered_map<const Graph*, std::unordered_set<std::string>> node_names_;

  // `base`, or base__N with the first N free (N counts on per base: no quadratic search).
  std::string freshNodeName(const Graph& g, const std::string& base) {
    auto [it, fresh] = node_names_.try_emplace(&g);
    std::unordered_set<std::string>& names = it->second;
    if (fresh) {
      for (const Node* n : g.nodes())
        names.insert(n->name);
    }
    if (base.empty() || names.insert(base).second) return base;
    for (int64_t k = next_suffix_[base];; ++k) {
      std::string name = base + "__" + std::to_string(k + 1);
      if (names.insert(name).second) {
        next_suffix_[base] = k + 1;
        return name;
      }
    }
  }
  std::unordered_map<std::string, int64_t> next_suffix_;

  static bool allOutputsDead(const Node* n) {
    for (const Value* v : n->outputs()) {
      if (v != nullptr && (v->hasUses() || v->isGraphOutput())) return false;
    }
    return true;
  }

  // The nodes folding `n` removes: n, and each producer all of whose outputs are read only by
  // nodes that go (the chain that feeds only n; DCE takes it once n is a constant).
  static int64_t nodesGoingWith(const Node* n) {
    std::vector<const Node*> gone{n};
    std::unordered_set<const Node*> in_gone{n};
    for (size_t i = 0; i < gone.size(); ++i) {
      for (const Value* in : gone[i]->inputs()) {
        const Node* p = in != nullptr ? in->producer() : nullptr;
        if (p == nullptr || in_gone.count(p) != 0 || p->graph() != n->graph()) continue;
        bool only = true;
        for (const Value* out : p->outputs()) {
          if (out == nullptr) continue;
          only = only && !out->isGraphOutput();
          for (const Node* u : out->users())
            only = only && in_gone.count(u) != 0;
        }
        if (only) {
          gone.push_back(p);
          in_gone.insert(p);
        }
      }
    }
    return static_cast<int64_t>(gone.size());
  }

  // Bytes the written model loses when `n` goes: each constant input whose
  // users can all be folded dies once they are, so each user is credited an
  // equal share of it. (Three Slices of one weight then fold, the weight goes;
  // a Transpose of a weight that a non-constant Gather also uses does not.)
  // Each user is checked once per call (a SequenceConstruct of 100,000 constants is every
  // input's user: checking it per input was quadratic).
  static int64_t freedBytes(const Node* n, const Propagation& prop) {
    int64_t freed = 0;
    std::unordered_set<const Value*> seen;
    std::unordered_map<const Node*, bool> foldable;
    auto allKnown = [&](const Node* u) {
      auto [it, fresh] = foldable.try_emplace(u, true);
      if (fresh) {
        for (const Value* in : u->inputs())
          it->second = it->second && (in == nullptr || prop.knownValue(in) != nullptr);
      }
      return it->second;
    };
    for (const Value* v : n->inputs()) {
      if (v == nullptr || !seen.insert(v).second) continue;
      if (!v->isInitializer() || v->isGraphInput() || v->isGraphOutput()) continue;
      const std::vector<Node*> users = v->users();
      bool all_foldable = true;
      for (const Node* u : users)
        all_foldable = all_foldable && allKnown(u);
      if (all_foldable && !users.empty()) {
        freed += static_cast<int64_t>(v->initializer()->storedBytes() / users.size());
      }
    }
    if (n->isOp("Constant")) {
      for (const Attribute& a : n->attributes)
        freed += static_cast<int64_t>(a.t.storedBytes());
    }
    return freed;
  }

  // Replaces `n` by its taken branch; `first` is set to the first inlined node (or to what
  // followed n), where the walk goes on: the branch's nodes fold in the same run.
  bool inlineConstantIf(Rewriter& rw, Node* n, Propagation& prop, PassContext& ctx, Node*& first) {
    const Tensor* cond = prop.knownValue(n->input(0));
    if (cond == nullptr || cond->numElements() != 1 || cond->dtype() != DataType::kBool)
      return false;
    const bool taken = cond->at<uint8_t>(0) != 0;
    const Attribute* branch_attr = n->attr(taken ? "then_branch" : "else_branch");
    if (branch_attr == nullptr || !branch_attr->g) return false;
    const Graph& branch = *branch_attr->g;
    if (branch.outputs().size() != n->numOutputs()) return false;
    std::unordered_map<const Value*, Value*> map;
    for (const Value* v : branch.initializers())
      map[v] = rw.constant(*v->initializer(), v->name());
    auto mapValue = [&map](Value* v) -> Value* {
      auto it = map.find(v);
      return it == map.end() ? v : it->second;
    };
    for (const Node* bn : branch.nodes()) {
      std::string name = freshNodeName(*n->graph(), bn->name);  // before the copy joins g
      Node* copy = rw.clone(*bn, mapValue, n);
      copy->name = std::move(name);
      if (first == nullptr) first = copy;
      for (size_t i = 0; i < bn->numOutputs(); ++i) {
        if (bn->output(i) != nullptr) map[bn->output(i)] = copy->output(i);
      }
    }
    for (size_t i = 0; i < n->numOutputs(); ++i) {
      Value* out = n->output(i);
      if (out == nullptr) continue;
      rw.replaceValue(out, mapValue(branch.outputs()[i]));
      prop.forget(out);
    }
    rw.erase(n);
    ctx.count("If inlined");
    return true;
  }

  bool foldGraph(Model& model, Graph& g, Propagation& prop, PassContext& ctx, bool explain) {
    bool changed = false;
    Rewriter rw(model, g, /*notify=*/false);  // one walk in order: no worklist to tell
    Node* next = nullptr;
    for (Node* n = g.firstNode(); n != nullptr; n = next) {
      next = n->next();
      if (n->hasSubgraphs()) {
        Node* inlined = nullptr;
        if (n->isOp("If") && inlineConstantIf(rw, n, prop, ctx, inlined)) {
          if (inlined != nullptr) next = inlined;
          changed = true;
          continue;
        }
        prop.seedSubgraphInputs(*n);
        if (ownsKnownSubgraphs(*n))
          n->forEachSubgraph([&](Graph& sg) { changed |= foldGraph(model, sg, prop, ctx, false); });
        if (!evaluatesSubgraphs(*n, prop)) {
          prop.inferNode(*n);
          if (explain) ctx.explain(*n, "control flow (" + n->op_type + ") is not folded");
          continue;
        }
      }
      const NodeInference inf = prop.inferNode(*n);
      // Outputs whose content propagation already knows (Constant, Shape of a
      // static value, small all-constant subgraphs).
      bool all_known = n->numOutputs() > 0;
      for (const Value* v : n->outputs()) {
        if (v != nullptr && (prop.fact(v) == nullptr || !prop.fact(v)->value)) all_known = false;
      }
      std::vector<Tensor> outs;
      if (all_known && inf.ok) {
        std::string why = guardWhyNot(n, inf, prop, ctx);
        if (!why.empty()) {
          if (explain) ctx.explain(*n, std::move(why));
          continue;
        }
        for (const Value* v : n->outputs())
          outs.push_back(v ? *prop.fact(v)->value : Tensor());
      } else {
        std::string why = whyNot(n, inf, prop, ctx);
        if (!why.empty()) {
          if (std::optional<Tensor> shape = constantShapeInput(*n, prop)) {
            rw.setInput(n, 1, rw.constant(std::move(*shape), n->input(1)->name() + "_const"));
            ctx.count("shape chains made constant");
            changed = true;
            why = whyNot(n, inf, prop, ctx);  // now about the data alone
          }
          if (explain) ctx.explain(*n, std::move(why));
          continue;
        }
        std::vector<const Tensor*> inputs;
        for (const Value* v : n->inputs())
          inputs.push_back(v ? prop.knownValue(v) : nullptr);
        // Over the budget by the inferred output types: skipped before anything is allocated.
        const std::vector<std::optional<Type>> types = inferredOutputTypes(*n, inf.opset, inputs);
        if (std::optional<int64_t> bytes = inferredOutputBytes(*n, types)) {
          const int64_t growth = *bytes - freedBytes(n, prop);
          if (std::string over = overBudget(*n, growth, ctx.options()); !over.empty()) {
            // A constructor's value is held (not written) only when the budget could take
            // what it feeds.
            if (!growth_->mayFit(isConstructor(*n) ? *bytes : growth)) {
              if (explain) ctx.explain(*n, over + growth_->left(), growth, nodesGoingWith(n));
              ctx.count("folds skipped (size budget)");
              continue;
            }
          }
        }
        try {
          if (std::optional<Tensor> later = deferredResult(*n, inf.opset, inputs, types)) {
            outs.push_back(std::move(*later));
          } else {
            const SubgraphEnv env = subgraphEnv(*n, prop);
            outs = evaluateNode(*n, inf.opset, inputs, &env);
          }
        } catch (const std::exception& e) {
          if (explain) ctx.explain(*n, std::string("evaluation failed: ") + e.what());
          ctx.count("folds failed");
          continue;
        }
      }
      int64_t added = 0;
      for (size_t i = 0; i < outs.size(); ++i) {
        if (n->output(i) != nullptr) added += static_cast<int64_t>(outs[i].storedBytes());
      }
      const int64_t growth = added - freedBytes(n, prop);
      if (std::string over = overBudget(*n, growth, ctx.options()); !over.empty()) {
        if (isConstructor(*n) && growth_->mayFit(added)) {
          // PyTorch's skip_constructors: the materialized value is not written, but the
          // folds reading it may be (then this node is dead, and DCE takes it).
          for (size_t i = 0; i < outs.size(); ++i) {
            if (n->output(i) != nullptr) prop.setValue(n->output(i), std::move(outs[i]));
          }
          if (explain) ctx.explain(*n, std::move(over), growth, nodesGoingWith(n));
          ctx.count("constructors kept, value known");
          continue;
        }
        if (isConstructor(*n) || !growth_->take(growth, outs)) {
          if (explain) ctx.explain(*n, over + growth_->left(), growth, nodesGoingWith(n));
          ctx.count("folds skipped (size budget)");
          continue;
        }
        ctx.count("folds taken by the growth budget");
      } else {
        growth_->add(growth);
      }
      if (!replaceOutputs(rw, n, outs, prop)) continue;
      if (allOutputsDead(n)) rw.erase(n);
      ctx.count("nodes folded");
      changed = true;
    }
    return changed;
  }

  // Replaces n's outputs by what they were computed to be: tensors become initializers,
  // sequences and optionals their canonical form (structured_values.h). False when n stays
  // (it is that form already, or an output cannot be written): its values are then kept as
  // facts, so the nodes reading them still fold.
  static bool replaceOutputs(Rewriter& rw, Node* n, std::vector<Tensor>& outs, Propagation& prop) {
    bool structured = false, buildable = true;
    for (size_t i = 0; i < outs.size(); ++i) {
      const Value* v = n->output(i);
      if (v == nullptr) continue;
      const Type& t = prop.typeOf(v);
      if (outs[i].isPlain() && t.kind != Type::Kind::kOptional) continue;
      structured = true;
      buildable = buildable && canBuildStructure(t, outs[i]);
    }
    if (structured && (isCanonicalStructure(*n) || !buildable)) {
      for (size_t i = 0; i < outs.size(); ++i) {
        if (n->output(i) != nullptr) prop.setValue(n->output(i), std::move(outs[i]));
      }
      return false;
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      Value* v = n->output(i);
      if (v == nullptr) continue;
      const Type t = prop.typeOf(v);
      if (outs[i].isPlain() && t.kind != Type::Kind::kOptional) {
        rw.replaceWithConstant(v, std::move(outs[i]));
      } else {
        Value* built = buildStructure(rw, n, t, outs[i], v->name());
        rw.replaceValue(v, built);
        prop.setValue(built, std::move(outs[i]));
      }
      prop.forget(v);  // the value dies with its node; its address may be reused
    }
    return true;
  }

  // A large single result (a transposed, scaled or cast weight) is not computed now: it
  // becomes a FoldRecipe, computed when its bytes are needed (mostly by the writer, one
  // at a time), so rewriting every weight never holds them all.
  static std::optional<Tensor> deferredResult(const Node& n, int64_t opset,
                                              const std::vector<const Tensor*>& inputs,
                                              const std::vector<std::optional<Type>>& types) {
    if (n.numOutputs() != 1 || n.output(0) == nullptr || !n.domain.empty()) return std::nullopt;
    // Only ops whose kernel cannot fail once inference accepted the inputs: a recipe that
    // fails when written would fail the whole run, where an eager fold is just skipped.
    static const char* const kDeferrable[] = {
        "Transpose", "Cast", "Reshape", "Flatten", "Squeeze", "Unsqueeze",     "Identity",
        "Concat",    "Neg",  "Add",     "Sub",     "Mul",     "QuantizeLinear"};
    bool deferrable = false;
    for (const char* op : kDeferrable)
      deferrable = deferrable || n.op_type == op;
    if (!deferrable) return std::nullopt;
    // QuantizeLinear (a weight quantized once) fails past inference only on a zero point of
    // another size than the scale: checked here on the small parameters.
    if (n.op_type == "QuantizeLinear" && (inputs.size() < 2 || inputs[1] == nullptr ||
                                          (inputs.size() > 2 && inputs[2] != nullptr &&
                                           inputs[2]->numElements() != inputs[1]->numElements()))) {
      return std::nullopt;
    }
    const std::optional<Type>& t = types[0];
    if (!t || t->elem_type == DataType::kString) return std::nullopt;
    // Arithmetic only on floats (integer kernels may check for overflow).
    const bool arithmetic =
        n.op_type == "Neg" || n.op_type == "Add" || n.op_type == "Sub" || n.op_type == "Mul";
    if (arithmetic && !isFloatingPoint(t->elem_type)) return std::nullopt;
    std::vector<int64_t> dims;
    for (const Dim& d : t->shape->dims)
      dims.push_back(d.value);
    const int64_t count = checkedElementCount(dims);
    if (count < 0 || static_cast<uint64_t>(count) > (UINT64_MAX - 7) / 64 ||
        rawByteSize64(t->elem_type, count) < FoldRecipe::kDeferBytes ||
        rawByteSize64(t->elem_type, count) > SIZE_MAX) {
      return std::nullopt;
    }
    std::vector<std::optional<Tensor>> held;
    for (const Tensor* in : inputs)
      held.push_back(in ? std::optional<Tensor>(*in) : std::nullopt);
    return FoldRecipe::deferred(
        std::make_shared<FoldRecipe>(n, opset, std::move(held), 0, t->elem_type, dims));
  }

  // Whether n's kernel runs n's subgraphs itself (FlexAttention's score_mod), so n folds
  // like any other node rather than staying as control flow.
  static bool evaluatesSubgraphs(const Node& n, const Propagation& prop) {
    const OpEntry* e =
        OpRegistry::instance().find(n.domain, n.op_type, prop.opsetFor(*n.graph(), n.domain));
    return e != nullptr && e->compute != nullptr && (e->flags & kOpEvaluatesSubgraphs) != 0;
  }

  // What such a kernel needs beyond its inputs: the opsets in force at n, and the values the
  // fold knows (the subgraphs may use values of the enclosing graphs).
  static SubgraphEnv subgraphEnv(const Node& n, const Propagation& prop) {
    return {[&prop, g = n.graph()](std::string_view domain) {
              return prop.opsetFor(*g, std::string(domain));
            },
            [&prop](const Value* v) { return prop.knownValue(v); }};
  }

  // Reasons never to fold `n`, whatever is known of its inputs (shared with split-constants).
  static std::string guardWhyNot(const Node* n, const NodeInference& inf, const Propagation& prop,
                                 const PassContext& ctx) {
    return foldGuard(
        *n, inf.entry, [&prop](const Value* v) { return prop.knownValue(v); }, ctx.options());
  }

  // Why `n` cannot be evaluated now; "" when it can.
  static std::string whyNot(const Node* n, const NodeInference& inf, const Propagation& prop,
                            const PassContext& ctx) {
    if (std::string why = guardWhyNot(n, inf, prop, ctx); !why.empty()) return why;
    for (const Value* v : n->inputs()) {
      if (v != nullptr && prop.knownValue(v) == nullptr) {
        if (v->isGraphInput()) return "depends on graph input '" + v->name() + "'";
        if (v->isInitializer() && !v->initializer()->isLoaded()) {
          return "input '" + v->name() + "' is external data that was not loaded";
        }
        return "depends on non-constant '" + v->name() + "'";
      }
    }
    if (!inf.ok) return inf.error;
    if (inf.entry->compute == nullptr) {
      return "no kernel for op " + n->op_type + " at opset " + std::to_string(inf.opset);
    }
    return "";
  }
};

}  // namespace

std::unique_ptr<Pass> createFoldConstants() {
  return std::make_unique<FoldConstants>();
}

}  // namespace onnxfold

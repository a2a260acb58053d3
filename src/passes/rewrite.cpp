#include "passes/rewrite.h"

#include <algorithm>
#include <deque>
#include <unordered_map>

namespace onnxfold {

// ----------------------------------------------------------------- Rewriter

int64_t Rewriter::opset(std::string_view domain) const {
  const int64_t v = function_ != nullptr ? importedVersion(function_->opset_import, domain) : -1;
  return v >= 0 ? v : model_.opsetVersion(domain);
}

bool Rewriter::notifyMatchFailure(const Node& n, std::string why) const {
  if (ctx_ != nullptr) ctx_->explain(n, std::move(why));
  return false;
}

Node* Rewriter::create(const std::string& op_type, const std::vector<Value*>& inputs,
                       size_t num_outputs, Node* before, std::string name,
                       std::vector<Attribute> attributes, std::string domain) {
  Node* n = graph_.createNode(Graph::Edit(), op_type, inputs, num_outputs, std::move(domain));
  n->name = std::move(name);
  for (Attribute& a : attributes)
    n->setAttr(std::move(a));
  if (before != nullptr)
    graph_.insertBefore(Graph::Edit(), before, n);
  else
    graph_.appendNode(Graph::Edit(), n);
  touch(n);
  return n;
}

Value* Rewriter::constant(Tensor t, const std::string& base) {
  t.name = graph_.uniqueName(base);
  return graph_.addInitializer(Graph::Edit(), std::move(t));
}

Value* Rewriter::replaceWithConstant(Value* v, Tensor t) {
  const std::string name = v->name();
  t.name = name + "__folded";
  t.doc_string.clear();
  t.metadata_props.clear();
  t.unknown_fields.clear();
  t.segment.reset();
  t.external.reset();
  Value* c = graph_.addInitializer(Graph::Edit(), std::move(t));
  replaceValue(v, c);       // a graph output's name moves to c
  if (c->name() != name) {  // and any other's too: a folded value keeps its name
    v->setName(graph_.uniqueName(name + "__folded"));
    c->setName(name);
  }
  return c;
}

void Rewriter::removeConstant(Value* v) {
  graph_.removeInitializer(Graph::Edit(), v);
}

Node* Rewriter::clone(const Node& src, const std::function<Value*(Value*)>& map, Node* before) {
  Node* n = graph_.cloneNode(Graph::Edit(), src, map, before);
  touch(n);
  return n;
}

void Rewriter::touchUsers(Value* v) {
  if (!notify_) return;
  for (Node* u : v->users())
    touch(u);
}

void Rewriter::replaceValue(Value* from, Value* to) {
  if (from == to) return;
  touchUsers(from);
  if (Node* carrier = graph_.replaceValue(Graph::Edit(), from, to)) touch(carrier);
  touch(to->producer());
}

void Rewriter::replaceNode(Node* n, const std::vector<Value*>& values) {
  for (size_t i = 0; i < n->numOutputs() && i < values.size(); ++i) {
    if (n->output(i) != nullptr && values[i] != nullptr) replaceValue(n->output(i), values[i]);
  }
  erase(n);
}

void Rewriter::erase(Node* n) {
  for (Value* v : n->inputs()) {
    if (v != nullptr) touch(v->producer());
  }
  if (notify_) erased_.insert(n);
  graph_.eraseNode(Graph::Edit(), n);
}

void Rewriter::setInput(Node* n, size_t i, Value* v) {
  if (Value* old = n->input(i); old != nullptr)
    touch(old->producer());  // may have lost its last use
  n->setInput(GraphEdit(), i, v);
  touch(n);
}

void Rewriter::addInput(Node* n, Value* v) {
  n->addInput(GraphEdit(), v);
  touch(n);
}

void Rewriter::removeInput(Node* n, size_t i) {
  if (Value* old = n->input(i); old != nullptr) touch(old->producer());
  n->removeInput(GraphEdit(), i);
  touch(n);
}

void Rewriter::setAttr(Node* n, Attribute a) {
  n->setAttr(std::move(a));
  touch(n);
}

void Rewriter::removeAttr(Node* n, std::string_view name) {
  if (n->removeAttr(name)) touch(n);
}

void Rewriter::rename(Value* v, std::string name) {
  v->setName(std::move(name));
}

Value* Rewriter::addGraphInput(std::string name, Type type) {
  return graph_.addInput(Graph::Edit(), std::move(name), std::move(type));
}

void Rewriter::removeGraphInput(Value* v) {
  touchUsers(v);  // an input that stays an initializer is a constant now
  graph_.removeInput(Graph::Edit(), v);
}

Value* Rewriter::constantInput(Tensor t) {
  Value* v = graph_.addInitializer(Graph::Edit(), std::move(t));
  graph_.addInputForInitializer(Graph::Edit(), v);
  return v;
}

void Rewriter::addGraphOutput(Value* v) {
  graph_.addOutput(Graph::Edit(), v);
}

void Rewriter::setGraphOutput(size_t i, Value* v) {
  touch(graph_.outputs().at(i)->producer());  // may be dead now
  graph_.setOutput(Graph::Edit(), i, v);
}

void Rewriter::replaceGraphOutput(Value* old_out, Value* v) {
  touch(old_out->producer());
  graph_.replaceOutput(Graph::Edit(), old_out, v);
}

// ----------------------------------------------------------------- chain patterns

namespace {

class ChainPattern : public RewritePattern {
 public:
  explicit ChainPattern(ChainSpec spec)
      : RewritePattern(spec.name, spec.ops.back(), spec.benefit), spec_(std::move(spec)) {}

  bool matchAndRewrite(Node& root, Rewriter& rw) const override {
    Chain chain(spec_.ops.size(), nullptr);
    chain.back() = &root;
    // Walk from the root back to the first op: each producer feeds only the next node.
    for (size_t k = spec_.ops.size() - 1; k > 0; --k) {
      Node* next = chain[k];
      Node* prev = nullptr;
      const size_t n_in =
          spec_.any_input ? next->numInputs() : std::min<size_t>(1, next->numInputs());
      for (size_t i = 0; i < n_in && prev == nullptr; ++i) {
        Value* in = next->input(i);
        if (in == nullptr || in->producer() == nullptr) continue;
        Node* p = in->producer();
        if (p->graph() == root.graph() && p->isOp(spec_.ops[k - 1]) && hasSingleUse(in)) prev = p;
      }
      if (prev == nullptr) return false;
      chain[k - 1] = prev;
    }
    for (const auto& holds : spec_.constraints) {
      if (!holds(rw, chain)) return false;
    }
    spec_.build(chain, rw);
    return true;
  }

 private:
  ChainSpec spec_;
};

class PatternPass : public Pass {
 public:
  explicit PatternPass(PatternPassSpec spec) : spec_(std::move(spec)) {
    for (const auto& phase : spec_.phases) {
      phases_.emplace_back();
      for (auto family : phase)
        family(phases_.back());
    }
  }
  std::string_view name() const override { return spec_.name; }
  std::string_view description() const override { return spec_.description; }

  bool run(Model& model, PassContext& ctx) override {
    bool changed = false;
    forEachGraph(model, [&](Graph& g) {
      for (const PatternList& phase : phases_)
        changed |= applyPatternsGreedily(model, g, phase, ctx).changed;
    });
    if (changed && spec_.after_change) spec_.after_change(model, ctx);
    return changed;
  }

 private:
  PatternPassSpec spec_;
  std::vector<PatternList> phases_;
};

bool isDead(const Node* n) {
  for (const Value* v : n->outputs()) {
    if (v != nullptr && (v->hasUses() || v->isGraphOutput())) return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<RewritePattern> makeChainPattern(ChainSpec spec) {
  return std::make_unique<ChainPattern>(std::move(spec));
}

std::unique_ptr<Pass> makePatternPass(PatternPassSpec spec) {
  return std::make_unique<PatternPass>(std::move(spec));
}

bool isStaticTensor(const Value* v) {
  return v != nullptr && v->type.kind == Type::Kind::kTensor && v->type.shape &&
         v->type.shape->isStatic();
}

std::vector<int64_t> staticDimsOf(const Value* v) {
  std::vector<int64_t> d;
  for (const Dim& x : v->type.shape->dims)
    d.push_back(x.value);
  return d;
}

bool hasSingleUse(const Value* v) {
  return v->hasOneUse() && !v->isGraphOutput();
}

// ----------------------------------------------------------------- driver

DriverResult applyPatternsGreedily(Model& model, Graph& graph, const PatternList& patterns,
                                   PassContext& ctx) {
  std::unordered_map<std::string, std::vector<const RewritePattern*>> by_root;
  for (const auto& p : patterns)
    by_root[p->rootOp()].push_back(p.get());
  for (auto& [op, list] : by_root) {
    std::stable_sort(list.begin(), list.end(),
                     [](const RewritePattern* a, const RewritePattern* b) {
                       return a->benefit() > b->benefit();
                     });
  }

  DriverResult result;
  const Function* function = model.functionOf(graph);  // once per graph: its opsets
  std::deque<Node*> worklist;
  std::unordered_set<Node*> queued;
  // Nodes erased while queued: their entries are skipped when they come up (scanning the
  // worklist on every erase made long chains quadratic). An address reused by a new node that
  // is queued again leaves the set, and then names a live node either way.
  std::unordered_set<Node*> erased;
  for (Node* n : graph.nodes()) {
    worklist.push_back(n);
    queued.insert(n);
  }
  // Each rewrite removes or simplifies something; the cap guards against patterns that undo each
  // other.
  const size_t cap = 10 * (graph.numNodes() + 16);
  while (!worklist.empty()) {
    Node* n = worklist.front();
    worklist.pop_front();
    if (erased.erase(n) != 0) continue;
    queued.erase(n);
    Rewriter rw(model, graph, /*notify=*/true, function, &ctx);
    if (isDead(n)) {
      rw.erase(n);
      ctx.count("dead nodes erased");
      result.changed = true;
    } else {
      auto it = by_root.find(n->op_type);
      if (it == by_root.end() || !n->isDefaultDomain()) continue;
      for (const RewritePattern* p : it->second) {
        if (!p->matchAndRewrite(*n, rw)) continue;
        ctx.count("pattern " + p->name());
        result.changed = true;
        ++result.rewrites;
        break;
      }
    }
    for (Node* x : rw.erased()) {
      if (queued.erase(x) != 0) erased.insert(x);
    }
    for (Node* t : rw.takeTouched()) {
      if (rw.erased().count(t) || queued.count(t)) continue;
      erased.erase(t);
      worklist.push_back(t);
      queued.insert(t);
    }
    if (result.rewrites > cap) {
      result.converged = false;
      ctx.note("pattern driver stopped after " + std::to_string(result.rewrites) +
               " rewrites without converging");
      break;
    }
  }
  return result;
}

}  // namespace onnxfold

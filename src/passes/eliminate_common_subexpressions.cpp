// cse: nodes computing the same thing become one.
//
// Before:  %a = Shape(%x); %b = Shape(%x); %y = Concat(%a, %b)
// After:   %a = Shape(%x); %y = Concat(%a, %a)
//
// Same means: same op, domain and overload, the same input values in the same
// order, and equal attributes (tensors compared by content). Nodes with
// subgraphs are left alone, and nondeterministic ops (RandomNormal, Dropout in
// training, ...) are never merged: two draws are not one. Each graph,
// subgraphs included, is handled on its own; a node inside a subgraph may
// still use an outer value that was merged.
#include <cstring>
#include <unordered_map>

#include "ir/hash.h"
#include "kernels/op_registry.h"
#include "passes/passes.h"
#include "passes/rewrite.h"

namespace onnxfold {

namespace {

bool sameAttribute(const Attribute& a, const Attribute& b) {
  if (a.name != b.name || a.type != b.type || a.ref_attr_name != b.ref_attr_name) return false;
  if (a.g || b.g || !a.graphs.empty() || !b.graphs.empty()) return false;
  if (a.floats.size() != b.floats.size()) return false;
  // Floats by bits: 0.0 and -0.0 differ, NaN equals itself.
  if (!a.floats.empty() &&
      std::memcmp(a.floats.data(), b.floats.data(), a.floats.size() * 4) != 0) {
    return false;
  }
  if (std::memcmp(&a.f, &b.f, 4) != 0 || a.i != b.i || a.s != b.s || a.ints != b.ints ||
      a.strings != b.strings) {
    return false;
  }
  if (a.type == AttrType::kTensor && !a.t.sameContent(b.t)) return false;
  if (a.tensors.size() != b.tensors.size()) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    if (!a.tensors[i].sameContent(b.tensors[i])) return false;
  }
  return a.tp == b.tp && a.type_protos == b.type_protos && a.sparse_tensors.empty() &&
         b.sparse_tensors.empty() && a.type != AttrType::kSparseTensor;
}

bool sameNode(const Node* a, const Node* b) {
  if (a->op_type != b->op_type || a->domain != b->domain || a->overload != b->overload ||
      a->inputs() != b->inputs() || a->numOutputs() != b->numOutputs() ||
      a->attributes.size() != b->attributes.size()) {
    return false;
  }
  for (const Attribute& x : a->attributes) {
    const Attribute* y = b->attr(x.name);
    if (y == nullptr || !sameAttribute(x, *y)) return false;
  }
  for (size_t i = 0; i < a->numOutputs(); ++i) {
    if ((a->output(i) == nullptr) != (b->output(i) == nullptr)) return false;
  }
  return true;
}

// Op, inputs and the attributes' plain values: nodes that differ only in an attribute land in
// different buckets (a bucket of many unequal nodes would be scanned for every node).
uint64_t nodeKey(const Node* n) {
  Fnv1a h;
  h.str(n->op_type);
  h.str(n->domain);
  for (const Value* v : n->inputs())
    h.pod(reinterpret_cast<uintptr_t>(v));
  for (const Attribute& a : n->attributes) {
    h.str(a.name);
    h.pod(a.i);
    h.pod(a.f);
    h.str(a.s);
    for (int64_t x : a.ints)
      h.pod(x);
  }
  return h.h;
}

class EliminateCommonSubexpressions : public Pass {
 public:
  std::string_view name() const override { return "cse"; }
  std::string_view description() const override {
    return "merge nodes with the same op, inputs and attributes";
  }

  bool run(Model& model, PassContext& ctx) override {
    bool changed = false;
    forEachGraph(model, [&](Graph& g) { changed |= runOn(model, g, ctx); });
    return changed;
  }

 private:
  static bool nondeterministic(const Model& m, const Node* n) {
    if (n->isOp("Dropout")) return true;  // training mode may be chosen at run time
    const OpEntry* e =
        OpRegistry::instance().find(n->domain, n->op_type, m.opsetVersion(n->domain));
    if (e != nullptr) return (e->flags & kOpNondeterministic) != 0;
    // Without a rule we cannot tell: only the default domain's known-random ops are listed.
    return n->op_type.rfind("Random", 0) == 0 || n->op_type == "Bernoulli" ||
           n->op_type == "Multinomial" || !n->isDefaultDomain();
  }

  static bool runOn(Model& m, Graph& g, PassContext& ctx) {
    bool changed = false;
    Rewriter rw(m, g, /*notify=*/false);
    std::unordered_multimap<uint64_t, Node*> seen;
    for (Node* n : g.nodes()) {
      if (n->hasSubgraphs() || nondeterministic(m, n)) continue;
      const uint64_t key = nodeKey(n);
      Node* same = nullptr;
      auto range = seen.equal_range(key);
      for (auto it = range.first; it != range.second && same == nullptr; ++it) {
        if (sameNode(it->second, n)) same = it->second;
      }
      if (same == nullptr) {
        seen.emplace(key, n);
        continue;
      }
      // Both are graph outputs: kept apart, but `same` stays the one later duplicates find
      // (adding `n` too would make every next duplicate scan a growing bucket).
      if (!merge(rw, same, n)) continue;
      ctx.count("nodes merged");
      changed = true;
    }
    return changed;
  }

  // Replaces `dup` by `keep`; false when graph-output names forbid it.
  static bool merge(Rewriter& rw, Node* keep, Node* dup) {
    for (size_t i = 0; i < dup->numOutputs(); ++i) {
      Value* d = dup->output(i);
      if (d != nullptr && d->isGraphOutput() && keep->output(i)->isGraphOutput()) return false;
    }
    rw.replaceNode(dup, keep->outputs());  // keep takes a graph output's name
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> createEliminateCommonSubexpressions() {
  return std::make_unique<EliminateCommonSubexpressions>();
}

}  // namespace onnxfold

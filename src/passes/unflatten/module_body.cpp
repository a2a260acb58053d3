#include "passes/unflatten/module_body.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ir/key.h"

namespace onnxfold {

namespace {

bool isWeightConstant(const Node* n, size_t limit) {
  if (!n->isOp("Constant")) return false;
  for (const Attribute& a : n->attributes) {
    if (a.name == "value" && a.t.byteSize() > limit) return true;
    if (a.name == "sparse_value") return true;
  }
  return false;
}

}  // namespace

ModuleBody collectModuleBody(const Graph& g, const std::vector<Node*>& all, size_t weight_bytes) {
  ModuleBody b;
  for (Node* n : all) {
    if (!isWeightConstant(n, weight_bytes)) b.nodes.push_back(n);
  }
  if (b.nodes.empty()) {
    b.why_not = "no nodes";
    return b;
  }
  std::unordered_map<const Node*, size_t> index;
  for (size_t k = 0; k < b.nodes.size(); ++k)
    index[b.nodes[k]] = k;
  std::unordered_map<const Value*, size_t> input_index;
  std::string& sig = b.signature;
  for (size_t k = 0; k < b.nodes.size(); ++k) {
    const Node* n = b.nodes[k];
    if (n->hasSubgraphs()) {
      b.why_not = "control flow node " + n->displayName();
      return b;
    }
    sig += 'N';
    putKeyPart(sig, n->op_type);
    putKeyPart(sig, n->domain);
    putKeyPart(sig, n->overload);
    std::vector<const Attribute*> attrs;
    for (const Attribute& a : n->attributes)
      attrs.push_back(&a);
    std::sort(attrs.begin(), attrs.end(),
              [](const Attribute* x, const Attribute* y) { return x->name < y->name; });
    for (const Attribute* a : attrs)
      sig += attributeKey(*a);
    sig += "I";
    for (Value* v : n->inputs()) {
      if (v == nullptr) {
        sig += "-,";
        continue;
      }
      Node* p = v->producer();
      auto it = p ? index.find(p) : index.end();
      if (it != index.end()) {
        sig += 'n';
        putKeyNumber(sig, static_cast<int64_t>(it->second));
        putKeyNumber(sig, static_cast<int64_t>(v->producerIndex()));
        continue;
      }
      auto [pos, added] = input_index.emplace(v, b.inputs.size());
      if (added) b.inputs.push_back(v);
      sig += 'i';
      putKeyNumber(sig, static_cast<int64_t>(pos->second));
    }
    sig += "O";
    for (const Value* v : n->outputs())
      sig += v ? '1' : '0';
  }
  // Outputs: values some node outside uses, or graph outputs.
  sig += "R";
  for (size_t k = 0; k < b.nodes.size(); ++k) {
    for (Value* v : b.nodes[k]->outputs()) {
      if (v == nullptr) continue;
      bool outside = v->isGraphOutput();
      for (const Use& u : v->uses()) {
        if (index.count(g.enclosingNode(u.user)) == 0) outside = true;
      }
      if (!outside) continue;
      b.outputs.push_back(v);
      putKeyNumber(sig, static_cast<int64_t>(k));
      putKeyNumber(sig, static_cast<int64_t>(v->producerIndex()));
    }
  }
  sig += "#";
  putKeyNumber(sig, static_cast<int64_t>(b.inputs.size()));
  if (b.outputs.empty()) {
    b.why_not = "nothing it computes is used";
    return b;
  }
  // Convex: no path leaves the body and comes back, else one call would be a cycle.
  std::vector<Node*> work;
  std::unordered_set<const Node*> seen;
  for (Value* v : b.outputs) {
    for (const Use& u : v->uses()) {
      Node* t = g.enclosingNode(u.user);
      if (index.count(t) == 0 && seen.insert(t).second) work.push_back(t);
    }
  }
  while (!work.empty()) {
    Node* n = work.back();
    work.pop_back();
    for (Value* v : n->outputs()) {
      if (v == nullptr) continue;
      for (const Use& u : v->uses()) {
        Node* t = g.enclosingNode(u.user);
        if (index.count(t) != 0) {
          b.why_not = "not convex: " + n->displayName() + " is computed from it and feeds it";
          return b;
        }
        if (seen.insert(t).second) work.push_back(t);
      }
    }
  }
  return b;
}

bool findCallPosition(const Graph& g, const ModuleBody& body, Node** before) {
  std::unordered_set<const Node*> inside(body.nodes.begin(), body.nodes.end());
  std::unordered_map<const Node*, size_t> pos;
  size_t k = 0;
  for (Node* n : g.nodes())
    pos[n] = k++;
  Node* last_producer = nullptr;
  size_t last = 0;
  for (const Value* v : body.inputs) {
    Node* p = v->producer() ? g.enclosingNode(v->producer()) : nullptr;
    if (p != nullptr && inside.count(p) == 0 && (last_producer == nullptr || pos[p] > last)) {
      last_producer = p;
      last = pos[p];
    }
  }
  for (const Value* v : body.outputs) {
    for (const Use& u : v->uses()) {
      Node* t = g.enclosingNode(u.user);
      if (inside.count(t) == 0 && last_producer != nullptr && pos[t] <= last) return false;
    }
  }
  *before = last_producer != nullptr ? last_producer->next() : g.firstNode();
  return true;
}

}  // namespace onnxfold

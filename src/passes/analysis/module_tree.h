// The module hierarchy of an exported model (PyTorch's torch.export.unflatten,
// recovered from the ONNX graph instead of the FX graph).
//
// Each node of the main graph is placed in a module by, in order of trust:
//  - metadata `pkg.torch.onnx.name_scopes` (cumulative module paths, e.g.
//    ['', 'enc', 'enc.layers.0', 'linear_3']) and `pkg.torch.onnx.class_hierarchy`
//    (the classes, aligned), written by torch.onnx.export(dynamo=True);
//  - metadata `namespace` (": Root/enc: Encoder/enc.layers.0: Layer/linear_3: aten...");
//  - the node name's scope, as the TorchScript exporter writes it
//    ("/enc/layers.0/self_attn/MatMul" is in module /enc/layers.0/self_attn).
// Nodes with no scope (the exporter's "Constant_67", unnamed nodes) join the
// innermost module that holds all their users, so a constant made for one layer
// stays in that layer.
//
// Scopes deeper than kMaxModuleDepth are cut there: their nodes join the module at that
// depth. Real models nest a few dozen levels; a name 200,000 levels deep ("/a/a/...")
// would otherwise store every prefix as a path (gigabytes) and recurse once per level.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace onnxfold {

constexpr int kMaxModuleDepth = 256;

struct Module {
  std::string path;  // "" for the root, else "/enc/layers.0"
  std::string name;  // last path component ("layers.0")
  std::string cls;   // class name when the metadata gives it
  Module* parent = nullptr;
  int depth = 0;  // root 0
  int calls = 1;  // times the model calls it ("name@1" scopes are a second call)
  std::vector<std::unique_ptr<Module>> children;
  std::vector<Node*> own_nodes;  // nodes directly in this module, in graph order

  // Filled by ModuleTree::summarize.
  size_t nodes = 0;  // all nodes below (subgraph nodes included)
  uint64_t param_bytes = 0;
  std::map<std::string, size_t> ops;
};

class ModuleTree {
 public:
  // The tree of `g`'s nodes (g is normally the main graph).
  explicit ModuleTree(const Graph& g);
  ModuleTree(const ModuleTree&) = delete;
  ModuleTree& operator=(const ModuleTree&) = delete;

  Module& root() { return *root_; }
  const Module& root() const { return *root_; }
  Module* moduleOf(const Node* n) const;
  // Every node below `m`, in graph order.
  std::vector<Node*> nodesBelow(const Module& m) const;
  // Every module, parents before children.
  std::vector<Module*> preorder() const;

  // JSON as moduleTree() returns it in the npm package (js/index.d.ts); `max_depth` < 0: the whole
  // tree.
  std::string toJson(int indent = 2, int max_depth = -1) const;
  // An indented listing: path, class, nodes, parameter bytes, top ops.
  std::string toText(int max_depth = -1) const;

 private:
  Module* child(Module* parent, const std::string& name);
  void summarize();

  std::unique_ptr<Module> root_;
  std::unordered_map<const Node*, Module*> owner_;
  std::unordered_map<const Node*, size_t> order_;
};

// Parses a Python list repr of strings ("['', 'a', \"b\"]"), as torch writes
// name_scopes; throws Error on malformed text.
std::vector<std::string> parsePythonStringList(const std::string& text);

}  // namespace onnxfold

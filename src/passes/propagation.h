// Propagation: the interpreter every analysis pass shares (PyTorch's fake-tensor
// propagation in pass_base.py, re-thought for ONNX).
//
// It walks a graph in order and runs each node's inference rule from the op
// registry on what is known of its inputs: types with symbolic shapes, constant
// contents (initializers, folded values) and partly known contents of small
// int64 tensors (shape arithmetic). What it learns about each output is kept
// as a Fact; the output's Value::type is refined (a declared type that
// contradicts the inferred one is kept and reported, never silently changed).
// Subgraphs are walked with the facts of their enclosing graphs visible.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "kernels/op_registry.h"

namespace onnxfold {

struct Fact {
  std::optional<Tensor> value;            // the full content, when known
  std::optional<SymbolicValue> symbolic;  // partly known content of a small int64 tensor
};

// The outcome of inferring one node.
struct NodeInference {
  const OpEntry* entry = nullptr;  // null: no rule for this op at this opset
  bool ok = false;                 // infer() ran without error
  std::string error;               // why not (no rule, the rule's message)
  bool invalid = false;            // the rule found the inputs invalid (not merely unsupported)
  int64_t opset = -1;
};

class Propagation {
 public:
  // refine_types: merge what inference learns into Value::type (the passes); false keeps
  // it in the Propagation and leaves the model as it is (validation).
  // Fresh symbols ("unk__N") start past every one the model's types already hold: types
  // refined by an earlier walk keep theirs, and two dims named alike are taken as equal.
  explicit Propagation(const Model& model, bool refine_types = true);

  // The type of `v` as known now: declared, or refined by inference.
  const Type& typeOf(const Value* v) const;

  // The opset of `domain` in force for nodes of `graph` (functions have their own imports).
  int64_t opsetFor(const Graph& graph, const std::string& domain) const;

  // Runs the inference rule of `node` on the current facts and records what it
  // learns about the outputs (types are merged into Value::type).
  NodeInference inferNode(Node& node);

  // Gives the formal inputs of a Loop or Scan body the types the node implies
  // when the body does not declare them. Call before walking the body.
  void seedSubgraphInputs(Node& node);

  // Facts known about `v` (constant initializers count as known values).
  const Fact* fact(const Value* v) const;
  const Tensor* knownValue(const Value* v) const;
  void setValue(const Value* v, Tensor t);
  void forget(const Value* v) { facts_.erase(v); }

  // Messages about declared types that contradict inference.
  std::vector<std::string> takeWarnings() { return std::exchange(warnings_, {}); }
  // The first declared kind or element type that contradicts inference ("" if none): what
  // ONNX Runtime refuses to load, where a differing dim is only a warning.
  const std::string& typeContradiction() const { return type_contradiction_; }

  // Function bodies: the opset imports in force while walking one.
  void setFunctionScope(const Graph* body, const std::vector<OpsetId>* imports) {
    function_body_ = body;
    function_imports_ = imports;
  }

 private:
  void mergeType(Value* v, const Type& inferred);
  Type& mutableType(Value* v);

  const Model& model_;
  bool refine_types_ = true;
  std::unordered_map<const Value*, Type> types_;  // refine_types_ false: what was learned
  std::string type_contradiction_;
  std::unordered_map<const Value*, Fact> facts_;
  std::vector<std::string> warnings_;
  int symbol_counter_ = 0;
  const Graph* function_body_ = nullptr;
  const std::vector<OpsetId>* function_imports_ = nullptr;
};

}  // namespace onnxfold

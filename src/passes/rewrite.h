// Declarative rewrite patterns and the greedy driver that applies them
// (after MLIR's RewritePattern and GreedyPatternRewriteDriver).
//
// A pattern names its root op and a benefit, matches without mutating
// anything (saying why when it does not), and rewrites only through the
// Rewriter. Most patterns are chains: ops[0] -> ops[1] -> ... -> root, each
// link the sole use of the one before, with constraints over the chain and a
// builder for the replacement (see ChainPattern).
//
// The driver keeps a worklist: a dead node is erased; otherwise the patterns
// rooted at its op are tried by benefit. What a rewrite creates, and the users
// of what it replaces, go back on the worklist. It stops when the worklist is
// empty (converged) or after a cap on rewrites.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "passes/pass.h"

namespace onnxfold {

class Rewriter {
 public:
  Rewriter(Model& model, Graph& graph) : model_(model), graph_(graph) {}

  Model& model() { return model_; }
  Graph& graph() { return graph_; }
  int64_t opset(const std::string& domain = "") const { return model_.opsetVersion(domain); }

  // A new node inserted before `before` (whose position keeps the order valid).
  Node* create(const std::string& op_type, const std::vector<Value*>& inputs, size_t num_outputs,
               Node* before);
  // A new initializer holding `t` (named after `base`, made unique).
  Value* constant(Tensor t, const std::string& base);
  // Every use of `from` becomes a use of `to`; a graph output keeps its name.
  void replaceValue(Value* from, Value* to);
  // Replaces each output of `n` by the matching value, then erases `n`.
  void replaceNode(Node* n, const std::vector<Value*>& values);
  void erase(Node* n);
  // The node was changed in place (attributes, inputs).
  void modified(Node* n);

  // For the driver: nodes to revisit.
  std::vector<Node*> takeTouched() { return std::exchange(touched_, {}); }
  const std::unordered_set<Node*>& erased() const { return erased_; }

 private:
  void touchUsers(Value* v);

  Model& model_;
  Graph& graph_;
  std::vector<Node*> touched_;
  std::unordered_set<Node*> erased_;
};

class RewritePattern {
 public:
  RewritePattern(std::string name, std::string root_op, int benefit)
      : name_(std::move(name)), root_(std::move(root_op)), benefit_(benefit) {}
  virtual ~RewritePattern() = default;

  const std::string& name() const { return name_; }
  const std::string& rootOp() const { return root_; }
  int benefit() const { return benefit_; }

  // Checks whether the pattern applies at `root`; must not mutate. On failure,
  // `why` may say what did not hold.
  virtual bool match(const Model& model, Node& root, std::string& why) const = 0;
  // Called right after a successful match.
  virtual void rewrite(Node& root, Rewriter& rw) const = 0;

 private:
  std::string name_;
  std::string root_;
  int benefit_;
};

// The nodes of a matched chain, first producer to root.
using Chain = std::vector<Node*>;

// A chain of default-domain ops, each feeding the next through its first input
// (or any input when `any_input` is set), constrained and rebuilt by functions.
struct ChainSpec {
  std::string name;
  std::vector<std::string> ops;  // producer first, root last
  int benefit = 1;
  bool any_input = false;  // the link may enter the next node at any input
  // Each returns "" when it holds, else why not.
  std::vector<std::function<std::string(const Model&, const Chain&)>> constraints;
  std::function<void(const Chain&, Rewriter&)> build;
};

std::unique_ptr<RewritePattern> makeChainPattern(ChainSpec spec);

struct DriverResult {
  bool changed = false;
  bool converged = true;
  size_t rewrites = 0;
};

// Applies `patterns` to `graph` (not its subgraphs) until nothing matches.
DriverResult applyPatternsGreedily(Model& model, Graph& graph,
                                   const std::vector<std::unique_ptr<RewritePattern>>& patterns,
                                   PassContext& ctx);

// Helpers for constraints.
bool isStaticTensor(const Value* v);                // tensor type with a fully known shape
std::vector<int64_t> staticDimsOf(const Value* v);  // precondition: isStaticTensor(v)
bool hasSingleUse(const Value* v);                  // one use, not a graph output

}  // namespace onnxfold

// Declarative rewrite patterns and the greedy driver that applies them
// (after MLIR's RewritePattern and GreedyPatternRewriteDriver).
//
// A pattern names its root op and a benefit, and either changes nothing or
// rewrites only through the Rewriter, whose verbs tell the driver what to revisit. Most patterns
// are chains: ops[0] -> ops[1] -> ... -> root, each link the sole use of the one before, with
// constraints over the chain and a builder for the replacement (see ChainPattern).
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
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "passes/pass.h"

namespace onnxfold {

// The attributes of a node to create (Rewriter::create): Attribute is move-only, so a braced
// list cannot hold them.
template <class... A>
std::vector<Attribute> attributes(A&&... a) {
  std::vector<Attribute> v;
  v.reserve(sizeof...(a));
  (v.push_back(std::forward<A>(a)), ...);
  return v;
}

class Rewriter {
 public:
  // notify: record what to revisit, for a driver; a pass that walks the graph once itself
  // passes false and pays nothing for it. `function`: the local function whose body holds
  // `graph` (Model::functionOf; its imports set the opsets). `ctx`: where undecided() explains.
  Rewriter(Model& model, Graph& graph, bool notify = true, const Function* function = nullptr,
           PassContext* ctx = nullptr)
      : model_(model), graph_(graph), notify_(notify), function_(function), ctx_(ctx) {}

  Model& model() { return model_; }
  const Model& model() const { return model_; }
  Graph& graph() { return graph_; }
  // The version of `domain` in force for the graph being rewritten: what a pattern's
  // exactness conditions depend on (a local function may import another opset).
  int64_t opset(std::string_view domain = "") const;
  // A match failure worth telling the user (MLIR's notifyMatchFailure): a rewrite that looks
  // possible but is not exact here, or whose exactness cannot be decided (a mode given by a
  // runtime input). The report's not_folded (--explain) lists it. Returns false, for
  // `return rw.notifyMatchFailure(...)` in a constraint.
  bool notifyMatchFailure(const Node& n, std::string why) const;

  // The mutation verbs: each tells the driver what to revisit. No pass changes a Graph
  // except through them: the IR's structural mutators take a GraphEdit key that the Rewriter
  // makes and passes cannot, and tests/lint/graph_mutators.cmake checks the setters that take
  // none (Node::setAttr/removeAttr, Value::setName).
  // A new node inserted before `before` (whose position keeps the order valid; null appends
  // it), finished: `name` (as given, "" for none), `attributes`, `domain` ("" the default).
  // Its outputs are named `<op_type>_out`, made unique.
  Node* create(const std::string& op_type, const std::vector<Value*>& inputs, size_t num_outputs,
               Node* before, std::string name = {}, std::vector<Attribute> attributes = {},
               std::string domain = {});
  // A new initializer holding `t` (named after `base`, made unique).
  Value* constant(Tensor t, const std::string& base);
  // Every use of `v` becomes a use of a new initializer holding `t`, which takes v's name
  // (a folded value keeps its name; v is renamed). Returns the initializer.
  Value* replaceWithConstant(Value* v, Tensor t);
  // An unused initializer goes (DCE).
  void removeConstant(Value* v);
  // A copy of `src` (from any graph) inserted before `before`, its inputs mapped by `map`.
  Node* clone(const Node& src, const std::function<Value*(Value*)>& map, Node* before);
  // Every use of `from` becomes a use of `to`; a graph output keeps its name
  // (Graph::replaceValue).
  void replaceValue(Value* from, Value* to);
  // Replaces each output of `n` by the matching value, then erases `n`.
  void replaceNode(Node* n, const std::vector<Value*>& values);
  void erase(Node* n);
  // In-place changes of an existing node.
  void setInput(Node* n, size_t i, Value* v);
  void addInput(Node* n, Value* v);
  void setAttr(Node* n, Attribute a);
  void removeAttr(Node* n, std::string_view name);
  void removeInput(Node* n, size_t i);
  // Renames `v`; `name` must be free in the model (Graph::uniqueName gives one).
  void rename(Value* v, std::string name);

  // The graph's interface: its inputs and outputs (names the model's users see).
  // A new graph input (a function body's formal input); `name` must be free.
  Value* addGraphInput(std::string name, Type type);
  // `v` is no longer a graph input: an initializer stays as a constant (freezing it), any
  // other input must be unused and goes.
  void removeGraphInput(Value* v);
  // A new initializer holding `t` that is also a graph input (overridable), named t.name
  // (made unique when the graph has that name already).
  Value* constantInput(Tensor t);
  void addGraphOutput(Value* v);
  // Graph output i becomes `v` (v keeps its own name).
  void setGraphOutput(size_t i, Value* v);
  // The graph output `old_out` becomes `v` under its name (Graph::replaceOutput); the uses of
  // old_out stay. Precondition: graph().canTakeOutputName(v).
  void replaceGraphOutput(Value* old_out, Value* v);

  // For the driver: nodes to revisit.
  std::vector<Node*> takeTouched() { return std::exchange(touched_, {}); }
  const std::unordered_set<Node*>& erased() const { return erased_; }

 private:
  void touchUsers(Value* v);

  void touch(Node* n) {
    if (notify_ && n != nullptr) touched_.push_back(n);
  }

  Model& model_;
  Graph& graph_;
  bool notify_ = true;
  const Function* function_ = nullptr;
  PassContext* ctx_ = nullptr;
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

  // Applies the pattern at `root` (MLIR's matchAndRewrite): either returns false having
  // changed nothing, or rewrites through `rw` and returns true. Everything the rewrite needs
  // is found before the first change, and handed on in locals, not in members.
  virtual bool matchAndRewrite(Node& root, Rewriter& rw) const = 0;

 private:
  std::string name_;
  std::string root_;
  int benefit_;
};

using PatternList = std::vector<std::unique_ptr<RewritePattern>>;

// The nodes of a matched chain, first producer to root.
using Chain = std::vector<Node*>;

// A chain of default-domain ops, each feeding the next through its first input
// (or any input when `any_input` is set), constrained and rebuilt by functions.
struct ChainSpec {
  std::string name;
  std::vector<std::string> ops;  // producer first, root last
  int benefit = 1;
  bool any_input = false;  // the link may enter the next node at any input
  // Each says whether the chain may be rewritten (named for what it checks). Opset-dependent
  // rules read rw.opset(); a rule that cannot be decided calls rw.undecided().
  std::vector<std::function<bool(const Rewriter&, const Chain&)>> constraints;
  std::function<void(const Chain&, Rewriter&)> build;
};

std::unique_ptr<RewritePattern> makeChainPattern(ChainSpec spec);

// A pass made of pattern families, applied by the driver to every graph of the model (the
// main graph, subgraphs, local functions): the one way pattern passes are built.
struct PatternPassSpec {
  std::string name;
  std::string description;
  // Pattern families by phase: each graph gets every phase in turn, each to a fixpoint (a
  // later phase sees what the earlier ones left).
  std::vector<std::vector<void (*)(PatternList&)>> phases;
  // After a run that changed the model (e.g. a note for the report).
  std::function<void(const Model&, PassContext&)> after_change;
};

std::unique_ptr<Pass> makePatternPass(PatternPassSpec spec);

struct DriverResult {
  bool changed = false;
  bool converged = true;
  size_t rewrites = 0;
};

// Applies `patterns` to `graph` (not its subgraphs) until nothing matches.
DriverResult applyPatternsGreedily(Model& model, Graph& graph, const PatternList& patterns,
                                   PassContext& ctx);

// Helpers for constraints.
bool isStaticTensor(const Value* v);                // tensor type with a fully known shape
std::vector<int64_t> staticDimsOf(const Value* v);  // precondition: isStaticTensor(v)
bool hasSingleUse(const Value* v);                  // one use, not a graph output

}  // namespace onnxfold

// The onnxfold graph IR: Model > Graph > Node / Value, with use-def lists.
//
// Values are SSA: one producer (a node output, a graph input or an
// initializer) and a list of uses. Every mutation goes through this API, which
// keeps the use lists, the name scope and the node order consistent; the
// verifier (ir/verifier.h) checks that nothing broke them. The structural mutators
// take a GraphEdit key: passes change graphs through the Rewriter (passes/rewrite.h),
// which makes one; code that builds graphs whole (the reader, tests) takes one from
// GraphBuilder (ir/graph_builder.h).
//
// Subgraphs (If/Loop/Scan bodies) are Graphs owned by a Node's attribute. A node
// inside a subgraph may use a Value of an enclosing graph directly (an implicit
// capture); the use is recorded on the outer Value like any other use.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/tensor.h"
#include "ir/type.h"

namespace onnxfold {

class Graph;
class Node;
class Value;
class Model;
class Rewriter;
struct GraphBuilder;

// The key to the IR's structural mutators (a passkey: Graph's, and those of Node and Value
// that change use lists or outputs): only the IR itself, the Rewriter (passes/rewrite.h: every
// change a pass makes goes through it) and GraphBuilder (ir/graph_builder.h: code that builds
// graphs whole, such as the reader and tests) make one.
class GraphEdit {
  GraphEdit() {}  // user-provided, so `GraphEdit{}` is no aggregate initialization around it
  friend class Graph;
  friend class Node;
  friend class Value;
  friend class Model;
  friend class Rewriter;
  friend struct GraphBuilder;
};

// One use of a Value: input slot `index` of node `user`.
struct Use {
  Node* user;
  size_t index;
  bool operator==(const Use& o) const { return user == o.user && index == o.index; }
};

class Value {
 public:
  Value(const Value&) = delete;
  Value& operator=(const Value&) = delete;

  const std::string& name() const { return name_; }
  // Renames the value; the new name must not be in use in the model.
  void setName(std::string name);

  Graph* graph() const { return graph_; }
  Node* producer() const { return producer_; }  // null for graph inputs and initializers
  size_t producerIndex() const { return producer_index_; }

  // Live uses, in the order they were made. Removing a use is O(1) (the slot is marked
  // and the list compacted once half of it is dead), so wide fan-outs stay linear.
  const std::vector<Use>& uses() const {
    if (dead_uses_ != 0) compactUses();
    return uses_;
  }
  size_t numUses() const { return uses_.size() - dead_uses_; }
  bool hasUses() const { return numUses() != 0; }
  bool hasOneUse() const { return numUses() == 1; }
  // Distinct nodes using this value, in first-use order.
  std::vector<Node*> users() const;

  bool isGraphInput() const { return is_input_; }
  bool isGraphOutput() const { return output_refs_ > 0; }
  bool isInitializer() const { return initializer_ != nullptr; }
  bool isSparseInitializer() const { return sparse_ != nullptr; }
  // A constant the folder may use: an initializer that is not an overridable input.
  bool isConstant() const { return initializer_ != nullptr && !is_input_; }
  const Tensor* initializer() const { return initializer_.get(); }
  Tensor* initializer() { return initializer_.get(); }
  const SparseTensor* sparseInitializer() const { return sparse_.get(); }

  // Every use of this value now uses `other`. Graph outputs are not touched:
  // an output's name is the model's interface (see Graph::replaceOutput).
  void replaceAllUsesWith(GraphEdit, Value* other);

  Type type;
  // ValueInfoProto fields. `in_value_info`: written to GraphProto.value_info.
  bool in_value_info = false;
  std::string doc_string;
  StringPairs metadata_props;
  std::string value_info_unknown_fields;

 private:
  friend class Graph;
  friend class Node;
  Value(Graph* g, std::string name) : graph_(g), name_(std::move(name)) {}
  void addUse(Node* user, size_t index);
  void removeUse(Node* user, size_t index);
  void compactUses() const;

  Graph* graph_;
  std::string name_;
  Node* producer_ = nullptr;
  size_t producer_index_ = 0;
  // Removed uses stay as {nullptr, 0} until compactUses(); Node::use_pos_ finds a use.
  mutable std::vector<Use> uses_;
  mutable size_t dead_uses_ = 0;
  bool is_input_ = false;
  int output_refs_ = 0;
  std::unique_ptr<Tensor> initializer_;
  std::unique_ptr<SparseTensor> sparse_;
};

enum class AttrType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kInt = 2,
  kString = 3,
  kTensor = 4,
  kGraph = 5,
  kFloats = 6,
  kInts = 7,
  kStrings = 8,
  kTensors = 9,
  kGraphs = 10,
  kSparseTensor = 11,
  kSparseTensors = 12,
  kTypeProto = 13,
  kTypeProtos = 14,
};
std::string_view attrTypeName(AttrType t);

struct Attribute {
  std::string name;
  AttrType type = AttrType::kUndefined;
  std::string ref_attr_name;  // inside a function body: refers to the caller's attribute
  std::string doc_string;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::unique_ptr<Graph> g;
  SparseTensor sparse_tensor;
  Type tp;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::unique_ptr<Graph>> graphs;
  std::vector<SparseTensor> sparse_tensors;
  std::vector<Type> type_protos;
  std::string unknown_fields;

  static Attribute makeInt(std::string name, int64_t v);
  static Attribute makeFloat(std::string name, float v);
  static Attribute makeString(std::string name, std::string v);
  static Attribute makeInts(std::string name, std::vector<int64_t> v);
  static Attribute makeFloats(std::string name, std::vector<float> v);
  static Attribute makeTensor(std::string name, Tensor v);

  // A copy of everything but graph values (g, graphs), which belong to one node:
  // callers that copy those clone the graphs themselves.
  Attribute copyWithoutGraphs() const;
};

class Node {
 public:
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  ~Node();

  std::string op_type;
  std::string domain;  // "" is the default ONNX domain
  std::string name;
  std::string overload;
  std::string doc_string;
  StringPairs metadata_props;
  std::vector<std::string> device_configurations;  // encoded NodeDeviceConfigurationProto
  std::string unknown_fields;
  std::vector<Attribute> attributes;

  Graph* graph() const { return graph_; }
  Node* prev() const { return prev_; }
  Node* next() const { return next_; }

  // Inputs: null entries are omitted optional inputs ("" in the proto).
  const std::vector<Value*>& inputs() const { return inputs_; }
  size_t numInputs() const { return inputs_.size(); }
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  // Input i is in its value's use list where this node says (for the verifier).
  bool inputRecorded(size_t i) const;
  void setInput(GraphEdit, size_t i, Value* v);
  void addInput(GraphEdit, Value* v);
  void removeInput(GraphEdit, size_t i);
  void removeAllInputs(GraphEdit);

  // Outputs: null entries are omitted optional outputs. The node owns them.
  const std::vector<Value*>& outputs() const { return output_ptrs_; }
  size_t numOutputs() const { return output_ptrs_.size(); }
  Value* output(size_t i) const { return i < output_ptrs_.size() ? output_ptrs_[i] : nullptr; }
  // Appends an output named `name` (made unique in the model if taken; "" = omitted).
  Value* addOutput(GraphEdit, std::string name);
  // Appends an output with exactly this name; the caller has checked it is free
  // in the visible scope (sibling subgraphs may reuse names). Used by the reader.
  Value* addOutputExact(GraphEdit, std::string name);

  bool isOp(std::string_view op) const { return op_type == op && isDefaultDomain(); }
  bool isDefaultDomain() const { return domain.empty() || domain == "ai.onnx"; }

  const Attribute* attr(std::string_view name) const;
  Attribute* attr(std::string_view name);
  int64_t attrInt(std::string_view name, int64_t dflt) const;
  float attrFloat(std::string_view name, float dflt) const;
  std::string attrString(std::string_view name, std::string dflt) const;
  std::vector<int64_t> attrInts(std::string_view name, std::vector<int64_t> dflt = {}) const;
  void setAttr(Attribute a);  // replaces an attribute of the same name
  bool removeAttr(std::string_view name);

  bool hasSubgraphs() const;
  // Calls f on every subgraph held by this node's attributes.
  void forEachSubgraph(const std::function<void(Graph&)>& f) const;

  // For messages: "'name'", else "op_type -> 'first output'", else "op_type #position".
  std::string displayName() const;

 private:
  friend class Graph;
  friend class Value;  // keeps use_pos_ in step with its use lists
  explicit Node(Graph* g) : graph_(g) {}

  Graph* graph_;
  Node* prev_ = nullptr;
  Node* next_ = nullptr;
  bool linked_ = false;
  std::vector<Value*> inputs_;
  std::vector<size_t> use_pos_;  // where input i's use sits in inputs_[i]->uses_
  std::vector<std::unique_ptr<Value>> outputs_;
  std::vector<Value*> output_ptrs_;
};

// Iterates nodes in order; the current node may be erased while iterating.
class NodeRange {
 public:
  class iterator {
   public:
    iterator(Node* n) : cur_(n), next_(n ? n->next() : nullptr) {}
    Node* operator*() const { return cur_; }
    iterator& operator++() {
      cur_ = next_;
      next_ = cur_ ? cur_->next() : nullptr;
      return *this;
    }
    bool operator!=(const iterator& o) const { return cur_ != o.cur_; }

   private:
    Node* cur_;
    Node* next_;
  };
  explicit NodeRange(Node* first) : first_(first) {}
  iterator begin() const { return iterator(first_); }
  iterator end() const { return iterator(nullptr); }

 private:
  Node* first_;
};

// A GraphProto.value_info entry naming no value of its graph; kept as read.
struct OrphanValueInfo {
  std::string name;
  Type type;
  std::string doc_string;
  StringPairs metadata_props;
  std::string unknown_fields;
};

class Graph {
 public:
  using Edit = GraphEdit;  // the key to the mutators below (GraphEdit, above)

  // `parent`: the enclosing graph of a subgraph; `owner`: the node holding it.
  explicit Graph(Graph* parent = nullptr, Node* owner = nullptr);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  std::string name;
  std::string doc_string;
  StringPairs metadata_props;
  std::vector<std::string> quantization_annotation;  // encoded TensorAnnotation messages
  std::vector<OrphanValueInfo> orphan_value_info;
  std::string unknown_fields;

  Graph* parent() const { return parent_; }
  Node* ownerNode() const { return owner_; }
  Graph& root();

  // --- inputs, outputs, initializers
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  const std::vector<Value*>& initializers() const { return initializers_; }
  const std::vector<Value*>& sparseInitializers() const { return sparse_initializers_; }

  // Adds a graph input. The name must be free in this scope.
  Value* addInput(Edit, std::string name, Type type);
  // Marks an existing initializer as also being an (overridable) graph input.
  void addInputForInitializer(Edit, Value* v);
  // Removes `v` from the inputs; destroys it unless it is an initializer.
  // Precondition: no uses unless it stays as an initializer.
  void removeInput(Edit, Value* v);

  // Adds an initializer named t.name (made unique if empty or taken).
  Value* addInitializer(Edit, Tensor t);
  Value* addSparseInitializer(Edit, std::string name, SparseTensor t);
  // Drops the initializer data. The value is destroyed unless it is a graph input.
  // Precondition: no uses unless it stays as an input.
  void removeInitializer(Edit, Value* v);

  void addOutput(Edit, Value* v);
  void setOutput(Edit, size_t i, Value* v);
  void removeOutput(Edit, size_t i);
  // Makes the graph output that names `old_out` refer to `v` under the same name:
  // `v` is renamed to the output's name (the old value gets a fresh name).
  // Precondition: canTakeOutputName(v).
  void replaceOutput(Edit, Value* old_out, Value* v);
  // Whether `v` may take a graph output's name in place of another value: a node output of
  // this graph, or an initializer of it nothing uses yet (just made), that is neither a graph
  // input nor already an output (their names are the model's interface too).
  bool canTakeOutputName(const Value* v) const;
  // Every use of `from` becomes a use of `to`, and a graph output `from` keeps its name (the
  // one rule for it): `to` takes the name when canTakeOutputName(to), else an Identity of `to`,
  // inserted before from's producer (appended when it has none), carries it and is returned.
  Node* replaceValue(Edit, Value* from, Value* to);

  // --- nodes
  NodeRange nodes() const { return NodeRange(first_); }
  Node* firstNode() const { return first_; }
  Node* lastNode() const { return last_; }
  size_t numNodes() const { return num_nodes_; }
  // Total node count including nodes of subgraphs.
  size_t numNodesRecursive() const;
  // The node of this graph holding `n`: n itself, or the If/Loop/Scan whose subgraph (at any
  // depth) has it; null when n is not inside this graph.
  Node* enclosingNode(Node* n) const;

  // Creates a node with `num_outputs` outputs named `<base>_out<k>`; not yet in the list.
  Node* createNode(Edit, std::string op_type, const std::vector<Value*>& inputs, size_t num_outputs,
                   std::string domain = "");
  void appendNode(Edit, Node* n);
  void insertBefore(Edit, Node* pos, Node* n);
  void insertAfter(Edit, Node* pos, Node* n);
  // Convenience: create + append.
  Node* addNode(Edit, std::string op_type, const std::vector<Value*>& inputs,
                size_t num_outputs = 1, std::string domain = "");
  // Deletes a node. Precondition: its outputs have no uses and are not graph outputs.
  void eraseNode(Edit, Node* n);
  // Deep copy of `src` (which may live in another graph) inserted before
  // `before` (at the end if null); `map` gives the value to use for each of
  // src's inputs and captures. Output names are made unique.
  Node* cloneNode(Edit, const Node& src, const std::function<Value*(Value*)>& map,
                  Node* before = nullptr);
  // Copies all of `src` into the empty graph `dst`; values of src's enclosing
  // graphs go through `outer`. `exact` keeps every name (dst is in a fresh model).
  static void cloneGraphInto(Edit, const Graph& src, Graph& dst,
                             const std::function<Value*(Value*)>& outer, bool exact);

  // --- names
  // Looks up a value by name in this graph, then in the enclosing graphs.
  Value* lookup(std::string_view name) const;
  // Room for about `n` more values in the graph's tables (bulk builders: the reader, clone),
  // so a million-node graph is not rehashed twenty times.
  void reserveValues(size_t n);
  // Values defined directly in this graph (not in subgraphs or parents).
  Value* lookupLocal(std::string_view name) const;
  // A name not used anywhere in the model: `base`, else `base__1`, `base__2`, ...
  std::string uniqueName(const std::string& base);
  // Records a name as taken in the model (used by the reader for node names).
  void reserveName(const std::string& name);

 private:
  friend class Value;
  friend class Node;
  Node* cloneNodeImpl(const Node& src, const std::function<Value*(Value*)>& map, bool exact,
                      Node* before = nullptr);
  Value* newValue(std::string name);
  void defineName(Value* v);
  void undefineName(Value* v);
  void destroyValue(Value* v);
  void link(Node* n);
  void unlink(Node* n);

  Graph* parent_;
  Node* owner_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::vector<Value*> initializers_;
  std::vector<Value*> sparse_initializers_;
  std::unordered_map<Value*, std::unique_ptr<Value>> owned_values_;
  std::unordered_map<std::string_view, Value*> scope_;
  // The names taken in the whole model (shared by its graphs), and for each base given to
  // uniqueName the suffix after the last one it gave: 20,000 inlined calls of one body
  // then find their names in constant time, not by trying __1, __2, ... each time.
  struct Names {
    std::unordered_set<std::string> taken;
    std::unordered_map<std::string, size_t> last_suffix;
  };
  std::shared_ptr<Names> names_;
  Node* first_ = nullptr;
  Node* last_ = nullptr;
  size_t num_nodes_ = 0;
};

struct OpsetId {
  std::string domain;
  int64_t version = 0;
  std::string unknown_fields;
};

struct TrainingInfo {
  std::unique_ptr<Graph> initialization;
  std::unique_ptr<Graph> algorithm;
  StringPairs initialization_binding;
  StringPairs update_binding;
  std::string unknown_fields;
};

// A model-local function (FunctionProto). Its body's inputs and outputs are the
// function's formal inputs and outputs.
struct Function {
  std::string name;
  std::string domain;
  std::string overload;
  std::vector<std::string> attribute_names;   // attributes without defaults
  std::vector<Attribute> attribute_defaults;  // attribute_proto
  std::unique_ptr<Graph> body;
  std::string doc_string;
  std::vector<OpsetId> opset_import;
  StringPairs metadata_props;
  std::string unknown_fields;
};

class Model {
 public:
  Model();
  int64_t ir_version = 0;
  std::vector<OpsetId> opset_import;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::unique_ptr<Graph> graph;
  StringPairs metadata_props;
  std::vector<TrainingInfo> training_info;
  std::vector<Function> functions;
  std::vector<std::string> configuration;  // encoded DeviceConfigurationProto
  std::string unknown_fields;

  // A deep copy; tensor bytes are shared, not copied.
  std::unique_ptr<Model> clone() const;

  // The imported version of `domain` ("" and "ai.onnx" are the same), or -1.
  int64_t opsetVersion(std::string_view domain) const;
  // The local function whose body holds `g` (directly or as a subgraph), or null.
  const Function* functionOf(const Graph& g) const;
  // The version of `domain` in force for nodes of `g`: a local function's body has its own
  // imports (the model's apply to a domain the function does not import).
  int64_t opsetVersionIn(const Graph& g, std::string_view domain) const;
};

inline bool isDefaultDomain(std::string_view d) {
  return d.empty() || d == "ai.onnx";
}

// What a call of `fn` binds to the attribute reference `ref` in its body (ref.ref_attr_name):
// the call's attribute of that name, else fn's default; null when neither gives it.
const Attribute* boundAttribute(const Attribute& ref, const Node& call, const Function& fn);

// The version of `domain` in a list of imports ("" and "ai.onnx" are the same), or -1.
int64_t importedVersion(const std::vector<OpsetId>& imports, std::string_view domain);

}  // namespace onnxfold

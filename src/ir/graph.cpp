#include "ir/graph.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <stdexcept>
#include <unordered_set>

namespace onnxfold {

// ----------------------------------------------------------------- Value

void Value::setName(std::string name) {
  if (name == name_) return;
  graph_->undefineName(this);
  name_ = std::move(name);
  graph_->defineName(this);
  if (initializer_) initializer_->name = name_;  // a copy of the graph names it by its tensor
}

std::vector<Node*> Value::users() const {
  std::vector<Node*> out;
  std::unordered_set<const Node*> seen;
  for (const Use& u : uses()) {
    if (seen.insert(u.user).second) out.push_back(u.user);
  }
  return out;
}

void Value::addUse(Node* user, size_t index) {
  user->use_pos_[index] = uses_.size();
  uses_.push_back(Use{user, index});
}

void Value::removeUse(Node* user, size_t index) {
  const size_t pos = user->use_pos_[index];
  assert(pos < uses_.size() && uses_[pos] == (Use{user, index}) && "use list out of sync");
  uses_[pos] = Use{nullptr, 0};
  ++dead_uses_;
  // Compacting once half the list is dead keeps removal amortized O(1).
  if (dead_uses_ * 2 > uses_.size()) compactUses();
}

void Value::compactUses() const {
  size_t j = 0;
  for (const Use& u : uses_) {
    if (u.user == nullptr) continue;
    u.user->use_pos_[u.index] = j;
    uses_[j++] = u;
  }
  uses_.resize(j);
  dead_uses_ = 0;
}

void Value::replaceAllUsesWith(GraphEdit, Value* other) {
  assert(other != this);
  const std::vector<Use> uses = this->uses();
  for (const Use& u : uses)
    u.user->setInput(GraphEdit(), u.index, other);
}

// ----------------------------------------------------------------- Attribute

std::string_view attrTypeName(AttrType t) {
  switch (t) {
    case AttrType::kFloat:
      return "FLOAT";
    case AttrType::kInt:
      return "INT";
    case AttrType::kString:
      return "STRING";
    case AttrType::kTensor:
      return "TENSOR";
    case AttrType::kGraph:
      return "GRAPH";
    case AttrType::kFloats:
      return "FLOATS";
    case AttrType::kInts:
      return "INTS";
    case AttrType::kStrings:
      return "STRINGS";
    case AttrType::kTensors:
      return "TENSORS";
    case AttrType::kGraphs:
      return "GRAPHS";
    case AttrType::kSparseTensor:
      return "SPARSE_TENSOR";
    case AttrType::kSparseTensors:
      return "SPARSE_TENSORS";
    case AttrType::kTypeProto:
      return "TYPE_PROTO";
    case AttrType::kTypeProtos:
      return "TYPE_PROTOS";
    default:
      return "UNDEFINED";
  }
}

namespace {

// The make* factories: attribute `name` of `type` with one field set.
template <class V>
Attribute makeAttribute(std::string name, AttrType type, V Attribute::*field, V v) {
  Attribute a;
  a.name = std::move(name);
  a.type = type;
  a.*field = std::move(v);
  return a;
}

}  // namespace

Attribute Attribute::makeInt(std::string name, int64_t v) {
  return makeAttribute(std::move(name), AttrType::kInt, &Attribute::i, v);
}
Attribute Attribute::makeFloat(std::string name, float v) {
  return makeAttribute(std::move(name), AttrType::kFloat, &Attribute::f, v);
}
Attribute Attribute::makeString(std::string name, std::string v) {
  return makeAttribute(std::move(name), AttrType::kString, &Attribute::s, std::move(v));
}
Attribute Attribute::makeInts(std::string name, std::vector<int64_t> v) {
  return makeAttribute(std::move(name), AttrType::kInts, &Attribute::ints, std::move(v));
}
Attribute Attribute::makeFloats(std::string name, std::vector<float> v) {
  return makeAttribute(std::move(name), AttrType::kFloats, &Attribute::floats, std::move(v));
}
Attribute Attribute::makeTensor(std::string name, Tensor v) {
  return makeAttribute(std::move(name), AttrType::kTensor, &Attribute::t, std::move(v));
}

// ----------------------------------------------------------------- Node

Node::~Node() {
  // Subgraphs go first: their nodes may hold uses of values of enclosing graphs.
  attributes.clear();
  removeAllInputs(GraphEdit());
}

void Node::setInput(GraphEdit, size_t i, Value* v) {
  assert(i < inputs_.size());
  if (inputs_[i] == v) return;
  if (inputs_[i] != nullptr) inputs_[i]->removeUse(this, i);
  inputs_[i] = v;
  if (v != nullptr) v->addUse(this, i);
}

bool Node::inputRecorded(size_t i) const {
  const std::vector<Use>& uses = inputs_[i]->uses();  // compacts first: positions are final
  return use_pos_[i] < uses.size() && uses[use_pos_[i]] == (Use{const_cast<Node*>(this), i});
}

void Node::addInput(GraphEdit, Value* v) {
  inputs_.push_back(v);
  use_pos_.push_back(0);
  if (v != nullptr) v->addUse(this, inputs_.size() - 1);
}

void Node::removeInput(GraphEdit, size_t i) {
  assert(i < inputs_.size());
  if (inputs_[i] != nullptr) inputs_[i]->removeUse(this, i);
  // Later inputs shift down one slot: renumber their uses.
  for (size_t k = i + 1; k < inputs_.size(); ++k) {
    if (inputs_[k] != nullptr) inputs_[k]->uses_[use_pos_[k]].index = k - 1;
  }
  inputs_.erase(inputs_.begin() + static_cast<std::ptrdiff_t>(i));
  use_pos_.erase(use_pos_.begin() + static_cast<std::ptrdiff_t>(i));
}

void Node::removeAllInputs(GraphEdit) {
  for (size_t i = inputs_.size(); i-- > 0;) {
    if (inputs_[i] != nullptr) inputs_[i]->removeUse(this, i);
  }
  inputs_.clear();
  use_pos_.clear();
}

Value* Node::addOutput(GraphEdit, std::string name) {
  return addOutputExact(GraphEdit(), name.empty() ? name : graph_->uniqueName(name));
}

Value* Node::addOutputExact(GraphEdit, std::string name) {
  if (name.empty()) {
    outputs_.push_back(nullptr);
    output_ptrs_.push_back(nullptr);
    return nullptr;
  }
  std::unique_ptr<Value> v(new Value(graph_, std::move(name)));
  v->producer_ = this;
  v->producer_index_ = outputs_.size();
  Value* raw = v.get();
  outputs_.push_back(std::move(v));
  output_ptrs_.push_back(raw);
  if (linked_) graph_->defineName(raw);
  return raw;
}

const Attribute* Node::attr(std::string_view name) const {
  for (const Attribute& a : attributes) {
    if (a.name == name) return &a;
  }
  return nullptr;
}
Attribute* Node::attr(std::string_view name) {
  for (Attribute& a : attributes) {
    if (a.name == name) return &a;
  }
  return nullptr;
}
int64_t Node::attrInt(std::string_view name, int64_t dflt) const {
  const Attribute* a = attr(name);
  return a && a->type == AttrType::kInt ? a->i : dflt;
}
float Node::attrFloat(std::string_view name, float dflt) const {
  const Attribute* a = attr(name);
  return a && a->type == AttrType::kFloat ? a->f : dflt;
}
std::string Node::attrString(std::string_view name, std::string dflt) const {
  const Attribute* a = attr(name);
  return a && a->type == AttrType::kString ? a->s : dflt;
}
std::vector<int64_t> Node::attrInts(std::string_view name, std::vector<int64_t> dflt) const {
  const Attribute* a = attr(name);
  return a && a->type == AttrType::kInts ? a->ints : dflt;
}
void Node::setAttr(Attribute a) {
  for (Attribute& old : attributes) {
    if (old.name == a.name) {
      old = std::move(a);
      return;
    }
  }
  attributes.push_back(std::move(a));
}
bool Node::removeAttr(std::string_view name) {
  for (auto it = attributes.begin(); it != attributes.end(); ++it) {
    if (it->name == name) {
      attributes.erase(it);
      return true;
    }
  }
  return false;
}

bool Node::hasSubgraphs() const {
  for (const Attribute& a : attributes) {
    if (a.g || !a.graphs.empty()) return true;
  }
  return false;
}

void Node::forEachSubgraph(const std::function<void(Graph&)>& f) const {
  for (const Attribute& a : attributes) {
    if (a.g) f(*a.g);
    for (const auto& g : a.graphs) {
      if (g) f(*g);
    }
  }
}

std::string Node::displayName() const {
  if (!name.empty()) return "'" + name + "'";
  // By its first output: O(1), where a position costs a walk (messages about every node of a
  // million-node graph would be quadratic).
  for (const Value* v : outputs()) {
    if (v != nullptr && !v->name().empty()) return op_type + " -> '" + v->name() + "'";
  }
  size_t k = 0;
  for (const Node* n = prev_; n != nullptr; n = n->prev_)
    ++k;
  return op_type + " #" + std::to_string(k);
}

// ----------------------------------------------------------------- Graph

Graph::Graph(Graph* parent, Node* owner) : parent_(parent), owner_(owner) {
  names_ = parent ? parent->names_ : std::make_shared<Names>();
}

namespace {
// Drops every use held by nodes of `g` and its subgraphs.
void dropUses(GraphEdit e, Graph& g) {
  for (Node* n : g.nodes()) {
    n->removeAllInputs(e);
    n->forEachSubgraph([e](Graph& sg) { dropUses(e, sg); });
  }
}
}  // namespace

Graph::~Graph() {
  // Uses go first, so no value is destroyed while a node still points at it,
  // even when a failed pass left the order broken.
  dropUses(Edit(), *this);
  while (last_ != nullptr) {
    Node* n = last_;
    unlink(n);
    delete n;
  }
}

Graph& Graph::root() {
  Graph* g = this;
  while (g->parent_ != nullptr)
    g = g->parent_;
  return *g;
}

Value* Graph::newValue(std::string name) {
  std::unique_ptr<Value> v(new Value(this, std::move(name)));
  Value* raw = v.get();
  owned_values_.emplace(raw, std::move(v));
  return raw;
}

void Graph::reserveValues(size_t n) {
  owned_values_.reserve(owned_values_.size() + n);
  scope_.reserve(scope_.size() + n);
  // The name table is the model's, shared by every subgraph: reserving it to the exact need
  // of each of 20,000 branches rehashed it (even shrank it) each time, quadratic in branches.
  // It grows geometrically instead, as inserting would.
  std::unordered_set<std::string>& taken = names_->taken;
  if (static_cast<double>(taken.size() + n) >
      static_cast<double>(taken.bucket_count()) * taken.max_load_factor()) {
    taken.reserve(std::max(taken.size() + n, 2 * taken.size()));
  }
}

void Graph::defineName(Value* v) {
  if (v->name_.empty()) return;
  names_->taken.insert(v->name_);
  scope_[v->name_] = v;
}

void Graph::undefineName(Value* v) {
  auto it = scope_.find(v->name_);
  if (it != scope_.end() && it->second == v) scope_.erase(it);
}

void Graph::destroyValue(Value* v) {
  assert(!v->hasUses() && "destroying a value that is still used");
  undefineName(v);
  owned_values_.erase(v);
}

Value* Graph::addInput(Edit, std::string name, Type type) {
  Value* v = newValue(std::move(name));
  v->type = std::move(type);
  v->is_input_ = true;
  inputs_.push_back(v);
  defineName(v);
  return v;
}

void Graph::addInputForInitializer(Edit, Value* v) {
  assert(v->isInitializer() && !v->is_input_);
  v->is_input_ = true;
  inputs_.push_back(v);
}

void Graph::removeInput(Edit, Value* v) {
  auto it = std::find(inputs_.begin(), inputs_.end(), v);
  assert(it != inputs_.end());
  inputs_.erase(it);
  v->is_input_ = false;
  if (!v->isInitializer() && !v->isSparseInitializer()) destroyValue(v);
}

Value* Graph::addInitializer(Edit, Tensor t) {
  std::string name = t.name.empty() ? uniqueName("const") : t.name;
  if (lookupLocal(name) != nullptr) name = uniqueName(name);
  Value* v = newValue(name);
  t.name = name;
  v->type = Type::tensor(t.dtype());
  v->type.shape.emplace();
  for (int64_t d : t.dims())
    v->type.shape->dims.push_back(Dim::known(d));
  v->initializer_ = std::make_unique<Tensor>(std::move(t));
  initializers_.push_back(v);
  defineName(v);
  return v;
}

Value* Graph::addSparseInitializer(Edit, std::string name, SparseTensor t) {
  Value* v = newValue(std::move(name));
  v->type.kind = Type::Kind::kSparseTensor;
  v->type.elem_type = t.values.dtype();
  v->sparse_ = std::make_unique<SparseTensor>(std::move(t));
  sparse_initializers_.push_back(v);
  defineName(v);
  return v;
}

void Graph::removeInitializer(Edit, Value* v) {
  auto& list = v->sparse_ ? sparse_initializers_ : initializers_;
  auto it = std::find(list.begin(), list.end(), v);
  assert(it != list.end());
  list.erase(it);
  v->initializer_.reset();
  v->sparse_.reset();
  if (!v->is_input_) destroyValue(v);
}

void Graph::addOutput(Edit, Value* v) {
  outputs_.push_back(v);
  ++v->output_refs_;
}

void Graph::setOutput(Edit, size_t i, Value* v) {
  assert(i < outputs_.size());
  --outputs_[i]->output_refs_;
  outputs_[i] = v;
  ++v->output_refs_;
}

void Graph::removeOutput(Edit, size_t i) {
  assert(i < outputs_.size());
  --outputs_[i]->output_refs_;
  outputs_.erase(outputs_.begin() + static_cast<std::ptrdiff_t>(i));
}

void Graph::replaceOutput(Edit, Value* old_out, Value* v) {
  if (old_out == v) return;
  const std::string name = old_out->name();
  old_out->setName(uniqueName(name + "__replaced"));
  v->setName(name);
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (outputs_[i] == old_out) setOutput(Edit(), i, v);
  }
}

bool Graph::canTakeOutputName(const Value* v) const {
  if (v->graph() != this || v->isGraphInput() || v->isGraphOutput()) return false;
  return v->producer() != nullptr || (v->isInitializer() && !v->hasUses());
}

Node* Graph::replaceValue(Edit, Value* from, Value* to) {
  assert(from != to);
  Node* carrier = nullptr;
  if (from->isGraphOutput()) {
    Value* named = to;
    if (!canTakeOutputName(to)) {
      carrier = createNode(Edit(), "Identity", {to}, 1);
      if (from->producer() != nullptr && from->producer()->graph() == this)
        insertBefore(Edit(), from->producer(), carrier);
      else
        appendNode(Edit(), carrier);
      named = carrier->output(0);
      named->type = from->type;
    }
    // A graph output keeps its declared type where the value taking its place has none known
    // (a value after a function call): the writer would otherwise declare no element type.
    const bool unknown = named->type.isNone() ||
                         (named->type.isTensor() && named->type.elem_type == DataType::kUndefined);
    if (unknown && !from->type.isNone()) named->type = from->type;
    // Uses first: `to` may be an initializer nothing used yet.
    from->replaceAllUsesWith(Edit(), to);
    replaceOutput(Edit(), from, named);
    return carrier;
  }
  from->replaceAllUsesWith(Edit(), to);
  return nullptr;
}

Node* Graph::enclosingNode(Node* n) const {
  while (n != nullptr && n->graph() != this)
    n = n->graph()->ownerNode();
  return n;
}

size_t Graph::numNodesRecursive() const {
  size_t n = 0;
  for (Node* node : nodes()) {
    ++n;
    node->forEachSubgraph([&n](Graph& g) { n += g.numNodesRecursive(); });
  }
  return n;
}

Node* Graph::createNode(Edit, std::string op_type, const std::vector<Value*>& inputs,
                        size_t num_outputs, std::string domain) {
  auto* n = new Node(this);
  n->op_type = std::move(op_type);
  n->domain = std::move(domain);
  for (Value* v : inputs)
    n->addInput(GraphEdit(), v);
  for (size_t i = 0; i < num_outputs; ++i)
    n->addOutput(GraphEdit(), n->op_type + "_out");
  return n;
}

void Graph::link(Node* n) {
  assert(!n->linked_ && n->graph_ == this);
  n->linked_ = true;
  ++num_nodes_;
  for (Value* v : n->output_ptrs_) {
    if (v != nullptr) defineName(v);
  }
}

void Graph::unlink(Node* n) {
  assert(n->linked_);
  if (n->prev_)
    n->prev_->next_ = n->next_;
  else
    first_ = n->next_;
  if (n->next_)
    n->next_->prev_ = n->prev_;
  else
    last_ = n->prev_;
  n->prev_ = n->next_ = nullptr;
  n->linked_ = false;
  --num_nodes_;
  for (Value* v : n->output_ptrs_) {
    if (v != nullptr) undefineName(v);
  }
}

void Graph::appendNode(Edit, Node* n) {
  link(n);
  n->prev_ = last_;
  if (last_)
    last_->next_ = n;
  else
    first_ = n;
  last_ = n;
}

void Graph::insertBefore(Edit, Node* pos, Node* n) {
  assert(pos->graph_ == this && pos->linked_);
  link(n);
  n->next_ = pos;
  n->prev_ = pos->prev_;
  if (pos->prev_)
    pos->prev_->next_ = n;
  else
    first_ = n;
  pos->prev_ = n;
}

void Graph::insertAfter(Edit, Node* pos, Node* n) {
  assert(pos->graph_ == this && pos->linked_);
  if (pos->next_ == nullptr) {
    appendNode(Edit(), n);
    return;
  }
  insertBefore(Edit(), pos->next_, n);
}

Node* Graph::addNode(Edit, std::string op_type, const std::vector<Value*>& inputs,
                     size_t num_outputs, std::string domain) {
  Node* n = createNode(Edit(), std::move(op_type), inputs, num_outputs, std::move(domain));
  appendNode(Edit(), n);
  return n;
}

void Graph::eraseNode(Edit, Node* n) {
  assert(n->graph_ == this);
  for (Value* v : n->output_ptrs_) {
    (void)v;
    assert((v == nullptr || (!v->hasUses() && !v->isGraphOutput())) &&
           "erasing a node whose outputs are still used");
  }
  if (n->linked_) unlink(n);
  delete n;
}

namespace {
Attribute cloneAttribute(Graph::Edit e, const Attribute& a, Graph* new_parent, Node* owner,
                         const std::function<Value*(Value*)>& map, bool exact);

}  // namespace

// Copies `src` into the empty graph `dst`; values of src's enclosing graphs go through `outer`.
// `exact`: keep every name (dst belongs to a fresh model) instead of making names unique.
void Graph::cloneGraphInto(Edit, const Graph& src, Graph& dst,
                           const std::function<Value*(Value*)>& outer, bool exact) {
  std::unordered_map<const Value*, Value*> local;
  auto mapValue = [&](Value* v) -> Value* {
    if (v == nullptr) return nullptr;
    auto it = local.find(v);
    if (it != local.end()) return it->second;
    return outer(v);
  };
  local.reserve(src.numNodes() + src.inputs().size() + src.initializers().size());
  dst.reserveValues(src.numNodes() + src.inputs().size() + src.initializers().size());
  dst.name = src.name;
  dst.doc_string = src.doc_string;
  dst.metadata_props = src.metadata_props;
  dst.quantization_annotation = src.quantization_annotation;
  dst.orphan_value_info = src.orphan_value_info;
  dst.unknown_fields = src.unknown_fields;
  auto copyInfo = [](const Value* from, Value* to) {
    to->type = from->type;
    to->in_value_info = from->in_value_info;
    to->doc_string = from->doc_string;
    to->metadata_props = from->metadata_props;
    to->value_info_unknown_fields = from->value_info_unknown_fields;
  };
  for (Value* v : src.initializers()) {
    Value* nv = dst.addInitializer(Edit(), *v->initializer());
    copyInfo(v, nv);
    local[v] = nv;
  }
  for (Value* v : src.sparseInitializers()) {
    Value* nv = dst.addSparseInitializer(Edit(), exact ? v->name() : dst.uniqueName(v->name()),
                                         *v->sparseInitializer());
    copyInfo(v, nv);
    local[v] = nv;
  }
  for (Value* v : src.inputs()) {
    if (v->isInitializer() || v->isSparseInitializer()) {
      dst.addInputForInitializer(Edit(), local[v]);
      continue;
    }
    Value* nv = dst.addInput(Edit(), exact ? v->name() : dst.uniqueName(v->name()), v->type);
    copyInfo(v, nv);
    local[v] = nv;
  }
  for (Node* n : src.nodes()) {
    Node* nn = dst.cloneNodeImpl(*n, mapValue, exact);
    for (size_t i = 0; i < n->numOutputs(); ++i) {
      if (n->output(i) != nullptr) {
        copyInfo(n->output(i), nn->output(i));
        local[n->output(i)] = nn->output(i);
      }
    }
  }
  for (Value* v : src.outputs())
    dst.addOutput(Edit(), mapValue(v));
}

Attribute Attribute::copyWithoutGraphs() const {
  Attribute c;
  c.name = name;
  c.type = type;
  c.ref_attr_name = ref_attr_name;
  c.doc_string = doc_string;
  c.f = f;
  c.i = i;
  c.s = s;
  c.t = t;
  c.sparse_tensor = sparse_tensor;
  c.tp = tp;
  c.floats = floats;
  c.ints = ints;
  c.strings = strings;
  c.tensors = tensors;
  c.sparse_tensors = sparse_tensors;
  c.type_protos = type_protos;
  c.unknown_fields = unknown_fields;
  return c;
}

namespace {
Attribute cloneAttribute(Graph::Edit e, const Attribute& a, Graph* new_parent, Node* owner,
                         const std::function<Value*(Value*)>& map, bool exact) {
  Attribute c = a.copyWithoutGraphs();
  if (a.g) {
    c.g = std::make_unique<Graph>(new_parent, owner);
    Graph::cloneGraphInto(e, *a.g, *c.g, map, exact);
  }
  for (const auto& g : a.graphs) {
    auto ng = std::make_unique<Graph>(new_parent, owner);
    Graph::cloneGraphInto(e, *g, *ng, map, exact);
    c.graphs.push_back(std::move(ng));
  }
  return c;
}
}  // namespace

Node* Graph::cloneNode(Edit, const Node& src, const std::function<Value*(Value*)>& map,
                       Node* before) {
  return cloneNodeImpl(src, map, false, before);
}

Node* Graph::cloneNodeImpl(const Node& src, const std::function<Value*(Value*)>& map, bool exact,
                           Node* before) {
  std::vector<Value*> ins;
  ins.reserve(src.numInputs());
  for (Value* v : src.inputs())
    ins.push_back(v ? map(v) : nullptr);
  Node* n = createNode(Edit(), src.op_type, ins, 0, src.domain);
  n->name = src.name;
  n->overload = src.overload;
  n->doc_string = src.doc_string;
  n->metadata_props = src.metadata_props;
  n->device_configurations = src.device_configurations;
  n->unknown_fields = src.unknown_fields;
  for (Value* out : src.outputs()) {
    const std::string name = out ? out->name() : std::string();
    if (exact)
      n->addOutputExact(GraphEdit(), name);
    else
      n->addOutput(GraphEdit(), name);
  }
  for (const Attribute& a : src.attributes) {
    n->attributes.push_back(cloneAttribute(Edit(), a, this, n, map, exact));
  }
  if (before != nullptr)
    insertBefore(Edit(), before, n);
  else
    appendNode(Edit(), n);
  return n;
}

Value* Graph::lookupLocal(std::string_view name) const {
  auto it = scope_.find(name);
  return it == scope_.end() ? nullptr : it->second;
}

Value* Graph::lookup(std::string_view name) const {
  for (const Graph* g = this; g != nullptr; g = g->parent_) {
    if (Value* v = g->lookupLocal(name)) return v;
  }
  return nullptr;
}

std::string Graph::uniqueName(const std::string& base) {
  if (names_->taken.insert(base).second) return base;
  size_t& k = names_->last_suffix[base];
  for (;;) {
    std::string candidate = base + "__" + std::to_string(++k);
    if (names_->taken.insert(candidate).second) return candidate;
  }
}

void Graph::reserveName(const std::string& name) {
  names_->taken.insert(name);
}

// ----------------------------------------------------------------- Model

Model::Model() : graph(std::make_unique<Graph>()) {}

namespace {
Value* noOuterValues(Value* v) {
  assert(false && "a top-level graph has no enclosing scope");
  return v;
}
}  // namespace

std::unique_ptr<Model> Model::clone() const {
  auto m = std::make_unique<Model>();
  m->ir_version = ir_version;
  m->opset_import = opset_import;
  m->producer_name = producer_name;
  m->producer_version = producer_version;
  m->domain = domain;
  m->model_version = model_version;
  m->doc_string = doc_string;
  m->metadata_props = metadata_props;
  m->configuration = configuration;
  m->unknown_fields = unknown_fields;
  Graph::cloneGraphInto(Graph::Edit(), *graph, *m->graph, noOuterValues, true);
  for (const TrainingInfo& t : training_info) {
    TrainingInfo c;
    // Training graphs see the main graph: map its values by name into the copy.
    auto outer = [&m](Value* v) { return m->graph->lookup(v->name()); };
    if (t.initialization) {
      c.initialization = std::make_unique<Graph>(m->graph.get(), nullptr);
      Graph::cloneGraphInto(Graph::Edit(), *t.initialization, *c.initialization, outer, true);
    }
    if (t.algorithm) {
      c.algorithm = std::make_unique<Graph>(m->graph.get(), nullptr);
      Graph::cloneGraphInto(Graph::Edit(), *t.algorithm, *c.algorithm, outer, true);
    }
    c.initialization_binding = t.initialization_binding;
    c.update_binding = t.update_binding;
    c.unknown_fields = t.unknown_fields;
    m->training_info.push_back(std::move(c));
  }
  for (const Function& f : functions) {
    Function c;
    c.name = f.name;
    c.domain = f.domain;
    c.overload = f.overload;
    c.attribute_names = f.attribute_names;
    for (const Attribute& a : f.attribute_defaults) {
      c.attribute_defaults.push_back(
          cloneAttribute(Graph::Edit(), a, nullptr, nullptr, noOuterValues, true));
    }
    c.body = std::make_unique<Graph>();
    Graph::cloneGraphInto(Graph::Edit(), *f.body, *c.body, noOuterValues, true);
    c.doc_string = f.doc_string;
    c.opset_import = f.opset_import;
    c.metadata_props = f.metadata_props;
    c.unknown_fields = f.unknown_fields;
    m->functions.push_back(std::move(c));
  }
  return m;
}

const Attribute* boundAttribute(const Attribute& ref, const Node& call, const Function& fn) {
  if (const Attribute* a = call.attr(ref.ref_attr_name)) return a;
  for (const Attribute& d : fn.attribute_defaults) {
    if (d.name == ref.ref_attr_name) return &d;
  }
  return nullptr;
}

int64_t importedVersion(const std::vector<OpsetId>& imports, std::string_view d) {
  for (const OpsetId& o : imports) {
    if (o.domain == d || (isDefaultDomain(o.domain) && isDefaultDomain(d))) return o.version;
  }
  return -1;
}

int64_t Model::opsetVersion(std::string_view d) const {
  return importedVersion(opset_import, d);
}

// Scans the functions: callers that ask often (the pattern driver) ask once per graph.
const Function* Model::functionOf(const Graph& g) const {
  const Graph* root = &g;
  while (root->parent() != nullptr)
    root = root->parent();
  if (root == graph.get()) return nullptr;
  for (const Function& f : functions) {
    if (f.body.get() == root) return &f;
  }
  return nullptr;
}

int64_t Model::opsetVersionIn(const Graph& g, std::string_view d) const {
  const Function* f = functionOf(g);
  const int64_t v = f != nullptr ? importedVersion(f->opset_import, d) : -1;
  return v >= 0 ? v : opsetVersion(d);
}

}  // namespace onnxfold

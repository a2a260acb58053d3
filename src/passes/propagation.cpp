#include "passes/propagation.h"

#include <algorithm>

#include "ir/error.h"
#include "ir/printer.h"

namespace onnxfold {

namespace {

// One more than the largest N of the "unk__N" symbols in `t`.
int nextSymbolAfter(const Type& t, int next) {
  if (t.shape) {
    for (const Dim& d : t.shape->dims) {
      if (d.param.rfind("unk__", 0) != 0) continue;
      const std::string digits = d.param.substr(5);
      if (digits.empty() || digits.size() > 9 ||
          digits.find_first_not_of("0123456789") != std::string::npos)
        continue;
      next = std::max(next, std::stoi(digits) + 1);
    }
  }
  return t.elem ? nextSymbolAfter(*t.elem, next) : next;
}

int nextSymbolIn(const Graph& g, int next) {
  for (const Value* v : g.inputs())
    next = nextSymbolAfter(v->type, next);
  for (const Node* n : g.nodes()) {
    for (const Value* v : n->outputs()) {
      if (v != nullptr) next = nextSymbolAfter(v->type, next);
    }
    n->forEachSubgraph([&next](Graph& sg) { next = nextSymbolIn(sg, next); });
  }
  return next;
}

}  // namespace

Propagation::Propagation(const Model& model, bool refine_types)
    : model_(model), refine_types_(refine_types) {
  symbol_counter_ = nextSymbolIn(*model.graph, 0);
  for (const Function& f : model.functions)
    symbol_counter_ = nextSymbolIn(*f.body, symbol_counter_);
}

namespace {

// Constants larger than this are not handed to inference rules (which only need
// shapes, axes and similar small inputs); their types carry their shapes.
constexpr int64_t kMaxInferValueElements = 1 << 16;

std::string describe(const Type& t) {
  return toString(t);
}

}  // namespace

int64_t Propagation::opsetFor(const Graph& graph, const std::string& domain) const {
  if (function_body_ != nullptr && function_imports_ != nullptr && !function_imports_->empty()) {
    const Graph* g = &graph;
    while (g->parent() != nullptr)
      g = g->parent();
    if (g == function_body_) {
      const int64_t v = importedVersion(*function_imports_, domain);
      if (v >= 0) return v;
    }
  }
  return model_.opsetVersion(domain);
}

const Fact* Propagation::fact(const Value* v) const {
  auto it = facts_.find(v);
  return it == facts_.end() ? nullptr : &it->second;
}

const Tensor* Propagation::knownValue(const Value* v) const {
  if (v == nullptr) return nullptr;
  if (const Fact* f = fact(v); f != nullptr && f->value) return &*f->value;
  if (v->isConstant() && v->initializer()->isLoaded()) return v->initializer();
  return nullptr;
}

void Propagation::setValue(const Value* v, Tensor t) {
  facts_[v].value = std::move(t);
}

const Type& Propagation::typeOf(const Value* v) const {
  if (!refine_types_) {
    if (auto it = types_.find(v); it != types_.end()) return it->second;
  }
  return v->type;
}

Type& Propagation::mutableType(Value* v) {
  if (refine_types_) return v->type;
  auto it = types_.find(v);
  if (it == types_.end()) it = types_.emplace(v, v->type).first;
  return it->second;
}

void Propagation::mergeType(Value* v, const Type& inferred) {
  if (inferred.isNone() || v->isGraphInput()) return;
  Type& declared = mutableType(v);
  if (declared.isNone()) {
    declared = inferred;
    return;
  }
  if (declared.kind != inferred.kind) {
    warnings_.push_back("value '" + v->name() + "': declared " + describe(declared) +
                        " but inference gives " + describe(inferred) + " (kept the declared type)");
    if (type_contradiction_.empty()) {
      type_contradiction_ = "value '" + v->name() + "' is declared " + describe(declared) +
                            " but its producer gives " + describe(inferred);
    }
    return;
  }
  if (declared.kind != Type::Kind::kTensor) return;
  if (declared.elem_type == DataType::kUndefined) {
    declared.elem_type = inferred.elem_type;
  } else if (inferred.elem_type != DataType::kUndefined &&
             declared.elem_type != inferred.elem_type) {
    warnings_.push_back("value '" + v->name() + "': declared element type " +
                        std::string(dataTypeName(declared.elem_type)) + " but inference gives " +
                        std::string(dataTypeName(inferred.elem_type)) +
                        " (kept the declared type)");
    if (type_contradiction_.empty()) {
      type_contradiction_ =
          "value '" + v->name() + "' is declared " + std::string(dataTypeName(declared.elem_type)) +
          " but its producer gives " + std::string(dataTypeName(inferred.elem_type));
    }
    return;
  }
  if (!inferred.shape) return;
  if (!declared.shape) {
    declared.shape = inferred.shape;
    return;
  }
  if (declared.shape->rank() != inferred.shape->rank()) {
    warnings_.push_back("value '" + v->name() + "': declared " + describe(declared) +
                        " but inference gives " + describe(inferred) +
                        " (kept the declared shape)");
    return;
  }
  for (size_t i = 0; i < declared.shape->rank(); ++i) {
    Dim& d = declared.shape->dims[i];
    const Dim& e = inferred.shape->dims[i];
    if (d.isKnown()) {
      if (e.isKnown() && e.value != d.value) {
        warnings_.push_back("value '" + v->name() + "': declared dim " + std::to_string(i) + " = " +
                            std::to_string(d.value) + " but inference gives " +
                            std::to_string(e.value) + " (kept the declared dim)");
      }
    } else if (e.isKnown()) {
      d.value = e.value;
      d.param.clear();
    } else if (d.param.empty() && !e.param.empty()) {
      d.param = e.param;
    }
  }
}

void Propagation::seedSubgraphInputs(Node& node) {
  const Attribute* a = node.attr("body");
  if (a == nullptr || !a->g || !node.isDefaultDomain()) return;
  Graph& body = *a->g;
  auto seed = [this](Value* formal, Type t) {
    Type& cur = mutableType(formal);
    if (cur.isNone()) cur = std::move(t);
  };
  const std::vector<Value*>& formals = body.inputs();
  if (node.op_type == "Loop") {
    Shape scalar;
    if (formals.size() > 0) seed(formals[0], Type::tensor(DataType::kInt64, scalar));
    if (formals.size() > 1) seed(formals[1], Type::tensor(DataType::kBool, scalar));
    for (size_t i = 2; i < formals.size() && i < node.numInputs(); ++i) {
      if (node.input(i) != nullptr) seed(formals[i], typeOf(node.input(i)));
    }
  } else if (node.op_type == "Scan" && opsetFor(*node.graph(), node.domain) >= 9) {
    const int64_t m = node.attrInt("num_scan_inputs", 0);
    const int64_t n_state = static_cast<int64_t>(node.numInputs()) - m;
    const std::vector<int64_t> axes = node.attrInts("scan_input_axes");
    for (size_t i = 0; i < formals.size() && i < node.numInputs(); ++i) {
      const Value* actual = node.input(i);
      if (actual == nullptr) continue;
      Type t = typeOf(actual);
      const auto k = static_cast<int64_t>(i) - n_state;
      if (k >= 0 && t.kind == Type::Kind::kTensor && t.shape && t.shape->rank() > 0) {
        int64_t axis = static_cast<size_t>(k) < axes.size() ? axes[static_cast<size_t>(k)] : 0;
        const auto rank = static_cast<int64_t>(t.shape->rank());
        if (axis < 0) axis += rank;
        if (axis >= 0 && axis < rank) t.shape->dims.erase(t.shape->dims.begin() + axis);
      }
      seed(formals[i], std::move(t));
    }
  }
}

NodeInference Propagation::inferNode(Node& node) {
  NodeInference r;
  r.opset = opsetFor(*node.graph(), node.domain);
  const std::string op = (node.domain.empty() ? "" : node.domain + "::") + node.op_type;
  if (r.opset < 0) {
    r.error = "domain '" + node.domain + "' is not imported";
    return r;
  }
  r.entry = OpRegistry::instance().find(node.domain, node.op_type, r.opset);
  if (r.entry == nullptr) {
    r.error = "no rule for op " + op + " at opset " + std::to_string(r.opset);
    return r;
  }
  InferContext ic(node, r.opset, node.numInputs(), node.numOutputs());
  std::vector<Type> scratch(node.numInputs());
  for (size_t i = 0; i < node.numInputs(); ++i) {
    Value* v = node.input(i);
    if (v == nullptr) continue;
    ic.input_types[i] = &typeOf(v);
    const Tensor* t = knownValue(v);
    if (t != nullptr && t->numElements() <= kMaxInferValueElements) {
      if (!t->buffer().isAligned(16) && t->dtype() != DataType::kString) {
        // Rules may read values through typed pointers: give them an aligned copy.
        Fact& f = facts_[v];
        if (!f.value) f.value = t->aligned();
        t = &*f.value;
      }
      ic.input_values[i] = t;
      if (ic.input_types[i]->isNone()) {
        scratch[i] = Type::tensor(t->dtype());
        scratch[i].shape.emplace();
        for (int64_t d : t->dims())
          scratch[i].shape->dims.push_back(Dim::known(d));
        ic.input_types[i] = &scratch[i];
      }
    }
    if (const Fact* f = fact(v); f != nullptr && f->symbolic) ic.input_symbolic[i] = &*f->symbolic;
  }
  ic.symbol_counter = &symbol_counter_;
  try {
    r.entry->infer(ic);
  } catch (const UnsupportedError& e) {
    r.error = e.what();
    return r;
  } catch (const std::exception& e) {
    r.error = e.what();
    r.invalid = true;
    return r;
  }
  r.ok = true;
  bool missing_value = false;
  for (size_t i = 0; i < node.numOutputs(); ++i) {
    Value* v = node.output(i);
    if (v == nullptr) continue;
    mergeType(v, ic.output_types[i]);
    if (ic.output_values[i]) {
      facts_[v].value = std::move(*ic.output_values[i]);
    } else {
      missing_value = true;
      if (ic.output_symbolic[i]) facts_[v].symbolic = std::move(*ic.output_symbolic[i]);
    }
  }
  // Constant propagation: a node whose inputs are all small known values is
  // evaluated, so shape arithmetic (Size - axis -> ConstantOfShape) stays known.
  // Only when every output is known to be small: a tiny input (a shape, a count) can ask for
  // a huge result (ConstantOfShape, Range, Tile), which would be computed and then dropped.
  bool small_outputs = true;
  for (size_t i = 0; i < node.numOutputs(); ++i) {
    if (node.output(i) == nullptr) continue;
    const Type& t = ic.output_types[i];
    int64_t count = 1;
    bool known = t.isTensor() && t.shape.has_value();
    for (size_t k = 0; known && k < t.shape->rank(); ++k) {
      const Dim& d = t.shape->dims[k];
      known = d.value >= 0 && (d.value == 0 || count <= kMaxInferValueElements / d.value);
      if (known) count *= d.value;
    }
    small_outputs = small_outputs && known && count <= kMaxInferValueElements;
  }
  if (missing_value && small_outputs && r.entry->compute != nullptr &&
      !(r.entry->flags & kOpNondeterministic) && ic.allInputValuesKnown() && node.numInputs() > 0) {
    try {
      std::vector<Tensor> outs = evaluateNode(node, r.opset, ic.input_values);
      for (size_t i = 0; i < node.numOutputs(); ++i) {
        Value* v = node.output(i);
        if (v != nullptr && outs[i].numElements() <= kMaxInferValueElements) {
          facts_[v].value = std::move(outs[i]);
        }
      }
    } catch (const std::exception&) {
      // Not knowing the value is fine; the rule's types stand.
    }
  }
  return r;
}

}  // namespace onnxfold

// validateModel: the checks listed in passes/validate.h, in one walk of the model.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/error.h"
#include "passes/propagation.h"
#include "passes/validate.h"
#include "schema/op_schema.h"

namespace onnxfold {

namespace {

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

std::string typeText(const Type& t) {
  switch (t.kind) {
    case Type::Kind::kTensor:
      return "tensor(" + std::string(dataTypeName(t.elem_type)) + ")";
    case Type::Kind::kSequence:
      return "seq(" + (t.elem ? typeText(*t.elem) : std::string("?")) + ")";
    case Type::Kind::kOptional:
      return "optional(" + (t.elem ? typeText(*t.elem) : std::string("?")) + ")";
    case Type::Kind::kSparseTensor:
      return "sparse_tensor(" + std::string(dataTypeName(t.elem_type)) + ")";
    case Type::Kind::kMap:
      return "map";
    default:
      return "no type";
  }
}

// The element type a type binds to its constraint ("" key for kinds the check skips).
std::pair<int, DataType> binding(const Type& t) {
  const Type* inner = &t;
  int kind = 0;
  if (inner->kind == Type::Kind::kOptional && inner->elem) {
    kind += 2;
    inner = inner->elem.get();
  }
  if (inner->kind == Type::Kind::kSequence && inner->elem) {
    kind += 1;
    inner = inner->elem.get();
  }
  if (inner->kind != Type::Kind::kTensor) return {-1, DataType::kUndefined};
  return {kind, inner->elem_type};
}

// Attributes whose int value is a TensorProto.DataType, by op (0 allowed where it means
// "not given").
bool isDtypeAttribute(const Node& n, const Attribute& a, bool* zero_ok) {
  *zero_ok = false;
  if (a.type != AttrType::kInt) return false;
  if (a.name == "to") return n.op_type == "Cast";
  if (a.name == "output_dtype") {
    *zero_ok = true;
    return true;
  }
  return a.name == "dtype";
}

class Validator {
 public:
  Validator(const Model& m, const ValidateOptions& o)
      : model_(m), options_(o), prop_(m, /*refine_types=*/false) {}

  void run() {
    checkModel();
    for (const Function& f : model_.functions)
      functions_[{f.domain, f.name}] = &f;
    checkRecursion();
    path_.push_back({"graph", model_.graph.get(), nullptr});
    walk(*model_.graph, nullptr);
    path_.pop_back();
    for (const Function& f : model_.functions) {
      path_.push_back({"function", nullptr, nullptr, &f});
      checkImports(f.opset_import, "opset_import");
      prop_.setFunctionScope(f.body.get(), &f.opset_import);
      walk(*f.body, &f);
      prop_.setFunctionScope(nullptr, nullptr);
      path_.pop_back();
    }
    if (options_.infer && !prop_.typeContradiction().empty()) {
      throw ValidationError("", prop_.typeContradiction());
    }
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    std::string where;
    for (const Place& p : path_)
      where += (where.empty() ? "" : " > ") + p.text();
    throw ValidationError(where, problem);
  }

  void checkModel() {
    if (model_.ir_version <= 0) fail("the model has no ir_version (ModelProto field 1)");
    if (model_.ir_version > kNewestIrVersion) {
      fail("ir_version " + std::to_string(model_.ir_version) + " is newer than onnxfold knows (" +
           std::to_string(kNewestIrVersion) + ")");
    }
    checkImports(model_.opset_import, "opset_import");
  }

  void checkImports(const std::vector<OpsetId>& imports, const std::string& field) {
    const OpSchemas& schemas = OpSchemas::instance();
    for (const OpsetId& o : imports) {
      const std::string domain = isDefaultDomain(o.domain) ? "ai.onnx" : o.domain;
      if (!isValidUtf8(o.domain)) fail(field + ": a domain name is not valid UTF-8");
      if (!schemas.knowsDomain(o.domain)) continue;  // custom domains pass through
      if (o.version < 1) {
        fail(field + ": version " + std::to_string(o.version) + " of " + domain +
             " is not a valid opset");
      }
      const int newest = schemas.newestOpset(o.domain);
      if (o.version > newest) {
        fail(field + ": opset " + std::to_string(o.version) + " of " + domain +
             " is newer than onnxfold knows (" + std::to_string(newest) + ")");
      }
    }
  }

  // A local function that calls itself, directly or through others.
  void checkRecursion() {
    std::map<const Function*, std::vector<const Function*>> calls;
    for (const Function& f : model_.functions) {
      std::vector<const Graph*> graphs{f.body.get()};
      while (!graphs.empty()) {
        const Graph* g = graphs.back();
        graphs.pop_back();
        for (const Node* n : g->nodes()) {
          if (const Function* callee = function(*n)) calls[&f].push_back(callee);
          n->forEachSubgraph([&](Graph& sg) { graphs.push_back(&sg); });
        }
      }
    }
    // Iterative DFS (the call graph comes from the input): 0 new, 1 on the stack, 2 done.
    std::map<const Function*, int> state;
    for (const Function& root : model_.functions) {
      if (state[&root] != 0) continue;
      std::vector<std::pair<const Function*, size_t>> stack{{&root, 0}};
      state[&root] = 1;
      while (!stack.empty()) {
        auto& [f, next] = stack.back();
        const std::vector<const Function*>& callees = calls[f];
        if (next == callees.size()) {
          state[f] = 2;
          stack.pop_back();
          continue;
        }
        const Function* c = callees[next++];
        if (state[c] == 1) {
          std::string cycle;
          bool in = false;
          for (const auto& e : stack) {
            in = in || e.first == c;
            if (in) cycle += e.first->name + " -> ";
          }
          fail("local functions call themselves (" + cycle + c->name + ")");
        }
        if (state[c] == 0) {
          state[c] = 1;
          stack.push_back({c, 0});
        }
      }
    }
  }

  const Function* function(const Node& n) const {
    auto it = functions_.find({n.domain, n.op_type});
    if (it == functions_.end() && isDefaultDomain(n.domain)) {
      it = functions_.find({n.domain.empty() ? "ai.onnx" : "", n.op_type});
    }
    return it == functions_.end() ? nullptr : it->second;
  }

  void walk(const Graph& g, const Function* in_function) {
    if (!isValidUtf8(g.name)) fail("the graph name is not valid UTF-8");
    for (const Value* v : g.inputs())
      checkName(*v, "input");
    for (const Value* v : g.outputs())
      checkName(*v, "output");
    for (const Value* v : g.initializers())
      checkName(*v, "initializer");
    for (const Value* v : g.sparseInitializers()) {
      checkName(*v, "sparse initializer");
      checkSparse(*v->sparseInitializer(), "sparse initializer " + quoted(v->name()));
    }
    // Names are assigned once across a graph and its subgraphs (the checker and ONNX Runtime
    // refuse a subgraph that defines an outer name again; CSE would merge the wrong values).
    std::vector<std::string_view> defined;
    std::unordered_set<const Value*> own;
    auto define = [&](const Value* v) {
      if (v == nullptr || v->name().empty() || !own.insert(v).second) return;
      if (!scope_names_.insert(v->name()).second) {
        fail(quoted(v->name()) +
             " is defined twice (a name is assigned once across a graph and its subgraphs)");
      }
      defined.push_back(v->name());
    };
    for (const Value* v : g.inputs())
      define(v);
    for (const Value* v : g.initializers())
      define(v);
    for (const Value* v : g.sparseInitializers())
      define(v);
    for (const Node* n : g.nodes()) {
      for (const Value* v : n->outputs())
        define(v);
    }
    for (Node* n : g.nodes())
      node(*n, in_function);
    for (std::string_view d : defined)
      scope_names_.erase(d);
  }

  void checkName(const Value& v, const char* what) {
    if (!isValidUtf8(v.name()))
      fail(std::string("the name of a graph ") + what + " is not valid UTF-8");
  }

  void checkSparse(const SparseTensor& s, const std::string& what) {
    int64_t total = 1;
    for (int64_t d : s.dims) {
      if (d < 0) fail(what + ": negative dimension " + std::to_string(d));
      total = d == 0 || total <= INT64_MAX / d ? total * d : -1;
      if (total < 0) fail(what + ": the element count overflows int64");
    }
    const int64_t nnz = s.values.numElements();
    const Tensor& idx = s.indices;
    if (idx.dtype() != DataType::kInt64) fail(what + ": indices must be int64");
    const size_t rank = s.dims.size();
    const bool linear = idx.rank() == 1 && idx.dims()[0] == nnz;
    const bool coords =
        idx.rank() == 2 && idx.dims()[0] == nnz && idx.dims()[1] == static_cast<int64_t>(rank);
    if (!linear && !coords) {
      fail(what + ": indices of shape " + std::to_string(idx.rank()) + "-D do not match " +
           std::to_string(nnz) + " values (want [" + std::to_string(nnz) + "] or [" +
           std::to_string(nnz) + ", " + std::to_string(rank) + "])");
    }
    for (int64_t i = 0; i < idx.numElements(); ++i) {
      const int64_t x = idx.at<int64_t>(static_cast<size_t>(i));
      const int64_t bound = linear ? total : s.dims[static_cast<size_t>(i) % rank];
      if (x < 0 || x >= bound) {
        fail(what + ": index " + std::to_string(x) + " is outside the dims (at " +
             std::to_string(i) + ")");
      }
    }
  }

  void node(Node& n, const Function* in_function) {
    path_.push_back({"node", nullptr, &n});
    if (!isValidUtf8(n.name) || !isValidUtf8(n.op_type) || !isValidUtf8(n.domain)) {
      fail("the node's name, op_type or domain is not valid UTF-8");
    }
    for (size_t i = 0; i < n.numOutputs(); ++i) {
      if (n.output(i) && !isValidUtf8(n.output(i)->name())) {
        fail("output " + std::to_string(i) + " has a name that is not valid UTF-8");
      }
    }
    for (const Attribute& a : n.attributes) {
      if (!isValidUtf8(a.name)) fail("an attribute name is not valid UTF-8");
      if (!a.ref_attr_name.empty()) checkReference(a, in_function);
    }
    const int64_t opset = prop_.opsetFor(*n.graph(), n.domain);
    const OpSchemas& schemas = OpSchemas::instance();
    const bool known_domain = schemas.knowsDomain(n.domain);
    if (known_domain && function(n) == nullptr) {
      const OpSchema* s = schemas.find(n.domain, n.op_type, opset);
      if (s == nullptr) {
        const OpSchema* first = schemas.first(n.domain, n.op_type);
        const std::string domain = isDefaultDomain(n.domain) ? "ai.onnx" : n.domain;
        if (first == nullptr) fail(quoted(n.op_type) + " is not an operator of " + domain);
        fail(n.op_type + " exists from opset " + std::to_string(first->since_version) + " of " +
             domain + "; the model imports opset " + std::to_string(opset));
      }
      checkSchema(n, *s, in_function != nullptr);
    }
    if (const Function* f = function(n)) checkCall(n, *f);
    checkSubgraphs(n, opset);
    n.forEachSubgraph([&](Graph& sg) {
      path_.push_back({"graph", &sg, nullptr});
      prop_.seedSubgraphInputs(n);
      walk(sg, in_function);
      path_.pop_back();
    });
    if (options_.infer) infer(n, in_function != nullptr);
    path_.pop_back();
  }

  // A call of a local function passes what its body takes: each declared input, no more
  // outputs than it declares, and attributes of the types the body's references expect.
  void checkCall(const Node& n, const Function& f) {
    const size_t ins = f.body->inputs().size(), outs = f.body->outputs().size();
    if (n.numInputs() != ins) {
      fail("calls function " + quoted(f.name) + " with " + std::to_string(n.numInputs()) +
           " inputs; it declares " + std::to_string(ins));
    }
    if (n.numOutputs() > outs) {
      fail("calls function " + quoted(f.name) + " for " + std::to_string(n.numOutputs()) +
           " outputs; it declares " + std::to_string(outs));
    }
    const std::map<std::string, AttrType>& expected = referencedTypes(f);
    for (const Attribute& a : n.attributes) {
      auto it = expected.find(a.name);
      if (it == expected.end() || a.type == AttrType::kUndefined || a.type == it->second) continue;
      fail("attribute " + quoted(a.name) + " is " + std::string(attrTypeName(a.type)) +
           "; function " + quoted(f.name) + " uses it as " + std::string(attrTypeName(it->second)));
    }
  }

  // The type each attribute reference in f's body declares (subgraphs included).
  const std::map<std::string, AttrType>& referencedTypes(const Function& f) {
    auto [it, fresh] = referenced_types_.try_emplace(&f);
    if (!fresh) return it->second;
    std::vector<const Graph*> graphs{f.body.get()};
    while (!graphs.empty()) {
      const Graph* g = graphs.back();
      graphs.pop_back();
      for (const Node* b : g->nodes()) {
        for (const Attribute& a : b->attributes) {
          if (!a.ref_attr_name.empty() && a.type != AttrType::kUndefined)
            it->second.emplace(a.ref_attr_name, a.type);
        }
        b->forEachSubgraph([&](Graph& sg) { graphs.push_back(&sg); });
      }
    }
    return it->second;
  }

  void checkReference(const Attribute& a, const Function* f) {
    if (f == nullptr) {
      fail("attribute " + quoted(a.name) + " refers to " + quoted(a.ref_attr_name) +
           " outside a function");
    }
    const bool declared =
        std::find(f->attribute_names.begin(), f->attribute_names.end(), a.ref_attr_name) !=
            f->attribute_names.end() ||
        std::any_of(f->attribute_defaults.begin(), f->attribute_defaults.end(),
                    [&](const Attribute& d) { return d.name == a.ref_attr_name; });
    if (!declared) {
      fail("attribute " + quoted(a.name) + " refers to " + quoted(a.ref_attr_name) +
           ", which function " + quoted(f->name) + " does not declare");
    }
  }

  void checkSchema(const Node& n, const OpSchema& s, bool in_function) {
    const std::string op = n.op_type + "-" + std::to_string(s.since_version);
    const auto count = [](int k) { return k < 0 ? std::string("any number") : std::to_string(k); };
    const int ins = static_cast<int>(n.numInputs());
    if (ins < s.min_inputs || (s.max_inputs >= 0 && ins > s.max_inputs)) {
      fail("has " + std::to_string(ins) + " inputs; " + op + " takes " +
           (s.min_inputs == s.max_inputs ? count(s.min_inputs)
                                         : count(s.min_inputs) + " to " + count(s.max_inputs)));
    }
    const int outs = static_cast<int>(n.numOutputs());
    if (outs < s.min_outputs || (s.max_outputs >= 0 && outs > s.max_outputs)) {
      fail("has " + std::to_string(outs) + " outputs; " + op + " gives " +
           (s.min_outputs == s.max_outputs ? count(s.min_outputs)
                                           : count(s.min_outputs) + " to " + count(s.max_outputs)));
    }
    for (size_t i = 0; i < n.numInputs(); ++i) {
      const FormalParameter* f = s.input(i);
      if (n.input(i) == nullptr && f != nullptr && !f->optional && !f->variadic) {
        fail("input " + std::to_string(i) + " (" + f->name + ") is required by " + op +
             " but missing");
      }
    }
    // Attributes: known, of the right type, required ones present.
    for (const Attribute& a : n.attributes) {
      const AttributeSchema* as = s.attribute(a.name);
      if (as == nullptr) fail(op + " has no attribute " + quoted(a.name));
      if (a.type != AttrType::kUndefined && a.type != as->type) {
        fail("attribute " + quoted(a.name) + " is " + std::string(attrTypeName(a.type)) + "; " +
             op + " takes " + std::string(attrTypeName(as->type)));
      }
      bool zero_ok = false;
      if (a.ref_attr_name.empty() && isDtypeAttribute(n, a, &zero_ok) && !(zero_ok && a.i == 0) &&
          (a.i < 1 || a.i > kMaxDataType)) {
        fail("attribute " + quoted(a.name) + " = " + std::to_string(a.i) +
             " is not a known data type");
      }
    }
    for (const AttributeSchema& as : s.attributes) {
      if (as.required && n.attr(as.name) == nullptr) {
        fail(op + " requires attribute " + quoted(as.name) + ", which is missing");
      }
    }
    if (n.op_type == "Constant" && isDefaultDomain(n.domain) && n.attributes.size() != 1 &&
        !in_function) {
      fail("Constant must have exactly one value attribute; it has " +
           std::to_string(n.attributes.size()));
    }
    for (const Attribute& a : n.attributes) {
      if (a.type == AttrType::kSparseTensor) {
        checkSparse(a.sparse_tensor, "attribute " + quoted(a.name));
      }
    }
    checkTypes(n, s, op);
  }

  // Each actual input and output whose type is known fits its formal parameter's constraint,
  // and a constraint binds one element type across the node (heterogeneous variadics aside).
  void checkTypes(const Node& n, const OpSchema& s, const std::string& op) {
    std::vector<std::pair<int, DataType>> bound(s.types.size(), {-1, DataType::kUndefined});
    std::vector<std::string> bound_by(s.types.size());
    auto check = [&](const Value* v, const FormalParameter* f, const std::string& what) {
      if (v == nullptr || f == nullptr) return;
      const Type& t = prop_.typeOf(v);
      if (t.isNone()) return;
      const TypeConstraint& c = s.types[static_cast<size_t>(f->type)];
      if (!c.allows(t)) {
        fail(what + " " + quoted(v->name()) + " is " + typeText(t) + "; " + op + " takes " +
             c.name + " in {" + c.describe() + "}");
      }
      if (f->heterogeneous) return;
      const std::pair<int, DataType> b = binding(t);
      if (b.first < 0 || b.second == DataType::kUndefined) return;
      auto& slot = bound[static_cast<size_t>(f->type)];
      if (slot.first < 0) {
        slot = b;
        bound_by[static_cast<size_t>(f->type)] = what + " " + quoted(v->name());
      } else if (slot != b) {
        fail(what + " " + quoted(v->name()) + " is " + typeText(t) + " but " +
             bound_by[static_cast<size_t>(f->type)] + " binds " + c.name + " to another type");
      }
    };
    for (size_t i = 0; i < n.numInputs(); ++i)
      check(n.input(i), s.input(i), "input " + std::to_string(i));
    for (size_t i = 0; i < n.numOutputs(); ++i)
      check(n.output(i), s.output(i), "output " + std::to_string(i));
  }

  // The bodies of If, Loop and Scan take and give what the node passes and expects.
  void checkSubgraphs(const Node& n, int64_t opset) {
    if (!n.isDefaultDomain()) return;
    const auto sizes = [&](const char* attr, size_t* in, size_t* out) {
      const Attribute* a = n.attr(attr);
      if (a == nullptr || !a->g) return false;
      *in = a->g->inputs().size();
      *out = a->g->outputs().size();
      return true;
    };
    size_t in = 0, out = 0;
    const size_t n_in = n.numInputs(), n_out = n.numOutputs();
    if (n.op_type == "If") {
      for (const char* branch : {"then_branch", "else_branch"}) {
        if (!sizes(branch, &in, &out)) continue;
        if (in != 0)
          fail(std::string(branch) + " declares " + std::to_string(in) +
               " inputs; If branches take none");
        if (out != n_out) {
          fail(std::string(branch) + " gives " + std::to_string(out) + " outputs; the node has " +
               std::to_string(n_out));
        }
      }
    } else if (n.op_type == "Loop" && sizes("body", &in, &out)) {
      // body(iteration, cond, v...) -> (cond, v..., scan outputs...)
      const size_t carried = n_in >= 2 ? n_in - 2 : 0;
      if (in != 2 + carried) {
        fail("the body takes " + std::to_string(in) + " inputs; this Loop passes " +
             std::to_string(2 + carried) + " (iteration, condition, " + std::to_string(carried) +
             " carried)");
      }
      if (out < 1 + carried || n_out < carried || out - 1 - carried != n_out - carried) {
        fail("the body gives " + std::to_string(out) + " outputs; this Loop needs 1 + " +
             std::to_string(carried) + " carried + " +
             std::to_string(n_out >= carried ? n_out - carried : 0) + " scan outputs");
      }
    } else if (n.op_type == "Scan" && opset >= 9 && sizes("body", &in, &out)) {
      if (in != n_in) {
        fail("the body takes " + std::to_string(in) + " inputs; this Scan passes " +
             std::to_string(n_in));
      }
      if (out != n_out) {
        fail("the body gives " + std::to_string(out) + " outputs; this Scan has " +
             std::to_string(n_out));
      }
      const int64_t scans = n.attrInt("num_scan_inputs", -1);
      if (scans < 1 || static_cast<size_t>(scans) > n_in) {
        fail("num_scan_inputs = " + std::to_string(scans) + " is not between 1 and the " +
             std::to_string(n_in) + " inputs");
      }
    }
  }

  // A shape rule that refuses inputs whose ranks are all known is a contradiction in the
  // model (not a gap in what onnxfold knows: those throw UnsupportedError).
  void infer(Node& n, bool in_function) {
    const NodeInference r = prop_.inferNode(n);
    // If and Loop rules read body types inference may not know yet; Scan's rule checks the
    // node itself (its axes and the scanned inputs' lengths) and copies the body's types.
    const bool body_rule = n.hasSubgraphs() && !(n.isOp("Scan") && n.isDefaultDomain());
    if (r.ok || !r.invalid || in_function || body_rule) return;
    for (const Value* v : n.inputs()) {
      if (v == nullptr) continue;
      const Type& t = prop_.typeOf(v);
      const bool known = prop_.knownValue(v) != nullptr ||
                         (t.isTensor() && t.elem_type != DataType::kUndefined && t.shape);
      if (!known) return;
    }
    fail(r.error);
  }

  const Model& model_;
  std::unordered_set<std::string_view> scope_names_;  // defined by the graphs being walked
  std::map<const Function*, std::map<std::string, AttrType>> referenced_types_;
  ValidateOptions options_;
  Propagation prop_;
  std::map<std::pair<std::string, std::string>, const Function*> functions_;
  // Where the walk is; put into words only when something fails (a string per node costs).
  struct Place {
    const char* kind;
    const Graph* graph = nullptr;
    const Node* node = nullptr;
    const Function* function = nullptr;
    std::string text() const {
      if (node != nullptr) {
        return std::string(kind) + " " + (node->name.empty() ? node->op_type : quoted(node->name)) +
               " (" + node->op_type + ")";
      }
      return std::string(kind) + " " + quoted(graph != nullptr ? graph->name : function->name);
    }
  };
  std::vector<Place> path_;
};

}  // namespace

void validateModel(const Model& model, const ValidateOptions& options) {
  Validator(model, options).run();
}

}  // namespace onnxfold

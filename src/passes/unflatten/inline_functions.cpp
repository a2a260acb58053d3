// inline-functions: every call of a model-local function is replaced by a copy
// of the function's body (the inverse of outline-functions), then the functions
// go. Attribute references in the body (ref_attr_name) take the caller's
// attribute, else the function's default, else the attribute is left out.
//
// Before:  %y = onnxfold.modules.enc_layers(%x, %w, ...)   name "/enc/layers.0/enc_layers"
// After:   the body's nodes, named "/enc/layers.0" + their name in the body
//
// Calls inside inlined bodies are expanded in later rounds; more than
// kMaxRounds rounds means the functions call themselves, which is an error.
// A function importing a domain at another version than the model would change
// meaning when inlined, so it is refused.
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"
#include "passes/rewrite.h"
#include "passes/unflatten/module_body.h"
#include "passes/unflatten/unflatten_passes.h"

namespace onnxfold {

namespace {

constexpr int kMaxRounds = 64;

using FunctionKey = std::tuple<std::string, std::string, std::string>;  // domain, name, overload

std::string normDomain(const std::string& d) {
  return isDefaultDomain(d) ? std::string() : d;
}

// A copy of a non-graph attribute (graph-valued attributes cannot be referenced
// through ref_attr_name in the functions we read).
Attribute copyAttribute(const Attribute& a, const std::string& name) {
  if (a.g || !a.graphs.empty()) {
    throw Error("attribute '" + a.name +
                "' is a graph; graph attributes passed to a function are not supported");
  }
  Attribute c = a.copyWithoutGraphs();
  c.name = name;
  c.ref_attr_name.clear();
  return c;
}

class InlineFunctions : public Pass {
 public:
  std::string_view name() const override { return "inline-functions"; }
  std::string_view description() const override {
    return "replace every call of a model-local function with the function's body";
  }

  bool run(Model& model, PassContext& ctx) override {
    if (model.functions.empty()) return false;
    std::map<FunctionKey, const Function*> functions;
    for (const Function& f : model.functions) {
      functions[{normDomain(f.domain), f.name, f.overload}] = &f;
    }
    std::set<const Function*> checked;
    // Node names per graph: ONNX Runtime rejects a model with two nodes of one name.
    std::unordered_map<const Graph*, std::unordered_set<std::string>> node_names;
    size_t inlined = 0;
    for (int round = 0;; ++round) {
      std::vector<std::pair<Node*, const Function*>> calls;
      auto collect = [&](Graph& g) {
        for (Node* n : g.nodes()) {
          auto it = functions.find({normDomain(n->domain), n->op_type, n->overload});
          if (it != functions.end()) calls.emplace_back(n, it->second);
        }
      };
      forEachGraphIn(*model.graph, collect);
      for (TrainingInfo& t : model.training_info) {
        if (t.initialization) forEachGraphIn(*t.initialization, collect);
        if (t.algorithm) forEachGraphIn(*t.algorithm, collect);
      }
      if (calls.empty()) break;
      if (round == kMaxRounds) {
        throw Error("function calls still remain after " + std::to_string(kMaxRounds) +
                    " rounds of inlining: function " + calls.front().second->name +
                    " calls itself");
      }
      for (auto& [call, fn] : calls) {
        if (checked.insert(fn).second) checkOpsets(model, *fn);
        Graph* g = call->graph();
        auto names = node_names.find(g);
        if (names == node_names.end()) {
          names = node_names.emplace(g, std::unordered_set<std::string>()).first;
          for (const Node* n : g->nodes())
            names->second.insert(n->name);
        }
        Rewriter rw(model, *g, /*notify=*/false);
        inlineCall(rw, *call, *fn, names->second);
        ++inlined;
      }
    }
    // Every call is expanded: the functions and the domains only they used go.
    std::set<std::string> fn_domains;
    for (const Function& f : model.functions)
      fn_domains.insert(normDomain(f.domain));
    const size_t removed = model.functions.size();
    model.functions.clear();
    std::set<std::string> used;
    auto collectDomains = [&used](Graph& g) {
      for (const Node* n : g.nodes())
        used.insert(normDomain(n->domain));
    };
    forEachGraph(model, collectDomains);
    for (auto it = model.opset_import.begin(); it != model.opset_import.end();) {
      const std::string d = normDomain(it->domain);
      if (!d.empty() && fn_domains.count(d) != 0 && used.count(d) == 0)
        it = model.opset_import.erase(it);
      else
        ++it;
    }
    ctx.count("calls inlined", static_cast<int64_t>(inlined));
    ctx.count("functions removed", static_cast<int64_t>(removed));
    return true;
  }

 private:
  // The body's ops mean what the function's imports say; the model's must agree.
  static void checkOpsets(Model& model, const Function& fn) {
    for (const OpsetId& o : fn.opset_import) {
      const int64_t have = model.opsetVersion(o.domain);
      if (have < 0) {
        model.opset_import.push_back(o);
      } else if (have != o.version) {
        throw Error("function " + fn.name + " imports " +
                    (normDomain(o.domain).empty() ? "ai.onnx" : o.domain) + " version " +
                    std::to_string(o.version) + " but the model imports version " +
                    std::to_string(have) + "; inlining it would change what its ops mean");
      }
    }
  }

  static void resolveRefs(Node& n, const Node& call, const Function& fn) {
    for (size_t k = 0; k < n.attributes.size();) {
      Attribute& a = n.attributes[k];
      if (a.ref_attr_name.empty()) {
        if (a.g) resolveGraph(*a.g, call, fn);
        for (auto& sg : a.graphs)
          resolveGraph(*sg, call, fn);
        ++k;
        continue;
      }
      const Attribute* src = boundAttribute(a, call, fn);
      if (src == nullptr) {
        n.attributes.erase(n.attributes.begin() + static_cast<std::ptrdiff_t>(k));
        continue;
      }
      if (src->type != a.type && a.type != AttrType::kUndefined) {
        throw Error("call " + call.displayName() + " of function " + fn.name + ": attribute '" +
                    a.ref_attr_name + "' is " + std::string(attrTypeName(src->type)) +
                    ", the body expects " + std::string(attrTypeName(a.type)));
      }
      a = copyAttribute(*src, a.name);
      ++k;
    }
  }

  static void resolveGraph(Graph& g, const Node& call, const Function& fn) {
    for (Node* n : g.nodes())
      resolveRefs(*n, call, fn);
  }

  // A call inside the body (nested outlining) recorded names relative to this body;
  // once the body is inlined they are relative to the caller's scope.
  template <class Scope>
  static void rescopeRecordedNames(Node& n, const Scope& scoped) {
    for (auto& [key, text] : n.metadata_props) {
      if (key != kOutlineNamesKey) continue;
      std::string out;
      size_t start = 0;
      while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        const std::string line = text.substr(start, end - start);
        const size_t t2 = line.find('\t', line.find('\t') + 1);  // before the original name
        out +=
            t2 == std::string::npos ? line : line.substr(0, t2 + 1) + scoped(line.substr(t2 + 1));
        out += '\n';
        start = end + 1;
      }
      text = std::move(out);
    }
  }

  static void inlineCall(Rewriter& rw, Node& call, const Function& fn,
                         std::unordered_set<std::string>& taken) {
    Graph& g = rw.graph();
    const Graph& body = *fn.body;
    if (call.numInputs() > body.inputs().size() || call.numOutputs() > body.outputs().size()) {
      throw Error("call " + call.displayName() + " of function " + fn.name + " has " +
                  std::to_string(call.numInputs()) + " inputs and " +
                  std::to_string(call.numOutputs()) + " outputs; the function has " +
                  std::to_string(body.inputs().size()) + " and " +
                  std::to_string(body.outputs().size()));
    }
    // The call's scope ("/enc/layers.0" of "/enc/layers.0/enc_layers") prefixes body names
    // that outline-functions made relative.
    std::string prefix;
    const size_t slash = call.name.rfind('/');
    if (!call.name.empty() && call.name[0] == '/' && slash != std::string::npos)
      prefix = call.name.substr(0, slash);
    auto scoped = [&prefix](const std::string& name) {
      return !prefix.empty() && !name.empty() && name[0] == '/' ? prefix + name : name;
    };
    // Names outline-functions recorded: ("n"|"v", body value name) -> original name.
    std::map<std::pair<std::string, std::string>, std::string> recorded;
    for (const auto& [key, text] : call.metadata_props) {
      if (key != kOutlineNamesKey) continue;
      size_t start = 0;
      while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        const std::string line = text.substr(start, end - start);
        const size_t t1 = line.find('\t');
        const size_t t2 = t1 == std::string::npos ? t1 : line.find('\t', t1 + 1);
        if (t2 != std::string::npos) {
          recorded[{line.substr(0, t1), line.substr(t1 + 1, t2 - t1 - 1)}] = line.substr(t2 + 1);
        }
        start = end + 1;
      }
    }
    auto recordedOr = [&recorded](const char* kind, const Value* body_value, std::string dflt) {
      if (body_value == nullptr) return dflt;
      auto it = recorded.find({kind, body_value->name()});
      return it == recorded.end() ? dflt : it->second;
    };
    std::unordered_map<const Value*, Value*> map;
    std::unordered_set<const Value*> copies;  // outputs of the copied nodes
    for (size_t i = 0; i < body.inputs().size(); ++i)
      map[body.inputs()[i]] = call.input(i);
    auto mapValue = [&map](Value* v) -> Value* {
      auto it = map.find(v);
      if (it == map.end())
        throw Error("function body value '" + v->name() + "' is used before it is defined");
      return it->second;
    };
    for (const Node* bn : body.nodes()) {
      Node* c = rw.clone(*bn, mapValue, &call);
      const Value* first = nullptr;
      for (const Value* v : bn->outputs())
        first = first != nullptr ? first : v;
      c->name = recordedOr("n", first, scoped(bn->name));
      if (!c->name.empty() && !taken.insert(c->name).second) {
        const std::string base = c->name;
        for (size_t k = 1; !taken.insert(c->name = base + "__" + std::to_string(k)).second; ++k) {
        }
      }
      resolveRefs(*c, call, fn);
      rescopeRecordedNames(*c, scoped);
      for (size_t j = 0; j < bn->numOutputs(); ++j) {
        if (bn->output(j) == nullptr) continue;
        Value* out = c->output(j);
        const std::string want = recordedOr("v", bn->output(j), scoped(bn->output(j)->name()));
        // The name the value had before outlining is free again once that value is gone.
        if (want != out->name())
          rw.rename(out, g.lookup(want) == nullptr ? want : g.uniqueName(want));
        map[bn->output(j)] = out;
        copies.insert(out);
      }
    }
    for (size_t i = 0; i < call.numOutputs(); ++i) {
      Value* out = call.output(i);
      if (out == nullptr) continue;
      Value* repl = mapValue(body.outputs()[i]);
      if (repl == nullptr)
        throw Error("call " + call.displayName() + ": output " + std::to_string(i) +
                    " is an omitted input");
      if (repl->type.isNone()) repl->type = out->type;
      if (!repl->in_value_info) repl->in_value_info = out->in_value_info;
      rw.replaceValue(out, repl);
    }
    // Keep the call's output names on the inlined values when they are free.
    std::vector<std::pair<Value*, std::string>> renames;
    for (size_t i = 0; i < call.numOutputs(); ++i) {
      Value* out = call.output(i);
      Value* repl = out ? map.at(body.outputs()[i]) : nullptr;
      if (out != nullptr && !out->isGraphOutput() && copies.count(repl) != 0 &&
          !repl->isGraphOutput()) {
        renames.emplace_back(repl, out->name());
      }
    }
    rw.erase(&call);
    for (auto& [v, name] : renames) {
      if (g.lookup(name) == nullptr) rw.rename(v, name);
    }
  }
};

}  // namespace

std::unique_ptr<Pass> createInlineFunctions() {
  return std::make_unique<InlineFunctions>();
}

}  // namespace onnxfold

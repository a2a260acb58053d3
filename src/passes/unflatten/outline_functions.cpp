// outline-functions: each module call becomes a call of a model-local ONNX
// function whose body is the module's subgraph (torch.export.unflatten, with
// PyTorch's _deduplicate_modules): weights come in as inputs so bodies are
// weight-free, and modules with identical bodies share one function.
//
// Before:  /enc/layers.0/... (174 nodes), /enc/layers.1/... (174 nodes), ...
// After:   %h1 = onnxfold.modules.enc_layers(%h0, %w0, %b0, ...)   name "/enc/layers.0/enc_layers"
//          %h2 = onnxfold.modules.enc_layers(%h1, %w1, %b1, ...)   one body, called 4 times
//
// Granularity (option outline-functions.depth):
//  - "auto" (default): top-down, the outermost modules whose body occurs at least
//    twice are outlined (a repeated block becomes one function called many
//    times); a module that is unique is looked into instead. Bodies need at
//    least outline-functions.min-nodes nodes (default 2).
//  - N: every module at depth N (1 = children of the root) becomes a call,
//    repeated or not.
// outline-functions.nested=1 (auto only) repeats the choice inside the bodies
// made, counting repeats across the main graph and all bodies, so functions call
// functions (minibert: the layer calls LayerNorm and Linear functions, which the
// top-level /ln shares).
// Body node and value names lose the module's path prefix; inline-functions
// puts the caller's back, and the call records the names its path cannot give
// (metadata kOutlineNamesKey). A module is skipped (noted) when one call cannot
// replace it: it holds control flow, a path leaves it and comes back, or no
// position in the node order fits the call.
#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "ir/error.h"
#include "passes/analysis/module_tree.h"
#include "passes/rewrite.h"
#include "passes/unflatten/module_body.h"
#include "passes/unflatten/unflatten_passes.h"

namespace onnxfold {

namespace {

std::string extraOption(const PassContext& ctx, const std::string& key, std::string dflt) {
  auto it = ctx.options().extra.find("outline-functions." + key);
  return it == ctx.options().extra.end() ? dflt : it->second;
}

int64_t intOption(const PassContext& ctx, const std::string& key, int64_t dflt) {
  const std::string text = extraOption(ctx, key, "");
  if (text.empty()) return dflt;
  try {
    size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used == text.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  throw Error("option outline-functions." + key + ": expected a non-negative integer, got '" +
              text + "'");
}

// "/features/features.4/conv/conv.0" -> "features_conv": components without
// their numeric suffixes, repeats dropped, as an identifier.
std::string functionBaseName(const Module& m) {
  auto identifier = [](std::string p) {
    for (char& ch : p) {
      if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    }
    return p;
  };
  auto allDigits = [](const std::string& t) {
    return !t.empty() &&
           std::all_of(t.begin(), t.end(), [](unsigned char ch) { return std::isdigit(ch) != 0; });
  };
  if (!m.cls.empty()) {
    std::string c = m.cls.substr(m.cls.rfind('.') == std::string::npos ? 0 : m.cls.rfind('.') + 1);
    if (!c.empty()) return identifier(c);
  }
  std::vector<std::string> parts;
  for (const Module* x = &m; x != nullptr && x->parent != nullptr; x = x->parent) {
    std::string p = x->name;
    while (!p.empty()) {
      const size_t dot = p.rfind('.');
      if (dot == std::string::npos || !allDigits(p.substr(dot + 1))) break;
      p.resize(dot);
    }
    if (allDigits(p)) continue;  // a Sequential's "0"
    p = identifier(p);
    if (!p.empty() && (parts.empty() || parts.back() != p)) parts.push_back(p);
  }
  std::reverse(parts.begin(), parts.end());
  std::string out;
  for (const std::string& p : parts)
    out += (out.empty() ? "" : "_") + p;
  return out.empty() ? "module" : out;
}

// A name relative to the module: "/enc/layers.0/self_attn/MatMul" -> "/self_attn/MatMul".
std::string relativeTo(const std::string& prefix, const std::string& name) {
  if (!prefix.empty() && name.size() > prefix.size() &&
      name.compare(0, prefix.size(), prefix) == 0 && name[prefix.size()] == '/') {
    return name.substr(prefix.size());
  }
  return name;
}

class OutlineFunctions : public Pass {
 public:
  std::string_view name() const override { return "outline-functions"; }
  std::string_view description() const override {
    return "turn module calls into calls of local functions, one per distinct module body";
  }

  struct Settings {
    int64_t depth;  // < 0: auto
    size_t min_nodes;
    size_t weight_bytes;
    std::string domain;
  };

  // The settings from --extra outline-functions.*: throws on a value it cannot use.
  static Settings settings(const PassContext& ctx) {
    const std::string depth_text = extraOption(ctx, "depth", "auto");
    const int64_t depth = depth_text == "auto" ? -1 : intOption(ctx, "depth", 0);
    intOption(ctx, "nested", 0);
    return Settings{depth, static_cast<size_t>(intOption(ctx, "min-nodes", 2)),
                    static_cast<size_t>(intOption(
                        ctx, "weight-bytes", static_cast<int64_t>(kDefaultWeightConstantBytes))),
                    extraOption(ctx, "domain", kModuleFunctionDomain)};
  }

  std::vector<std::string> extraKeys() const override {
    return {"depth", "nested", "domain", "min-nodes", "weight-bytes"};
  }
  void checkOptions(const PassOptions& options) const override {
    PassContext ctx(options);
    settings(ctx);  // throws on a value it cannot use
  }

  bool run(Model& model, PassContext& ctx) override {
    const Settings set = settings(ctx);
    const bool nested = intOption(ctx, "nested", 0) != 0 && set.depth < 0;
    const std::string& domain = set.domain;

    for (const Function& f : model.functions) {
      if (f.domain == domain) {
        ctx.note("already outlined: the model has functions in " + domain);
        return false;  // outlining the calls again would only nest them
      }
    }
    std::set<std::string> taken;                      // function names in use in our domain
    std::map<std::string, std::string> by_signature;  // body signature -> function name
    std::vector<Graph*> graphs{model.graph.get()};
    bool changed = false;
    // One round outlines in the main graph; with `nested`, later rounds outline inside the
    // bodies made so far too (counting repeats across all of them), until nothing repeats.
    while (round(model, graphs, set, taken, by_signature, ctx)) {
      changed = true;
      if (!nested) break;
      graphs.assign(1, model.graph.get());
      for (Function& f : model.functions) {
        if (f.domain == domain) graphs.push_back(f.body.get());
      }
    }
    if (!changed) return false;
    if (model.opsetVersion(domain) < 0) model.opset_import.push_back({domain, 1, {}});
    // Bodies that got calls in a nested round import the domain too.
    for (Function& f : model.functions) {
      if (f.domain != domain) continue;
      bool calls = false, imports = false;
      for (const Node* n : f.body->nodes())
        calls |= n->domain == domain;
      for (const OpsetId& o : f.opset_import)
        imports |= o.domain == domain;
      if (calls && !imports) f.opset_import.push_back({domain, 1, {}});
    }
    // Local functions need IR version 8.
    model.ir_version = std::max<int64_t>(model.ir_version, 8);
    return true;
  }

 private:
  // The modules of one graph and their bodies.
  struct Site {
    Graph* graph;
    std::unique_ptr<ModuleTree> tree;
    std::unordered_map<const Module*, ModuleBody> bodies;
  };

  bool round(Model& model, const std::vector<Graph*>& graphs, const Settings& set,
             std::set<std::string>& taken, std::map<std::string, std::string>& by_signature,
             PassContext& ctx) {
    std::vector<Site> sites;
    std::map<std::string, size_t> counts;
    for (Graph* g : graphs) {
      Site site{g, std::make_unique<ModuleTree>(*g), {}};
      for (Module* m : site.tree->preorder()) {
        if (m->parent == nullptr) continue;
        const std::vector<Node*> below = site.tree->nodesBelow(*m);
        ModuleBody b = collectModuleBody(*g, below, set.weight_bytes);
        Node* before = nullptr;
        // In a function body, a module holding every node is the function itself.
        if (b.why_not.empty() && g != model.graph.get() &&
            (below.size() == g->numNodes() || b.nodes.size() == g->numNodes() ||
             isBodyOf(model, by_signature, b.signature, g))) {
          b.why_not = "it is the whole function";
        }
        if (b.why_not.empty() && !findCallPosition(*g, b, &before))
          b.why_not = "no place in the node order fits one call";
        if (b.why_not.empty() && set.depth < 0 && b.nodes.size() < set.min_nodes)
          b.why_not = "too small";
        if (b.why_not.empty()) ++counts[b.signature];
        site.bodies.emplace(m, std::move(b));
      }
      sites.push_back(std::move(site));
    }

    // Choose the modules that become calls: (site index, module).
    std::vector<std::pair<size_t, Module*>> selected;
    std::set<std::string> single;  // signatures that ended up called once: look inside instead
    for (bool again = true; again;) {
      selected.clear();
      for (size_t k = 0; k < sites.size(); ++k) {
        const Site& site = sites[k];
        std::function<void(Module&)> visit = [&](Module& m) {
          for (auto& c : m.children) {
            const ModuleBody& b = site.bodies.at(c.get());
            const bool ok = b.why_not.empty();
            if (set.depth >= 0) {
              if (c->depth != set.depth) {
                visit(*c);
              } else if (ok) {
                selected.emplace_back(k, c.get());
              } else {
                ctx.note("kept " + c->path + " inline: " + b.why_not);
              }
              continue;
            }
            const bool repeated = counts[b.signature] >= 2 || by_signature.count(b.signature);
            if (ok && repeated && single.count(b.signature) == 0)
              selected.emplace_back(k, c.get());
            else
              visit(*c);
          }
        };
        visit(site.tree->root());
      }
      again = false;
      if (set.depth >= 0) break;
      std::map<std::string, size_t> chosen;
      for (const auto& [k, m] : selected)
        ++chosen[sites[k].bodies.at(m).signature];
      for (const auto& [sig, n] : chosen) {
        if (n < 2 && by_signature.count(sig) == 0) again |= single.insert(sig).second;
      }
    }
    if (selected.empty()) return false;

    // Group by body, in order of first appearance.
    std::vector<std::vector<std::pair<size_t, Module*>>> groups;
    std::map<std::string, size_t> group_of;
    for (const auto& sel : selected) {
      auto [it, added] =
          group_of.emplace(sites[sel.first].bodies.at(sel.second).signature, groups.size());
      if (added) groups.emplace_back();
      groups[it->second].push_back(sel);
    }
    bool changed = false;
    for (const auto& group : groups) {
      const Module& first = *group.front().second;
      const std::string signature = sites[group.front().first].bodies.at(&first).signature;
      auto known = by_signature.find(signature);
      std::string fname;
      if (known != by_signature.end()) {
        fname = known->second;
      } else {
        fname = functionBaseName(first);
        for (int k = 2; taken.count(fname) != 0; ++k)
          fname = functionBaseName(first) + "_" + std::to_string(k);
      }
      Function fn;
      const Function* target =
          known != by_signature.end() ? findFunction(model, set.domain, fname) : nullptr;
      size_t calls = 0;
      for (const auto& [k, m] : group) {
        Graph& g = *sites[k].graph;
        // Recollect: outlining an earlier module replaced values this one reads.
        ModuleBody b = collectModuleBody(g, sites[k].tree->nodesBelow(*m), set.weight_bytes);
        Node* before = nullptr;
        if (!b.why_not.empty() || b.signature != signature || !findCallPosition(g, b, &before)) {
          ctx.note("kept " + m->path + " inline: it no longer fits one call");
          continue;
        }
        if (target == nullptr && !fn.body) fn = makeFunction(model, b, m->path, fname, set.domain);
        Rewriter rw(model, g, /*notify=*/false);
        replaceWithCall(rw, b, before, target != nullptr ? *target : fn, m->path);
        ++calls;
      }
      if (calls == 0) continue;
      ctx.count("calls", static_cast<int64_t>(calls));
      changed = true;
      if (target != nullptr) continue;
      taken.insert(fname);
      by_signature.emplace(signature, fname);
      ctx.note("function " + fname + ": " + std::to_string(fn.body->numNodes()) + " nodes, " +
               std::to_string(calls) + " calls (" + first.path + (group.size() > 1 ? ", ..." : "") +
               ")");
      ctx.count("functions", 1);
      model.functions.push_back(std::move(fn));
    }
    return changed;
  }

  // Whether `signature` is the body of the function that owns `g` (a call there would recurse).
  static bool isBodyOf(const Model& model, const std::map<std::string, std::string>& by_signature,
                       const std::string& signature, const Graph* g) {
    auto it = by_signature.find(signature);
    if (it == by_signature.end()) return false;
    for (const Function& f : model.functions) {
      if (f.body.get() == g) return f.name == it->second;
    }
    return false;
  }

  static const Function* findFunction(const Model& model, const std::string& domain,
                                      const std::string& name) {
    for (const Function& f : model.functions) {
      if (f.domain == domain && f.name == name) return &f;
    }
    throw Error("outline-functions: function " + name + " went missing");
  }

  static Function makeFunction(Model& model, const ModuleBody& b, const std::string& prefix,
                               const std::string& fname, const std::string& domain) {
    Function fn;
    fn.name = fname;
    fn.domain = domain;
    fn.doc_string = "module " + prefix;
    fn.body = std::make_unique<Graph>();
    Graph& body = *fn.body;
    Rewriter rw(model, body, /*notify=*/false);
    std::unordered_map<const Value*, Value*> map;
    for (Value* v : b.inputs) {
      map[v] = rw.addGraphInput(body.uniqueName(relativeTo(prefix, v->name())), Type());
    }
    std::set<std::string> domains{""};
    for (const Node* n : b.nodes) {
      Node* c = rw.clone(
          *n, [&map](Value* v) { return map.at(v); }, nullptr);
      c->name = relativeTo(prefix, n->name);
      for (size_t j = 0; j < n->numOutputs(); ++j) {
        if (n->output(j) == nullptr) continue;
        rw.rename(c->output(j), body.uniqueName(relativeTo(prefix, n->output(j)->name())));
        map[n->output(j)] = c->output(j);
      }
      domains.insert(isDefaultDomain(n->domain) ? std::string() : n->domain);
    }
    for (Value* v : b.outputs)
      rw.addGraphOutput(map.at(v));
    for (const std::string& d : domains) {
      const int64_t v = model.opsetVersion(d);
      fn.opset_import.push_back({d, v < 0 ? 1 : v, {}});
    }
    return fn;
  }

  // Names inline-functions cannot rebuild from the call's path (unscoped ones like torch's
  // "Constant_67", and every name of a deduplicated instance that differs from the first)
  // go on the call as metadata, so inline(outline(m)) names everything as m did.
  static void recordNames(Node& call, const ModuleBody& b, const Function& fn,
                          const std::string& path) {
    // A reused function whose body a nested round changed no longer lines up with b.
    if (fn.body->numNodes() != b.nodes.size()) return;
    auto scoped = [&path](const std::string& name) {
      return !name.empty() && name[0] == '/' ? path + name : name;
    };
    auto clean = [](const std::string& s) { return s.find_first_of("\t\n") == std::string::npos; };
    std::string record;
    size_t k = 0;
    for (const Node* bn : fn.body->nodes()) {
      const Node* n = b.nodes[k++];
      // Keyed by the body's value names, which are unique in the body and stay valid
      // when a nested round moves other nodes out of it.
      const Value* key = nullptr;
      for (const Value* v : bn->outputs())
        key = key != nullptr ? key : v;
      if (key == nullptr || !clean(key->name())) continue;
      if (scoped(bn->name) != n->name && clean(n->name)) {
        record += "n\t" + key->name() + "\t" + n->name + "\n";
      }
      for (size_t j = 0; j < n->numOutputs() && j < bn->numOutputs(); ++j) {
        const Value* v = n->output(j);
        const Value* bv = bn->output(j);
        if (v == nullptr || bv == nullptr || !clean(v->name()) || !clean(bv->name())) continue;
        if (scoped(bv->name()) != v->name()) record += "v\t" + bv->name() + "\t" + v->name() + "\n";
      }
    }
    if (!record.empty()) call.metadata_props.emplace_back(kOutlineNamesKey, std::move(record));
  }

  static void replaceWithCall(Rewriter& rw, const ModuleBody& b, Node* before, const Function& fn,
                              const std::string& path) {
    Node* call =
        rw.create(fn.name, b.inputs, b.outputs.size(), before, path + "/" + fn.name, {}, fn.domain);
    recordNames(*call, b, fn, path);
    std::vector<std::pair<Value*, std::string>> renames;
    for (size_t j = 0; j < b.outputs.size(); ++j) {
      Value* old = b.outputs[j];
      Value* out = call->output(j);
      out->type = old->type;
      out->in_value_info = old->in_value_info;
      out->doc_string = old->doc_string;
      if (!old->isGraphOutput()) renames.emplace_back(out, old->name());
      rw.replaceValue(old, out);
    }
    // Body nodes in reverse order: users go before the values they use.
    for (auto it = b.nodes.rbegin(); it != b.nodes.rend(); ++it)
      rw.erase(*it);
    for (auto& [v, name] : renames)
      rw.rename(v, name);
  }
};

}  // namespace

std::unique_ptr<Pass> createOutlineFunctions() {
  return std::make_unique<OutlineFunctions>();
}

}  // namespace onnxfold

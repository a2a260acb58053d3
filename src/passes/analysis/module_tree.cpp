#include "passes/analysis/module_tree.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "ir/error.h"

namespace onnxfold {

namespace {

struct Scope {
  bool known = false;  // false: the node says nothing about its module
  std::vector<std::pair<std::string, std::string>> modules;  // (name, class) below the root
  std::string root_class;
};

const std::string* metadata(const Node& n, std::string_view key) {
  for (const auto& [k, v] : n.metadata_props) {
    if (k == key) return &v;
  }
  return nullptr;
}

// torch writes cumulative qualified names ('enc', 'enc.layers.0'); a module's
// own name is the part after its parent's.
std::string relativeName(const std::string& parent, const std::string& full) {
  if (!parent.empty() && full.size() > parent.size() + 1 &&
      full.compare(0, parent.size(), parent) == 0 && full[parent.size()] == '.') {
    return full.substr(parent.size() + 1);
  }
  return full;
}

// name_scopes / class_hierarchy: first entry the root, last the node itself.
Scope scopeFromNameScopes(const Node& n, const std::string& scopes_text) {
  Scope s;
  std::vector<std::string> scopes, classes;
  try {
    scopes = parsePythonStringList(scopes_text);
    if (const std::string* c = metadata(n, "pkg.torch.onnx.class_hierarchy")) {
      classes = parsePythonStringList(*c);
    }
  } catch (const Error& e) {
    throw Error("node " + n.displayName() + ": metadata pkg.torch.onnx.name_scopes: " + e.what());
  }
  if (scopes.empty()) return s;
  s.known = true;
  if (!classes.empty()) s.root_class = classes[0];
  for (size_t k = 1; k + 1 < scopes.size(); ++k) {
    s.modules.emplace_back(relativeName(scopes[k - 1], scopes[k]),
                           k < classes.size() ? classes[k] : std::string());
  }
  return s;
}

// namespace: ": Root/enc: Encoder/enc.layers.0: Layer/linear_3: aten.linear.default".
Scope scopeFromNamespace(const std::string& text) {
  Scope s;
  std::vector<std::pair<std::string, std::string>> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('/', start);
    if (end == std::string::npos) end = text.size();
    const std::string seg = text.substr(start, end - start);
    const size_t colon = seg.find(": ");
    if (colon == std::string::npos)
      parts.emplace_back(seg, "");
    else
      parts.emplace_back(seg.substr(0, colon), seg.substr(colon + 2));
    start = end + 1;
  }
  if (parts.empty()) return s;
  s.known = true;
  s.root_class = parts[0].second;
  for (size_t k = 1; k + 1 < parts.size(); ++k) {
    s.modules.emplace_back(relativeName(parts[k - 1].first, parts[k].first), parts[k].second);
  }
  return s;
}

// "/enc/layers.0/self_attn/MatMul" (TorchScript exporter; tf2onnx writes the same without the
// leading slash): every component but the last is a module.
Scope scopeFromName(const std::string& name) {
  Scope s;
  if (name.find('/') == std::string::npos) return s;
  s.known = true;
  std::vector<std::string> comps;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    comps.push_back(name.substr(start, end - start));
    start = end + 1;
  }
  for (size_t k = 0; k + 1 < comps.size(); ++k) {
    if (!comps[k].empty()) s.modules.emplace_back(comps[k], "");
  }
  return s;
}

Scope scopeOf(const Node& n) {
  if (const std::string* t = metadata(n, "pkg.torch.onnx.name_scopes"))
    return scopeFromNameScopes(n, *t);
  if (const std::string* t = metadata(n, "namespace")) return scopeFromNamespace(*t);
  return scopeFromName(n.name);
}

// The node of `g` that holds `n` (n itself, or the If/Loop whose subgraph has it).
const Node* topLevel(const Graph& g, const Node* n) {
  while (n != nullptr && n->graph() != &g)
    n = n->graph()->ownerNode();
  return n;
}

Module* commonAncestor(Module* a, Module* b) {
  if (a == nullptr) return b;
  while (a->depth > b->depth)
    a = a->parent;
  while (b->depth > a->depth)
    b = b->parent;
  while (a != b) {
    a = a->parent;
    b = b->parent;
  }
  return a;
}

uint64_t tensorBytes(const Tensor& t) {
  if (t.isLoaded()) return t.byteSize();
  const int64_t n = t.numElements();  // unloaded external data: count from the dims
  return n < 0 ? 0 : rawByteSize(t.dtype(), n);
}

void countOps(const Node& n, Module& m) {
  ++m.nodes;
  ++m.ops[isDefaultDomain(n.domain) ? n.op_type : n.domain + "::" + n.op_type];
  n.forEachSubgraph([&m](Graph& sg) {
    for (const Node* s : sg.nodes())
      countOps(*s, m);
  });
}

std::string humanBytes(uint64_t b) {
  char buf[32];
  if (b >= (uint64_t{1} << 20))
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / (1 << 20));
  else if (b >= 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024);
  else
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

}  // namespace

std::vector<std::string> parsePythonStringList(const std::string& text) {
  std::vector<std::string> out;
  size_t i = 0;
  auto skipSpace = [&] {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t'))
      ++i;
  };
  skipSpace();
  if (i >= text.size() || text[i] != '[')
    throw Error("expected a list '[...]', got '" + text + "'");
  ++i;
  skipSpace();
  if (i < text.size() && text[i] == ']') return out;
  while (true) {
    skipSpace();
    if (i >= text.size() || (text[i] != '\'' && text[i] != '"'))
      throw Error("expected a quoted string at offset " + std::to_string(i) + " of '" + text + "'");
    const char quote = text[i++];
    std::string s;
    while (i < text.size() && text[i] != quote) {
      if (text[i] == '\\' && i + 1 < text.size()) ++i;
      s.push_back(text[i++]);
    }
    if (i >= text.size()) throw Error("unterminated string in '" + text + "'");
    ++i;
    out.push_back(std::move(s));
    skipSpace();
    if (i < text.size() && text[i] == ',') {
      ++i;
      continue;
    }
    if (i < text.size() && text[i] == ']') return out;
    throw Error("expected ',' or ']' at offset " + std::to_string(i) + " of '" + text + "'");
  }
}

ModuleTree::ModuleTree(const Graph& g) : root_(std::make_unique<Module>()) {
  std::vector<Node*> unscoped;
  size_t index = 0;
  for (Node* n : g.nodes()) {
    order_[n] = index++;
    const Scope s = scopeOf(*n);
    if (!s.known) {
      unscoped.push_back(n);
      continue;
    }
    if (root_->cls.empty()) root_->cls = s.root_class;
    Module* m = root_.get();
    for (const auto& [name, cls] : s.modules) {
      if (m->depth == kMaxModuleDepth) break;  // a deeper scope stays in its ancestor
      // torch.export names the k-th extra call of a module "name@k": same module, more calls.
      std::string base = name;
      int call = 0;
      const size_t at = name.rfind('@');
      if (at != std::string::npos && at > 0 && at + 1 < name.size() &&
          name.find_first_not_of("0123456789", at + 1) == std::string::npos &&
          name.size() - at < 9) {
        base = name.substr(0, at);
        call = std::stoi(name.substr(at + 1));
      }
      m = child(m, base);
      m->calls = std::max(m->calls, call + 1);
      if (m->cls.empty()) m->cls = cls;
    }
    owner_[n] = m;
  }
  // Users come later in a topologically sorted graph, so walking backwards places
  // every user of an unscoped node first.
  for (auto it = unscoped.rbegin(); it != unscoped.rend(); ++it) {
    Node* n = *it;
    Module* m = nullptr;
    for (const Value* v : n->outputs()) {
      if (v == nullptr) continue;
      if (v->isGraphOutput()) m = root_.get();
      for (const Use& u : v->uses()) {
        const Node* user = topLevel(g, u.user);
        auto found = owner_.find(user);
        m = commonAncestor(m, found == owner_.end() ? root_.get() : found->second);
      }
    }
    owner_[n] = m != nullptr ? m : root_.get();
  }
  for (Node* n : g.nodes())
    owner_[n]->own_nodes.push_back(n);
  summarize();
}

Module* ModuleTree::child(Module* parent, const std::string& name) {
  for (auto& c : parent->children) {
    if (c->name == name) return c.get();
  }
  auto c = std::make_unique<Module>();
  c->name = name;
  c->path = parent->path + "/" + name;
  c->parent = parent;
  c->depth = parent->depth + 1;
  parent->children.push_back(std::move(c));
  return parent->children.back().get();
}

void ModuleTree::summarize() {
  // Bottom-up: each module's initializer set is its nodes' plus its children's.
  std::unordered_map<const Module*, std::unordered_set<const Value*>> params;
  std::vector<Module*> order = preorder();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Module& m = **it;
    std::unordered_set<const Value*>& set = params[&m];
    for (const Node* n : m.own_nodes) {
      countOps(*n, m);
      for (const Value* v : n->inputs()) {
        if (v != nullptr && v->isInitializer()) set.insert(v);
      }
    }
    for (auto& c : m.children) {
      m.nodes += c->nodes;
      for (const auto& [op, k] : c->ops)
        m.ops[op] += k;
      const auto& cs = params[c.get()];
      set.insert(cs.begin(), cs.end());
      params.erase(c.get());
    }
    for (const Value* v : set)
      m.param_bytes += tensorBytes(*v->initializer());
  }
}

Module* ModuleTree::moduleOf(const Node* n) const {
  auto it = owner_.find(n);
  return it == owner_.end() ? nullptr : it->second;
}

std::vector<Node*> ModuleTree::nodesBelow(const Module& m) const {
  std::vector<Node*> out;
  std::vector<const Module*> stack{&m};
  while (!stack.empty()) {
    const Module* x = stack.back();
    stack.pop_back();
    out.insert(out.end(), x->own_nodes.begin(), x->own_nodes.end());
    for (const auto& c : x->children)
      stack.push_back(c.get());
  }
  std::sort(out.begin(), out.end(),
            [this](const Node* a, const Node* b) { return order_.at(a) < order_.at(b); });
  return out;
}

std::vector<Module*> ModuleTree::preorder() const {
  std::vector<Module*> out;
  std::vector<Module*> stack{root_.get()};
  while (!stack.empty()) {
    Module* m = stack.back();
    stack.pop_back();
    out.push_back(m);
    for (auto it = m->children.rbegin(); it != m->children.rend(); ++it)
      stack.push_back(it->get());
  }
  return out;
}

namespace {

nlohmann::ordered_json moduleJson(const Module& m, int max_depth) {
  nlohmann::ordered_json j;
  j["path"] = m.path;
  j["name"] = m.name;
  j["class"] = m.cls;
  j["nodes"] = m.nodes;
  j["own_nodes"] = m.own_nodes.size();
  j["param_bytes"] = m.param_bytes;
  j["ops"] = nlohmann::ordered_json::object();
  for (const auto& [op, k] : m.ops)
    j["ops"][op] = k;
  j["calls"] = m.calls;
  auto& children = j["children"] = nlohmann::ordered_json::array();
  if (max_depth < 0 || m.depth < max_depth) {
    for (const auto& c : m.children)
      children.push_back(moduleJson(*c, max_depth));
  }
  return j;
}

void moduleText(const Module& m, int max_depth, std::string& out) {
  std::string line(static_cast<size_t>(2 * m.depth), ' ');
  line += m.path.empty() ? "/" : m.path;
  if (!m.cls.empty()) line += "  (" + m.cls + ")";
  line += "  " + std::to_string(m.nodes) + (m.nodes == 1 ? " node" : " nodes");
  if (m.param_bytes > 0) line += ", " + humanBytes(m.param_bytes);
  std::vector<std::pair<std::string, size_t>> ops(m.ops.begin(), m.ops.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (!ops.empty()) {
    line += "  [";
    for (size_t k = 0; k < ops.size() && k < 4; ++k) {
      line += (k ? ", " : "") + ops[k].first + " " + std::to_string(ops[k].second);
    }
    line += ops.size() > 4 ? ", ...]" : "]";
  }
  out += line + "\n";
  if (max_depth >= 0 && m.depth >= max_depth) return;
  for (const auto& c : m.children)
    moduleText(*c, max_depth, out);
}

}  // namespace

std::string ModuleTree::toJson(int indent, int max_depth) const {
  // Names come from the model: invalid UTF-8 becomes U+FFFD instead of failing the dump.
  return moduleJson(*root_, max_depth)
      .dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string ModuleTree::toText(int max_depth) const {
  std::string out;
  moduleText(*root_, max_depth, out);
  return out;
}

}  // namespace onnxfold

// graphJson: the main graph as JSON for the web page's graph view.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "api/input.h"
#include "api/onnxfold.h"
#include "ir/printer.h"
#include "passes/analysis/module_tree.h"

namespace onnxfold {

namespace {

using Json = nlohmann::ordered_json;

constexpr size_t kListItems = 8;  // list attributes show this many elements
constexpr size_t kStringChars = 48;

std::string shortString(const std::string& s) {
  return s.size() <= kStringChars ? s : s.substr(0, kStringChars) + "...";
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string tensorShape(const Tensor& t) {
  std::string out(dataTypeName(t.dtype()));
  out += '[';
  for (size_t i = 0; i < t.dims().size(); ++i)
    out += (i ? "," : "") + std::to_string(t.dims()[i]);
  return out + ']';
}

template <typename T, typename F>
std::string list(const std::vector<T>& items, F str) {
  std::string out = "[";
  for (size_t i = 0; i < items.size() && i < kListItems; ++i)
    out += (i ? ", " : "") + str(items[i]);
  if (items.size() > kListItems) out += ", ... (" + std::to_string(items.size()) + ")";
  return out + ']';
}

// One line per attribute: enough to recognise it, never a weight's values.
std::string attrSummary(const Attribute& a) {
  if (!a.ref_attr_name.empty()) return "@" + a.ref_attr_name;
  switch (a.type) {
    case AttrType::kInt:
      return std::to_string(a.i);
    case AttrType::kFloat:
      return number(a.f);
    case AttrType::kString:
      return shortString(a.s);
    case AttrType::kInts:
      return list(a.ints, [](int64_t v) { return std::to_string(v); });
    case AttrType::kFloats:
      return list(a.floats, [](float v) { return number(v); });
    case AttrType::kStrings:
      return list(a.strings, shortString);
    case AttrType::kTensor:
      return tensorShape(a.t);
    case AttrType::kTensors:
      return list(a.tensors, tensorShape);
    case AttrType::kGraph:
      return "subgraph";
    case AttrType::kGraphs:
      return std::to_string(a.graphs.size()) + " subgraphs";
    default:
      return std::string(attrTypeName(a.type));
  }
}

std::string valueType(const Value& v) {
  std::string t = toString(v.type);
  if ((t.empty() || t == "?") && v.initializer() != nullptr) t = tensorShape(*v.initializer());
  return t;
}

Json nameAndType(const Value& v) {
  Json j;
  j["name"] = v.name();
  j["type"] = valueType(v);
  return j;
}

// A stable key for a node across optimize: its name, else its op and first output.
std::string nodeId(const Node& n, size_t index) {
  if (!n.name.empty()) return n.name;
  if (n.numOutputs() > 0 && n.output(0) != nullptr) return n.op_type + ":" + n.output(0)->name();
  return n.op_type + "#" + std::to_string(index);
}

Json modulesJson(const ModuleTree& tree) {
  Json out = Json::array();
  for (const Module* m : tree.preorder()) {
    Json j;
    j["path"] = m->path;
    j["name"] = m->name;
    j["class"] = m->cls;
    j["parent"] = m->parent ? Json(m->parent->path) : Json(nullptr);
    j["depth"] = m->depth;
    j["nodes"] = m->nodes;
    j["own_nodes"] = m->own_nodes.size();
    j["param_bytes"] = m->param_bytes;
    j["ops"] = m->ops;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

std::string graphJson(const ModelInput& model, const GraphJsonOptions& options,
                      const ExternalDataIO& io) {
  // Only shapes are shown, so external weights need not be loaded.
  ReadOptions ro;
  ro.open_external = io.open;
  std::unique_ptr<Model> m = readInput(model, ro);
  const Graph& g = *m->graph;
  const ModuleTree tree(g);

  Json j;
  j["nodes_total"] = g.numNodes();
  j["node_limit"] = options.node_limit;
  const bool by_module = options.modules_only || g.numNodes() > options.node_limit;
  j["level"] = by_module ? "modules" : "nodes";
  // ordered_json keeps its keys in a vector: references into `j` do not survive a new key, so
  // each part is built aside and moved in.
  Json ins = Json::array();
  for (const Value* v : g.inputs()) {
    if (!v->isInitializer()) ins.push_back(nameAndType(*v));
  }
  Json outs = Json::array();
  for (const Value* v : g.outputs())
    outs.push_back(nameAndType(*v));
  j["inputs"] = std::move(ins);
  j["outputs"] = std::move(outs);
  j["modules"] = modulesJson(tree);
  if (by_module) return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);

  Json nodes = Json::array();
  Json values = Json::object();
  Json inits = Json::array();
  auto note = [&](const Value* v) {
    if (v == nullptr || v->name().empty() || values.contains(v->name())) return;
    values[v->name()] = valueType(*v);
    if (v->isInitializer()) inits.push_back(v->name());
  };
  for (const Value* v : g.inputs())
    note(v);
  size_t index = 0;
  for (const Node* n : g.nodes()) {
    Json in = Json::array();
    for (const Value* v : n->inputs()) {
      in.push_back(v ? v->name() : "");
      note(v);
    }
    Json out = Json::array();
    for (const Value* v : n->outputs()) {
      out.push_back(v ? v->name() : "");
      note(v);
    }
    Json attrs = Json::object();
    for (const Attribute& a : n->attributes)
      attrs[a.name] = attrSummary(a);
    const Module* mod = tree.moduleOf(n);
    Json nj;
    nj["id"] = nodeId(*n, index++);
    nj["name"] = n->name;
    nj["op"] = n->op_type;
    nj["domain"] = n->domain;
    nj["inputs"] = std::move(in);
    nj["outputs"] = std::move(out);
    nj["attributes"] = std::move(attrs);
    nj["module"] = mod ? mod->path : "";
    nodes.push_back(std::move(nj));
  }
  j["nodes"] = std::move(nodes);
  j["values"] = std::move(values);
  j["initializers"] = std::move(inits);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace onnxfold

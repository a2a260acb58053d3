// split-constants: the constant graph of a model as a model of its own
// (PyTorch inductor's run_and_get_constant_graph / constant_graph_tag).
//
// A node is constant when the folder could compute it: deterministic, no
// control flow, a kernel in our registry, and every input a weight (an
// initializer that is not a graph input), a Constant or a constant node's
// output. The values where constant nodes feed the rest of the graph are what
// the folder would compute (it turns Constant nodes into initializers too, so
// their values count); prep.onnx computes
// exactly those from the weights, and main.onnx reads them as inputs that carry
// the computed values as initializers, so both run standalone and a user who
// swaps weights re-runs prep only.
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "api/input.h"
#include "api/onnxfold.h"
#include "kernels/op_registry.h"
#include "onnx/reader.h"
#include "onnx/writer.h"
#include "passes/passes.h"
#include "passes/unflatten/module_body.h"
#include "passes/validate.h"

namespace onnxfold {

namespace {

Type typeOf(const Tensor& t) {
  Shape s;
  for (int64_t d : t.dims())
    s.dims.push_back(Dim::known(d));
  return Type::tensor(t.dtype(), s);
}

Tensor detached(const Tensor& src, const std::string& name) {
  Tensor t = src;
  t.name = name;
  t.external.reset();  // written inline: the bytes are loaded
  t.segment.reset();
  return t;
}

struct CountingSink : Sink {
  explicit CountingSink(Sink& s) : inner(s) {}
  void write(const uint8_t* d, size_t n) override {
    inner.write(d, n);
    bytes += n;
  }
  void reserve(uint64_t total) override { inner.reserve(total); }
  Sink& inner;
  uint64_t bytes = 0;
};

// Whether the folder may compute `n` at all (fold-constants' guards).
bool mayCompute(const Node& n, const Model& m, const Options& options,
                const std::unordered_map<const Value*, const Tensor*>& known) {
  if (n.hasSubgraphs()) return false;
  const OpEntry* e = OpRegistry::instance().find(n.domain, n.op_type, m.opsetVersion(n.domain));
  if (e == nullptr || e->compute == nullptr || (e->flags & kOpNondeterministic)) return false;
  if (n.isOp("Dropout") && n.input(2) != nullptr) {
    const Tensor* mode = known.at(n.input(2));
    if (mode->numElements() != 1 || mode->at<uint8_t>(0) != 0) return false;  // training: random
  }
  if (n.isOp("DequantizeLinear") && !options.fold_dequantize_weights && n.input(0) != nullptr &&
      n.input(0)->isInitializer() && isInteger(n.input(0)->initializer()->dtype())) {
    return false;  // kept for quantization, as the folder does
  }
  return true;
}

}  // namespace

std::string SplitReport::toJson(int indent) const {
  nlohmann::ordered_json j;
  j["original_nodes"] = original_nodes;
  j["prep_nodes"] = prep_nodes;
  j["main_nodes"] = main_nodes;
  j["prep_inputs"] = prep_inputs;
  j["values"] = values;
  j["value_bytes"] = value_bytes;
  j["prep_bytes"] = prep_bytes;
  j["main_bytes"] = main_bytes;
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

SplitReport splitConstants(const ModelInput& bytes, Sink& prep_out, Sink& main_out,
                           const Options& options, const ExternalDataIO& io) {
  ReadOptions ro;
  ro.open_external = io.open;
  std::unique_ptr<Model> model = readInput(bytes, ro);
  validateModel(*model);
  Graph& g = *model->graph;
  SplitReport report;
  report.original_nodes = g.numNodes();

  // Evaluate every constant node, in order.
  std::unordered_map<const Value*, const Tensor*> known;
  std::unordered_map<const Value*, Tensor> computed;
  std::unordered_set<const Node*> constant;
  for (const Value* v : g.initializers()) {
    if (v->isConstant() && v->initializer()->isLoaded()) known[v] = v->initializer();
  }
  for (const Node* n : g.nodes()) {
    bool inputs_known = true;
    std::vector<const Tensor*> ins;
    for (const Value* v : n->inputs()) {
      auto it = v ? known.find(v) : known.end();
      if (v != nullptr && it == known.end()) inputs_known = false;
      ins.push_back(v ? (it == known.end() ? nullptr : it->second) : nullptr);
    }
    if (!inputs_known || !mayCompute(*n, *model, options, known)) continue;
    std::vector<Tensor> outs;
    try {
      outs = evaluateNode(*n, model->opsetVersion(n->domain), ins);
    } catch (const std::exception&) {
      continue;  // the folder would leave it too
    }
    constant.insert(n);
    for (size_t k = 0; k < n->numOutputs() && k < outs.size(); ++k) {
      if (const Value* v = n->output(k)) {
        Tensor& t = computed[v] = std::move(outs[k]);
        known[v] = &t;
      }
    }
  }

  // Constant values the rest of the graph reads.
  std::vector<const Value*> boundary;
  for (const Node* n : g.nodes()) {
    if (constant.count(n) == 0) continue;
    for (const Value* v : n->outputs()) {
      if (v == nullptr) continue;
      bool needed = v->isGraphOutput();
      for (const Use& u : v->uses())
        needed |= constant.count(topLevelNode(g, u.user)) == 0;
      if (needed) boundary.push_back(v);
    }
  }
  if (boundary.empty()) {
    std::string hint;
    for (const Value* v : g.initializers()) {
      if (v->isGraphInput()) {
        hint =
            " (its initializers are also graph inputs, so none is a constant: freeze them first, "
            "e.g. `onnxfold optimize --passes freeze`)";
        break;
      }
    }
    throw Error("nothing to split: no node of the model computes from weights alone" + hint);
  }

  // prep: the constant nodes the boundary needs, weights as inputs and initializers.
  std::unordered_set<const Node*> needed;
  std::vector<const Node*> work;
  for (const Value* v : boundary) {
    if (needed.insert(v->producer()).second) work.push_back(v->producer());
  }
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    for (const Value* v : n->inputs()) {
      if (v != nullptr && v->producer() != nullptr && needed.insert(v->producer()).second)
        work.push_back(v->producer());
    }
  }
  Model prep;
  prep.ir_version = std::max<int64_t>(model->ir_version, 4);  // initializers as inputs
  prep.opset_import = model->opset_import;
  prep.producer_name = "onnxfold split-constants";
  prep.producer_version = version();
  Graph& pg = *prep.graph;
  pg.name = g.name.empty() ? "prep" : g.name + "_prep";
  std::unordered_map<const Value*, Value*> map;
  for (const Node* n : g.nodes()) {
    if (needed.count(n) == 0) continue;
    for (const Value* v : n->inputs()) {
      if (v == nullptr || map.count(v) != 0 || !v->isInitializer()) continue;
      Value* w = pg.addInitializer(detached(*v->initializer(), v->name()));
      pg.addInputForInitializer(w);
      ++report.prep_inputs;
      map[v] = w;
    }
    Node* c = pg.cloneNode(*n, [&map](Value* v) { return map.at(v); });
    for (size_t k = 0; k < n->numOutputs(); ++k) {
      if (n->output(k) != nullptr) map[n->output(k)] = c->output(k);
    }
  }

  // main: the boundary values become inputs backed by the computed initializers.
  std::unique_ptr<Model> main = model->clone();
  Graph& mg = *main->graph;
  for (const Value* v : boundary) {
    const Tensor& t = computed.at(v);
    Value* mv = mg.lookupLocal(v->name());
    if (mv == nullptr)
      throw Error("split-constants: value '" + v->name() + "' is missing from the copy");
    std::string iface = v->name();
    if (mv->isGraphOutput()) {
      // The output keeps its name; prep's value gets its own, and an Identity joins them.
      iface = mg.uniqueName(v->name() + "__prep");
      Value* init = mg.addInitializer(detached(t, iface));
      mg.addInputForInitializer(init);
      mv->replaceAllUsesWith(init);
      Node* id = mg.addNode("Identity", {init});
      id->output(0)->type = mv->type;
      mg.replaceOutput(mv, id->output(0));
    } else {
      mv->setName(mg.uniqueName(v->name() + "__computed"));
      Value* init = mg.addInitializer(detached(t, iface));
      mg.addInputForInitializer(init);
      mv->replaceAllUsesWith(init);
    }
    Value* pv = map.at(v);
    if (pv->name() != iface) pv->setName(iface);
    pv->type = typeOf(t);
    pg.addOutput(pv);
    report.values.push_back(iface);
    report.value_bytes += t.byteSize();
  }
  PassOptions po;
  PassContext ctx(po);
  createDeadCodeElimination()->run(*main, ctx);

  report.prep_nodes = pg.numNodes();
  report.main_nodes = mg.numNodes();
  CountingSink ps(prep_out), ms(main_out);
  writeModel(prep, ps);
  writeModel(*main, ms);
  report.prep_bytes = ps.bytes;
  report.main_bytes = ms.bytes;
  return report;
}

}  // namespace onnxfold

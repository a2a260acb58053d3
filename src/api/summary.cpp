#include "api/summary.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ir/printer.h"

namespace onnxfold {

namespace {

void countOps(const Graph& g, ModelSummary& s) {
  for (const Node* n : g.nodes()) {
    ++s.nodes;
    ++s.op_histogram[isDefaultDomain(n->domain) ? n->op_type : n->domain + "::" + n->op_type];
    n->forEachSubgraph([&s](Graph& sg) { countOps(sg, s); });
  }
}

std::string humanBytes(uint64_t b) {
  std::ostringstream os;
  os.precision(3);
  if (b >= (uint64_t{1} << 30))
    os << static_cast<double>(b) / (1 << 30) << " GiB";
  else if (b >= (uint64_t{1} << 20))
    os << static_cast<double>(b) / (1 << 20) << " MiB";
  else if (b >= 1024)
    os << static_cast<double>(b) / 1024 << " KiB";
  else
    os << b << " B";
  return os.str();
}

nlohmann::ordered_json summaryJson(const ModelSummary& s) {
  nlohmann::ordered_json j;
  j["ir_version"] = s.ir_version;
  auto& opsets = j["opsets"] = nlohmann::ordered_json::object();
  for (const auto& [d, v] : s.opsets)
    opsets[d.empty() ? "ai.onnx" : d] = v;
  j["producer"] = s.producer;
  j["nodes"] = s.nodes;
  j["op_histogram"] = s.op_histogram;
  j["initializers"] = s.initializers;
  j["initializer_bytes"] = s.initializer_bytes;
  j["external_initializers"] = s.external_initializers;
  j["overridable_initializers"] = s.overridable_initializers;
  j["functions"] = s.functions;
  auto io = [](const std::vector<ValueSummary>& vs) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (const ValueSummary& v : vs)
      a.push_back({{"name", v.name}, {"type", v.type}});
    return a;
  };
  j["inputs"] = io(s.inputs);
  j["outputs"] = io(s.outputs);
  return j;
}

}  // namespace

ModelSummary summarize(const Model& m) {
  ModelSummary s;
  s.ir_version = m.ir_version;
  for (const OpsetId& o : m.opset_import)
    s.opsets.emplace_back(o.domain, o.version);
  s.producer = m.producer_name + (m.producer_version.empty() ? "" : " " + m.producer_version);
  countOps(*m.graph, s);
  s.initializers = m.graph->initializers().size();
  for (const Value* v : m.graph->initializers()) {
    s.initializer_bytes += v->initializer()->byteSize();
    if (v->initializer()->external) ++s.external_initializers;
  }
  s.functions = m.functions.size();
  for (const Value* v : m.graph->inputs()) {
    if (!v->isInitializer())
      s.inputs.push_back({v->name(), toString(v->type)});
    else
      ++s.overridable_initializers;
  }
  for (const Value* v : m.graph->outputs())
    s.outputs.push_back({v->name(), toString(v->type)});
  return s;
}

std::string ModelSummary::toJson(int indent) const {
  return summaryJson(*this).dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string ModelSummary::toText() const {
  std::ostringstream os;
  os << "ir_version " << ir_version << ", opsets";
  for (const auto& [d, v] : opsets)
    os << " " << (d.empty() ? "ai.onnx" : d) << ":" << v;
  os << "\n";
  if (!producer.empty()) os << "producer " << producer << "\n";
  os << "inputs:\n";
  for (const ValueSummary& v : inputs)
    os << "  " << v.name << ": " << v.type << "\n";
  os << "outputs:\n";
  for (const ValueSummary& v : outputs)
    os << "  " << v.name << ": " << v.type << "\n";
  os << "initializers: " << initializers << " (" << humanBytes(initializer_bytes);
  if (external_initializers) os << ", " << external_initializers << " external";
  if (overridable_initializers) os << ", " << overridable_initializers << " also graph inputs";
  os << ")\n";
  if (functions) os << "functions: " << functions << "\n";
  os << "nodes: " << nodes << "\n";
  std::vector<std::pair<std::string, size_t>> ops(op_histogram.begin(), op_histogram.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [op, n] : ops)
    os << "  " << op << " " << n << "\n";
  return os.str();
}

std::string Report::toJson(int indent) const {
  nlohmann::ordered_json j;
  j["before"] = summaryJson(before);
  j["after"] = summaryJson(after);
  j["iterations"] = iterations;
  j["converged"] = converged;
  j["timing_ms"] = {
      {"read", timing_ms.read}, {"optimize", timing_ms.optimize}, {"write", timing_ms.write}};
  j["shared_ms"] = shared_ms;
  j["input_bytes"] = input_bytes;
  j["input_external_bytes"] = input_external_bytes;
  j["output_bytes"] = output_bytes;
  j["external_bytes"] = external_bytes;
  j["external_files"] = external_files;
  j["depends_on"] = depends_on;
  j["memory"] = {{"peak_tensor_bytes", peak_tensor_bytes},
                 {"peak_heap_bytes", peak_heap_bytes},
                 {"source_bytes_read", source_bytes_read}};
  j["io"] = {{"source_read_ms", source_read_ms},
             {"write_source_read_ms", write_source_read_ms},
             {"sink_write_ms", sink_write_ms},
             {"sink_write_bytes", sink_write_bytes}};
  auto& ps = j["passes"] = nlohmann::ordered_json::array();
  for (const PassRun& p : passes) {
    nlohmann::ordered_json r;
    r["pass"] = p.pass;
    r["iteration"] = p.iteration;
    r["ms"] = p.ms;
    r["changed"] = p.changed;
    r["nodes"] = p.nodes;
    r["initializers"] = p.initializers;
    r["initializer_bytes"] = p.initializer_bytes;
    if (!p.counters.empty()) r["counters"] = p.counters;
    if (!p.notes.empty()) r["notes"] = p.notes;
    if (!p.error.empty()) r["error"] = p.error;
    ps.push_back(std::move(r));
  }
  j["warnings"] = warnings;
  auto& nf = j["not_folded"] = nlohmann::ordered_json::array();
  for (const NodeNote& n : not_folded) {
    nf.push_back({{"node", n.node}, {"op", n.op}, {"reason", n.reason}});
    if (n.would_add_bytes >= 0) nf.back()["would_add_bytes"] = n.would_add_bytes;
    if (n.would_remove_nodes >= 0) nf.back()["would_remove_nodes"] = n.would_remove_nodes;
  }
  if (modules_json.empty() || indent >= 0) {
    if (!modules_json.empty()) j["modules"] = nlohmann::ordered_json::parse(modules_json);
    return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  // Compact (the bindings): the tree's JSON spliced in as the last member, not parsed and
  // dumped again (a fifth of the report's cost on a model of 53 modules, in wasm).
  std::string out = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out.pop_back();  // the closing brace
  out += ",\"modules\":";
  out += modules_json;
  out += '}';
  return out;
}

}  // namespace onnxfold

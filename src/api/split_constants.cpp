// The facade of split-constants (passes/split_constants.h): read, validate, split, write.
#include "passes/split_constants.h"

#include <nlohmann/json.hpp>

#include "api/input.h"
#include "api/onnxfold.h"
#include "kernels/eval_budget.h"
#include "onnx/reader.h"
#include "onnx/writer.h"
#include "passes/validate.h"

namespace onnxfold {

namespace {

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

}  // namespace

std::string SplitReport::toJson(int indent) const {
  nlohmann::ordered_json j;
  j["original_nodes"] = original_nodes;
  j["prep_nodes"] = prep_nodes;
  j["main_nodes"] = main_nodes;
  j["prep_inputs"] = prep_inputs;
  j["values"] = values;
  j["value_bytes"] = value_bytes;
  j["skipped_over_budget"] = skipped_over_budget;
  j["prep_bytes"] = prep_bytes;
  j["main_bytes"] = main_bytes;
  j["nothing_to_split"] = nothing_to_split;
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

SplitReport splitConstants(const ModelInput& bytes, Sink& prep_out, Sink& main_out,
                           const Options& options, const ExternalDataIO& io) {
  const Buffer::ScopedMemoryLimit memory_limit(options.memory_limit);
  const EvalBudget::Scope budget;
  ReadOptions ro;
  ro.open_external = io.open;
  std::unique_ptr<Model> model = readInput(bytes, ro);
  validateModel(*model);
  SplitReport report;
  report.original_nodes = model->graph->numNodes();
  PassOptions po;
  po.size_budget = options.size_budget;
  po.constructor_budget = options.constructor_budget;
  po.fold_dequantize_weights = options.fold_dequantize_weights;
  ConstantSplit split = splitConstantGraph(*model, po, version());
  model.reset();
  report.prep_inputs = split.prep_inputs;
  report.values = std::move(split.values);
  report.value_bytes = split.value_bytes;
  report.skipped_over_budget = split.skipped_over_budget;
  report.nothing_to_split = split.nothing_to_split;
  report.prep_nodes = split.prep->graph->numNodes();
  report.main_nodes = split.main->graph->numNodes();
  CountingSink ps(prep_out), ms(main_out);
  writeModel(*split.prep, ps);
  writeModel(*split.main, ms);
  report.prep_bytes = ps.bytes;
  report.main_bytes = ms.bytes;
  return report;
}

}  // namespace onnxfold

// The facade: read -> pass pipeline -> write, with progress and a report.
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

#include "api/input.h"
#include "api/onnxfold.h"
#include "api/summary.h"
#include "ir/printer.h"
#include "kernels/eval_budget.h"
#include "onnx/reader.h"
#include "onnx/writer.h"
#include "passes/analysis/module_tree.h"
#include "passes/fold_policy.h"
#include "passes/pass_manager.h"
#include "passes/quant/quant_fuse.h"
#include "passes/registry.h"
#include "passes/upgrade_opset.h"
#include "passes/validate.h"

namespace onnxfold {

const char* version() {
#ifdef ONNXFOLD_VERSION
  return ONNXFOLD_VERSION;
#else
  return "0.0.0";
#endif
}

namespace {

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Time and bytes handed to the output's sinks, for the report.
struct SinkCounters {
  double ms = 0;
  uint64_t bytes = 0;
};

// Forwards to a sink, timing its calls and counting their bytes. Time the sink spends
// reading sources (writeBuffer of a weight not in memory) is the sources'
// (MemoryStats::read_ms), not counted here.
class TimedSink : public Sink {
 public:
  TimedSink(Sink& inner, SinkCounters& counters) : inner_(inner), counters_(counters) {}
  TimedSink(std::unique_ptr<Sink> owned, SinkCounters& counters)
      : owned_(std::move(owned)), inner_(*owned_), counters_(counters) {}
  void write(const uint8_t* data, size_t size) override {
    const Scope s(counters_, size);
    inner_.write(data, size);
  }
  void writeBuffer(const Buffer& b) override {
    const Scope s(counters_, b.size());
    inner_.writeBuffer(b);
  }
  void reserve(uint64_t total) override { inner_.reserve(total); }

 private:
  struct Scope {
    Scope(SinkCounters& c, uint64_t n)
        : counters(c), t0(std::chrono::steady_clock::now()), read0(Buffer::memoryStats().read_ms) {
      counters.bytes += n;
    }
    ~Scope() { counters.ms += msSince(t0) - (Buffer::memoryStats().read_ms - read0); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    SinkCounters& counters;
    std::chrono::steady_clock::time_point t0;
    double read0;
  };
  std::unique_ptr<Sink> owned_;
  Sink& inner_;
  SinkCounters& counters_;
};

bool hasExternalTensors(const Model& m) {
  for (const Value* v : m.graph->initializers()) {
    if (v->initializer()->external) return true;
  }
  return false;
}

}  // namespace

ModelSummary inspect(const ModelInput& bytes, const ExternalDataIO& io) {
  ReadOptions ro;
  ro.open_external = io.open;
  std::unique_ptr<Model> m = readInput(bytes, ro);
  return summarize(*m);
}

void validate(const ModelInput& bytes, const ExternalDataIO& io) {
  const EvalBudget::Scope budget;  // inference evaluates constant values: bounded too
  ReadOptions ro;
  ro.open_external = io.open;
  validateModel(*readInput(bytes, ro));
}

std::string modelText(const ModelInput& bytes, const ExternalDataIO& io) {
  ReadOptions ro;
  ro.open_external = io.open;
  return toString(*readInput(bytes, ro));
}

std::vector<std::string> availablePasses() {
  return registeredPasses();
}
std::vector<std::string> defaultPasses() {
  return defaultPipeline();
}

Report optimize(const ModelInput& bytes, Sink& out, const Options& options,
                const ExternalDataIO& io) {
  Report report;
  report.input_bytes = bytes.size();
  auto progress = [&](const char* stage, const std::string& pass, double f) {
    if (options.on_progress) options.on_progress({stage, pass, f});
  };

  // Resolve the pipeline first: an unknown pass name fails before any work.
  PassManagerOptions pmo;
  pmo.max_iterations = options.max_iterations;
  if (options.verify_each) pmo.verify_each = true;
  pmo.cancelled = options.cancelled;
  pmo.on_pass = [&](const std::string& name, size_t i, size_t n, int) {
    progress("optimize", name, 0.1 + 0.8 * static_cast<double>(i) / static_cast<double>(n ? n : 1));
  };
  // Quantization finalize picks its own pipeline (explicit passes still win);
  // an unknown mode fails here, before any work.
  std::vector<std::string> pipeline = defaultPipeline();
  if (!options.quant.empty()) pipeline = quantPipeline(options.quant);
  PassManager pm(pmo);
  pm.addByName(options.passes.empty() ? pipeline : options.passes);
  {
    PassOptions extra;  // --extra settings fail here too, not as a skipped pass
    extra.extra = options.extra;
    checkExtraOptions(extra);
  }

  progress("read", "", 0);
  Buffer::resetPeakMemory();
  const Buffer::ScopedMemoryLimit memory_limit(options.memory_limit);
  const EvalBudget::Scope budget;
  auto t0 = std::chrono::steady_clock::now();
  ReadOptions ro;
  if (io.open) {
    // Each external-data file once, for the report's input size.
    ro.open_external = [&io, &report,
                        seen = std::vector<const Source*>()](const std::string& location) mutable {
      std::shared_ptr<const Source> src = io.open(location);
      if (std::find(seen.begin(), seen.end(), src.get()) == seen.end()) {
        seen.push_back(src.get());
        report.input_external_bytes += src->size();
      }
      return src;
    };
  }
  std::unique_ptr<Model> model = readInput(bytes, ro);
  validateModel(*model);  // an invalid model is refused before any pass
  if (options.target_opset > 0) upgradeOpset(model, options.target_opset);
  report.timing_ms.read = msSince(t0);
  report.before = summarize(*model);
  {
    const ModuleTree tree(*model->graph);
    if (!tree.root().children.empty()) report.modules_json = tree.toJson(-1, 3);
  }

  PassOptions po;
  po.preserve = options.preserve;
  po.size_budget = options.size_budget;
  po.constructor_budget = options.constructor_budget;
  if (options.growth_budget > 0) {
    const int64_t bytes = modelTensorBytes(*model);
    po.max_model_bytes =
        bytes + static_cast<int64_t>(static_cast<double>(bytes) *
                                     static_cast<double>(options.growth_budget) / 100);
  }
  po.fold_dequantize_weights = options.fold_dequantize_weights;
  po.extra = options.extra;
  po.weight_quant = options.weight_quant;
  t0 = std::chrono::steady_clock::now();
  PipelineReport pr = pm.run(model, po);
  // Stages after the pipeline, each its own pass manager: they are written for the optimized
  // float32 graph (its folds and fusions see float weights). Progress never goes back.
  auto stage = [&](const std::vector<std::string>& passes) {
    PassManagerOptions stage_options = pmo;
    stage_options.on_pass = [&](const std::string& name, size_t, size_t, int) {
      progress("optimize", name, 0.9);
    };
    PassManager stage_pm(stage_options);
    stage_pm.addByName(passes);
    PipelineReport r = stage_pm.run(model, po);
    pr.passes.insert(pr.passes.end(), r.passes.begin(), r.passes.end());
    pr.converged = pr.converged && r.converged;
    return r;
  };
  if (!options.weight_quant.mode.empty()) {
    for (const PassRecord& r : stage({"quantize-weights", "dce"}).passes) {
      if (!r.error.empty()) throw Error("quantize: " + r.error);  // never silently float
    }
  }
  if (options.float16) stage({"convert-float16"});
  report.timing_ms.optimize = msSince(t0);
  report.iterations = pr.iterations;
  report.converged = pr.converged;
  std::map<std::string, std::vector<Explanation>> last_explanations;
  for (const PassRecord& r : pr.passes) {
    PassRun run;
    run.pass = r.pass;
    run.iteration = r.iteration;
    run.ms = r.ms;
    run.changed = r.changed;
    run.nodes = {r.before.nodes, r.after.nodes};
    run.initializers = {r.before.initializers, r.after.initializers};
    run.initializer_bytes = {r.before.initializer_bytes, r.after.initializer_bytes};
    run.notes = r.notes;
    run.counters = r.counters;
    run.error = r.error;
    if (!r.error.empty()) {
      report.warnings.push_back("pass '" + r.pass + "' failed and was undone: " + r.error);
    }
    report.passes.push_back(std::move(run));
    // Each pass's last run says why nodes stayed (an earlier run's reasons may be gone).
    auto& why = last_explanations[r.pass];
    why.clear();
    for (const Explanation& e : r.explanations) {
      if (why.empty() || why.back().node != e.node || why.back().reason != e.reason)
        why.push_back(e);  // a pattern's driver may visit a node twice in one run
    }
  }
  for (const PassRun& run : report.passes) {
    auto it = last_explanations.find(run.pass);
    if (it == last_explanations.end()) continue;
    for (const Explanation& e : it->second)
      report.not_folded.push_back(
          {e.node, e.op_type, e.reason, e.would_add_bytes, e.would_remove_nodes});
    last_explanations.erase(it);  // once per pass, in pipeline order
  }
  if (!pr.converged) {
    report.warnings.push_back("the pipeline still changed the model after " +
                              std::to_string(pr.iterations) + " iterations");
  }
  report.after = summarize(*model);

  progress("write", "", 0.9);
  t0 = std::chrono::steady_clock::now();
  WriteOptions wo;
  wo.external_threshold = options.external_data_threshold;
  wo.external_location = options.external_data_location;
  wo.open_external = io.create;
  wo.external_file_limit = options.external_data_file_limit;
  wo.external_chunk_separator = options.external_data_chunk_separator;
  wo.reuse_input_data = options.reuse_input_data;
  if (wo.external_threshold < 0 &&
      (hasExternalTensors(*model) || inlineModelSize(*model) > kMaxProtoBytes)) {
    wo.external_threshold = 1024;
  }
  // Hosts that name files (the CLI) pass "<output>.data"; for bytes in memory (the npm
  // package) the result's externalData map says which name was used.
  if (wo.external_threshold >= 0 && wo.external_location.empty())
    wo.external_location = "model.onnx.data";
  wo.on_progress = [&](uint64_t written, uint64_t total) {
    progress("write", "",
             0.9 + 0.1 * static_cast<double>(written) / static_cast<double>(total ? total : 1));
  };
  const double read_before_write = Buffer::memoryStats().read_ms;
  SinkCounters sinks;
  if (wo.open_external) {
    wo.open_external = [create = wo.open_external, &sinks](const std::string& location) {
      std::unique_ptr<Sink> s = create(location);
      return s ? std::make_unique<TimedSink>(std::move(s), sinks) : nullptr;
    };
  }
  TimedSink timed(out, sinks);
  WriteStats ws = writeModel(*model, timed, wo);
  for (size_t i = 0; i < pr.passes.size() && i < report.passes.size(); ++i) {
    for (const auto& late : pr.passes[i].notes_after_write) {
      std::string line = late();
      if (!line.empty()) report.passes[i].notes.push_back(std::move(line));
    }
  }
  report.sink_write_ms = sinks.ms;
  report.sink_write_bytes = sinks.bytes;
  report.write_source_read_ms = Buffer::memoryStats().read_ms - read_before_write;
  report.output_bytes = ws.model_bytes;
  report.external_bytes = ws.external_bytes;
  report.external_files = ws.external_files;
  report.depends_on = ws.reused_files;
  for (const std::string& f : ws.reused_files)
    report.warnings.push_back("the output refers to the input's data file '" + f +
                              "' (reuse-input-data): keep it beside the output");
  report.timing_ms.write = msSince(t0);
  const MemoryStats mem = Buffer::memoryStats();
  report.peak_tensor_bytes = mem.peak;
  report.source_bytes_read = mem.read;
  report.source_read_ms = mem.read_ms;
  report.peak_heap_bytes = sizeof(void*) == 4 ? Buffer::heapBytes() : 0;
  progress("write", "", 1.0);
  return report;
}

}  // namespace onnxfold

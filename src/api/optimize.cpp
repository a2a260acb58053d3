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
#include "passes/pipeline.h"
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

namespace {

using ProgressFn = std::function<void(const char* stage, const std::string& pass, double f)>;

// The read: parse, validate, raise the opset; the report's input side.
std::unique_ptr<Model> readModel(const ModelInput& bytes, const Options& options,
                                 const ExternalDataIO& io, Report& report) {
  report.input_bytes = bytes.size();
  const auto t0 = std::chrono::steady_clock::now();
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
  const ModuleTree tree(*model->graph);
  if (!tree.root().children.empty()) report.modules_json = tree.toJson(-1, 3);
  return model;
}

// The pipeline's records as the report gives them.
void recordPasses(const PipelineReport& pr, Report& report) {
  report.iterations = pr.iterations;
  report.converged = pr.converged;
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
  }
  for (const Explanation& e : lastExplanations(pr))
    report.not_folded.push_back(
        {e.node, e.op_type, e.reason, e.would_add_bytes, e.would_remove_nodes});
  if (!pr.converged) {
    report.warnings.push_back("the pipeline still changed the model after " +
                              std::to_string(pr.iterations) + " iterations");
  }
}

// The write, with its external-data files; the report's output side. `progress` sees the
// fraction of the write.
void writeOutput(Model& model, Sink& out, const Options& options, const ExternalDataIO& io,
                 const PipelineReport& pr, Report& report,
                 const std::function<void(double)>& progress) {
  report.after = summarize(model);
  progress(0);
  const auto t0 = std::chrono::steady_clock::now();
  WriteOptions wo;
  wo.external_threshold = options.external_data_threshold;
  wo.external_location = options.external_data_location;
  wo.open_external = io.create;
  wo.external_file_limit = options.external_data_file_limit;
  wo.external_chunk_separator = options.external_data_chunk_separator;
  wo.reuse_input_data = options.reuse_input_data;
  chooseExternalData(model, wo);
  wo.on_progress = [&](uint64_t written, uint64_t total) {
    progress(static_cast<double>(written) / static_cast<double>(total ? total : 1));
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
  WriteStats ws = writeModel(model, timed, wo);
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
  progress(1);
}

// Progress and cancellation for a pipeline whose passes are a share [from, from + span) of
// the job.
PassManagerOptions pipelineHooks(const Options& options, const ProgressFn& progress, double from,
                                 double span) {
  PassManagerOptions hooks;
  hooks.cancelled = options.cancelled;
  hooks.on_pass = [progress, from, span](const std::string& name, size_t i, size_t n, int) {
    progress("optimize", name,
             from + span * static_cast<double>(i) / static_cast<double>(n ? n : 1));
  };
  return hooks;
}

}  // namespace

Report optimize(const ModelInput& bytes, Sink& out, const Options& options,
                const ExternalDataIO& io) {
  Report report;
  const ProgressFn progress = [&](const char* stage, const std::string& pass, double f) {
    if (options.on_progress) options.on_progress({stage, pass, f, ""});
  };

  // Resolve the pipeline first: an unknown pass name or setting fails before any work.
  Pipeline pipeline(options, pipelineHooks(options, progress, 0.1, 0.8));

  progress("read", "", 0);
  Buffer::resetPeakMemory();
  const Buffer::ScopedMemoryLimit memory_limit(options.memory_limit);
  const EvalBudget::Scope budget;
  std::unique_ptr<Model> model = readModel(bytes, options, io, report);

  const auto t0 = std::chrono::steady_clock::now();
  const PipelineReport pr = pipeline.run(model);
  report.timing_ms.optimize = msSince(t0);
  recordPasses(pr, report);

  writeOutput(*model, out, options, io, pr, report,
              [&](double f) { progress("write", "", 0.9 + 0.1 * f); });
  return report;
}

std::vector<Report> optimizeVariants(const ModelInput& bytes, const std::vector<VariantFile>& plan,
                                     const std::function<Sink&(const VariantFile&)>& model_sink,
                                     const Options& options, const ExternalDataIO& io) {
  // Each variant's options; only the stages' and the write's may differ from the shared ones.
  std::vector<Options> each;
  for (const VariantFile& v : plan) {
    checkSharedVariantOptions(v);
    Options o = options;
    applyOptionsJson(v.options, o);
    each.push_back(std::move(o));
  }
  // The shared part: one read, one float32 pipeline (no stage of its own). Half the job's
  // progress, the variants the other half.
  const double shared_span = plan.empty() ? 1 : 0.5;
  const double variant_span = plan.empty() ? 0 : 0.5 / static_cast<double>(plan.size());
  std::string current;  // the variant being made, for progress
  const ProgressFn progress = [&](const char* stage, const std::string& pass, double f) {
    if (options.on_progress) options.on_progress({stage, pass, f, current});
  };
  Options shared = options;
  shared.float16 = false;
  shared.weight_quant.mode.clear();
  // A variant's stages report where the variant stands (`at`), not past the shared pipeline.
  double at = 0;
  PassManagerOptions hooks = pipelineHooks(options, progress, 0.1 * shared_span, 0.9 * shared_span);
  hooks.on_pass = [shared_pass = hooks.on_pass, &current, &progress, &at](
                      const std::string& name, size_t i, size_t n, int iteration) {
    if (current.empty())
      shared_pass(name, i, n, iteration);
    else
      progress("optimize", name, at);
  };
  Pipeline pipeline(shared, hooks);

  progress("read", "", 0);
  Buffer::resetPeakMemory();
  const Buffer::ScopedMemoryLimit memory_limit(options.memory_limit);
  const EvalBudget::Scope budget;
  Report base;
  std::unique_ptr<Model> model = readModel(bytes, shared, io, base);
  auto t0 = std::chrono::steady_clock::now();
  const PipelineReport main = pipeline.runMain(model);
  base.timing_ms.optimize = msSince(t0);
  base.shared_ms = base.timing_ms.read + base.timing_ms.optimize;

  std::vector<Report> reports;
  for (size_t i = 0; i < plan.size(); ++i) {
    const double from = shared_span + variant_span * static_cast<double>(i);
    current = plan[i].dtype;
    at = from;
    // An error names the variant it stopped.
    try {
      Buffer::resetPeakMemory();
      Report report = base;
      std::unique_ptr<Model> copy = model->clone();
      t0 = std::chrono::steady_clock::now();
      progress("optimize", "", from);
      const PipelineReport stages = pipeline.runStages(copy, each[i]);
      report.timing_ms.optimize += msSince(t0);
      PipelineReport pr = main;
      pr.append(stages);
      recordPasses(pr, report);
      writeOutput(*copy, model_sink(plan[i]), each[i], io, pr, report,
                  [&](double f) { progress("write", "", from + variant_span * (0.5 + 0.5 * f)); });
      reports.push_back(std::move(report));
    } catch (const ResourceError& e) {
      throw ResourceError("variant " + plan[i].dtype + ": " + e.what());
    } catch (const std::exception& e) {
      throw Error("variant " + plan[i].dtype + ": " + e.what());
    }
  }
  return reports;
}

}  // namespace onnxfold

// onnxfold's one facade: bytes in, optimized bytes out, plus a report.
//
// The CLI, the wasm bindings, the tests and the benchmarks all go through
// this header; it exposes no protobuf or IR types. Errors are onnxfold::Error
// with a message that says what is wrong and where.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/buffer.h"
#include "ir/error.h"
#include "ir/sink.h"
#include "passes/pipeline_options.h"

namespace onnxfold {

const char* version();

struct Progress {
  std::string stage;    // "read", "optimize", "write"
  std::string pass;     // the pass about to run (stage "optimize")
  double fraction = 0;  // 0..1 over the whole job
  std::string variant;  // optimizeVariants: the dtype being made ("" while shared work runs)
};

// Pass settings and the pipeline's choices come from PipelineOptions (passes/pipeline_options.h,
// where their defaults are); the rest is the facade's: opset, writing and the host.
struct Options : PipelineOptions {
  // Before the pipeline: raise the default-domain opset to this (0: keep the model's), where
  // every op computes the same there (passes/upgrade_opset.h), so fusions into newer ops
  // (LayerNormalization 17, Gelu 20, RMSNormalization 23) apply. A model at or above it is kept.
  int64_t target_opset = 0;
  // Tensors of at least this many bytes are written to external data.
  // -1: automatic (external if the input used external data or the model would
  // pass protobuf's 2 GiB limit, with a 1 KiB threshold).
  int64_t external_data_threshold = -1;
  // Name of the external-data file, relative to the output model (default "model.onnx.data";
  // the CLI uses "<output>.data").
  std::string external_data_location;
  // Largest external-data file in bytes (0: no limit); more weights go to
  // "<location>.1", "<location>.2", ... (ORT-web and transformers.js take 2 GB a file).
  uint64_t external_data_file_limit = 0;
  // What joins the location and the number of a further external-data file: "."
  // ("<location>.1") or "_" ("<location>_1", as transformers.js names them).
  std::string external_data_chunk_separator = ".";
  // Most bytes tensor storage may take (0: no limit; in wasm: the whole heap). A run
  // that needs more fails with an Error saying so; the report gives the peak.
  uint64_t memory_limit = 0;
  // Unchanged weights of the input's external-data files are referred to, not copied (the
  // output must be beside the input and then depends on its data files).
  bool reuse_input_data = false;
  std::function<void(const Progress&)> on_progress;
  // Polled between passes; returning true abandons the job with Error("cancelled").
  std::function<bool()> cancelled;
};

// A model to read: its bytes in memory, or a Source (a file the host reads on
// demand; its large raw_data weights then stay in it, see onnx/skeleton.h).
struct ModelInput {
  ModelInput(Buffer b) : bytes(std::move(b)) {}  // NOLINT: implicit, as before
  ModelInput(std::shared_ptr<const Source> s) : source(std::move(s)) {}  // NOLINT
  Buffer bytes;
  std::shared_ptr<const Source> source;
  uint64_t size() const { return source ? source->size() : bytes.size(); }
};

// One option as every front end names it (defined once, in api/options.cpp).
struct OptionSpec {
  std::string name;       // npm / web: "sizeBudget"
  std::string flag;       // CLI: "--size-budget"
  std::string type;       // "integer", "boolean", "string", "string[]" or "object"
  std::string type_help;  // for errors: "an integer"
  std::string help;
  bool split_constants = false;     // splitConstants takes it too
  std::vector<std::string> values;  // an enumeration's values ("" aside, where it means off)
  std::string default_json;         // the default (Options{}'s value) as JSON, set by the table
};
const std::vector<OptionSpec>& optionSpecs();
// Applies a JSON object of options by name ({"sizeBudget": 0, ...}); an unknown name or
// a value of the wrong type is an Error naming the option.
void applyOptionsJson(const std::string& json, Options& options);
// The table as JSON: [{name, flag, type, help}, ...].
std::string optionSpecsJson();

// One model variant as transformers.js names it (defined once, in api/variants.cpp).
struct VariantSpec {
  std::string dtype;    // transformers.js's dtype: "fp32", "fp16", ...
  std::string suffix;   // of the file name: "" (model.onnx), "_fp16" (model_fp16.onnx), ...
  std::string options;  // JSON object of the options that make it (applyOptionsJson)
  std::string help;
};
const std::vector<VariantSpec>& variantSpecs();
// One file to write: the variant `dtype` of a model as `file`, made with `options` (JSON,
// applied over the caller's: the variant's own and external data as transformers.js reads it,
// "<file>_data", "<file>_data_1", ... each under 2 GB).
struct VariantFile {
  std::string dtype;
  std::string file;
  std::string options;
};
// The files for `dtypes` (all known when empty) of the model `name` ("model" ->
// "model.onnx", "model_fp16.onnx", ...); an unknown or repeated dtype, or a name with a
// folder, is an Error.
std::vector<VariantFile> variantPlan(const std::string& name,
                                     const std::vector<std::string>& dtypes);
// The same as JSON: [{dtype, file, options, help}, ...].
std::string variantPlanJson(const std::string& name, const std::vector<std::string>& dtypes);
// An Error unless `v` sets only options of the stages after the pipeline (float16,
// quantization) and of the write, which is what lets variants share one read and pipeline.
void checkSharedVariantOptions(const VariantFile& v);

// How the host reads and writes external-data files (files natively, buffers in JS).
struct ExternalDataIO {
  // Whole content of the file at `location` (a checked relative path). Unset:
  // external tensors stay unloaded and are written back as references.
  std::function<std::shared_ptr<const Source>(const std::string& location)> open;
  // A sink for a new external-data file.
  std::function<std::unique_ptr<Sink>(const std::string& location)> create;
};

struct ValueSummary {
  std::string name;
  std::string type;  // e.g. "float32[batch,3,224,224]"
};

struct ModelSummary {
  int64_t ir_version = 0;
  std::vector<std::pair<std::string, int64_t>> opsets;  // domain ("" = ai.onnx), version
  std::string producer;
  size_t nodes = 0;                            // including nodes inside subgraphs
  std::map<std::string, size_t> op_histogram;  // "Conv" or "domain::Op" -> count
  size_t initializers = 0;
  uint64_t initializer_bytes = 0;
  size_t external_initializers = 0;
  size_t overridable_initializers = 0;  // initializers also listed as graph inputs
  size_t functions = 0;
  std::vector<ValueSummary> inputs;  // graph inputs that are not initializers
  std::vector<ValueSummary> outputs;

  std::string toJson(int indent = 2) const;
  std::string toText() const;
};

// Field names are the report JSON's keys (toJson), so each figure has one name in C++, JSON
// and JS.
struct PassRun {
  std::string pass;
  int iteration = 0;
  double ms = 0;
  bool changed = false;
  // [before, after] the run
  std::array<size_t, 2> nodes{};
  std::array<size_t, 2> initializers{};
  std::array<uint64_t, 2> initializer_bytes{};
  std::vector<std::string> notes;
  std::map<std::string, int64_t> counters;
  std::string error;  // the pass failed and was undone
};

// A node the optimizer left in place, and why (e.g. why it was not folded).
struct NodeNote {
  std::string node;
  std::string op;
  std::string reason;
  // Refused by the size budget: the bytes folding it would add (-1: another reason). A
  // budget of at least this folds it (the page's budget explorer runs those budgets).
  int64_t would_add_bytes = -1;
  // Then also the nodes that go with it: the node and those that feed only it.
  int64_t would_remove_nodes = -1;
};

struct Report {
  ModelSummary before;
  ModelSummary after;
  std::vector<PassRun> passes;
  int iterations = 0;
  bool converged = true;
  struct TimingMs {
    double read = 0, optimize = 0, write = 0;
  } timing_ms;
  // optimizeVariants: the part of read + optimize done once for all variants (and counted in
  // each one's timing); 0 for optimize.
  double shared_ms = 0;
  uint64_t input_bytes = 0;           // the .onnx file
  uint64_t input_external_bytes = 0;  // the external-data files it refers to
  uint64_t output_bytes = 0;
  uint64_t external_bytes = 0;              // written to external data
  std::vector<std::string> external_files;  // their locations, in order
  std::vector<std::string> depends_on;      // input data files the output refers to
  // Memory: the most tensor storage held at once, the wasm heap's size at the end
  // (its peak: it never shrinks; natively 0), and bytes read from sources.
  uint64_t peak_tensor_bytes = 0;
  uint64_t peak_heap_bytes = 0;
  uint64_t source_bytes_read = 0;
  // I/O profile: time reading (or computing) source bytes, all stages and during the write
  // alone; time and bytes handed to the output sink (its own source reads not included).
  double source_read_ms = 0;
  double write_source_read_ms = 0;
  double sink_write_ms = 0;
  uint64_t sink_write_bytes = 0;
  std::vector<std::string> warnings;
  // From the last run of each pass that explains itself (constant folding).
  std::vector<NodeNote> not_folded;
  // The input's module hierarchy (moduleTreeJson, three levels deep), as JSON; empty when
  // its nodes carry no module scopes.
  std::string modules_json;

  std::string toJson(int indent = 2) const;
};

// Checks the model against ONNX's rules (passes/validate.h lists them): returns when it is
// valid, throws ValidationError (or ParseError) naming the first problem otherwise.
void validate(const ModelInput& model, const ExternalDataIO& io = {});

// Summary of a model (the CLI's `info`).
ModelSummary inspect(const ModelInput& model, const ExternalDataIO& io = {});

// The whole model as readable text, one node per line (the CLI's `info --graph`).
std::string modelText(const ModelInput& model, const ExternalDataIO& io = {});

// Reads `model`, runs the pipeline, writes the result to `out`.
Report optimize(const ModelInput& model, Sink& out, const Options& options = {},
                const ExternalDataIO& io = {});

// Every variant of `plan` (variantPlan) from one read and one run of the float32 pipeline:
// each variant is a copy of its result (tensor bytes shared) through its own stages, written to
// model_sink(variant) with its external-data files through io.create. `options` are the
// caller's; each variant's own go over them. One report per variant, in plan order, each what
// optimize with the variant's options gives, with identical bytes (but for shared_ms).
std::vector<Report> optimizeVariants(const ModelInput& model, const std::vector<VariantFile>& plan,
                                     const std::function<Sink&(const VariantFile&)>& model_sink,
                                     const Options& options = {}, const ExternalDataIO& io = {});

// Registered pass names and the default pipeline.
std::vector<std::string> availablePasses();
std::vector<std::string> defaultPasses();

// --- Unflatten (module hierarchy) and constant-graph split

// The module tree recovered from node names / torch metadata, as JSON (path,
// name, class, nodes, own_nodes, param_bytes, ops, calls, children) or as an
// indented listing down to `max_depth` (< 0: all).
std::string moduleTreeJson(const ModelInput& model, const ExternalDataIO& io = {},
                           int max_depth = -1);
std::string moduleTreeText(const ModelInput& model, int max_depth = -1,
                           const ExternalDataIO& io = {});

// The main graph for display (the page's graph view): nodes with op, inputs, outputs, a short
// attribute summary and module path, value types, initializers, graph inputs/outputs, and the
// module summary. Above `node_limit` nodes (or with modules_only) only the modules are given,
// so a viewer never lays out a huge graph.
struct GraphJsonOptions {
  size_t node_limit = 5000;
  bool modules_only = false;
};
std::string graphJson(const ModelInput& model, const GraphJsonOptions& options = {},
                      const ExternalDataIO& io = {});
// graphJson's options as the front ends name them (nodeLimit, modulesOnly), in the option
// table's form (api/options.cpp): their specs, applying a JSON object of them, the specs as JSON.
const std::vector<OptionSpec>& graphOptionSpecs();
void applyGraphOptionsJson(const std::string& json, GraphJsonOptions& options);
std::string graphOptionSpecsJson();

struct SplitReport {
  size_t original_nodes = 0;
  size_t prep_nodes = 0;  // nodes computing from weights only
  size_t main_nodes = 0;
  size_t prep_inputs = 0;                   // weights prep reads (its inputs and initializers)
  std::vector<std::string> values;          // prep outputs = main inputs with initializers
  uint64_t value_bytes = 0;                 // bytes of those values
  size_t skipped_over_budget = 0;           // constant nodes left in main by the size budgets
  uint64_t prep_bytes = 0, main_bytes = 0;  // written model sizes
  // Why nothing was split, when nothing was: prep is empty and main is the model.
  std::string nothing_to_split;
  std::string toJson(int indent = 2) const;
};

// Splits off the constant graph: `prep` computes, from the weights (its inputs,
// also its initializers), every value the folder would compute that the rest
// needs; `main` takes those values as inputs backed by initializers. Running prep
// then main (prep's outputs fed by name) computes what the model does.
// Options used: fold_dequantize_weights, size_budget, constructor_budget (a constant node
// whose result outgrows what it reads by more stays in main), memory_limit.
SplitReport splitConstants(const ModelInput& model, Sink& prep, Sink& main,
                           const Options& options = {}, const ExternalDataIO& io = {});

}  // namespace onnxfold

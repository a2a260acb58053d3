// The options every front end takes, defined once (api/onnxfold.h: optionSpecs): the CLI
// builds its flags from this table, the wasm bindings apply the npm/web options object with
// applyOptionsJson, js/options.js validates option names against optionSpecsJson, and a test
// checks js/index.d.ts against it.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "api/onnxfold.h"
#include "passes/quant/quant_fuse.h"

namespace onnxfold {

namespace {

using Json = nlohmann::json;

// One option of a table over the options struct O (Options, GraphJsonOptions).
template <class O>
struct EntryOf {
  OptionSpec spec;
  void (*apply)(O&, const Json&, const OptionSpec&);
  Json (*get)(const O&);  // the option's value in `o` (its default, from O{})
};
using Entry = EntryOf<Options>;

template <class T>
T as(const Json& v, const OptionSpec& s) {
  try {
    return v.get<T>();
  } catch (const Json::exception&) {
    throw Error("option " + s.name + ": expected " + s.type_help);
  }
}

// An enumeration: `v` must be one of the spec's values ("" too, meaning off, when `off`).
void oneOf(const std::string& v, const OptionSpec& s, const char* what, bool off = false) {
  if ((off && v.empty()) || std::find(s.values.begin(), s.values.end(), v) != s.values.end())
    return;
  std::string list;
  for (const std::string& x : s.values)
    list += (list.empty() ? "" : ", ") + x;
  throw Error("option " + s.name + ": unknown " + what + " '" + v + "' (valid " + what +
              "s: " + list + ")");
}

// The table. Types: "integer", "boolean", "string", "string[]", "object" (string values).
const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = {
      {{"passes", "--passes", "string[]", "an array of pass names",
        "Pass names, run in order to a fixpoint (default: the default pipeline; see `onnxfold "
        "passes`)"},
       [](Options& o, const Json& v, const OptionSpec& s) {
         o.passes = as<std::vector<std::string>>(v, s);
       },
       [](const Options& o) { return Json(o.passes); }},
      {{"preserve", "--preserve", "string[]", "an array of strings",
        "Graph inputs (names or globs) that freezing keeps as inputs"},
       [](Options& o, const Json& v, const OptionSpec& s) {
         o.preserve = as<std::vector<std::string>>(v, s);
       },
       [](const Options& o) { return Json(o.preserve); }},
      {{"sizeBudget", "--size-budget", "integer", "an integer",
        "Largest growth in bytes one constant fold may add", true},
       [](Options& o, const Json& v, const OptionSpec& s) { o.size_budget = as<int64_t>(v, s); },
       [](const Options& o) { return Json(o.size_budget); }},
      {{"constructorBudget", "--constructor-budget", "integer", "an integer",
        "The same for ConstantOfShape/Expand/Tile/Range/EyeLike", true},
       [](Options& o, const Json& v, const OptionSpec& s) {
         o.constructor_budget = as<int64_t>(v, s);
       },
       [](const Options& o) { return Json(o.constructor_budget); }},
      {{"growthBudget", "--growth-budget", "integer", "a non-negative integer",
        "Percent of the input's weight bytes that folds over their own budget may add in all "
        "(0: none)"},
       [](Options& o, const Json& v, const OptionSpec& s) {
         o.growth_budget = as<int64_t>(v, s);
         if (o.growth_budget < 0) throw Error("option " + s.name + ": expected " + s.type_help);
       },
       [](const Options& o) { return Json(o.growth_budget); }},
      {{"foldDequantizeWeights", "--fold-dequantize-weights", "boolean", "a boolean",
        "Fold DequantizeLinear of integer weights too (normally kept for quantization)", true},
       [](Options& o, const Json& v, const OptionSpec& s) {
         o.fold_dequantize_weights = as<bool>(v, s);
       },
       [](const Options& o) { return Json(o.fold_dequantize_weights); }},
      {{"quant", "--quant", "string", "a string",
        "Quantization finalize of a QDQ model: qoperator (QLinear* ops), integer "
        "(ConvInteger/MatMulInteger + float rescale) or qdq-clean (weights folded, QDQ layout "
        "kept)",
        false, quantModes()},
       [](Options& o, const Json& v, const OptionSpec& s) {
         o.quant = as<std::string>(v, s);
         oneOf(o.quant, s, "mode", true);
       },
       [](const Options& o) { return Json(o.quant); }},
      {{"quantize",
        "--quantize",
        "string",
        "a string",
        "Weight-only quantization after the pipeline: int4 (blocked MatMul weights), int8 "
        "(per-channel MatMul/Gemm/Conv weights) or q8 (DynamicQuantizeLinear + MatMulInteger "
        "with uint8 MatMul weights); see quantFormat",
        false,
        {"int4", "int8", "q8"}},
       [](Options& o, const Json& v, const OptionSpec& s) {
         o.weight_quant.mode = as<std::string>(v, s);
         oneOf(o.weight_quant.mode, s, "mode", true);
       },
       [](const Options& o) { return Json(o.weight_quant.mode); }},
      {{"quantFormat",
        "--quant-format",
        "string",
        "a string",
        "How quantized weights are written: qdq (DequantizeLinear; int4 needs opset 21) "
        "or ort (int4 as com.microsoft MatMulNBits)",
        false,
        {"qdq", "ort"}},
       [](Options& o, const Json& v, const OptionSpec& s) {
         o.weight_quant.format = as<std::string>(v, s);
         oneOf(o.weight_quant.format, s, "format");
       },
       [](const Options& o) { return Json(o.weight_quant.format); }},
      {{"quantBlockSize", "--quant-block-size", "integer", "a power of two from 16 to 256",
        "int4 block length along K"},
       [](Options& o, const Json& v, const OptionSpec& s) {
         o.weight_quant.block_size = as<int64_t>(v, s);
         const int64_t b = o.weight_quant.block_size;
         if (b < 16 || b > 256 || (b & (b - 1)) != 0)
           throw Error("option " + s.name + ": expected " + s.type_help + ", got " +
                       std::to_string(b));
       },
       [](const Options& o) { return Json(o.weight_quant.block_size); }},
      {{"quantSymmetric", "--quant-symmetric", "boolean", "a boolean",
        "Symmetric quantization, zero point 0 (false: unsigned with zero points)"},
       [](Options& o, const Json& v, const OptionSpec& s) {
         o.weight_quant.symmetric = as<bool>(v, s);
       },
       [](const Options& o) { return Json(o.weight_quant.symmetric); }},
      {{"quantOps", "--quant-ops", "string[]", "an array of op types",
        "Op types whose weights are quantized (default: int4 and q8 MatMul; int8 MatMul, Gemm, "
        "Conv; int4 ort also takes Gather: GatherBlockQuantized)"},
       [](Options& o, const Json& v, const OptionSpec& s) {
         o.weight_quant.ops = as<std::vector<std::string>>(v, s);
       },
       [](const Options& o) { return Json(o.weight_quant.ops); }},
      {{"quantExclude", "--quant-exclude", "string[]", "an array of strings",
        "Node names (or globs) whose weights stay float"},
       [](Options& o, const Json& v, const OptionSpec& s) {
         o.weight_quant.exclude = as<std::vector<std::string>>(v, s);
       },
       [](const Options& o) { return Json(o.weight_quant.exclude); }},
      {{"quantAccuracyLevel", "--quant-accuracy-level", "integer", "an integer from 0 to 4",
        "MatMulNBits accuracy_level (0: not written, as onnxruntime's quantizer; 4: int8 "
        "compute)"},
       [](Options& o, const Json& v, const OptionSpec& s) {
         o.weight_quant.accuracy_level = as<int64_t>(v, s);
         if (o.weight_quant.accuracy_level < 0 || o.weight_quant.accuracy_level > 4)
           throw Error("option " + s.name + ": expected " + s.type_help);
       },
       [](const Options& o) { return Json(o.weight_quant.accuracy_level); }},
      {{"float16", "--float16", "boolean", "a boolean",
        "Convert float32 weights and computation to float16 after the pipeline (inputs and "
        "outputs stay float32; ops that overflow in float16 stay float32)"},
       [](Options& o, const Json& v, const OptionSpec& s) { o.float16 = as<bool>(v, s); },
       [](const Options& o) { return Json(o.float16); }},
      {{"targetOpset", "--target-opset", "integer", "a non-negative integer",
        "Raise the default-domain opset to this before optimizing, where every op computes the "
        "same there (else an error names the op), so LayerNormalization (17), Gelu (20) and "
        "RMSNormalization (23) fusions apply (default: keep the model's)"},
       [](Options& o, const Json& v, const OptionSpec& s) {
         o.target_opset = as<int64_t>(v, s);
         if (o.target_opset < 0) throw Error("option " + s.name + ": expected " + s.type_help);
       },
       [](const Options& o) { return Json(o.target_opset); }},
      {{"maxIterations", "--max-iterations", "integer", "an integer",
        "Cap on pipeline repetitions"},
       [](Options& o, const Json& v, const OptionSpec& s) { o.max_iterations = as<int>(v, s); },
       [](const Options& o) { return Json(o.max_iterations); }},
      {{"verify", "--verify", "boolean", "a boolean", "Run the IR verifier after every pass"},
       [](Options& o, const Json& v, const OptionSpec& s) { o.verify_each = as<bool>(v, s); },
       [](const Options& o) { return Json(o.verify_each); }},
      {{"externalDataThreshold", "--external-data-threshold", "integer", "an integer",
        "Write tensors of at least this many bytes to an external-data file (default: keep "
        "the input's choice)"},
       [](Options& o, const Json& v, const OptionSpec& s) {
         o.external_data_threshold = as<int64_t>(v, s);
       },
       [](const Options& o) { return Json(o.external_data_threshold); }},
      {{"externalDataLocation", "--external-data-location", "string", "a string",
        "External-data file name, beside the output (default: <output file name>.data)"},
       [](Options& o, const Json& v, const OptionSpec& s) {
         o.external_data_location = as<std::string>(v, s);
       },
       [](const Options& o) { return Json(o.external_data_location); }},
      {{"externalDataFileLimit", "--external-data-file-limit", "integer", "a non-negative integer",
        "Largest external-data file in bytes; more weights go to <location>.1, .2, ... (e.g. "
        "2000000000 for ONNX Runtime Web)"},
       [](Options& o, const Json& v, const OptionSpec& s) {
         o.external_data_file_limit = as<uint64_t>(v, s);
       },
       [](const Options& o) { return Json(o.external_data_file_limit); }},
      {{"externalDataChunkSeparator",
        "--external-data-chunk-separator",
        "string",
        "'.' or '_'",
        "What joins the external-data file name and the number of a further file: '.' "
        "(<location>.1) or '_' (<location>_1, as transformers.js names them)",
        false,
        {".", "_"}},
       [](Options& o, const Json& v, const OptionSpec& s) {
         const std::string sep = as<std::string>(v, s);
         if (std::find(s.values.begin(), s.values.end(), sep) == s.values.end())
           throw Error("option " + s.name + ": expected " + s.type_help);
         o.external_data_chunk_separator = sep;
       },
       [](const Options& o) { return Json(o.external_data_chunk_separator); }},
      {{"memoryLimit", "--memory-limit", "integer", "a non-negative integer",
        "Fail rather than hold more than this many bytes of tensors (in wasm: of heap)", true},
       [](Options& o, const Json& v, const OptionSpec& s) { o.memory_limit = as<uint64_t>(v, s); },
       [](const Options& o) { return Json(o.memory_limit); }},
      {{"reuseInputData", "--reuse-input-data", "boolean", "a boolean",
        "Refer to the input's external-data files for unchanged weights instead of copying them "
        "(the output must be beside the input, and then needs its data files)"},
       [](Options& o, const Json& v, const OptionSpec& s) { o.reuse_input_data = as<bool>(v, s); },
       [](const Options& o) { return Json(o.reuse_input_data); }},
      {{"extra", "--extra", "object", "an object of strings",
        "Pass settings KEY=VALUE, e.g. outline-functions.depth=1"},
       [](Options& o, const Json& v, const OptionSpec& s) {
         o.extra = as<std::map<std::string, std::string>>(v, s);
       },
       [](const Options& o) { return Json(o.extra); }},
  };
  return table;
}

// graph()'s options (the page's graph view; api/onnxfold.h GraphJsonOptions).
const std::vector<EntryOf<GraphJsonOptions>>& graphEntries() {
  static const std::vector<EntryOf<GraphJsonOptions>> table = {
      {{"nodeLimit", "--node-limit", "integer", "a non-negative integer",
        "Above this many nodes only the module summary is given"},
       [](GraphJsonOptions& o, const Json& v, const OptionSpec& s) {
         if (!v.is_number_unsigned()) throw Error("option " + s.name + ": expected " + s.type_help);
         o.node_limit = v.get<size_t>();
       },
       [](const GraphJsonOptions& o) { return Json(o.node_limit); }},
      {{"modulesOnly", "--modules-only", "boolean", "a boolean",
        "Only the module summary, whatever the size"},
       [](GraphJsonOptions& o, const Json& v, const OptionSpec& s) {
         o.modules_only = as<bool>(v, s);
       },
       [](const GraphJsonOptions& o) { return Json(o.modules_only); }},
  };
  return table;
}

// A table's specs with their defaults (O{}'s, stated where the fields are); help gives the ones
// that are a setting rather than "off" (an empty value, false, 0 or -1 is explained by the help).
template <class O>
std::vector<OptionSpec> specsOf(const std::vector<EntryOf<O>>& entries) {
  const O defaults{};
  std::vector<OptionSpec> v;
  for (const EntryOf<O>& e : entries) {
    OptionSpec spec = e.spec;
    const Json d = e.get(defaults);
    spec.default_json = d.dump();
    const bool shown = d.is_boolean()  ? d.get<bool>()
                       : d.is_number() ? d != 0 && d != -1
                       : d.is_string() ? !d.get<std::string>().empty()
                                       : false;
    if (shown) spec.help += " (default " + (d.is_string() ? d.get<std::string>() : d.dump()) + ")";
    v.push_back(std::move(spec));
  }
  return v;
}

// Applies a JSON object of a table's options by name; `what` names the call in errors.
template <class O>
void applyJson(const std::string& text, const std::vector<EntryOf<O>>& entries, O& options,
               const char* what) {
  if (text.empty()) return;
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    throw Error(std::string(what) + " are not valid JSON: " + e.what());
  }
  if (j.is_null()) return;
  if (!j.is_object()) throw Error(std::string(what) + " must be an object");
  for (const auto& [key, value] : j.items()) {
    const EntryOf<O>* found = nullptr;
    for (const EntryOf<O>& e : entries)
      found = e.spec.name == key ? &e : found;
    if (found == nullptr) {
      std::string known;
      for (const EntryOf<O>& e : entries)
        known += (known.empty() ? "" : ", ") + e.spec.name;
      throw Error("unknown option '" + key + "'" +
                  (entries.size() < 5 ? " (" + std::string(what) + ": " + known + ")" : ""));
    }
    found->apply(options, value, found->spec);
  }
}

std::string specsJson(const std::vector<OptionSpec>& specs) {
  Json a = Json::array();
  for (const OptionSpec& s : specs) {
    a.push_back({{"name", s.name},
                 {"flag", s.flag},
                 {"type", s.type},
                 {"help", s.help},
                 {"splitConstants", s.split_constants},
                 {"default", Json::parse(s.default_json)},
                 {"values", s.values}});
  }
  return a.dump();
}

}  // namespace

const std::vector<OptionSpec>& optionSpecs() {
  static const std::vector<OptionSpec> specs = specsOf(entries());
  return specs;
}

void applyOptionsJson(const std::string& text, Options& options) {
  applyJson(text, entries(), options, "options");
}

std::string optionSpecsJson() {
  return specsJson(optionSpecs());
}

const std::vector<OptionSpec>& graphOptionSpecs() {
  static const std::vector<OptionSpec> specs = specsOf(graphEntries());
  return specs;
}

void applyGraphOptionsJson(const std::string& text, GraphJsonOptions& options) {
  applyJson(text, graphEntries(), options, "graph options");
}

std::string graphOptionSpecsJson() {
  return specsJson(graphOptionSpecs());
}

}  // namespace onnxfold

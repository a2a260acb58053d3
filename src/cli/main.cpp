// onnxfold command-line tool: info, check, optimize, variants, passes, tree, split-constants.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "api/file_io.h"
#include "api/onnxfold.h"

namespace {

std::vector<std::string> splitList(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const std::string& item : items) {
    std::stringstream ss(item);
    std::string part;
    while (std::getline(ss, part, ',')) {
      if (!part.empty()) out.push_back(part);
    }
  }
  return out;
}

// The flags of the option table as the JSON object applyOptionsJson takes; false (after a
// message) when a value does not parse as its type.
bool optionsFromFlags(const std::map<std::string, std::vector<std::string>>& given,
                      onnxfold::Options& options) {
  nlohmann::json j = nlohmann::json::object();
  for (const onnxfold::OptionSpec& spec : onnxfold::optionSpecs()) {
    const std::vector<std::string>& values = given.at(spec.name);
    if (values.empty()) continue;
    if (spec.type == "boolean") {
      j[spec.name] = values.back() == "true";
    } else if (spec.type == "string[]") {
      j[spec.name] = splitList(values);
    } else if (spec.type == "object") {
      nlohmann::json o = nlohmann::json::object();
      for (const std::string& kv : values) {
        const size_t eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) {
          std::cerr << "onnxfold: error: " << spec.flag << " expects KEY=VALUE, got '" << kv
                    << "'\n";
          return false;
        }
        o[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
      j[spec.name] = o;
    } else if (spec.type == "integer") {
      const std::string& v = values.back();
      size_t used = 0;
      long long n = 0;
      try {
        n = std::stoll(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != v.size() || v.empty() ||
          (v[0] == '-' && spec.type_help.find("non-negative") != std::string::npos)) {
        std::cerr << "onnxfold: error: " << spec.flag << " expects " << spec.type_help << ", got '"
                  << v << "'\n";
        return false;
      }
      j[spec.name] = n;
    } else {
      j[spec.name] = values.back();
    }
  }
  onnxfold::applyOptionsJson(j.dump(), options);
  return true;
}

// A one-line progress bar, redrawn in place; only used when stderr is a terminal.
class ProgressBar {
 public:
  void operator()(const onnxfold::Progress& p) {
    const int width = 30;
    const int filled = static_cast<int>(p.fraction * width + 0.5);
    std::string label = p.stage + (p.pass.empty() ? "" : " " + p.pass);
    label.resize(28, ' ');
    std::fprintf(stderr, "\r[%s%s] %3d%% %s", std::string(static_cast<size_t>(filled), '#').c_str(),
                 std::string(static_cast<size_t>(width - filled), ' ').c_str(),
                 static_cast<int>(p.fraction * 100 + 0.5), label.c_str());
    std::fflush(stderr);
    shown_ = true;
  }
  void finish() {
    if (shown_) std::fprintf(stderr, "\r%70s\r", "");
  }

 private:
  bool shown_ = false;
};

std::string mib(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / (1 << 20));
  return buf;
}

// The option table's flags on `cmd` (only those splitConstants takes when `split_only`); the
// text given for each lands in `given`, for optionsFromFlags.
void addOptionFlags(CLI::App* cmd, std::map<std::string, std::vector<std::string>>& given,
                    bool split_only) {
  for (const onnxfold::OptionSpec& spec : onnxfold::optionSpecs()) {
    std::vector<std::string>& values = given[spec.name];
    if (split_only && !spec.split_constants) continue;
    if (spec.type == "boolean") {
      // --flag, or --flag=false for an option whose default is true (quantSymmetric).
      std::function<void(std::int64_t)> set = [&values](std::int64_t n) {
        values = {n > 0 ? "true" : "false"};
      };
      cmd->add_flag_function(spec.flag, set, spec.help);
    } else if (spec.type == "string[]" || spec.type == "object") {
      cmd->add_option(spec.flag, values,
                      spec.help + (spec.type == "object" ? " (repeatable)" : ""));
    } else {
      cmd->add_option(spec.flag, values, spec.help)->expected(1);
    }
  }
}

// `variants`: every variant from one read and pipeline (variantsFile: all files or none), then a
// table of what each came to.
int runVariants(const std::string& in, const std::string& dir, std::string name,
                const std::vector<std::string>& dtypes,
                const std::map<std::string, std::vector<std::string>>& given, bool json) {
  namespace fs = std::filesystem;
  if (name.empty()) {
    name = fs::path(in).filename().string();
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".onnx") == 0)
      name.resize(name.size() - 5);
  }
  const std::vector<onnxfold::VariantFile> plan = onnxfold::variantPlan(name, dtypes);
  onnxfold::Options base;
  if (!optionsFromFlags(given, base)) return 2;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw onnxfold::Error("variants: cannot make the folder '" + dir + "': " + ec.message());
  const std::vector<onnxfold::Report> made = onnxfold::variantsFile(in, dir, plan, base);
  nlohmann::json reports = nlohmann::json::object();
  int width = 4;
  for (const onnxfold::VariantFile& v : plan)
    width = std::max(width, static_cast<int>(v.file.size()));
  if (!json && !made.empty()) {
    std::printf("read and optimized once for all: %.0f ms\n", made[0].shared_ms);
    std::printf("%-6s %-*s %12s %8s %9s\n", "dtype", width, "file", "bytes", "nodes", "ms");
  }
  for (size_t i = 0; i < plan.size(); ++i) {
    const onnxfold::VariantFile& v = plan[i];
    const onnxfold::Report& r = made[i];
    for (const std::string& w : r.warnings)
      std::cerr << "onnxfold: warning: " << v.dtype << ": " << w << "\n";
    if (json) {
      reports[v.dtype] = nlohmann::json::parse(r.toJson(-1));
    } else {
      // Its own time: its stages and its write.
      std::printf("%-6s %-*s %12llu %8zu %9.0f\n", v.dtype.c_str(), width, v.file.c_str(),
                  static_cast<unsigned long long>(r.output_bytes + r.external_bytes), r.after.nodes,
                  r.timing_ms.read + r.timing_ms.optimize + r.timing_ms.write - r.shared_ms);
    }
  }
  if (json) std::cout << reports.dump(2) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "onnxfold: an ONNX model optimizer (constant folding, freezing, cleanup) that runs "
      "natively and in the browser",
      "onnxfold"};
  app.set_version_flag("--version", std::string("onnxfold ") + onnxfold::version());
  app.require_subcommand(1);

  // info
  auto* info = app.add_subcommand("info",
                                  "Summarize a model: IR and opsets, inputs and outputs, "
                                  "nodes per op type, initializers; exit 1 if it is invalid");
  std::string info_path;
  bool info_json = false;
  info->add_option("model", info_path, "The .onnx file")->required();
  info->add_flag("--json", info_json, "Print JSON instead of text");
  bool info_graph = false;
  info->add_flag("--graph", info_graph, "Print the whole graph, one node per line");

  // check
  auto* check = app.add_subcommand(
      "check",
      "Check a model against ONNX's rules (what optimize checks first); exit 1 if invalid");
  std::string check_path;
  check->add_option("model", check_path, "The .onnx file")->required();

  // optimize
  auto* opt = app.add_subcommand("optimize", "Optimize a model and write the result");
  std::string in_path, out_path, report_path;
  onnxfold::Options options;
  bool quiet = false, explain = false;
  opt->add_option("input", in_path, "The model to optimize (never modified)")->required();
  opt->add_option("-o,--output", out_path, "Where to write the result (atomically)")->required();
  // The optimizer's options come from the one table (api/options.cpp) the npm package uses
  // too: each flag's text is turned into JSON by its type and applied by applyOptionsJson.
  std::map<std::string, std::vector<std::string>> given;
  addOptionFlags(opt, given, false);
  opt->add_option("--report", report_path, "Write the JSON report to this file");
  opt->add_flag("-q,--quiet", quiet, "Print nothing on success");
  opt->add_flag("--explain", explain,
                "List the nodes that were not folded, and why, and with --float16 what stayed "
                "float32 (also in the --report JSON)");

  // variants
  auto* variants = app.add_subcommand(
      "variants",
      "Write the variants transformers.js loads (model.onnx, model_fp16.onnx, ...) to a folder");
  std::string variants_in, variants_dir, variants_name;
  std::vector<std::string> variants_dtypes;
  bool variants_json = false;
  variants->add_option("input", variants_in, "The model (never modified)")->required();
  variants->add_option("--out", variants_dir, "The folder to write them to (made if missing)")
      ->required();
  variants->add_option("--dtypes", variants_dtypes,
                       "Which variants, comma-separated (default: all; see the list below)");
  variants->add_option("--name", variants_name,
                       "The model's file name without .onnx (default: the input's)");
  variants->add_flag("--json", variants_json, "Print each variant's report as JSON");
  {
    std::string known;
    for (const onnxfold::VariantSpec& v : onnxfold::variantSpecs())
      known += "\n  " + v.dtype + ": <name>" + v.suffix + ".onnx, " + v.help;
    variants->footer("Variants:" + known + "\n");
  }
  std::map<std::string, std::vector<std::string>> variants_given;
  addOptionFlags(variants, variants_given, false);

  // passes
  auto* list = app.add_subcommand("passes", "List the available passes and the default pipeline");

  // tree
  auto* tree = app.add_subcommand(
      "tree", "Show the module hierarchy recovered from node names or torch metadata");
  std::string tree_path;
  bool tree_json = false;
  int tree_depth = -1;
  tree->add_option("model", tree_path, "The .onnx file")->required();
  tree->add_flag("--json", tree_json, "Print JSON instead of text");
  tree->add_option("--depth", tree_depth,
                   "Show modules down to this depth, 1 = the root's children (default: all)");

  // split-constants
  auto* split = app.add_subcommand("split-constants",
                                   "Write prep.onnx (computes every foldable value from the "
                                   "weights) and main.onnx (takes them as inputs)");
  std::string split_in, split_prep, split_main;
  bool split_json = false;
  split->add_option("model", split_in, "The model to split (never modified)")->required();
  split->add_option("--prep", split_prep, "Where to write the constant graph")->required();
  split->add_option("--main", split_main, "Where to write the rest")->required();
  split->add_flag("--json", split_json, "Print the report as JSON");
  onnxfold::Options split_options;
  std::map<std::string, std::vector<std::string>> split_given;
  addOptionFlags(split, split_given, true);

  CLI11_PARSE(app, argc, argv);

  try {
    if (check->parsed()) {
      onnxfold::validateFile(check_path);
      std::cout << check_path << ": valid\n";
      return 0;
    }
    if (info->parsed()) {
      if (info_graph) {
        std::cout << onnxfold::modelTextFile(info_path);
      } else {
        const onnxfold::ModelSummary s = onnxfold::inspectFile(info_path);
        std::cout << (info_json ? s.toJson() + "\n" : s.toText());
      }
      std::cout.flush();
      // What parses may still be invalid: say so, and exit non-zero like `check`.
      onnxfold::validateFile(info_path);
      return 0;
    }
    if (tree->parsed()) {
      if (tree_json) {
        std::cout << onnxfold::moduleTreeJson(onnxfold::readFileBuffer(tree_path), {}, tree_depth)
                  << "\n";
      } else {
        std::cout << onnxfold::moduleTreeText(onnxfold::readFileBuffer(tree_path), tree_depth);
      }
      return 0;
    }
    if (split->parsed()) {
      if (!optionsFromFlags(split_given, split_options)) return 2;
      const onnxfold::SplitReport r =
          onnxfold::splitConstantsFile(split_in, split_prep, split_main, split_options);
      if (split_json) {
        std::cout << r.toJson() << "\n";
      } else if (!r.nothing_to_split.empty()) {
        std::printf("nothing to split: %s\n%s: empty\n%s: the model (%zu nodes)\n",
                    r.nothing_to_split.c_str(), split_prep.c_str(), split_main.c_str(),
                    r.main_nodes);
      } else {
        std::printf("%s: %zu nodes, %zu weights in, %zu values out (%s)\n%s: %zu nodes (was %zu)\n",
                    split_prep.c_str(), r.prep_nodes, r.prep_inputs, r.values.size(),
                    mib(r.value_bytes).c_str(), split_main.c_str(), r.main_nodes, r.original_nodes);
      }
      return 0;
    }
    if (list->parsed()) {
      std::cout << "available passes:\n";
      for (const std::string& p : onnxfold::availablePasses())
        std::cout << "  " << p << "\n";
      std::cout << "default pipeline:";
      for (const std::string& p : onnxfold::defaultPasses())
        std::cout << " " << p;
      std::cout << "\n";
      return 0;
    }
    if (variants->parsed())
      return runVariants(variants_in, variants_dir, variants_name, splitList(variants_dtypes),
                         variants_given, variants_json);
    if (!optionsFromFlags(given, options)) return 2;
    ProgressBar bar;
    if (!quiet && ::isatty(STDERR_FILENO)) {
      options.on_progress = [&bar](const onnxfold::Progress& p) { bar(p); };
    }
    onnxfold::Report r;
    try {
      // The report is part of the run's write plan: checked against the inputs and outputs
      // first, committed with them.
      r = onnxfold::optimizeFile(in_path, out_path, options, report_path);
    } catch (...) {
      bar.finish();
      throw;
    }
    bar.finish();
    for (const std::string& w : r.warnings)
      std::cerr << "onnxfold: warning: " << w << "\n";
    if (explain) {
      std::cout << r.not_folded.size() << " nodes not folded:\n";
      for (const onnxfold::NodeNote& n : r.not_folded) {
        std::cout << "  " << n.node << " (" << n.op << "): " << n.reason << "\n";
      }
      for (const onnxfold::PassRun& p : r.passes) {  // --float16: what stayed float32, and why
        if (p.pass != "convert-float16") continue;
        for (const std::string& note : p.notes)
          std::cout << "float16: " << note << "\n";
      }
    }
    if (!quiet) {
      std::printf("%s: %zu -> %zu nodes, %zu -> %zu initializers, %s -> %s, %.0f ms\n",
                  out_path.c_str(), r.before.nodes, r.after.nodes, r.before.initializers,
                  r.after.initializers, mib(r.input_bytes + r.input_external_bytes).c_str(),
                  mib(r.output_bytes + r.external_bytes).c_str(),
                  r.timing_ms.read + r.timing_ms.optimize + r.timing_ms.write);
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "onnxfold: error: " << e.what() << "\n";
    return 1;
  }
}

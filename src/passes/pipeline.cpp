#include "passes/pipeline.h"

#include <map>

#include "ir/error.h"
#include "passes/fold_policy.h"
#include "passes/quant/quant_fuse.h"
#include "passes/registry.h"

namespace onnxfold {

namespace {

PassManagerOptions withSettings(PassManagerOptions hooks, const PipelineOptions& options) {
  hooks.max_iterations = options.max_iterations;
  if (options.verify_each) hooks.verify_each = true;
  return hooks;
}

}  // namespace

Pipeline::Pipeline(const PipelineOptions& options, PassManagerOptions hooks)
    : options_(options), hooks_(withSettings(std::move(hooks), options)), main_(hooks_) {
  if (!options.passes.empty())
    main_.addByName(options.passes);
  else if (!options.quant.empty())
    main_.addByName(quantPipeline(options.quant));  // an unknown mode fails here
  else
    main_.addByName(defaultPipeline());
  PassOptions settings;
  static_cast<PassSettings&>(settings) = options_;
  checkExtraOptions(settings);
}

PassOptions Pipeline::passOptions(const Model& model) const {
  PassOptions po;
  static_cast<PassSettings&>(po) = options_;
  if (options_.growth_budget > 0) {
    const int64_t bytes = modelTensorBytes(model);
    po.max_model_bytes =
        bytes + static_cast<int64_t>(static_cast<double>(bytes) *
                                     static_cast<double>(options_.growth_budget) / 100);
  }
  return po;
}

PipelineReport Pipeline::stage(std::unique_ptr<Model>& model,
                               const std::vector<std::string>& passes,
                               const PassOptions& po) const {
  PassManagerOptions stage_hooks = hooks_;
  if (hooks_.on_pass) {
    const size_t n = main_.size();
    stage_hooks.on_pass = [on_pass = hooks_.on_pass, n](const std::string& name, size_t, size_t,
                                                        int iteration) {
      on_pass(name, n, n, iteration);
    };
  }
  PassManager pm(stage_hooks);
  pm.addByName(passes);
  return pm.run(model, po);
}

PipelineReport Pipeline::run(std::unique_ptr<Model>& model) {
  PipelineReport report = runMain(model);
  report.append(runStages(model, options_));
  return report;
}

PipelineReport Pipeline::runMain(std::unique_ptr<Model>& model) {
  settings_ = passOptions(*model);
  return main_.run(model, *settings_);
}

PipelineReport Pipeline::runStages(std::unique_ptr<Model>& model,
                                   const PipelineOptions& variant) const {
  if (!settings_) throw Error("internal: Pipeline::runStages before runMain");
  PassOptions po = *settings_;
  po.weight_quant = variant.weight_quant;
  PipelineReport report;
  if (!variant.weight_quant.mode.empty()) {
    const PipelineReport r = stage(model, {"quantize-weights", "dce"}, po);
    for (const PassRecord& p : r.passes) {
      if (!p.error.empty()) throw Error("quantize: " + p.error);  // never silently float
    }
    report.append(r);
  }
  if (variant.float16) report.append(stage(model, {"convert-float16"}, po));
  return report;
}

std::vector<Explanation> lastExplanations(const PipelineReport& report) {
  std::map<std::string, std::vector<Explanation>> last;
  for (const PassRecord& r : report.passes) {
    auto& why = last[r.pass];
    why.clear();
    for (const Explanation& e : r.explanations) {
      if (why.empty() || why.back().node != e.node || why.back().reason != e.reason)
        why.push_back(e);  // a pattern's driver may visit a node twice in one run
    }
  }
  std::vector<Explanation> out;
  for (const PassRecord& r : report.passes) {
    auto it = last.find(r.pass);
    if (it == last.end()) continue;
    out.insert(out.end(), it->second.begin(), it->second.end());
    last.erase(it);  // once per pass, in pipeline order
  }
  return out;
}

}  // namespace onnxfold

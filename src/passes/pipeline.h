// A run's passes, as the front ends ask for them (PipelineOptions): the pipeline (the default,
// quantization finalize's or named passes) to a fixpoint, then the stages written for its
// float32 result, each its own pass manager so its folds see the optimized graph:
// quantize-weights (never silently left float) and convert-float16.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "passes/pass_manager.h"
#include "passes/pipeline_options.h"

namespace onnxfold {

class Pipeline {
 public:
  // Resolves every pass name and --extra setting: an unknown one fails here, before any work.
  // `hooks`: progress and cancellation; on_pass sees the stages as passes past the end of the
  // pipeline (index == size).
  Pipeline(const PipelineOptions& options, PassManagerOptions hooks);

  // Every pass's records in order; converged is false if any part stopped at its cap.
  // run() is runMain() then runStages() with this pipeline's own options.
  PipelineReport run(std::unique_ptr<Model>& model);

  // The two parts of run(), for variants that share one float32 result: the pipeline, then
  // on (a copy of) its result the stages `variant` asks for (its weight_quant and float16;
  // its other settings must be this pipeline's). Stages need runMain() to have run.
  PipelineReport runMain(std::unique_ptr<Model>& model);
  PipelineReport runStages(std::unique_ptr<Model>& model, const PipelineOptions& variant) const;

 private:
  // The settings the passes read, for this model: the growth budget in bytes.
  PassOptions passOptions(const Model& model) const;
  PipelineReport stage(std::unique_ptr<Model>& model, const std::vector<std::string>& passes,
                       const PassOptions& po) const;

  PipelineOptions options_;
  PassManagerOptions hooks_;
  PassManager main_;  // the pipeline's passes, made once
  // The passes' settings for the input model (its growth budget), set by runMain().
  std::optional<PassOptions> settings_;
};

// Why nodes stayed, from each pass's last run (an earlier run's reasons may be gone), in
// pipeline order: the report's not_folded.
std::vector<Explanation> lastExplanations(const PipelineReport& report);

}  // namespace onnxfold

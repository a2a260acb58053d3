// A run's passes, as the front ends ask for them (PipelineOptions): the pipeline (the default,
// quantization finalize's or named passes) to a fixpoint, then the stages written for its
// float32 result, each its own pass manager so its folds see the optimized graph:
// quantize-weights (never silently left float) and convert-float16.
#pragma once

#include <memory>
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

  // The settings the passes read, for this model: the growth budget in bytes.
  PassOptions passOptions(const Model& model) const;

  // Every pass's records in order; converged is false if any part stopped at its cap.
  PipelineReport run(std::unique_ptr<Model>& model);

 private:
  PipelineReport stage(std::unique_ptr<Model>& model, const std::vector<std::string>& passes,
                       const PassOptions& po) const;

  PipelineOptions options_;
  PassManagerOptions hooks_;
  PassManager main_;  // the pipeline's passes, made once
};

// Why nodes stayed, from each pass's last run (an earlier run's reasons may be gone), in
// pipeline order: the report's not_folded.
std::vector<Explanation> lastExplanations(const PipelineReport& report);

}  // namespace onnxfold

// Passes by name: a pipeline is a list of registered names.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace onnxfold {

using PassFactory = std::function<std::unique_ptr<Pass>()>;

// The registry holds the built-in passes, registered on its first use (see passes.h).
// A new instance of the named pass, or null if there is none.
std::unique_ptr<Pass> createPass(const std::string& name);
// All registered names, sorted.
std::vector<std::string> registeredPasses();

// Checks every PassOptions::extra setting before a run: "<pass>.<key>" must name a pass and a
// key it reads, with a value it can use; throws Error naming the first that does not.
void checkExtraOptions(const PassOptions& options);

// The default optimization pipeline, as pass names.
std::vector<std::string> defaultPipeline();

}  // namespace onnxfold

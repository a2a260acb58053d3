// The quantization-finalize pipelines, by mode (Options::quant, --quant):
// weights and biases folded first, then the mode's fusion, then the cleanup
// and the freezing pipeline's passes (patterns, identities, CSE, constant
// pooling, DCE), run to a fixpoint by the pass manager.
#include "ir/error.h"
#include "passes/quant/quant_fuse.h"

namespace onnxfold {

const std::vector<std::string>& quantModes() {
  static const std::vector<std::string> modes = {"qoperator", "integer", "qdq-clean"};
  return modes;
}

std::vector<std::string> quantPipeline(const std::string& mode) {
  std::string fuse;
  if (mode == "qoperator")
    fuse = "quant-fuse-qoperator";
  else if (mode == "integer")
    fuse = "quant-fuse-integer";
  else if (mode != "qdq-clean")
    throw Error("option quant: unknown mode '" + mode +
                "' (valid modes: qoperator, integer, qdq-clean)");
  std::vector<std::string> p = {"freeze", "fold-constants", "quant-fold-weights"};
  if (!fuse.empty()) p.push_back(fuse);
  for (const char* name : {"quant-cleanup", "freezing-patterns", "cse", "pool-constants", "dce"})
    p.emplace_back(name);
  return p;
}

}  // namespace onnxfold

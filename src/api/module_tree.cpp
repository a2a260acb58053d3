// The facade's module-tree entry points (see passes/analysis/module_tree.h).
#include "passes/analysis/module_tree.h"

#include "api/input.h"
#include "api/onnxfold.h"
#include "onnx/reader.h"

namespace onnxfold {

namespace {

std::unique_ptr<Model> readForTree(const ModelInput& bytes, const ExternalDataIO& io) {
  // Weights are only counted, so external data need not be loaded.
  ReadOptions ro;
  ro.open_external = io.open;
  return readInput(bytes, ro);
}

}  // namespace

std::string moduleTreeJson(const ModelInput& model, const ExternalDataIO& io, int max_depth) {
  std::unique_ptr<Model> m = readForTree(model, io);
  return ModuleTree(*m->graph).toJson(2, max_depth);
}

std::string moduleTreeText(const ModelInput& model, int max_depth, const ExternalDataIO& io) {
  std::unique_ptr<Model> m = readForTree(model, io);
  return ModuleTree(*m->graph).toText(max_depth);
}

}  // namespace onnxfold

// freeze: parameters become constants (PyTorch's freezing.py, for ONNX).
//
// Before:  input %w (with initializer %w); %y = Conv(%x, %w)     (IR < 4 style: overridable)
// After:   initializer %w; %y = Conv(%x, %w)                     (%w is no longer an input)
//
// An initializer listed among the graph inputs can be overridden at run time,
// so nothing may fold through it. Freezing removes it from the inputs, except
// those the user preserves (names or globs in PassOptions::preserve) and those
// a TrainingInfoProto updates. The report says what was frozen, what was kept
// and why.
#include <fnmatch.h>

#include <set>

#include "passes/passes.h"
#include "passes/rewrite.h"

namespace onnxfold {

namespace {

bool preserved(const std::vector<std::string>& patterns, const std::string& name) {
  for (const std::string& p : patterns) {
    if (p == name || fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
  }
  return false;
}

class Freeze : public Pass {
 public:
  std::string_view name() const override { return "freeze"; }
  std::string_view description() const override {
    return "turn initializers that are also graph inputs into constants (unless preserved)";
  }

  bool run(Model& model, PassContext& ctx) override {
    std::set<std::string> trained;
    for (const TrainingInfo& t : model.training_info) {
      for (const auto& [k, v] : t.update_binding)
        trained.insert(k);
    }
    Graph& g = *model.graph;
    Rewriter rw(model, g, /*notify=*/false);
    bool changed = false;
    const std::vector<Value*> inputs = g.inputs();
    for (Value* v : inputs) {
      if (!v->isInitializer()) continue;
      if (preserved(ctx.options().preserve, v->name())) {
        ctx.note("kept input '" + v->name() + "': preserved");
        continue;
      }
      if (trained.count(v->name())) {
        ctx.note("kept input '" + v->name() + "': updated by training");
        continue;
      }
      rw.removeGraphInput(v);
      ctx.count("inputs frozen");
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> createFreeze() {
  return std::make_unique<Freeze>();
}

}  // namespace onnxfold

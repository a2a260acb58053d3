// eliminate-identity: removes Identity nodes (and opset >= 13 Identity on any type).
//
// Before:  %y = Identity(%x); %z = Relu(%y)
// After:   %z = Relu(%x)
//
// When %y is a graph output its name is the model's interface: %x takes that
// name instead when it can (Graph::canTakeOutputName). Otherwise (%x is a graph
// input, a used initializer, an outer-scope value, or already an output) the
// Identity stays. Nodes left dead are erased by the pattern driver.
#include "passes/passes.h"
#include "passes/patterns/patterns.h"

namespace onnxfold {

// The same pattern freezing-patterns applies (patterns/eliminate_noops.cpp), on its own.
std::unique_ptr<Pass> createEliminateIdentity() {
  return makePatternPass({"eliminate-identity",
                          "remove Identity nodes, keeping output names",
                          {{addEliminateIdentityPatterns}},
                          nullptr});
}

}  // namespace onnxfold

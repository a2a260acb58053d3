// Pass: one transformation of a Model, in the style of MLIR's passes.
//
// A pass overrides run(), keeps no state between runs, says whether it changed
// the model, and reports problems by throwing onnxfold::Error (the manager then
// restores the model as it was before the pass). Messages for the report go
// through the PassContext. Passes are registered by name so a pipeline is a
// list of names (see registry.h).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "passes/pipeline_options.h"

namespace onnxfold {

// What the passes read: the run's settings (pipeline_options.h) and what the pipeline derives
// from them for the model at hand.
struct PassOptions : PassSettings {
  // The growth budget: a fold over size_budget is still taken while the main graph's
  // initializers stay within this many bytes (-1: never). A constructor over its budget
  // stays a node, but its value may feed such folds.
  int64_t max_model_bytes = -1;
};

// Why a node was left as it is (the report's "why not folded" list).
struct Explanation {
  std::string node;  // name, or "op #index"
  std::string op_type;
  std::string reason;
  // A fold the size budget refused: the bytes it would add to the written model (net of
  // the constants it frees), so a budget above this lets it fold. -1 otherwise.
  int64_t would_add_bytes = -1;
  // Such a fold's nodes: the node and those that feed only it, which go with it. -1 otherwise.
  int64_t would_remove_nodes = -1;
};

class PassContext {
 public:
  explicit PassContext(const PassOptions& options) : options_(options) {}
  const PassOptions& options() const { return options_; }

  // A line for the report ("folded 12 nodes", "kept 'w': preserved").
  void note(std::string message) { notes_.push_back(std::move(message)); }
  // A line known only once the output is written (a figure of a tensor computed by the
  // writer); the report asks for it then, and skips it if it returns "".
  void noteAfterWrite(std::function<std::string()> message) {
    late_notes_.push_back(std::move(message));
  }
  // Counters shown in the report, e.g. count("nodes removed", 3).
  void count(const std::string& what, int64_t n = 1) { counters_[what] += n; }

  void explain(const Node& n, std::string reason, int64_t would_add_bytes = -1,
               int64_t would_remove_nodes = -1) {
    explanations_.push_back(
        {n.displayName(), n.op_type, std::move(reason), would_add_bytes, would_remove_nodes});
  }

  std::vector<std::string> takeNotes() { return std::exchange(notes_, {}); }
  std::vector<std::function<std::string()>> takeNotesAfterWrite() {
    return std::exchange(late_notes_, {});
  }
  std::vector<Explanation> takeExplanations() { return std::exchange(explanations_, {}); }
  std::map<std::string, int64_t> takeCounters() { return std::exchange(counters_, {}); }

 private:
  const PassOptions& options_;
  std::vector<std::string> notes_;
  std::vector<std::function<std::string()>> late_notes_;
  std::vector<Explanation> explanations_;
  std::map<std::string, int64_t> counters_;
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;
  // Transforms `model`; returns true if anything changed. Throws Error on failure.
  virtual bool run(Model& model, PassContext& ctx) = 0;
  // The settings this pass reads from PassOptions::extra (as "<pass name>.<key>").
  virtual std::vector<std::string> extraKeys() const { return {}; }
  // Throws Error naming a setting whose value this pass cannot use; checkExtraOptions runs it
  // before any pass, so a wrong value fails the run instead of skipping the pass.
  virtual void checkOptions(const PassOptions&) const {}
};

// Calls f on the main graph, every subgraph (innermost first), every function
// body and every training graph. Innermost first lets a pass simplify a body
// before it looks at the node holding it.
// Subgraphs of ops from domains onnxfold does not know are skipped: what such an op does with
// its graph attributes is unknown, so they are kept byte for byte.
void forEachGraph(Model& model, const std::function<void(Graph&)>& f);
void forEachGraphIn(Graph& graph, const std::function<void(Graph&)>& f);
// True when passes may look into n's graph attributes (an op of a domain onnxfold knows).
bool ownsKnownSubgraphs(const Node& n);

}  // namespace onnxfold

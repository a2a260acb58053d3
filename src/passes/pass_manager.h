// PassManager: runs a pipeline of passes to a fixpoint and reports each run.
//
// Cross-cutting work lives here, not in passes: timing, the before/after
// statistics, verification after each pass, and recovery. A pass that throws
// (or leaves IR the verifier rejects) is undone: the model is restored to a
// snapshot taken before it ran, the error is recorded and the pipeline goes on
// (for graphs up to PassManagerOptions::undo_limit_nodes; larger ones fail the run).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace onnxfold {

struct ModelStats {
  size_t nodes = 0;         // including nodes of subgraphs
  size_t initializers = 0;  // main graph
  uint64_t initializer_bytes = 0;
};
ModelStats computeStats(const Model& model);

struct PassRecord {
  std::string pass;
  int iteration = 0;
  double ms = 0;
  bool changed = false;
  ModelStats before;
  ModelStats after;
  std::vector<std::string> notes;
  std::vector<std::function<std::string()>> notes_after_write;  // PassContext::noteAfterWrite
  std::vector<Explanation> explanations;
  std::map<std::string, int64_t> counters;
  std::string error;  // non-empty: the pass failed and was undone
};

struct PipelineReport {
  std::vector<PassRecord> passes;
  int iterations = 0;
  bool converged = true;  // false: stopped at max_iterations while still changing
  ModelStats before;
  ModelStats after;
  bool hasErrors() const;
  // `later`'s records after these; converged only if both are.
  void append(const PipelineReport& later);
};

struct PassManagerOptions {
#ifdef NDEBUG
  bool verify_each = false;
#else
  bool verify_each = true;
#endif
  int max_iterations = kDefaultMaxIterations;
  // Undo needs a copy of the graph structure before each changing pass: time and memory
  // in proportion to the node count. Above this many nodes (a million-node graph is built
  // to hurt, not exported) no copy is kept and a failing pass fails the run instead; the
  // caller's input and output files are untouched either way.
  size_t undo_limit_nodes = size_t{1} << 18;
  // Called before each pass: (pass name, index in the pipeline, pipeline size, iteration).
  std::function<void(const std::string&, size_t, size_t, int)> on_pass;
  // Checked before each pass; returning true stops the pipeline (Error "cancelled").
  std::function<bool()> cancelled;
};

class PassManager {
 public:
  explicit PassManager(PassManagerOptions options = {}) : options_(std::move(options)) {}

  void add(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  // Adds registered passes by name; throws Error naming an unknown pass.
  void addByName(const std::vector<std::string>& names);
  size_t size() const { return passes_.size(); }

  // Runs the pipeline repeatedly until no pass changes the model (or the cap).
  // `model` may be replaced by a restored snapshot.
  PipelineReport run(std::unique_ptr<Model>& model, const PassOptions& options);

 private:
  PassManagerOptions options_;
  std::vector<std::unique_ptr<Pass>> passes_;
};

}  // namespace onnxfold

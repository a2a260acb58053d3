#include "passes/pass_manager.h"

#include <chrono>

#include "ir/error.h"
#include "ir/verifier.h"
#include "passes/registry.h"
#include "passes/validate.h"

namespace onnxfold {

namespace {
void addGraphStats(const Graph& g, ModelStats& s) {
  s.nodes += g.numNodesRecursive();
}
}  // namespace

ModelStats computeStats(const Model& model) {
  // Nodes as the report's summaries count them: the main graph and its subgraphs (a call
  // of a local function is one node), so a report's first pass starts where "before" ends.
  ModelStats s;
  addGraphStats(*model.graph, s);
  s.initializers = model.graph->initializers().size();
  for (const Value* v : model.graph->initializers())
    s.initializer_bytes += v->initializer()->byteSize();
  return s;
}

bool PipelineReport::hasErrors() const {
  for (const PassRecord& r : passes) {
    if (!r.error.empty()) return true;
  }
  return false;
}

void PipelineReport::append(const PipelineReport& later) {
  passes.insert(passes.end(), later.passes.begin(), later.passes.end());
  converged = converged && later.converged;
}

void PassManager::addByName(const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    std::unique_ptr<Pass> p = createPass(n);
    if (!p) {
      std::string known;
      for (const std::string& k : registeredPasses())
        known += (known.empty() ? "" : ", ") + k;
      throw Error("unknown pass '" + n + "' (known passes: " + known + ")");
    }
    add(std::move(p));
  }
}

PipelineReport PassManager::run(std::unique_ptr<Model>& model, const PassOptions& options) {
  PipelineReport report;
  report.before = computeStats(*model);
  report.converged = false;
  // The model as it was before the running pass, to undo it if it fails. A pass that
  // reports no change leaves the model as it found it (the Pass contract), so the snapshot
  // taken before it still holds for the next pass: a converged round clones once, not per pass.
  std::unique_ptr<Model> snapshot;
  for (int it = 1; it <= options_.max_iterations; ++it) {
    report.iterations = it;
    bool any = false;
    for (size_t i = 0; i < passes_.size(); ++i) {
      Pass& pass = *passes_[i];
      if (options_.cancelled && options_.cancelled()) throw Error("cancelled");
      if (options_.on_pass) options_.on_pass(std::string(pass.name()), i, passes_.size(), it);
      PassRecord rec;
      rec.pass = std::string(pass.name());
      rec.iteration = it;
      rec.before = computeStats(*model);
      // Tensor bytes are shared, so a snapshot costs only the graph structure.
      const bool can_undo = rec.before.nodes <= options_.undo_limit_nodes;
      if (!snapshot && can_undo) snapshot = model->clone();
      PassContext ctx(options);
      const auto t0 = std::chrono::steady_clock::now();
      try {
        rec.changed = pass.run(*model, ctx);
        if (options_.verify_each) {
          VerifyResult v = verify(*model);
          if (!v.ok) throw Error("the IR is broken after this pass: " + v.message);
          try {
            validateModel(*model);
          } catch (const ValidationError& e) {
            throw Error(std::string("the model is invalid after this pass: ") + e.what());
          }
        }
      } catch (const ResourceError&) {
        throw;  // no pass can do without memory or its inputs: the run fails
      } catch (const std::exception& e) {
        if (!snapshot) {
          throw Error("pass '" + rec.pass + "' failed on a graph of " +
                      std::to_string(rec.before.nodes) + " nodes, too large to undo (over " +
                      std::to_string(options_.undo_limit_nodes) + "): " + e.what());
        }
        rec.error = e.what();
        rec.changed = false;
        model = std::move(snapshot);  // the next pass takes a new one
      }
      if (rec.changed) snapshot.reset();
      rec.ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      rec.notes = ctx.takeNotes();
      rec.notes_after_write = ctx.takeNotesAfterWrite();
      rec.explanations = ctx.takeExplanations();
      rec.counters = ctx.takeCounters();
      rec.after = computeStats(*model);
      any = any || rec.changed;
      report.passes.push_back(std::move(rec));
    }
    if (!any) {
      report.converged = true;
      break;
    }
  }
  report.after = computeStats(*model);
  return report;
}

}  // namespace onnxfold

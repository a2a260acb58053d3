// split-constants: the constant graph of a model as a model of its own (PyTorch inductor's
// run_and_get_constant_graph / constant_graph_tag).
//
// A node is constant when the folder could compute it (the guards and budgets of
// passes/fold_policy.h, no control flow, a kernel in the registry) and every input is a
// weight (an initializer that is not a graph input), a Constant or a constant node's output.
// Where constant nodes feed the rest of the graph are the values the folder would compute;
// `prep` computes exactly those from the weights, and `main` reads them as inputs that carry
// the computed values as initializers, so both run standalone and a user who swaps weights
// re-runs prep only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/pass.h"

namespace onnxfold {

struct ConstantSplit {
  std::unique_ptr<Model> prep;
  std::unique_ptr<Model> main;
  size_t prep_inputs = 0;           // weights prep reads (its inputs and initializers)
  std::vector<std::string> values;  // prep outputs = main inputs with initializers
  uint64_t value_bytes = 0;         // bytes of those values
  size_t skipped_over_budget = 0;   // constant nodes left in main by the size budgets
  // Set when no node computes from weights alone (why, and what would help): prep is then
  // empty and main is the model.
  std::string nothing_to_split;
};

// `model` is not changed.
// `producer_version` names the onnxfold that made prep.
ConstantSplit splitConstantGraph(const Model& model, const PassOptions& options,
                                 const std::string& producer_version);

}  // namespace onnxfold

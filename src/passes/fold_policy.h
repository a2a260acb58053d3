// What fold-constants and split-constants agree on: which nodes may be computed at all,
// and how much a computed result may add to the model (judged before anything is allocated).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kernels/op_registry.h"
#include "passes/pass.h"

namespace onnxfold {

// The value of `v` when it is known, else null.
using KnownValue = std::function<const Tensor*(const Value*)>;

// Why `n` must never be computed, whatever is known of its inputs ("" when it may be):
// nondeterministic ops, training-mode Dropout, DequantizeLinear of an integer weight (kept
// for quantization unless PassOptions::fold_dequantize_weights).
std::string foldGuard(const Node& n, const OpEntry* entry, const KnownValue& known,
                      const PassOptions& options);

// ConstantOfShape, Expand, Tile, Range, EyeLike: they materialize data, under the
// constructor budget (PyTorch's skip_constructors).
bool isConstructor(const Node& n);

// Why computing `n` is over its budget when it grows the model by `growth` bytes; "" if not.
std::string overBudget(const Node& n, int64_t growth, const PassOptions& options);

// Bytes of the main graph's initializers as written: what the growth budget measures.
int64_t modelTensorBytes(const Model& model);

// The model-wide growth budget (PassOptions::max_model_bytes): a fold over its own budget
// is still taken while the model's tensors stay within it. A result equal to one taken
// before counts once, as pool-constants will merge them (the per-layer copies of a rotary
// table). One ledger per fold-constants run, seeded with the model's bytes.
class GrowthBudget {
 public:
  GrowthBudget(const Model& model, const PassOptions& options);
  // Whether a result of `growth` bytes could fit at all (judged before it is computed).
  bool mayFit(int64_t growth) const { return limit_ >= 0 && growth <= limit_ - start_; }
  // Takes `growth` bytes for `results` when they fit (or equal results taken before); false,
  // with nothing taken, when not.
  bool take(int64_t growth, const std::vector<Tensor>& results);
  // A fold within its own budget: it grows (or shrinks) the model all the same.
  void add(int64_t growth) { bytes_ += growth; }
  // The explanation's tail for a refused fold: how much of the budget is left.
  std::string left() const;

 private:
  int64_t start_ = 0, bytes_ = 0, limit_ = -1;
  std::vector<std::pair<uint64_t, std::vector<Tensor>>> taken_;  // hash, results
};

// Each output's static type as inference gives it from the known inputs (reading only small
// ones: axes, shapes), or nullopt.
std::vector<std::optional<Type>> inferredOutputTypes(const Node& n, int64_t opset,
                                                     const std::vector<const Tensor*>& inputs);

// The bytes of all outputs as typed (static numeric tensors; huge sizes saturate), or nullopt.
std::optional<int64_t> inferredOutputBytes(const Node& n,
                                           const std::vector<std::optional<Type>>& types);

}  // namespace onnxfold

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

// Each output's static type as inference gives it from the known inputs (reading only small
// ones: axes, shapes), or nullopt.
std::vector<std::optional<Type>> inferredOutputTypes(const Node& n, int64_t opset,
                                                     const std::vector<const Tensor*>& inputs);

// The bytes of all outputs as typed (static numeric tensors; huge sizes saturate), or nullopt.
std::optional<int64_t> inferredOutputBytes(const Node& n,
                                           const std::vector<std::optional<Type>>& types);

}  // namespace onnxfold

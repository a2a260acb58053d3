// Raising the default-domain opset of a model where that is simple (upgrade_opset.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "ir/graph.h"

namespace onnxfold {

// Raises `model`'s default-domain opset to `target` when every node computes the same there
// (upgrade_opset.cpp lists what qualifies); a model already at or above it is left alone
// (returns false). Throws Error naming the first node whose op cannot move, leaving the model
// unchanged.
bool upgradeOpset(std::unique_ptr<Model>& model, int64_t target);

}  // namespace onnxfold

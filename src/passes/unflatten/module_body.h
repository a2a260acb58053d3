// A module's nodes seen as one function body: what flows in, what flows out,
// whether it can become one call, and a structural signature for deduplication
// (PyTorch's _deduplicate_modules: same ops, wiring and attributes, Constant
// values included; weights are inputs, so layers with different weights match).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxfold {

struct ModuleBody {
  std::vector<Node*> nodes;     // graph order
  std::vector<Value*> inputs;   // values from outside, in order of first use
  std::vector<Value*> outputs;  // values used outside (or graph outputs), in order of definition
  std::string signature;        // equal signatures: the same function body
  std::string why_not;          // empty when the body can be outlined
};

// Constant nodes holding more than this many bytes are weights: they stay
// outside the body and come in as inputs, so bodies stay weight-free.
constexpr size_t kDefaultWeightConstantBytes = 256;

// `nodes`: nodes of `g`, in graph order.
ModuleBody collectModuleBody(const Graph& g, const std::vector<Node*>& nodes,
                             size_t weight_constant_bytes = kDefaultWeightConstantBytes);

// Where one call replacing `body` can go without reordering other nodes: after
// the last producer of its inputs and before the first user of its outputs.
// Sets *before to the node to insert before (null: append); false if none fits.
bool findCallPosition(const Graph& g, const ModuleBody& body, Node** before);

}  // namespace onnxfold

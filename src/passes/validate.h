// Validation: every model is checked against ONNX's rules before any pass runs (and
// after every pass with --verify), so an invalid model is refused with a message naming
// the node and the field instead of being optimized and written back as if valid.
//
// Checked (beyond what the reader and the IR verifier already refuse):
// - model: ir_version present and known; imported opsets known (the newest is named);
// - graph: names are UTF-8 (SSA, order and scopes: ir/verifier.h, run by the reader);
// - node, against the op's schema at the imported opset (schema/op_schema.h, generated
//   from the spec): the op exists, input and output counts, required inputs present,
//   attributes known, of the declared type and present when required, type constraints
//   (allowed types, one type per constraint), dtype-valued attributes in range, one value
//   for Constant; If/Loop/Scan bodies match the node's inputs and outputs;
// - tensors: sparse indices inside the dims;
// - functions: attribute references resolved, no recursion;
// - inference: a declared element type that contradicts the producer, and a shape rule
//   that fails on inputs of known rank (a Reshape whose constant shape cannot hold its
//   input, a Conv whose weight rank disagrees) are errors.
// Custom domains (and ai.onnx.ml) pass through: their ops are not known here.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace onnxfold {

// The newest IR version onnxfold reads (onnx.proto's IR_VERSION).
constexpr int64_t kNewestIrVersion = 13;

struct ValidateOptions {
  // Run shape inference and refuse its contradictions (off: schema checks only).
  bool infer = true;
};

// Throws ValidationError naming the first problem found. The model is not changed. The IR's
// structure (ir/verifier.h) is checked by the reader and the pass manager, not again here.
void validateModel(const Model& model, const ValidateOptions& options = {});

}  // namespace onnxfold

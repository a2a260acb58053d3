// What a run asks of the passes, each default stated once: PassSettings are read by the passes
// (PassOptions), PipelineOptions choose and drive them (passes/pipeline.h), and the public
// Options (api/onnxfold.h) derive from PipelineOptions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "passes/weight_quantization.h"

namespace onnxfold {

// Cap on repetitions of the pipeline (PassManagerOptions, PipelineOptions).
inline constexpr int kDefaultMaxIterations = 8;

struct PassSettings {
  // Graph inputs (names or globs) that freezing must keep as inputs.
  std::vector<std::string> preserve;
  // Largest growth in bytes a single fold may add to the written model.
  int64_t size_budget = 1024;
  // The same for constructors (ConstantOfShape, Expand, Tile, Range, EyeLike), which make
  // data from little (PyTorch's skip_constructors): small shape helpers fold, materialized
  // weights and biases stay nodes.
  int64_t constructor_budget = 64;
  // Fold DequantizeLinear of integer weights (normally kept for quantization).
  bool fold_dequantize_weights = false;
  // Weight-only quantization (the quantize-weights stage).
  WeightQuantization weight_quant;
  // Free-form per-pass settings: "pass.key" -> value.
  std::map<std::string, std::string> extra;
};

struct PipelineOptions : PassSettings {
  // Pass names, run in order to a fixpoint; empty: the default pipeline (or quantization
  // finalize's, with `quant`).
  std::vector<std::string> passes;
  // Quantization finalize mode: "" (off), "qoperator", "integer" or "qdq-clean".
  std::string quant;
  // The growth budget, in percent of the input's initializer bytes: folds over their own
  // budget (a rotary table, a cast weight) are still taken while the whole model grows by no
  // more than this (identical results count once). 0: every fold keeps to its own budget.
  int64_t growth_budget = 5;
  // After the pipeline: float32 weights and computation become float16, the graph's inputs
  // and outputs stay float32 and ops that overflow in float16 stay float32 (convert-float16).
  bool float16 = false;
  int max_iterations = kDefaultMaxIterations;
  // Run the IR verifier after every pass (always on in debug builds).
  bool verify_each = false;
};

}  // namespace onnxfold

// Modes that an op's version, attributes and output count select. One reading shared by the
// kernels (what a fold computes) and the rewrite patterns (when a rewrite is exact), so the
// two cannot disagree about what a node means.
#pragma once

#include <cstddef>
#include <cstdint>

namespace onnxfold::kernels {

// BatchNormalization normalizes with the batch's own statistics (training) or with
// input_mean and input_var (inference). What selects it changed with the versions:
//   BN-1, BN-6 (opset < 7): is_test = 0, the default, is training;
//   BN-7, BN-9 (opset 7-13): more than one output slot is training, whether or not the
//     statistics are read (ONNX Runtime counts the slots, named or empty);
//   BN-14, BN-15: training_mode != 0.
inline bool batchNormTraining(int64_t opset, int64_t is_test, int64_t training_mode,
                              size_t num_outputs) {
  if (opset >= 14) return training_mode != 0;
  if (opset < 7) return is_test == 0;
  return num_outputs > 1;
}

}  // namespace onnxfold::kernels

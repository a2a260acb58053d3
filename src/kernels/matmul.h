// MatMul's batched plan and shape rule (matmul.cpp), which the integer
// MatMulInteger and QLinearMatMul (quantized_linear.cpp) follow too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/op_registry.h"

namespace onnxfold::kernels {

struct MatmulPlan {
  int64_t m = 1, k = 1, n = 1;
  std::vector<int64_t> out_batch;
  std::vector<std::pair<int64_t, int64_t>> pairs;  // per output batch: (a matrix, b matrix)
  int64_t a_batches = 1, b_batches = 1;
};

MatmulPlan planMatmul(const OpContext& ctx, const std::vector<int64_t>& ad,
                      const std::vector<int64_t>& bd);
void inferMatmulShape(InferContext& ctx, DataType out_type, size_t ia, size_t ib);

}  // namespace onnxfold::kernels

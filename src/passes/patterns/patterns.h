// The freezing patterns, one family per file, collected by the
// freezing-patterns pass (freezing_patterns.cpp).
#pragma once

#include <memory>
#include <vector>

#include "passes/rewrite.h"

namespace onnxfold {

using PatternList = std::vector<std::unique_ptr<RewritePattern>>;

void addFuseBatchNormPatterns(PatternList& out);  // patterns/fuse_bn_into_conv.cpp

// Shared helpers for pattern builders.
namespace patterns {
// The constant tensor behind `v`, or null (initializers that are not graph inputs).
const Tensor* constantOf(const Value* v);
// Element i of a float32/float64 tensor as double.
double floatAt(const Tensor& t, size_t i);
// A float tensor of the same dtype (float32 or float64) and the given dims from doubles.
Tensor floatTensorLike(DataType dtype, std::vector<int64_t> dims,
                       const std::vector<double>& values);
}  // namespace patterns

}  // namespace onnxfold

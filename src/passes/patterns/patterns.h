// The freezing patterns, one family per file, collected by the
// freezing-patterns pass (freezing_patterns.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "passes/rewrite.h"

namespace onnxfold {

void addFuseBatchNormPatterns(PatternList& out);           // patterns/fuse_bn_into_conv.cpp
void addFuseAddIntoConvPatterns(PatternList& out);         // patterns/fuse_add_into_conv.cpp
void addFuseMulIntoConvPatterns(PatternList& out);         // patterns/fuse_mul_into_conv.cpp
void addFuseMatMulAddPatterns(PatternList& out);           // patterns/fuse_matmul_add_into_gemm.cpp
void addFuseTransposesPatterns(PatternList& out);          // patterns/fuse_transposes.cpp
void addFuseReshapesPatterns(PatternList& out);            // patterns/fuse_reshapes.cpp
void addCancelSqueezeUnsqueezePatterns(PatternList& out);  // patterns/cancel_squeeze_unsqueeze.cpp
void addCancelCastRoundTripPatterns(PatternList& out);     // patterns/cancel_cast_round_trips.cpp
void addEliminateNoOpPatterns(PatternList& out);           // patterns/eliminate_noops.cpp
void addEliminateIdentityPatterns(PatternList& out);       // patterns/eliminate_noops.cpp
// patterns/eliminate_arithmetic_identities.cpp
void addArithmeticIdentityPatterns(PatternList& out);
void addDropZeroRnnStatePatterns(PatternList& out);  // patterns/drop_zero_rnn_state.cpp
// The fuse-normalizations pass (fuse_normalizations.cpp).
void addFuseNormalizationPatterns(PatternList& out);  // patterns/fuse_normalization.cpp
void addFuseGeluPatterns(PatternList& out);           // patterns/fuse_gelu.cpp

// Shared helpers for pattern builders.
namespace patterns {
// The constant tensor behind `v`, or null (initializers that are not graph inputs).
const Tensor* constantOf(const Value* v);
// Element i of a float32/float64 tensor as double.
double floatAt(const Tensor& t, size_t i);
// A float tensor of the same dtype (float32 or float64) and the given dims from doubles.
Tensor floatTensorLike(DataType dtype, std::vector<int64_t> dims,
                       const std::vector<double>& values);

// The rest are in patterns/helpers.cpp.

bool isFloat32Or64(DataType t);
// The shape of a tensor value when its rank is known, else null.
const Shape* shapeOf(const Value* v);
// The element type of a tensor value (kUndefined when unknown).
DataType dtypeOf(const Value* v);
// The dims of a constant, or of a value whose type is a static tensor.
std::optional<std::vector<int64_t>> knownDims(const Value* v);
// The elements of a constant int64/int32 tensor of rank 0 or 1.
std::optional<std::vector<int64_t>> constantInts(const Value* v);
// An int list given as attribute `attr` below opset `input_since`, else as the
// constant input `input`; nullopt when absent or not constant.
std::optional<std::vector<int64_t>> intsOperand(const Rewriter& rw, const Node* n, const char* attr,
                                                size_t input, int64_t input_since);
// True when broadcasting a tensor of dims `c` with `x` gives x's shape (rank and
// every dim), known from x's type: each right-aligned dim of c is 1 or equal
// to x's known dim.
bool broadcastKeepsShape(const std::vector<int64_t>& c, const Value* x);
// True when a tensor of dims `c`, broadcast against an output of rank `rank`
// with `channels` channels on axis 1, varies along axis 1 at most and keeps the
// output's shape: [], [1], [M,1,1], [1,M,1,1] for rank 4.
bool isPerChannel(const std::vector<int64_t>& c, size_t rank, int64_t channels);
// The `channels` values of a float per-channel constant (isPerChannel holds).
std::vector<double> perChannelValues(const Tensor& c, int64_t channels);
// True when every element of a numeric tensor equals v (0 also matches -0).
bool allElementsEqual(const Tensor& t, double v);
// The number of output channels of a Conv/ConvTranspose from its weight dims
// (ConvTranspose: W[1] * group); false when the weight or group does not allow a fold.
bool convOutputChannels(const Node* conv, const std::vector<int64_t>& w, int64_t& channels);
// Replaces the node's first output by `x` and erases it (graph outputs keep
// their name; see Rewriter::replaceValue).
void bypass(Node* n, Value* x, Rewriter& rw);
// The weights of a Conv (W: [M, C/g, k...]) or ConvTranspose (W: [C, M/g, k...])
// with every output channel m scaled by s[m] (float32 or float64, as W). A large W
// gives a FoldRecipe: computed when written, one weight in memory at a time.
Tensor scaleOutputChannels(const Tensor& w, bool transpose, int64_t group, std::vector<double> s);
}  // namespace patterns

}  // namespace onnxfold

// Small helpers that several op family files share beyond common.h: input type
// checks for the inference rules, attribute access, reading integer inputs and
// numeric tensors as doubles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/common.h"

namespace onnxfold::kernels {

inline Dim unknownDim() {
  return Dim();
}

// Fails as unsupported unless `ok`: input i's type is not one the kernel handles (`what`
// names the types it expects).
void requireType(const InferContext& ctx, size_t i, bool ok, const char* what);
// The same with a predicate on input i's type; a type not known yet passes.
void requireType(const InferContext& ctx, size_t i, bool (*ok)(DataType), const char* what);

// Integer elements (any integer storage) as int64.
std::vector<int64_t> readInts(const OpContext& ctx, const Tensor& t);

// Elements of any numeric tensor as doubles (reads with memcpy: infer() sees
// unaligned views), and back into t's element type; other types fail as unsupported.
std::vector<double> toDoubles(const OpContext& ctx, const Tensor& t);
void fromDoubles(const OpContext& ctx, Tensor& t, const std::vector<double>& v);

// Dim i of `s` (or a fresh symbol when rank or dim is unknown).
Dim dimOr(InferContext& ctx, const Shape* s, size_t i);

// A strings attribute (empty when absent) and a tensor attribute (null when absent).
std::vector<std::string> attrStrings(const OpContext& ctx, std::string_view name);
const Tensor* attrTensor(const OpContext& ctx, std::string_view name);

// Output `out` gets type t and the shape of input `in` (unknown rank when that is unknown).
void setSameShape(InferContext& ctx, size_t out, DataType t, size_t in);
// The shape rule of ops whose output 0 has input 0's type and shape (CumSum, Scatter*, ...).
void inferSameAsInput0(InferContext& ctx);

// ASCII whitespace, independent of the C locale (StringSplit, the PNM header).
bool isSpaceCharRaw(uint8_t c);

}  // namespace onnxfold::kernels

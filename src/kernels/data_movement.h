// The copy machinery the data-movement op files share (reshape.cpp,
// transpose.cpp, concat_split.cpp, pad_tile.cpp), defined in data_movement.cpp.
//
// Every index-moving kernel is one "mapped copy": for each output axis, a
// stride into the input and an optional table from output coordinate to
// input coordinate (-1 = fill value). Transpose permutes strides, Expand
// zeroes them, Tile/Pad/Upsample use tables. Contiguous inner runs are
// memcpy'd, and 2-D (batched) transposes take a cache-blocked path, declared
// here with its scalar reference for data_movement_test.cpp, which checks one
// against the other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/op_registry.h"

namespace onnxfold::kernels {

// Bytes per element; fails for packed sub-byte types, which index-moving ops do not support.
size_t elementBytes(const OpContext& ctx, DataType t);

// One output axis of a mapped copy.
struct AxisMap {
  int64_t stride = 0;        // input element stride for one step of the input coordinate
  std::vector<int64_t> map;  // output coordinate -> input coordinate (-1: fill); empty: identity
};

// out = in through `axes`; `fill` (null: zeros / empty strings) is one element of out's type.
// `dims` overrides out's dims (a reshaped view of the output), else out.dims().
void mappedCopy(const OpContext& ctx, const Tensor& in, Tensor& out,
                const std::vector<AxisMap>& axes, const Tensor* fill = nullptr,
                const std::vector<int64_t>* dims = nullptr);

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t>& dims);

// out = in with its axes permuted by `perm` (out's dims are the permuted ones).
void transposeTensor(const OpContext& ctx, const Tensor& in, Tensor& out,
                     const std::vector<int64_t>& perm);

// out[c][r] = in[r][c] for each of `batch` rows x cols matrices; defined for uint32_t
// (and used inside data_movement.cpp for every element size).
template <class T>
void transpose2DScalar(const T* in, T* out, int64_t batch, int64_t rows, int64_t cols);
template <class T>
void transpose2DBlocked(const T* in, T* out, int64_t batch, int64_t rows, int64_t cols);

// out = in, whole: bytes (up to the smaller size) or strings.
void copyAll(const Tensor& in, Tensor& out);

// A shape of `rank` fresh symbols (rank known, dims not).
Shape unknownDims(InferContext& ctx, size_t rank);

}  // namespace onnxfold::kernels

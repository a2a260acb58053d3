// The blocked transpose of data_movement.cpp with its scalar reference,
// declared for data_movement_test.cpp, which checks one against the other.
#pragma once

#include <cstdint>

namespace onnxfold::kernels {

// out[c][r] = in[r][c] for each of `batch` rows x cols matrices; defined for uint32_t
// (and used inside data_movement.cpp for every element size).
template <class T>
void transpose2DScalar(const T* in, T* out, int64_t batch, int64_t rows, int64_t cols);
template <class T>
void transpose2DBlocked(const T* in, T* out, int64_t batch, int64_t rows, int64_t cols);

}  // namespace onnxfold::kernels

// Cutting and joining tensors along one axis, for the kernels that build their outputs
// from parts (Loop and Scan outputs, SplitToSequence, ConcatFromSequence).
//
// Byte-level copies of whole rows: any element type of 8 bits or more, strings too.
// Packed 4-bit and 2-bit types throw UnsupportedError (a row may start mid-byte).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/tensor.h"

namespace onnxfold::kernels {

// Elements [start, start + count) of `t` along `axis` (which keeps its place, size count).
Tensor sliceAlong(const Tensor& t, size_t axis, int64_t start, int64_t count);

// `parts` joined along `axis`: all of one dtype and rank, equal in every other dim.
// Precondition: parts is not empty. Throws Error when they do not fit.
Tensor concatAlong(const std::vector<Tensor>& parts, size_t axis);

// `parts` stacked along a new axis `axis` (0..rank): all of one dtype and shape.
Tensor stackAlong(const std::vector<Tensor>& parts, size_t axis);

}  // namespace onnxfold::kernels

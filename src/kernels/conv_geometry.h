// Spatial geometry of the convolutions and the pools (conv_geometry.cpp): the
// kernel, strides, dilations and pads of each spatial axis and the output size
// they give, with ONNX's auto_pad and ceil_mode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/op_registry.h"

namespace onnxfold::kernels {

// Spatial geometry shared by Conv and the pools. Unknown sizes are -1.
struct Geom {
  std::vector<int64_t> in, kernel, strides, dilations, pad_b, pad_e, out;
  size_t rank() const { return in.size(); }
};

// Geometry arithmetic: hostile attributes (huge kernel_shape, strides, dilations, pads,
// output_shape) must fail the node, not wrap a size (fuzzed models did).
int64_t geomMul(const OpContext& ctx, int64_t a, int64_t b);
int64_t geomAdd(const OpContext& ctx, int64_t a, int64_t b);

// Reads strides/dilations/pads/auto_pad and computes the output spatial size
// (ONNX semantics; ceil_mode drops a last window that would start in the end padding).
Geom makeGeom(const OpContext& ctx, const std::vector<int64_t>& in,
              const std::vector<int64_t>& kernel, bool ceil_mode, bool use_dilations = true);

// X's dims after N and C, -1 where unknown: the `in` of makeGeom at inference.
std::vector<int64_t> spatialDims(const Shape& x);

// [n, c, output spatial dims...], unknown where g.out is -1.
Shape spatialOutputShape(const Dim& n, const Dim& c, const Geom& g);

// Kernel spatial shape: the attribute, else W's dims after the first two. An attribute that
// disagrees with W's known dims is an error (the kernels index W by it).
std::vector<int64_t> kernelShapeFrom(const OpContext& ctx, const Shape* w, size_t nsp);

}  // namespace onnxfold::kernels

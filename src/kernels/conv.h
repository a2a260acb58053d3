// What conv.cpp shares with the integer convolutions (quantized_linear.cpp) and
// with conv_test.cpp: the Conv shape rule, the geometry of a computed conv and
// the portable im2col + GEMM convolution.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/conv_geometry.h"
#include "kernels/elementwise.h"
#include "kernels/op_registry.h"

namespace onnxfold::kernels {

// Shape rule of Conv/ConvInteger/QLinearConv: x and w are input indices.
void inferConvLike(InferContext& ctx, size_t xi, size_t wi, DataType out_type);

// The checks the shape rules of Conv and ConvTranspose open with: X of rank >= 3, W of X's
// rank, a positive group (set in `group`). Null when X's rank is unknown: the output then has
// unknown rank as well.
const Shape* checkConvOperands(InferContext& ctx, const Shape* x, const Shape* w, DataType t,
                               int64_t* group);

// And how they end: Y is [N, m, spatial...], the spatial dims unknown while the kernel is,
// else those of `geom(in, kernel).out`.
template <class MakeGeom>
void setConvOutput(InferContext& ctx, const Shape& x, const Shape* w, const Dim& m, DataType t,
                   MakeGeom&& geom) {
  const std::vector<int64_t> kernel = kernelShapeFrom(ctx, w, x.rank() - 2);
  if (kernel.empty()) {
    Shape s;
    s.dims = {x.dims[0], m};
    s.dims.resize(x.rank());
    ctx.setOutput(0, t, s);
    return;
  }
  const Geom g = geom(spatialDims(x), kernel);
  ctx.setOutput(0, t, spatialOutputShape(x.dims[0], m, g));
}

// Geometry of a computed conv from the (known) tensor dims.
Geom convGeom(const OpContext& ctx, const std::vector<int64_t>& xd, const std::vector<int64_t>& wd);

// Portable conv: per image and group, im2col then Y_g = W_g * col (+ bias).
// Defined in conv.cpp for float, double and int32_t.
template <class T>
void convIm2col(const T* x, const T* w, const T* bias, T* y, int64_t batch, int64_t channels,
                int64_t out_channels, int64_t group, const Geom& g);

// y[n, m, :] += bias[m] for `batch` images of `channels` planes of `spatial` elements: the
// bias step every convolution ends with.
template <class T>
void addChannelBias(T* y, const T* bias, int64_t batch, int64_t channels, int64_t spatial) {
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t m = 0; m < channels; ++m) {
      T* row = y + (n * channels + m) * spatial;
      for (int64_t o = 0; o < spatial; ++o)
        row[o] = elementwise::wrapAdd(row[o], bias[m]);  // int32 (QLinearConv) wraps
    }
}

// Float32 conv on NCHW data for the differential test (conv_test.cpp):
// through XNNPACK (returns false when it is unavailable or the shape is not
// 1-D/2-D) or through the portable im2col + GEMM path.
bool convF32ForTest(const float* x, const float* w, const float* bias, float* y, int64_t batch,
                    int64_t channels, int64_t out_channels, int64_t group,
                    const std::vector<int64_t>& in, const std::vector<int64_t>& kernel,
                    const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                    const std::vector<int64_t>& pad_b, const std::vector<int64_t>& pad_e,
                    bool use_xnnpack);

}  // namespace onnxfold::kernels

// The only door to XNNPACK: float32 fully-connected and NHWC 2-D convolution
// run through an RAII create -> setup -> run -> delete handle (xnnpack.cpp),
// with xnn_status codes turned into Error messages. <xnnpack.h> itself is
// included only by xnnpack.cpp, so the rest of the kernels compile unchanged
// in the wasm build, where XNNPACK is absent (ONNXFOLD_HAVE_XNNPACK unset) and
// every function here returns false so callers take their portable path.
#pragma once

#include <cstddef>
#include <cstdint>

namespace onnxfold::xnn {

// True when XNNPACK is compiled in and xnn_initialize() succeeded (called once).
bool available();

// C[M,N] = A[M,K] * W (+ bias[N]) with row-major A and C. W is [K,N] when
// weights_kn is true (MatMul's B), else [N,K] (Gemm with transB). `bias` may
// be null. Returns false when XNNPACK is not available; throws Error when an
// XNNPACK call fails. A needs no padding: it is copied when XNNPACK would read
// past its end.
bool fullyConnectedF32(size_t m, size_t k, size_t n, const float* a, const float* w,
                       bool weights_kn, const float* bias, float* c);

// 2-D convolution on NHWC data. Kernel layout is [groups][group_out][kh][kw][group_in].
struct Conv2dParams {
  size_t batch = 1, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  uint32_t kernel_h = 1, kernel_w = 1;
  uint32_t stride_h = 1, stride_w = 1;
  uint32_t dilation_h = 1, dilation_w = 1;
  uint32_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  uint32_t groups = 1;
  size_t group_in = 0, group_out = 0;
};
// Returns false when XNNPACK is not available; throws Error on failure.
// `input` must be readable for XNN_EXTRA_BYTES (16) past its end; `bias` may be null.
bool conv2dNhwcF32(const Conv2dParams& p, const float* input, const float* kernel,
                   const float* bias, float* output);

// Bytes XNNPACK may read past the end of an input (XNN_EXTRA_BYTES).
constexpr size_t kExtraBytes = 16;

}  // namespace onnxfold::xnn

// XNNPACK glue (see xnnpack.h). Operators follow the 2022 lifecycle:
// create (validates, packs weights) -> setup (shapes, pointers) -> run ->
// delete, wrapped in an RAII handle so errors cannot leak operators.
#include "kernels/xnnpack.h"

#if ONNXFOLD_HAVE_XNNPACK
#include <xnnpack.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ir/error.h"
#endif

namespace onnxfold::xnn {

#if ONNXFOLD_HAVE_XNNPACK

namespace {

static_assert(kExtraBytes == XNN_EXTRA_BYTES, "keep kExtraBytes in sync with XNNPACK");

const char* statusName(xnn_status s) {
  switch (s) {
    case xnn_status_success:
      return "success";
    case xnn_status_uninitialized:
      return "XNNPACK is not initialized";
    case xnn_status_invalid_parameter:
      return "invalid parameter";
    case xnn_status_invalid_state:
      return "invalid state";
    case xnn_status_unsupported_parameter:
      return "unsupported parameter";
    case xnn_status_unsupported_hardware:
      return "unsupported hardware";
    case xnn_status_out_of_memory:
      return "out of memory";
  }
  return "unknown status";
}

void check(xnn_status s, const char* what) {
  if (s != xnn_status_success) {
    throw Error(std::string("XNNPACK ") + what + " failed: " + statusName(s) + " (status " +
                std::to_string(static_cast<int>(s)) + ")");
  }
}

// Owns one xnn_operator_t; deletes it on scope exit, also when a step throws.
class Operator {
 public:
  Operator() = default;
  Operator(const Operator&) = delete;
  Operator& operator=(const Operator&) = delete;
  ~Operator() {
    if (op_ != nullptr) xnn_delete_operator(op_);
  }
  xnn_operator_t* out() { return &op_; }
  xnn_operator_t get() const { return op_; }
  void run() { check(xnn_run_operator(op_, /*threadpool=*/nullptr), "run"); }

 private:
  xnn_operator_t op_ = nullptr;
};

}  // namespace

bool available() {
  // xnn_initialize is idempotent, but call it once; a failure (unsupported
  // hardware) makes every caller use the portable kernels instead.
  static const bool ok = xnn_initialize(nullptr) == xnn_status_success;
  return ok;
}

bool fullyConnectedF32(size_t m, size_t k, size_t n, const float* a, const float* w,
                       bool weights_kn, const float* bias, float* c) {
  if (!available()) return false;
  if (m == 0 || n == 0) return true;
  if (k == 0) {
    for (size_t i = 0; i < m; ++i)
      for (size_t j = 0; j < n; ++j)
        c[i * n + j] = bias != nullptr ? bias[j] : 0.0f;
    return true;
  }
  const float inf = std::numeric_limits<float>::infinity();
  Operator op;
  check(xnn_create_fully_connected_nc_f32(k, n, k, n, w, bias, -inf, inf,
                                          weights_kn ? XNN_FLAG_TRANSPOSE_WEIGHTS : 0, op.out()),
        "create fully_connected_nc_f32");
  // XNNPACK may read XNN_EXTRA_BYTES past the input: copy the last row into a
  // padded buffer and run it separately so the caller's A needs no padding.
  const size_t full_rows = m - 1;
  if (full_rows > 0) {
    check(xnn_setup_fully_connected_nc_f32(op.get(), full_rows, a, c, nullptr),
          "setup fully_connected_nc_f32");
    op.run();
  }
  std::vector<float> last(k + kExtraBytes / sizeof(float));
  std::memcpy(last.data(), a + full_rows * k, k * sizeof(float));
  check(xnn_setup_fully_connected_nc_f32(op.get(), 1, last.data(), c + full_rows * n, nullptr),
        "setup fully_connected_nc_f32");
  op.run();
  return true;
}

bool conv2dNhwcF32(const Conv2dParams& p, const float* input, const float* kernel,
                   const float* bias, float* output) {
  if (!available()) return false;
  const float inf = std::numeric_limits<float>::infinity();
  Operator op;
  const size_t in_channels = p.groups * p.group_in;
  const size_t out_channels = p.groups * p.group_out;
  check(xnn_create_convolution2d_nhwc_f32(
            p.pad_top, p.pad_right, p.pad_bottom, p.pad_left, p.kernel_h, p.kernel_w, p.stride_h,
            p.stride_w, p.dilation_h, p.dilation_w, p.groups, p.group_in, p.group_out, in_channels,
            out_channels, kernel, bias, -inf, inf, /*flags=*/0, op.out()),
        "create convolution2d_nhwc_f32");
  check(xnn_setup_convolution2d_nhwc_f32(op.get(), p.batch, p.in_h, p.in_w, input, output, nullptr),
        "setup convolution2d_nhwc_f32");
  op.run();
  return true;
}

#else  // !ONNXFOLD_HAVE_XNNPACK

bool available() {
  return false;
}
bool fullyConnectedF32(size_t, size_t, size_t, const float*, const float*, bool, const float*,
                       float*) {
  return false;
}
bool conv2dNhwcF32(const Conv2dParams&, const float*, const float*, const float*, float*) {
  return false;
}

#endif

}  // namespace onnxfold::xnn

// det op family: Det, the determinant of each square matrix of a batch by LU
// decomposition with partial pivoting. See op_registry.h for the
// infer()/compute() contract. Computed in double and rounded once.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "kernels/common.h"
#include "kernels/op_helpers.h"

namespace onnxfold {
namespace kernels {
namespace {

void inferDet(InferContext& ctx) {
  requireType(ctx, 0, isFloatType, "a float type");
  const DataType t = ctx.inputDtype(0);
  const Shape* s = ctx.inputShape(0);
  if (s == nullptr) {
    ctx.setOutputUnknownRank(0, t);
    return;
  }
  if (s->rank() < 2) ctx.fail("input must have rank >= 2");
  const Dim& a = s->dims[s->rank() - 2];
  const Dim& b = s->dims[s->rank() - 1];
  if (a.isKnown() && b.isKnown() && a.value != b.value) ctx.fail("input matrices must be square");
  Shape out = *s;
  out.dims.resize(s->rank() - 2);
  ctx.setOutput(0, t, std::move(out));
}

void computeDet(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t M = x.dims().back();
  const int64_t batch = product(x.dims(), 0, x.rank() - 2);
  // No matrices: M * M of an empty batch's declared dims may overflow int64.
  if (batch == 0) return;
  const std::vector<double> v = readAll(x);
  std::vector<double> out(static_cast<size_t>(batch));
  std::vector<double> a(static_cast<size_t>(M * M));
  for (int64_t b = 0; b < batch; ++b) {
    std::copy(v.begin() + b * M * M, v.begin() + (b + 1) * M * M, a.begin());
    // LU decomposition with partial pivoting.
    double det = 1;
    for (int64_t k = 0; k < M; ++k) {
      int64_t p = k;
      for (int64_t i = k + 1; i < M; ++i) {
        if (std::fabs(a[static_cast<size_t>(i * M + k)]) >
            std::fabs(a[static_cast<size_t>(p * M + k)]))
          p = i;
      }
      const double piv = a[static_cast<size_t>(p * M + k)];
      if (piv == 0) {
        det = 0;
        break;
      }
      if (p != k) {
        for (int64_t j = 0; j < M; ++j)
          std::swap(a[static_cast<size_t>(p * M + j)], a[static_cast<size_t>(k * M + j)]);
        det = -det;
      }
      det *= piv;
      for (int64_t i = k + 1; i < M; ++i) {
        const double f = a[static_cast<size_t>(i * M + k)] / piv;
        for (int64_t j = k + 1; j < M; ++j)
          a[static_cast<size_t>(i * M + j)] -= f * a[static_cast<size_t>(k * M + j)];
      }
    }
    out[static_cast<size_t>(b)] = det;
  }
  writeAll(ctx.output(0), out);
}

}  // namespace
}  // namespace kernels

void registerDetOps(OpRegistry& r) {
  using namespace kernels;
  for (int v : {11, 22})
    r.add({"", "Det", v, inferDet, computeDet});
}

}  // namespace onnxfold

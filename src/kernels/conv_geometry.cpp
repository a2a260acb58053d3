// The geometry of conv_geometry.h.
#include "kernels/conv_geometry.h"

#include <algorithm>
#include <string>

#include "kernels/op_helpers.h"

namespace onnxfold {
namespace kernels {

int64_t geomMul(const OpContext& ctx, int64_t a, int64_t b) {
  int64_t v = 0;
  if (!checkedMul(a, b, &v)) ctx.fail("a size overflows int64");
  return v;
}
int64_t geomAdd(const OpContext& ctx, int64_t a, int64_t b) {
  int64_t v = 0;
  if (!checkedAdd(a, b, &v)) ctx.fail("a size overflows int64");
  return v;
}

Geom makeGeom(const OpContext& ctx, const std::vector<int64_t>& in,
              const std::vector<int64_t>& kernel, bool ceil_mode, bool use_dilations) {
  const size_t n = in.size();
  Geom g;
  g.in = in;
  g.kernel = kernel;
  g.strides = ctx.attrInts("strides", std::vector<int64_t>(n, 1));
  g.dilations = use_dilations ? ctx.attrInts("dilations", std::vector<int64_t>(n, 1))
                              : std::vector<int64_t>(n, 1);
  if (g.strides.empty()) g.strides.assign(n, 1);
  if (g.dilations.empty()) g.dilations.assign(n, 1);
  if (kernel.size() != n) ctx.fail("kernel_shape must have one value per spatial axis");
  if (g.strides.size() != n) ctx.fail("strides must have one value per spatial axis");
  if (g.dilations.size() != n) ctx.fail("dilations must have one value per spatial axis");
  std::vector<int64_t> pads = ctx.attrInts("pads", std::vector<int64_t>(2 * n, 0));
  if (pads.empty()) pads.assign(2 * n, 0);
  if (pads.size() != 2 * n) ctx.fail("pads must have two values per spatial axis");
  std::string auto_pad = ctx.attrString("auto_pad", "NOTSET");
  g.pad_b.assign(pads.begin(), pads.begin() + n);
  g.pad_e.assign(pads.begin() + n, pads.end());
  g.out.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (g.strides[i] <= 0) ctx.fail("strides must be positive");
    if (g.dilations[i] <= 0) ctx.fail("dilations must be positive");
    if (g.kernel[i] <= 0) ctx.fail("kernel_shape must be positive");
    const int64_t dk = geomAdd(ctx, geomMul(ctx, g.kernel[i] - 1, g.dilations[i]), 1);
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      if (in[i] < 0) continue;
      // ceil(in / stride), and (out - 1) * stride <= in: neither can overflow.
      const int64_t out = in[i] / g.strides[i] + (in[i] % g.strides[i] != 0 ? 1 : 0);
      const int64_t total = std::max<int64_t>(0, ((out - 1) * g.strides[i] - in[i]) + dk);
      const int64_t small = total / 2, large = total - total / 2;
      g.pad_b[i] = auto_pad == "SAME_UPPER" ? small : large;
      g.pad_e[i] = auto_pad == "SAME_UPPER" ? large : small;
      g.out[i] = out;
      continue;
    }
    if (auto_pad == "VALID") {
      g.pad_b[i] = g.pad_e[i] = 0;
    } else if (auto_pad != "NOTSET" && !auto_pad.empty()) {
      ctx.fail("unknown auto_pad '" + auto_pad + "'");
    }
    if (in[i] < 0) continue;
    const int64_t span =
        geomAdd(ctx, geomAdd(ctx, geomAdd(ctx, in[i], g.pad_b[i]), g.pad_e[i]), -dk);
    if (span < 0) ctx.fail("the kernel is larger than the padded input");
    int64_t out = span / g.strides[i] + 1;
    if (ceil_mode) {
      out = span / g.strides[i] + (span % g.strides[i] != 0 ? 1 : 0) + 1;
      // The last window must start inside the input or the begin padding.
      if (geomMul(ctx, out - 1, g.strides[i]) >= geomAdd(ctx, in[i], g.pad_b[i])) --out;
    }
    g.out[i] = out;
  }
  return g;
}

std::vector<int64_t> spatialDims(const Shape& x) {
  std::vector<int64_t> in;
  for (size_t i = 2; i < x.rank(); ++i)
    in.push_back(x.dims[i].isKnown() ? x.dims[i].value : -1);
  return in;
}

Shape spatialOutputShape(const Dim& n, const Dim& c, const Geom& g) {
  Shape s;
  s.dims = {n, c};
  for (int64_t o : g.out)
    s.dims.push_back(o >= 0 ? Dim::known(o) : unknownDim());
  return s;
}

std::vector<int64_t> kernelShapeFrom(const OpContext& ctx, const Shape* w, size_t nsp) {
  std::vector<int64_t> k = ctx.attrInts("kernel_shape");
  if (!k.empty()) {
    if (w == nullptr || w->rank() != nsp + 2) return k;
    for (size_t i = 0; i < nsp && i < k.size(); ++i) {
      const Dim& d = w->dims[i + 2];
      if (d.isKnown() && d.value != k[i]) {
        ctx.fail("kernel_shape[" + std::to_string(i) + "] = " + std::to_string(k[i]) +
                 " but W's spatial dim is " + std::to_string(d.value));
      }
    }
    return k;
  }
  if (w == nullptr || w->rank() != nsp + 2) return {};
  for (size_t i = 2; i < w->rank(); ++i) {
    if (!w->dims[i].isKnown()) return {};
    k.push_back(w->dims[i].value);
  }
  return k;
}

}  // namespace kernels
}  // namespace onnxfold

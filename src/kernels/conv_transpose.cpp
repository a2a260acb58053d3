// conv_transpose op family: ConvTranspose and Col2Im, the two ops built on
// col2im (the adjoint of im2col). See op_registry.h for the infer()/compute()
// contract. ConvTranspose is a GEMM (gemm.h) then col2im; half and bfloat16
// are computed in float, Col2Im in double.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/conv.h"
#include "kernels/conv_geometry.h"
#include "kernels/gemm.h"
#include "kernels/op_helpers.h"

namespace onnxfold {
namespace kernels {
namespace {

// col2im (accumulating): the adjoint of im2col, used by ConvTranspose where
// `g.in` is the transposed conv's input and `out_dims` its output.
template <class T>
void col2imAdd(const T* col, int64_t channels, const std::vector<int64_t>& in_dims,
               const std::vector<int64_t>& out_dims, const Geom& g, T* y) {
  const size_t nd = in_dims.size();
  const int64_t ksize = product(g.kernel, 0, nd);
  const int64_t isize = product(in_dims, 0, nd);
  const int64_t osize = product(out_dims, 0, nd);
  std::vector<int64_t> ostride(nd, 1);
  for (size_t d = nd - 1; d-- > 0;)
    ostride[d] = ostride[d + 1] * out_dims[d + 1];
  std::vector<int64_t> kk(nd), ii(nd);
  for (int64_t c = 0; c < channels; ++c) {
    std::fill(kk.begin(), kk.end(), 0);
    for (int64_t kidx = 0; kidx < ksize; ++kidx) {
      const T* row = col + (c * ksize + kidx) * isize;
      std::fill(ii.begin(), ii.end(), 0);
      for (int64_t i = 0; i < isize; ++i) {
        int64_t off = c * osize;
        bool valid = true;
        for (size_t d = 0; d < nd; ++d) {
          const int64_t od = ii[d] * g.strides[d] - g.pad_b[d] + kk[d] * g.dilations[d];
          if (od < 0 || od >= out_dims[d]) {
            valid = false;
            break;
          }
          off += od * ostride[d];
        }
        if (valid) y[off] += row[i];
        for (size_t d = nd; d-- > 0;) {
          if (++ii[d] < in_dims[d]) break;
          ii[d] = 0;
        }
      }
      for (size_t d = nd; d-- > 0;) {
        if (++kk[d] < g.kernel[d]) break;
        kk[d] = 0;
      }
    }
  }
}

// ================================================================= ConvTranspose

struct ConvTransposeGeom {
  Geom g;  // g.in: input spatial dims, g.out: output spatial dims
  bool ok = true;
};

ConvTransposeGeom convTransposeGeom(const OpContext& ctx, const std::vector<int64_t>& in,
                                    const std::vector<int64_t>& kernel) {
  const size_t n = in.size();
  ConvTransposeGeom r;
  Geom& g = r.g;
  g.in = in;
  g.kernel = kernel;
  g.strides = ctx.attrInts("strides", std::vector<int64_t>(n, 1));
  g.dilations = ctx.attrInts("dilations", std::vector<int64_t>(n, 1));
  if (g.strides.empty()) g.strides.assign(n, 1);
  if (g.dilations.empty()) g.dilations.assign(n, 1);
  std::vector<int64_t> pads = ctx.attrInts("pads", std::vector<int64_t>(2 * n, 0));
  if (pads.empty()) pads.assign(2 * n, 0);
  std::vector<int64_t> out_pad = ctx.attrInts("output_padding", std::vector<int64_t>(n, 0));
  if (out_pad.empty()) out_pad.assign(n, 0);
  std::vector<int64_t> out_shape = ctx.attrInts("output_shape");
  if (out_shape.size() == n + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (kernel.size() != n || g.strides.size() != n || g.dilations.size() != n ||
      pads.size() != 2 * n || out_pad.size() != n ||
      (!out_shape.empty() && out_shape.size() != n)) {
    ctx.fail(
        "kernel_shape/strides/dilations/pads/output_padding/output_shape sizes do not match "
        "the spatial rank");
  }
  const std::string auto_pad = ctx.attrString("auto_pad");
  g.pad_b.assign(pads.begin(), pads.begin() + n);
  g.pad_e.assign(pads.begin() + n, pads.end());
  g.out.assign(n, -1);
  // stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1, before padding.
  const auto natural = [&](size_t k) {
    const int64_t dk = geomAdd(ctx, geomMul(ctx, kernel[k] - 1, g.dilations[k]), 1);
    return geomAdd(ctx, geomAdd(ctx, geomMul(ctx, g.strides[k], in[k] - 1), out_pad[k]), dk);
  };
  for (size_t i = 0; i < n; ++i) {
    if (g.strides[i] <= 0) ctx.fail("strides must be positive");
    if (g.dilations[i] <= 0) ctx.fail("dilations must be positive");
    if (kernel[i] <= 0) ctx.fail("kernel_shape must be positive");
    if (!out_shape.empty() && out_shape[i] < 0) ctx.fail("output_shape must not be negative");
    if (pads[i] == std::numeric_limits<int64_t>::min() ||
        pads[i + n] == std::numeric_limits<int64_t>::min())
      ctx.fail("a size overflows int64");  // negated below
    const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
    if (!out_shape.empty() || same) {
      if (in[i] < 0) {
        if (!out_shape.empty()) g.out[i] = out_shape[i];
        r.ok = false;
        continue;
      }
      const int64_t out = !out_shape.empty() ? out_shape[i] : geomMul(ctx, in[i], g.strides[i]);
      const int64_t total = geomAdd(ctx, natural(i), -out);
      // Floor division as in the reference: a negative total (output_shape
      // larger than the natural size) extends the end.
      const int64_t half = total / 2 - (total % 2 < 0 ? 1 : 0);
      if (auto_pad == "SAME_UPPER") {
        g.pad_b[i] = half;
        g.pad_e[i] = total - half;
      } else {
        g.pad_b[i] = total - half;
        g.pad_e[i] = half;
      }
      g.out[i] = out;
      continue;
    }
    if (auto_pad == "VALID") g.pad_b[i] = g.pad_e[i] = 0;
    if (in[i] < 0) {
      r.ok = false;
      continue;
    }
    g.out[i] = geomAdd(ctx, geomAdd(ctx, natural(i), -g.pad_b[i]), -g.pad_e[i]);
    if (g.out[i] < 0) ctx.fail("the output size would be negative");
  }
  return r;
}

void inferConvTranspose(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  requireType(ctx, 0, t == DataType::kUndefined || isFloatType(t), "a float type");
  const Shape* w = ctx.inputShape(1);
  int64_t group = 1;
  const Shape* x = checkConvOperands(ctx, ctx.inputShape(0), w, t, &group);
  if (x == nullptr) return;
  Dim m = unknownDim();
  int64_t mv = 0;
  if (w != nullptr && w->dims[1].isKnown()) {
    if (!checkedMul(w->dims[1].value, group, &mv)) ctx.fail("W's dims[1] * group overflows");
    m = Dim::known(mv);
  }
  setConvOutput(ctx, *x, w, m, t,
                [&](const std::vector<int64_t>& in, const std::vector<int64_t>& kernel) {
                  return convTransposeGeom(ctx, in, kernel).g;
                });
}

template <class T>
void convTransposeImpl(const T* x, const T* w, const T* bias, T* y, int64_t batch, int64_t channels,
                       int64_t out_channels, int64_t group, const Geom& g) {
  const size_t nd = g.rank();
  const int64_t cg = channels / group, mg = out_channels / group;
  const int64_t ksize = product(g.kernel, 0, nd);
  const int64_t isize = product(g.in, 0, nd);
  const int64_t osize = product(g.out, 0, nd);
  // Checked products: with no input channels, W's and X's other dims may be huge.
  std::vector<T> col(static_cast<size_t>(product({mg, ksize, isize}, 0, 3)));
  // W_g is [Cg, Mg*K]; col = W_g^T [Mg*K, Cg] * X_g [Cg, I].
  std::vector<T> wt(static_cast<size_t>(product({mg, ksize, cg}, 0, 3)));
  std::fill(y, y + batch * out_channels * osize, T(0));
  for (int64_t gi = 0; gi < group; ++gi) {
    const T* wg = w + gi * cg * mg * ksize;
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t r = 0; r < mg * ksize; ++r)
        wt[r * cg + c] = wg[c * mg * ksize + r];
    for (int64_t n = 0; n < batch; ++n) {
      gemmAny<T>(mg * ksize, isize, cg, wt.data(), cg, x + (n * channels + gi * cg) * isize, isize,
                 col.data(), isize);
      col2imAdd(col.data(), mg, g.in, g.out, g, y + (n * out_channels + gi * mg) * osize);
    }
  }
  if (bias != nullptr) addChannelBias(y, bias, batch, out_channels, osize);
}

void computeConvTranspose(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  const Tensor* B = ctx.hasInput(2) ? &ctx.input(2) : nullptr;
  Tensor& Y = ctx.output(0);
  const int64_t group = ctx.attrInt("group");
  std::vector<int64_t> kernel = ctx.attrInts("kernel_shape");
  if (kernel.empty()) kernel.assign(W.dims().begin() + 2, W.dims().end());
  const ConvTransposeGeom cg =
      convTransposeGeom(ctx, std::vector<int64_t>(X.dims().begin() + 2, X.dims().end()), kernel);
  const int64_t batch = X.dims()[0], channels = X.dims()[1], m = W.dims()[1] * group;
  dispatchNumeric(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      convTransposeImpl<T>(dataAs<T>(X), dataAs<T>(W), B ? dataAs<T>(*B) : nullptr,
                           mutableDataAs<T>(Y), batch, channels, m, group, cg.g);
    } else if constexpr (kIsHalfLike<T>) {
      runInFloat<T>({&X, &W, B}, Y, [&](const float* const* in, float* y) {
        convTransposeImpl<float>(in[0], in[1], in[2], y, batch, channels, m, group, cg.g);
      });
    } else {
      ctx.unsupported("unsupported type");
    }
  });
}

// ================================================================= Col2Im

void inferCol2Im(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  const Shape* x = ctx.inputShape(0);
  const Tensor* image = ctx.inputValue(1);
  const Tensor* block = ctx.inputValue(2);
  Dim n = x != nullptr && x->rank() == 3 ? x->dims[0] : unknownDim();
  Dim c = unknownDim();
  if (x != nullptr && x->rank() != 3) ctx.fail("input must be 3-D [N, C*prod(block), L]");
  if (block != nullptr && x != nullptr && x->dims[1].isKnown()) {
    const auto b = toInt64Vector(ctx, *block);
    const int64_t bp = product(b, 0, b.size());
    if (bp <= 0 || x->dims[1].value % bp != 0) ctx.fail("block_shape does not divide dim 1");
    c = Dim::known(x->dims[1].value / bp);
  }
  Shape s;
  s.dims = {n, c};
  if (image != nullptr) {
    for (int64_t d : toInt64Vector(ctx, *image))
      s.dims.push_back(Dim::known(d));
    ctx.setOutput(0, t, s);
  } else if (const Shape* is = ctx.inputShape(1);
             is != nullptr && is->rank() == 1 && is->dims[0].isKnown()) {
    s.dims.resize(2 + is->dims[0].value);
    ctx.setOutput(0, t, s);
  } else {
    ctx.setOutputUnknownRank(0, t);
  }
}

void computeCol2Im(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  Tensor& Y = ctx.output(0);
  const std::vector<int64_t> image = toInt64Vector(ctx, ctx.input(1));
  const std::vector<int64_t> block = toInt64Vector(ctx, ctx.input(2));
  const size_t nd = image.size();
  Geom g = makeGeom(ctx, image, block, false);
  // The columns are laid out like im2col of the image: col2im is its adjoint.
  const int64_t batch = Y.dims()[0], channels = Y.dims()[1];
  const int64_t L = product(g.out, 0, nd);
  if (X.dims()[2] != L) ctx.fail("the number of blocks does not match image_shape");
  const int64_t isize = product(image, 0, nd), ksize = product(block, 0, nd);
  dispatchNumeric(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      std::vector<double> col(static_cast<size_t>(channels * ksize * L));
      std::vector<double> y(static_cast<size_t>(channels * isize));
      Geom cg = g;  // transposed roles: "input" = output grid, "output" = image
      for (int64_t n = 0; n < batch; ++n) {
        const T* x = dataAs<T>(X) + n * channels * ksize * L;
        for (size_t i = 0; i < col.size(); ++i)
          col[i] = toDouble(x[i]);
        std::fill(y.begin(), y.end(), 0.0);
        col2imAdd(col.data(), channels, g.out, image, cg, y.data());
        T* yo = mutableDataAs<T>(Y) + n * channels * isize;
        for (size_t i = 0; i < y.size(); ++i)
          yo[i] = fromDouble<T>(y[i]);
      }
    }
  });
}

}  // namespace
}  // namespace kernels

void registerConvTransposeOps(OpRegistry& r) {
  using namespace kernels;
  for (int v : {1, 11, 22})
    r.add({"", "ConvTranspose", v, inferConvTranspose, computeConvTranspose});
  r.add({"", "Col2Im", 18, inferCol2Im, computeCol2Im});
}

}  // namespace onnxfold

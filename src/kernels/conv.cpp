// conv op family: Conv, DeformConv (2-D) and CausalConvWithState. See
// op_registry.h for the infer()/compute() contract.
//
// Float32 2-D (and 1-D) convolution goes through XNNPACK natively
// (xnnpack.h); everywhere else (and always in wasm) convolutions of every rank
// are im2col + the portable GEMM of gemm.h. Half and bfloat16 are computed in
// float.
#include "kernels/conv.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/float_math.h"
#include "kernels/gemm.h"
#include "kernels/op_helpers.h"
#include "kernels/xnnpack.h"

namespace onnxfold {
namespace kernels {
namespace {

// im2col for one image and group: col[(c*K + kidx) * O + o] with zeros for padding.
template <class T>
void im2col(const T* x, int64_t channels, const Geom& g, T* col) {
  const size_t nd = g.rank();
  const int64_t ksize = product(g.kernel, 0, nd);
  const int64_t osize = product(g.out, 0, nd);
  const int64_t isize = product(g.in, 0, nd);
  const int64_t olast = g.out[nd - 1];
  const int64_t outer_count = olast > 0 ? osize / olast : 0;
  std::vector<int64_t> istride(nd, 1);
  for (size_t d = nd - 1; d-- > 0;)
    istride[d] = istride[d + 1] * g.in[d + 1];
  std::vector<int64_t> kk(nd), oi(nd);
  const int64_t L = nd - 1;
  for (int64_t c = 0; c < channels; ++c) {
    std::fill(kk.begin(), kk.end(), 0);
    for (int64_t kidx = 0; kidx < ksize; ++kidx) {
      T* row = col + (c * ksize + kidx) * osize;
      std::fill(oi.begin(), oi.end(), 0);
      const int64_t koff = kk[L] * g.dilations[L] - g.pad_b[L];
      for (int64_t outer = 0; outer < outer_count; ++outer) {
        bool valid = true;
        int64_t base = c * isize;
        for (int64_t d = 0; d < L; ++d) {
          const int64_t id = oi[d] * g.strides[d] - g.pad_b[d] + kk[d] * g.dilations[d];
          if (id < 0 || id >= g.in[d]) {
            valid = false;
            break;
          }
          base += id * istride[d];
        }
        T* dst = row + outer * olast;
        if (!valid) {
          std::fill(dst, dst + olast, T(0));
        } else {
          const T* src = x + base;
          const int64_t s = g.strides[L], in_last = g.in[L];
          for (int64_t o = 0; o < olast; ++o) {
            const int64_t id = o * s + koff;
            dst[o] = (id >= 0 && id < in_last) ? src[id] : T(0);
          }
        }
        for (int64_t d = L - 1; d >= 0; --d) {
          if (++oi[d] < g.out[d]) break;
          oi[d] = 0;
        }
      }
      for (int64_t d = L; d >= 0; --d) {
        if (++kk[d] < g.kernel[d]) break;
        kk[d] = 0;
      }
    }
  }
}

// Float32 2-D (and 1-D as 2-D with height 1) conv through XNNPACK in NHWC.
bool convXnnpackF32(const float* x, const float* w, const float* bias, float* y, int64_t batch,
                    int64_t channels, int64_t out_channels, int64_t group, const Geom& g) {
  if (!xnn::available() || (g.rank() != 2 && g.rank() != 1)) return false;
  const bool one_d = g.rank() == 1;
  const int64_t ih = one_d ? 1 : g.in[0], iw = g.in[g.rank() - 1];
  const int64_t oh = one_d ? 1 : g.out[0], ow = g.out[g.rank() - 1];
  const int64_t kh = one_d ? 1 : g.kernel[0], kw = g.kernel[g.rank() - 1];
  for (size_t i = 0; i < g.rank(); ++i) {
    if (g.pad_b[i] < 0 || g.pad_e[i] < 0) return false;
  }
  const int64_t cg = channels / group, mg = out_channels / group;
  // NCHW -> NHWC, padded for XNNPACK's over-reads.
  std::vector<float> xin(static_cast<size_t>(batch * ih * iw * channels) +
                         xnn::kExtraBytes / sizeof(float));
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t p = 0; p < ih * iw; ++p)
        xin[(n * ih * iw + p) * channels + c] = x[(n * channels + c) * ih * iw + p];
  // W [M, Cg, kh, kw] -> [M, kh, kw, Cg] (= [groups][Mg][kh][kw][Cg]).
  std::vector<float> wk(static_cast<size_t>(out_channels * kh * kw * cg));
  for (int64_t m = 0; m < out_channels; ++m)
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t p = 0; p < kh * kw; ++p)
        wk[(m * kh * kw + p) * cg + c] = w[(m * cg + c) * kh * kw + p];
  std::vector<float> yout(static_cast<size_t>(batch * oh * ow * out_channels));
  xnn::Conv2dParams p;
  p.batch = batch;
  p.in_h = ih;
  p.in_w = iw;
  p.out_h = oh;
  p.out_w = ow;
  p.kernel_h = kh;
  p.kernel_w = kw;
  p.stride_h = one_d ? 1 : g.strides[0];
  p.stride_w = g.strides[g.rank() - 1];
  p.dilation_h = one_d ? 1 : g.dilations[0];
  p.dilation_w = g.dilations[g.rank() - 1];
  p.pad_top = one_d ? 0 : g.pad_b[0];
  p.pad_bottom = one_d ? 0 : g.pad_e[0];
  p.pad_left = g.pad_b[g.rank() - 1];
  p.pad_right = g.pad_e[g.rank() - 1];
  p.groups = group;
  p.group_in = cg;
  p.group_out = mg;
  if (!xnn::conv2dNhwcF32(p, xin.data(), wk.data(), bias, yout.data())) return false;
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t q = 0; q < oh * ow; ++q)
      for (int64_t m = 0; m < out_channels; ++m)
        y[(n * out_channels + m) * oh * ow + q] = yout[(n * oh * ow + q) * out_channels + m];
  return true;
}

}  // namespace

const Shape* checkConvOperands(InferContext& ctx, const Shape* x, const Shape* w, DataType t,
                               int64_t* group) {
  if (x == nullptr) {
    ctx.setOutputUnknownRank(0, t);
    return nullptr;
  }
  if (x->rank() < 3) ctx.fail("X must have rank >= 3 (N, C, spatial...)");
  // W's dims are read by the rules, and compute divides by group: fuzzed models crashed on both.
  if (w != nullptr && w->rank() != x->rank()) ctx.fail("W must have the rank of X");
  *group = ctx.attrInt("group");
  if (*group <= 0) ctx.fail("group must be positive");
  return x;
}

// Shape rule of Conv/ConvInteger/QLinearConv: x and w are input indices.
void inferConvLike(InferContext& ctx, size_t xi, size_t wi, DataType out_type) {
  const Shape* w = ctx.inputShape(wi);
  int64_t group = 1;
  const Shape* x = checkConvOperands(ctx, ctx.inputShape(xi), w, out_type, &group);
  if (x == nullptr) return;
  if (w != nullptr && x->dims[1].isKnown() && w->dims[1].isKnown() &&
      x->dims[1].value != ctx.sizeMul(w->dims[1].value, group)) {
    ctx.fail("X has " + std::to_string(x->dims[1].value) + " channels but W expects " +
             std::to_string(w->dims[1].value * group));
  }
  const Dim m = w != nullptr ? w->dims[0] : unknownDim();
  if (m.isKnown() && m.value % group != 0) {
    ctx.fail("W has " + std::to_string(m.value) + " feature maps, not divisible by group " +
             std::to_string(group));
  }
  setConvOutput(ctx, *x, w, m, out_type,
                [&](const std::vector<int64_t>& in, const std::vector<int64_t>& kernel) {
                  return makeGeom(ctx, in, kernel, false);
                });
}

template <class T>
void convIm2col(const T* x, const T* w, const T* bias, T* y, int64_t batch, int64_t channels,
                int64_t out_channels, int64_t group, const Geom& g) {
  const int64_t cg = channels / group, mg = out_channels / group;
  const int64_t ksize = product(g.kernel, 0, g.rank());
  const int64_t osize = product(g.out, 0, g.rank());
  const int64_t isize = product(g.in, 0, g.rank());
  std::vector<T> col(static_cast<size_t>(cg * ksize * osize));
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t gi = 0; gi < group; ++gi) {
      im2col(x + (n * channels + gi * cg) * isize, cg, g, col.data());
      T* yg = y + (n * out_channels + gi * mg) * osize;
      gemmAny<T>(mg, osize, cg * ksize, w + gi * mg * cg * ksize, cg * ksize, col.data(), osize, yg,
                 osize);
    }
    if (bias != nullptr) addChannelBias(y + n * out_channels * osize, bias, 1, out_channels, osize);
  }
}

template void convIm2col<float>(const float*, const float*, const float*, float*, int64_t, int64_t,
                                int64_t, int64_t, const Geom&);
template void convIm2col<double>(const double*, const double*, const double*, double*, int64_t,
                                 int64_t, int64_t, int64_t, const Geom&);
template void convIm2col<int32_t>(const int32_t*, const int32_t*, const int32_t*, int32_t*, int64_t,
                                  int64_t, int64_t, int64_t, const Geom&);

Geom convGeom(const OpContext& ctx, const std::vector<int64_t>& xd,
              const std::vector<int64_t>& wd) {
  std::vector<int64_t> kernel = ctx.attrInts("kernel_shape");
  if (kernel.empty()) kernel.assign(wd.begin() + 2, wd.end());
  return makeGeom(ctx, std::vector<int64_t>(xd.begin() + 2, xd.end()), kernel, false);
}

namespace {

// ================================================================= Conv

void inferConv(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  requireType(ctx, 0, t == DataType::kUndefined || isFloatType(t), "a float type");
  // B is [M]: a shorter bias would be read past its end.
  const Shape* w = ctx.inputShape(1);
  const Shape* b = ctx.hasInput(2) ? ctx.inputShape(2) : nullptr;
  if (b != nullptr) {
    if (b->rank() != 1) ctx.fail("B must be 1-D, it has rank " + std::to_string(b->rank()));
    if (w != nullptr && w->rank() > 0 && w->dims[0].isKnown() && b->dims[0].isKnown() &&
        b->dims[0].value != w->dims[0].value) {
      ctx.fail("B has " + std::to_string(b->dims[0].value) + " values for " +
               std::to_string(w->dims[0].value) + " output channels");
    }
  }
  inferConvLike(ctx, 0, 1, t);
}

void computeConv(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  const Tensor* B = ctx.hasInput(2) ? &ctx.input(2) : nullptr;
  Tensor& Y = ctx.output(0);
  const int64_t group = ctx.attrInt("group");
  const Geom g = convGeom(ctx, X.dims(), W.dims());
  const int64_t batch = X.dims()[0], channels = X.dims()[1], m = W.dims()[0];
  if (m % group != 0) ctx.fail("the number of feature maps is not divisible by group");
  if (Y.numElements() == 0) return;
  dispatchNumeric(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || kIsHalfLike<T>) {
      runInFloat<T>({&X, &W, B}, Y, [&](const float* const* in, float* y) {
        if (!convXnnpackF32(in[0], in[1], in[2], y, batch, channels, m, group, g))
          convIm2col<float>(in[0], in[1], in[2], y, batch, channels, m, group, g);
      });
    } else if constexpr (std::is_same_v<T, double>) {
      convIm2col<double>(dataAs<double>(X), dataAs<double>(W), B ? dataAs<double>(*B) : nullptr,
                         mutableDataAs<double>(Y), batch, channels, m, group, g);
    } else {
      ctx.unsupported("unsupported type");
    }
  });
}

// ================================================================= DeformConv (2-D)

void inferDeformConv(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  requireType(ctx, 0, t == DataType::kUndefined || isFloatType(t), "a float type");
  const Shape* x = ctx.inputShape(0);
  if (x != nullptr && x->rank() != 4)
    ctx.unsupported("only 2-D deformable convolution is supported");
  inferConvLike(ctx, 0, 1, t);
}

// Bilinear sample of one H x W plane; locations outside (-1, H) x (-1, W) give 0
// and corners outside the plane contribute 0.
template <class T>
T bilinear(const T* plane, int64_t h_size, int64_t w_size, T h, T w) {
  // Negated so a NaN location (from the offsets) is outside too: floor(NaN) does not convert.
  if (!(h > T(-1) && h < T(h_size) && w > T(-1) && w < T(w_size))) return T(0);
  const auto h0 = static_cast<int64_t>(std::floor(h)), w0 = static_cast<int64_t>(std::floor(w));
  const int64_t h1 = h0 + 1, w1 = w0 + 1;
  const T lh = h - T(h0), lw = w - T(w0), hh = T(1) - lh, hw = T(1) - lw;
  auto at = [&](int64_t y, int64_t x) {
    return (y >= 0 && y < h_size && x >= 0 && x < w_size) ? plane[y * w_size + x] : T(0);
  };
  return hh * hw * at(h0, w0) + hh * lw * at(h0, w1) + lh * hw * at(h1, w0) + lh * lw * at(h1, w1);
}

// Deformable im2col (sampled, masked) per image and group, then Y_g = W_g * col.
template <class T>
void deformConvImpl(const T* x, const T* w, const T* offset, const T* bias, const T* mask, T* y,
                    int64_t batch, int64_t channels, int64_t out_channels, int64_t group,
                    int64_t offset_group, const Geom& g) {
  const int64_t H = g.in[0], W = g.in[1], oh = g.out[0], ow = g.out[1];
  const int64_t kh = g.kernel[0], kw = g.kernel[1], ks = kh * kw, os = oh * ow;
  const int64_t cg = channels / group, mg = out_channels / group;
  const int64_t c_per_og = channels / offset_group;
  std::vector<T> col(static_cast<size_t>(cg * ks * os));
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t gi = 0; gi < group; ++gi) {
      for (int64_t cl = 0; cl < cg; ++cl) {
        const int64_t c = gi * cg + cl;
        const int64_t og = c / c_per_og;
        const T* plane = x + (n * channels + c) * H * W;
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j) {
            const int64_t kidx = i * kw + j;
            const T* off_h = offset + ((n * offset_group + og) * ks * 2 + kidx * 2) * os;
            const T* off_w = off_h + os;
            const T* m = mask ? mask + ((n * offset_group + og) * ks + kidx) * os : nullptr;
            T* row = col.data() + (cl * ks + kidx) * os;
            for (int64_t a = 0; a < oh; ++a)
              for (int64_t b = 0; b < ow; ++b) {
                const int64_t q = a * ow + b;
                const T ph = T(a * g.strides[0] - g.pad_b[0] + i * g.dilations[0]) + off_h[q];
                const T pw = T(b * g.strides[1] - g.pad_b[1] + j * g.dilations[1]) + off_w[q];
                T v = bilinear(plane, H, W, ph, pw);
                if (m != nullptr) v *= m[q];
                row[q] = v;
              }
          }
      }
      gemmAny<T>(mg, os, cg * ks, w + gi * mg * cg * ks, cg * ks, col.data(), os,
                 y + (n * out_channels + gi * mg) * os, os);
    }
    if (bias != nullptr) addChannelBias(y + n * out_channels * os, bias, 1, out_channels, os);
  }
}

void computeDeformConv(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  const Tensor& O = ctx.input(2);
  const Tensor* B = ctx.hasInput(3) ? &ctx.input(3) : nullptr;
  const Tensor* M = ctx.hasInput(4) ? &ctx.input(4) : nullptr;
  Tensor& Y = ctx.output(0);
  if (X.rank() != 4) ctx.unsupported("only 2-D deformable convolution is supported");
  const Geom g = convGeom(ctx, X.dims(), W.dims());
  const int64_t group = ctx.attrInt("group"), offset_group = ctx.attrInt("offset_group");
  const int64_t batch = X.dims()[0], channels = X.dims()[1], m = W.dims()[0];
  if (group <= 0 || offset_group <= 0 || channels % group != 0 || m % group != 0 ||
      channels % offset_group != 0) {
    ctx.fail("channels must be divisible by group and offset_group");
  }
  const int64_t ks = g.kernel[0] * g.kernel[1], os = g.out[0] * g.out[1];
  if (O.numElements() != batch * offset_group * ks * 2 * os) ctx.fail("offset has the wrong shape");
  if (M != nullptr && M->numElements() != batch * offset_group * ks * os) {
    ctx.fail("mask has the wrong shape");
  }
  dispatchNumeric(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      deformConvImpl<T>(dataAs<T>(X), dataAs<T>(W), dataAs<T>(O), B ? dataAs<T>(*B) : nullptr,
                        M ? dataAs<T>(*M) : nullptr, mutableDataAs<T>(Y), batch, channels, m, group,
                        offset_group, g);
    } else if constexpr (kIsHalfLike<T>) {
      runInFloat<T>({&X, &W, &O, B, M}, Y, [&](const float* const* in, float* y) {
        deformConvImpl<float>(in[0], in[1], in[2], in[3], in[4], y, batch, channels, m, group,
                              offset_group, g);
      });
    } else {
      ctx.unsupported("unsupported type");
    }
  });
}

// ================================================================= CausalConvWithState

// Depthwise causal 1-D conv over concat(past_state or zeros, input); the last
// k-1 positions of that sequence become present_state.
void inferCausalConv(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  requireType(ctx, 0, t == DataType::kUndefined || isFloatType(t), "a float type");
  const Shape* x = ctx.inputShape(0);
  const Shape* w = ctx.inputShape(1);
  if (x == nullptr) {
    ctx.setOutputUnknownRank(0, t);
  } else {
    if (x->rank() != 3) ctx.fail("input must be rank 3 (batch, channels, length)");
    ctx.setOutput(0, t, *x);
  }
  if (ctx.numOutputs() > 1) {
    Shape s;
    s.dims.assign(3, unknownDim());
    if (x != nullptr) {
      s.dims[0] = x->dims[0];
      s.dims[1] = x->dims[1];
    }
    if (w != nullptr && w->rank() == 3 && w->dims[2].isKnown()) {
      s.dims[2] = Dim::known(w->dims[2].value - 1);
    }
    ctx.setOutput(1, t, s);
  }
}

void computeCausalConv(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  const Tensor* B = ctx.hasInput(2) ? &ctx.input(2) : nullptr;
  const Tensor* P = ctx.hasInput(3) ? &ctx.input(3) : nullptr;
  if (X.rank() != 3 || W.rank() != 3) ctx.fail("input and weight must be rank 3");
  const int64_t batch = X.dims()[0], channels = X.dims()[1], len = X.dims()[2];
  const int64_t k = W.dims()[2];
  if (W.dims()[0] != channels || W.dims()[1] != 1) ctx.fail("weight must be (channels, 1, k)");
  if (P != nullptr && P->dims() != std::vector<int64_t>{batch, channels, k - 1}) {
    ctx.fail("past_state must be (batch, channels, k - 1)");
  }
  const std::string act = ctx.attrString("activation");
  const bool silu = act == "silu" || act == "swish";
  if (!silu && act != "none") ctx.fail("unknown activation '" + act + "'");
  auto read = [](const Tensor& t) {
    std::vector<double> v(static_cast<size_t>(t.numElements()));
    dispatchNumeric(t.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = toDouble(dataAs<T>(t)[i]);
    });
    return v;
  };
  const auto x = read(X), w = read(W);
  const std::vector<double> b = B ? read(*B) : std::vector<double>();
  const std::vector<double> past = P ? read(*P) : std::vector<double>();
  const int64_t plen = len + k - 1;
  std::vector<double> seq(static_cast<size_t>(plen)), y(x.size());
  std::vector<double> state(static_cast<size_t>(batch * channels * (k - 1)));
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t nc = n * channels + c;
      for (int64_t i = 0; i < k - 1; ++i)
        seq[i] = P ? past[nc * (k - 1) + i] : 0.0;
      for (int64_t i = 0; i < len; ++i)
        seq[k - 1 + i] = x[nc * len + i];
      for (int64_t t = 0; t < len; ++t) {
        double acc = B ? b[c] : 0.0;
        for (int64_t j = 0; j < k; ++j)
          acc += w[c * k + j] * seq[t + j];
        if (silu) acc = acc / (1.0 + fm::exp(-acc));
        y[nc * len + t] = acc;
      }
      for (int64_t i = 0; i < k - 1; ++i)
        state[nc * (k - 1) + i] = seq[len + i];
    }
  auto write = [](Tensor& t, const std::vector<double>& v) {
    dispatchNumeric(t.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (size_t i = 0; i < v.size(); ++i)
        mutableDataAs<T>(t)[i] = fromDouble<T>(v[i]);
    });
  };
  write(ctx.output(0), y);
  if (ctx.hasOutput(1)) write(ctx.output(1), state);
}

}  // namespace

bool convF32ForTest(const float* x, const float* w, const float* bias, float* y, int64_t batch,
                    int64_t channels, int64_t out_channels, int64_t group,
                    const std::vector<int64_t>& in, const std::vector<int64_t>& kernel,
                    const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                    const std::vector<int64_t>& pad_b, const std::vector<int64_t>& pad_e,
                    bool use_xnnpack) {
  Geom g;
  g.in = in;
  g.kernel = kernel;
  g.strides = strides;
  g.dilations = dilations;
  g.pad_b = pad_b;
  g.pad_e = pad_e;
  for (size_t i = 0; i < in.size(); ++i) {
    g.out.push_back(
        (in[i] + pad_b[i] + pad_e[i] - (kernel[i] - 1) * dilations[i] - 1) / strides[i] + 1);
  }
  if (use_xnnpack) {
    return convXnnpackF32(x, w, bias, y, batch, channels, out_channels, group, g);
  }
  convIm2col<float>(x, w, bias, y, batch, channels, out_channels, group, g);
  return true;
}

}  // namespace kernels

void registerConvOps(OpRegistry& r) {
  using namespace kernels;
  for (int v : {1, 11, 22})
    r.add({"", "Conv", v, inferConv, computeConv});
  for (int v : {19, 22})
    r.add({"", "DeformConv", v, inferDeformConv, computeDeformConv});
  r.add({"", "CausalConvWithState", 27, inferCausalConv, computeCausalConv});
}

}  // namespace onnxfold

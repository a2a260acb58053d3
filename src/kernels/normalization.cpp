// normalization op family: BatchNormalization (inference and training mode),
// InstanceNormalization, LayerNormalization, RMSNormalization,
// GroupNormalization, LpNormalization, LRN and MeanVarianceNormalization.
// See op_registry.h for the infer()/compute() contract.
//
// Statistics are accumulated in double and the normalization itself is done
// in double too, then rounded to the element type: these ops are cheap next
// to a GEMM and the extra precision keeps float16/bfloat16 inputs close to
// the float reference.
#include <cmath>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/float_math.h"
#include "kernels/op_helpers.h"
#include "kernels/op_modes.h"

namespace onnxfold {
namespace kernels {
namespace {

// Rounds through the element type, as a kernel computing in that type would.
double roundTo(DataType t, double v) {
  if (t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16) {
    return static_cast<double>(static_cast<float>(v));
  }
  return v;
}

// Rounds to the element type itself (a float16 value to float16), as the function body's
// Cast back to X's type and its Mul / Add in that type do.
double roundToElement(DataType t, double v) {
  if (t == DataType::kFloat16) return halfToFloat(floatToHalf(static_cast<float>(v)));
  if (t == DataType::kBfloat16) return bfloat16ToFloat(floatToBfloat16(static_cast<float>(v)));
  return roundTo(t, v);
}

void inferSameAsInput(InferContext& ctx) {
  requireFloatInput(ctx, 0);
  setSameShape(ctx, 0, ctx.inputDtype(0), 0);
}

// Values of a per-channel parameter broadcast over [C, spatial] (BatchNorm
// spatial=0 gives [C, D1, ...]): index for channel c, spatial position s.
struct ChannelParam {
  std::vector<double> v;
  int64_t spatial = 0;  // 0: per channel; else elements per channel
  double at(int64_t c, int64_t s) const { return spatial == 0 ? v[c] : v[c * spatial + s]; }
};

ChannelParam channelParam(const OpContext& ctx, const Tensor& t, int64_t channels, int64_t spatial,
                          const char* name) {
  ChannelParam p;
  p.v = readAll(t);
  const auto n = static_cast<int64_t>(p.v.size());
  if (n == channels) return p;
  // channels * spatial may overflow for an empty X (batch 0).
  int64_t cs = 0;
  if (checkedMul(channels, spatial, &cs) && n == cs) {
    p.spatial = spatial;
    return p;
  }
  if (n == 1) {
    p.v.assign(static_cast<size_t>(channels), p.v[0]);
    return p;
  }
  ctx.fail(std::string(name) + " has " + std::to_string(n) + " elements, expected " +
           std::to_string(channels));
}

// ================================================================= BatchNormalization

bool batchNormTraining(const OpContext& ctx, size_t num_outputs) {
  return kernels::batchNormTraining(ctx.opset(), ctx.attrInt("is_test", 0),
                                    ctx.attrInt("training_mode", 0), num_outputs);
}

void inferBatchNorm(InferContext& ctx) {
  requireFloatInput(ctx, 0);
  const DataType t = ctx.inputDtype(0);
  const Shape* x = ctx.inputShape(0);
  // From opset 9 (no `spatial`) scale, B, mean and var are each [C].
  if (ctx.opset() >= 9 && x != nullptr && x->rank() >= 2) {
    static const char* const kNames[] = {"", "scale", "B", "input_mean", "input_var"};
    for (size_t i = 1; i <= 4 && i < ctx.numInputs(); ++i) {
      const Shape* p = ctx.inputShape(i);
      if (p == nullptr) continue;
      if (p->rank() != 1) ctx.fail(std::string(kNames[i]) + " must be 1-D ([C])");
      if (p->dims[0].isKnown() && x->dims[1].isKnown() && p->dims[0].value != x->dims[1].value) {
        ctx.fail(std::string(kNames[i]) + " has " + std::to_string(p->dims[0].value) +
                 " values for " + std::to_string(x->dims[1].value) + " channels");
      }
    }
  }
  if (x != nullptr) {
    ctx.setOutput(0, t, *x);
  } else {
    ctx.setOutputUnknownRank(0, t);
  }
  // Running / saved statistics: shape [C] of the mean input's type.
  DataType st = ctx.inputDtype(3);
  if (st == DataType::kUndefined) st = t;
  Shape c;
  if (const Shape* m = ctx.inputShape(3)) {
    c = *m;
  } else if (x != nullptr && x->rank() >= 2) {
    c.dims = {x->dims[1]};
  } else {
    c.dims = {Dim()};
  }
  for (size_t i = 1; i < ctx.numOutputs(); ++i) {
    // Opset 14+: running_mean, running_var (T2). Earlier: mean, var, saved_mean, saved_var.
    ctx.setOutput(i, i <= 2 ? st : t, c);
  }
}

void computeBatchNorm(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  if (X.rank() < 1) ctx.fail("X must have rank >= 1");
  const int64_t batch = X.dims()[0];
  const int64_t channels = X.rank() > 1 ? X.dims()[1] : 1;
  const int64_t spatial = product(X.dims(), 2, X.rank());
  const double eps = ctx.attrFloat("epsilon");
  const double momentum = ctx.attrFloat("momentum");
  const ChannelParam scale = channelParam(ctx, ctx.input(1), channels, spatial, "scale");
  const ChannelParam bias = channelParam(ctx, ctx.input(2), channels, spatial, "B");
  const ChannelParam mean = channelParam(ctx, ctx.input(3), channels, spatial, "input_mean");
  const ChannelParam var = channelParam(ctx, ctx.input(4), channels, spatial, "input_var");
  const std::vector<double> x = readAll(X);
  std::vector<double> y(x.size());
  const bool training = batchNormTraining(ctx, ctx.numOutputs());
  if (!training) {
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t s = 0; s < spatial; ++s) {
          const size_t i = static_cast<size_t>((n * channels + c) * spatial + s);
          y[i] = (x[i] - mean.at(c, s)) / std::sqrt(var.at(c, s) + eps) * scale.at(c, s) +
                 bias.at(c, s);
        }
    writeAll(ctx.output(0), y);
    return;
  }
  // saved_mean / saved_var (before opset 14) mean different things in different runtimes
  // (ONNX Runtime's saved_var is 1 / sqrt(var + epsilon), the spec says variance): not folded.
  if (ctx.hasOutput(3) || ctx.hasOutput(4))
    ctx.unsupported("saved_mean and saved_var differ between runtimes");
  // Training: normalize with the batch statistics (population variance) and
  // blend them into the running statistics with `momentum`.
  // In double: with no channels, batch * spatial may overflow int64.
  const double count = static_cast<double>(batch) * static_cast<double>(spatial);
  std::vector<double> bmean(static_cast<size_t>(channels)), bvar(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    double s1 = 0;
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t s = 0; s < spatial; ++s)
        s1 += x[(n * channels + c) * spatial + s];
    const double m = s1 / count;
    double s2 = 0;
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t s = 0; s < spatial; ++s) {
        const double d = x[(n * channels + c) * spatial + s] - m;
        s2 += d * d;
      }
    bmean[c] = m;
    bvar[c] = s2 / count;
  }
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t s = 0; s < spatial; ++s) {
        const size_t i = static_cast<size_t>((n * channels + c) * spatial + s);
        y[i] = (x[i] - bmean[c]) / std::sqrt(bvar[c] + eps) * scale.at(c, s) + bias.at(c, s);
      }
  writeAll(ctx.output(0), y);
  std::vector<double> rmean(bmean.size()), rvar(bvar.size());
  for (int64_t c = 0; c < channels; ++c) {
    rmean[c] = mean.at(c, 0) * momentum + bmean[c] * (1 - momentum);
    rvar[c] = var.at(c, 0) * momentum + bvar[c] * (1 - momentum);
  }
  auto put = [&](size_t i, const std::vector<double>& v) {
    if (!ctx.hasOutput(i)) return;
    Tensor& o = ctx.output(i);
    if (o.numElements() != static_cast<int64_t>(v.size())) ctx.fail("statistics shape mismatch");
    writeAll(o, v);
  };
  put(1, rmean);
  put(2, rvar);
}

// ================================================================= InstanceNormalization

void computeInstanceNorm(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  if (X.rank() < 2) ctx.fail("X must have rank >= 2");
  const int64_t batch = X.dims()[0], channels = X.dims()[1];
  const int64_t spatial = product(X.dims(), 2, X.rank());
  const double eps = ctx.attrFloat("epsilon");
  const ChannelParam scale = channelParam(ctx, ctx.input(1), channels, 0, "scale");
  const ChannelParam bias = channelParam(ctx, ctx.input(2), channels, 0, "B");
  const std::vector<double> x = readAll(X);
  std::vector<double> y(x.size());
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      const size_t base = static_cast<size_t>((n * channels + c) * spatial);
      double s1 = 0, s2 = 0;
      for (int64_t s = 0; s < spatial; ++s)
        s1 += x[base + s];
      const double m = s1 / static_cast<double>(spatial);
      for (int64_t s = 0; s < spatial; ++s)
        s2 += (x[base + s] - m) * (x[base + s] - m);
      const double inv = 1.0 / std::sqrt(s2 / static_cast<double>(spatial) + eps);
      for (int64_t s = 0; s < spatial; ++s)
        y[base + s] = (x[base + s] - m) * inv * scale.at(c, 0) + bias.at(c, 0);
    }
  writeAll(ctx.output(0), y);
}

// ================================================================= LayerNormalization /
// RMSNormalization

// One instance each for LayerNormalization and RMSNormalization (`rms`).
template <bool rms>
void inferLayerNormLike(InferContext& ctx) {
  requireFloatInput(ctx, 0);
  const DataType t = ctx.inputDtype(0);
  const Shape* x = ctx.inputShape(0);
  if (x == nullptr) {
    ctx.setOutputUnknownRank(0, t);
    for (size_t i = 1; i < ctx.numOutputs(); ++i)
      ctx.setOutputUnknownRank(i, DataType::kFloat);
    return;
  }
  ctx.setOutput(0, t, *x);
  if (rms) return;  // RMSNormalization has no Mean / InvStdDev outputs
  const auto rank = static_cast<int64_t>(x->rank());
  const int64_t axis = normalizeAxis(ctx, ctx.attrInt("axis"), rank);
  // Mean / InvStdDev: X's shape with the normalized axes set to 1, of the stash type.
  Shape s = *x;
  for (int64_t i = axis; i < rank; ++i)
    s.dims[i] = Dim::known(1);
  const int64_t stash = ctx.attrInt("stash_type");
  const DataType st = stash == 1 ? DataType::kFloat : static_cast<DataType>(stash);
  for (size_t i = 1; i < ctx.numOutputs(); ++i)
    ctx.setOutput(i, st, s);
}

// Scale/bias broadcast against X (numpy rules), as flat per-element values.
std::vector<double> broadcastTo(const OpContext& ctx, const Tensor& t,
                                const std::vector<int64_t>& dims, const char* name) {
  const std::vector<double> v = readAll(t);
  auto bd = broadcastDims(t.dims(), dims);
  if (!bd || *bd != dims) ctx.fail(std::string(name) + " does not broadcast to X");
  std::vector<double> out(static_cast<size_t>(product(dims, 0, dims.size())));
  forEachBroadcast(dims, {broadcastStrides(t.dims(), dims)},
                   [&](int64_t i, const std::vector<int64_t>& off) { out[i] = v[off[0]]; });
  return out;
}

template <bool rms>
void computeLayerNormLike(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const auto rank = static_cast<int64_t>(X.rank());
  const int64_t axis = normalizeAxis(ctx, ctx.attrInt("axis"), rank);
  const double eps = ctx.attrFloat("epsilon");
  const int64_t outer = product(X.dims(), 0, axis);
  const int64_t inner = product(X.dims(), axis, rank);
  const std::vector<double> x = readAll(X);
  const std::vector<double> scale = broadcastTo(ctx, ctx.input(1), X.dims(), "Scale");
  std::vector<double> bias;
  if (!rms && ctx.hasInput(2)) bias = broadcastTo(ctx, ctx.input(2), X.dims(), "B");
  // stash_type=1 computes the statistics in float32: round like the reference.
  const DataType stash = ctx.attrInt("stash_type") == 1
                             ? DataType::kFloat
                             : static_cast<DataType>(ctx.attrInt("stash_type"));
  std::vector<double> y(x.size()), means(outer), invs(outer);
  for (int64_t o = 0; o < outer; ++o) {
    const size_t base = static_cast<size_t>(o * inner);
    double m = 0;
    if (!rms) {
      for (int64_t i = 0; i < inner; ++i)
        m += x[base + i];
      m = roundTo(stash, m / static_cast<double>(inner));
    }
    double s2 = 0;
    for (int64_t i = 0; i < inner; ++i)
      s2 += (x[base + i] - m) * (x[base + i] - m);
    const double inv = roundTo(stash, 1.0 / std::sqrt(s2 / static_cast<double>(inner) + eps));
    means[o] = m;
    invs[o] = inv;
    // Stage one in the stash type, cast back to X's type; then the scale and bias in X's type
    // (the spec's function body), so the fused op is the decomposed float16 export's function.
    const DataType xt = X.dtype();
    for (int64_t i = 0; i < inner; ++i) {
      const double n = roundToElement(xt, roundTo(stash, (x[base + i] - m) * inv));
      double v = roundToElement(xt, n * scale[base + i]);
      if (!bias.empty()) v = roundToElement(xt, v + bias[base + i]);
      y[base + i] = v;
    }
  }
  writeAll(ctx.output(0), y);
  if (!rms) {
    if (ctx.hasOutput(1)) writeAll(ctx.output(1), means);
    if (ctx.hasOutput(2)) writeAll(ctx.output(2), invs);
  }
}

// ================================================================= GroupNormalization

void computeGroupNorm(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  if (X.rank() < 2) ctx.fail("X must have rank >= 2");
  const int64_t batch = X.dims()[0], channels = X.dims()[1];
  const int64_t spatial = product(X.dims(), 2, X.rank());
  const int64_t groups = ctx.attrInt("num_groups", 0);
  if (groups <= 0 || channels % groups != 0) {
    ctx.fail("num_groups must be positive and divide the number of channels");
  }
  const double eps = ctx.attrFloat("epsilon", 1e-5f);
  const int64_t cpg = channels / groups;
  const std::vector<double> scale = readAll(ctx.input(1));
  const std::vector<double> bias = readAll(ctx.input(2));
  // Opset 18 had one scale/bias per group; 21 has one per channel.
  auto param = [&](const std::vector<double>& p, int64_t c) {
    if (static_cast<int64_t>(p.size()) == channels) return p[c];
    if (static_cast<int64_t>(p.size()) == groups) return p[c / cpg];
    ctx.fail("scale and bias must have C (or num_groups) elements");
  };
  const DataType stash = ctx.attrInt("stash_type", 1) == 1 ? DataType::kFloat : X.dtype();
  const std::vector<double> x = readAll(X);
  std::vector<double> y(x.size());
  // An empty batch may declare channels * spatial beyond int64.
  const int64_t gsize = ctx.sizeMul(cpg, spatial);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t g = 0; g < groups; ++g) {
      const size_t base = static_cast<size_t>((n * channels + g * cpg) * spatial);
      double s1 = 0, s2 = 0;
      for (int64_t i = 0; i < gsize; ++i)
        s1 += x[base + i];
      const double m = roundTo(stash, s1 / static_cast<double>(gsize));
      for (int64_t i = 0; i < gsize; ++i)
        s2 += (x[base + i] - m) * (x[base + i] - m);
      const double inv = 1.0 / std::sqrt(s2 / static_cast<double>(gsize) + eps);
      for (int64_t i = 0; i < gsize; ++i) {
        const int64_t c = g * cpg + i / spatial;
        y[base + i] = (x[base + i] - m) * inv * param(scale, c) + param(bias, c);
      }
    }
  writeAll(ctx.output(0), y);
}

// ================================================================= LpNormalization

void computeLpNorm(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const auto rank = static_cast<int64_t>(X.rank());
  const int64_t axis = normalizeAxis(ctx, ctx.attrInt("axis"), rank);
  const int64_t p = ctx.attrInt("p");
  if (p != 1 && p != 2) ctx.fail("p must be 1 or 2");
  const int64_t outer = product(X.dims(), 0, axis);
  const int64_t len = X.dims()[axis];
  const int64_t inner = product(X.dims(), axis + 1, rank);
  const std::vector<double> x = readAll(X);
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double norm = 0;
      for (int64_t k = 0; k < len; ++k) {
        const double v = x[(o * len + k) * inner + i];
        norm += p == 1 ? std::fabs(v) : v * v;
      }
      if (p == 2) norm = std::sqrt(norm);
      for (int64_t k = 0; k < len; ++k) {
        const size_t idx = static_cast<size_t>((o * len + k) * inner + i);
        // A zero norm leaves the (zero) vector unchanged instead of producing NaN.
        y[idx] = norm == 0 ? 0.0 : x[idx] / norm;
      }
    }
  writeAll(ctx.output(0), y);
}

// ================================================================= LRN

void computeLrn(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  if (X.rank() < 2) ctx.fail("X must have rank >= 2");
  const int64_t size = ctx.attrInt("size", 0);
  if (size <= 0) ctx.fail("size must be positive");
  const double alpha = ctx.attrFloat("alpha");
  const double beta = ctx.attrFloat("beta");
  const double bias = ctx.attrFloat("bias");
  const int64_t batch = X.dims()[0], channels = X.dims()[1];
  const int64_t spatial = product(X.dims(), 2, X.rank());
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;  // floor / ceil of (size-1)/2
  const std::vector<double> x = readAll(X);
  std::vector<double> y(x.size());
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t s = 0; s < spatial; ++s) {
        double sq = 0;
        for (int64_t k = std::max<int64_t>(0, c - lo); k <= std::min(channels - 1, c + hi); ++k) {
          const double v = x[(n * channels + k) * spatial + s];
          sq += v * v;
        }
        const size_t i = static_cast<size_t>((n * channels + c) * spatial + s);
        y[i] = x[i] / fm::pow(bias + alpha / static_cast<double>(size) * sq, beta);
      }
  writeAll(ctx.output(0), y);
}

// ================================================================= MeanVarianceNormalization

void computeMvn(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const auto rank = static_cast<int64_t>(X.rank());
  std::vector<int64_t> axes = ctx.attrInts("axes", {0, 2, 3});
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : axes)
    reduced[normalizeAxis(ctx, a, rank)] = true;
  // Group elements by their index on the kept axes.
  std::vector<int64_t> kept_dims;
  for (int64_t i = 0; i < rank; ++i)
    kept_dims.push_back(reduced[i] ? 1 : X.dims()[i]);
  const int64_t groups = product(kept_dims, 0, kept_dims.size());
  const auto strides = broadcastStrides(kept_dims, X.dims());
  std::vector<int64_t> key(static_cast<size_t>(X.numElements()));
  forEachBroadcast(X.dims(), {strides},
                   [&](int64_t i, const std::vector<int64_t>& off) { key[i] = off[0]; });
  const std::vector<double> x = readAll(X);
  std::vector<double> s1(groups, 0), s2(groups, 0), cnt(groups, 0);
  for (size_t i = 0; i < x.size(); ++i) {
    s1[key[i]] += x[i];
    s2[key[i]] += x[i] * x[i];
    cnt[key[i]] += 1;
  }
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double m = s1[key[i]] / cnt[key[i]];
    const double var = std::max(0.0, s2[key[i]] / cnt[key[i]] - m * m);
    y[i] = (x[i] - m) / (std::sqrt(var) + 1e-9);
  }
  writeAll(ctx.output(0), y);
}

}  // namespace
}  // namespace kernels

void registerNormalizationOps(OpRegistry& r) {
  using namespace kernels;
  for (int v : {1, 6, 7, 9, 14, 15})
    r.add({"", "BatchNormalization", v, inferBatchNorm, computeBatchNorm});
  for (int v : {1, 6, 22})
    r.add({"", "InstanceNormalization", v, inferSameAsInput, computeInstanceNorm});
  r.add({"", "LayerNormalization", 17, inferLayerNormLike<false>, computeLayerNormLike<false>});
  r.add({"", "RMSNormalization", 23, inferLayerNormLike<true>, computeLayerNormLike<true>});
  for (int v : {18, 21})
    r.add({"", "GroupNormalization", v, inferSameAsInput, computeGroupNorm});
  for (int v : {1, 22})
    r.add({"", "LpNormalization", v, inferSameAsInput, computeLpNorm});
  for (int v : {1, 13})
    r.add({"", "LRN", v, inferSameAsInput, computeLrn});
  for (int v : {9, 13})
    r.add({"", "MeanVarianceNormalization", v, inferSameAsInput, computeMvn});
}

}  // namespace onnxfold

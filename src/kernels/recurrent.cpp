// recurrent op family: RNN, GRU and LSTM (opsets 7, 14 with the `layout`
// attribute, 22 with bfloat16), forward/reverse/bidirectional, with
// sequence_lens, initial states, custom activations (with activation_alpha
// and activation_beta), clip, GRU's linear_before_reset and LSTM's peepholes
// and input_forget. See op_registry.h for the infer()/compute() contract.
//
// The three ops share one driver: the input projections X W^T + Wb of every
// time step are computed up front (one GEMM-like pass), then each batch row
// runs its own recurrence, so sequence_lens simply bounds that row's loop.
// Everything is computed in double and rounded once into the element type;
// the matrix-vector products use the Highway dot product of simd.h.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/float_math.h"
#include "kernels/simd.h"

namespace onnxfold {
namespace kernels {

namespace {

enum class CellKind { kRnn, kGru, kLstm };

int gatesOf(CellKind k) {
  return k == CellKind::kRnn ? 1 : k == CellKind::kGru ? 3 : 4;
}

// ----------------------------------------------------------------- activations

struct Activation {
  enum Kind {
    kRelu,
    kTanh,
    kSigmoid,
    kAffine,
    kLeakyRelu,
    kThresholdedRelu,
    kScaledTanh,
    kHardSigmoid,
    kElu,
    kSoftsign,
    kSoftplus
  } kind = kTanh;
  double alpha = 0, beta = 0;

  double operator()(double x) const {
    switch (kind) {
      case kRelu:
        return x > 0 ? x : 0;
      case kTanh:
        return fm::tanh(x);
      case kSigmoid:
        return 1.0 / (1.0 + fm::exp(-x));
      case kAffine:
        return alpha * x + beta;
      case kLeakyRelu:
        return x >= 0 ? x : alpha * x;
      case kThresholdedRelu:
        return x > alpha ? x : 0;
      case kScaledTanh:
        return alpha * fm::tanh(beta * x);
      case kHardSigmoid:
        return std::max(0.0, std::min(1.0, alpha * x + beta));
      case kElu:
        return x >= 0 ? x : alpha * (fm::exp(x) - 1);
      case kSoftsign:
        return x / (1 + std::fabs(x));
      case kSoftplus:
        return fm::log1p(fm::exp(-std::fabs(x))) + std::max(x, 0.0);
    }
    return x;
  }
};

// Parses `activations` with their alpha/beta, consumed in order only by the
// functions that take them (as onnxruntime does); defaults as the ONNX ops.
std::vector<Activation> parseActivations(const OpContext& ctx, CellKind kind, int num_dirs) {
  std::vector<std::string> names;
  if (const Attribute* a = ctx.attr("activations")) names = a->strings;
  const size_t per_dir = kind == CellKind::kRnn ? 1 : kind == CellKind::kGru ? 2 : 3;
  if (names.empty()) {
    if (kind == CellKind::kRnn) names = {"Tanh"};
    if (kind == CellKind::kGru) names = {"Sigmoid", "Tanh"};
    if (kind == CellKind::kLstm) names = {"Sigmoid", "Tanh", "Tanh"};
  }
  if (names.size() == per_dir && num_dirs == 2) {
    const std::vector<std::string> copy = names;
    names.insert(names.end(), copy.begin(), copy.end());
  }
  if (names.size() != per_dir * static_cast<size_t>(num_dirs)) {
    ctx.fail("expected " + std::to_string(per_dir * static_cast<size_t>(num_dirs)) +
             " activations, got " + std::to_string(names.size()));
  }
  const std::vector<float> alphas = ctx.attrFloats("activation_alpha");
  const std::vector<float> betas = ctx.attrFloats("activation_beta");
  size_t ai = 0, bi = 0;
  std::vector<Activation> out;
  for (const std::string& name : names) {
    std::string n = name;
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
    Activation a;
    int args = 0;
    double da = 0, db = 0;
    if (n == "relu") {
      a.kind = Activation::kRelu;
    } else if (n == "tanh") {
      a.kind = Activation::kTanh;
    } else if (n == "sigmoid") {
      a.kind = Activation::kSigmoid;
    } else if (n == "affine") {
      a.kind = Activation::kAffine, args = 2, da = 1, db = 0;
    } else if (n == "leakyrelu") {
      a.kind = Activation::kLeakyRelu, args = 1, da = 0.01;
    } else if (n == "thresholdedrelu") {
      a.kind = Activation::kThresholdedRelu, args = 1, da = 1;
    } else if (n == "scaledtanh") {
      a.kind = Activation::kScaledTanh, args = 2, da = 1, db = 1;
    } else if (n == "hardsigmoid") {
      a.kind = Activation::kHardSigmoid, args = 2, da = 0.2, db = 0.5;
    } else if (n == "elu") {
      a.kind = Activation::kElu, args = 1, da = 1;
    } else if (n == "softsign") {
      a.kind = Activation::kSoftsign;
    } else if (n == "softplus") {
      a.kind = Activation::kSoftplus;
    } else {
      ctx.fail("unknown activation '" + name + "'");
    }
    a.alpha = args >= 1 && ai < alphas.size() ? alphas[ai++] : da;
    a.beta = args >= 2 && bi < betas.size() ? betas[bi++] : db;
    out.push_back(a);
  }
  return out;
}

int numDirections(const OpContext& ctx) {
  const std::string dir = ctx.attrString("direction", "forward");
  if (dir == "forward" || dir == "reverse") return 1;
  if (dir == "bidirectional") return 2;
  ctx.fail("invalid direction '" + dir + "'");
}

int64_t layoutOf(const OpContext& ctx) {
  const int64_t layout = ctx.opset() >= 14 ? ctx.attrInt("layout") : 0;
  if (layout != 0 && layout != 1) ctx.fail("layout must be 0 or 1");
  return layout;
}

// ----------------------------------------------------------------- inference

// One instance per cell kind: the registry takes plain functions.
template <CellKind kind>
void inferRecurrent(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  if (t != DataType::kUndefined && !isFloatType(t)) {
    ctx.unsupported("X has unsupported type " + std::string(dataTypeName(t)));
  }
  const int dirs = numDirections(ctx);
  const int64_t layout = layoutOf(ctx);
  parseActivations(ctx, kind, dirs);  // validates
  const Shape* x = ctx.inputShape(0);
  if (x != nullptr && x->rank() != 3) ctx.fail("X must have rank 3");
  Dim seq, batch;
  if (x != nullptr) {
    seq = x->dims[layout == 0 ? 0 : 1];
    batch = x->dims[layout == 0 ? 1 : 0];
  } else {
    seq = ctx.newSymbol();
    batch = ctx.newSymbol();
  }
  Dim hidden;
  if (ctx.hasAttr("hidden_size")) {
    hidden = Dim::known(ctx.attrInt("hidden_size", 0));
  } else if (const Shape* r = ctx.inputShape(2); r != nullptr && r->rank() == 3) {
    hidden = r->dims[2];
  } else if (const Shape* w = ctx.inputShape(1);
             w != nullptr && w->rank() == 3 && w->dims[1].isKnown()) {
    hidden = Dim::known(w->dims[1].value / gatesOf(kind));
  } else {
    hidden = ctx.newSymbol();
  }
  if (const Shape* w = ctx.inputShape(1)) {
    if (w->rank() != 3) ctx.fail("W must have rank 3");
    if (w->dims[0].isKnown() && w->dims[0].value != dirs) {
      ctx.fail("W's first dim must equal num_directions (" + std::to_string(dirs) + ")");
    }
    // A huge hidden_size must not wrap gates * hidden_size into a match (fuzzed model).
    int64_t gates_hidden = 0;
    if (w->dims[1].isKnown() && hidden.isKnown() &&
        (!checkedMul(gatesOf(kind), hidden.value, &gates_hidden) ||
         w->dims[1].value != gates_hidden)) {
      ctx.fail("W's second dim must be " + std::to_string(gatesOf(kind)) + " * hidden_size");
    }
  }
  const Dim d = Dim::known(dirs);
  Shape y, yh;
  if (layout == 0) {
    y.dims = {seq, d, batch, hidden};
    yh.dims = {d, batch, hidden};
  } else {
    y.dims = {batch, seq, d, hidden};
    yh.dims = {batch, d, hidden};
  }
  const DataType ot = t == DataType::kUndefined ? ctx.inputDtype(1) : t;
  if (ctx.numOutputs() > 0) ctx.setOutput(0, ot, y);
  if (ctx.numOutputs() > 1) ctx.setOutput(1, ot, yh);
  if (kind == CellKind::kLstm && ctx.numOutputs() > 2) ctx.setOutput(2, ot, yh);
}

// ----------------------------------------------------------------- compute

template <CellKind kind>
void computeRecurrent(ComputeContext& ctx) {
  const int dirs = numDirections(ctx);
  const std::string direction = ctx.attrString("direction", "forward");
  const int64_t layout = layoutOf(ctx);
  const std::vector<Activation> acts = parseActivations(ctx, kind, dirs);
  const size_t acts_per_dir = acts.size() / static_cast<size_t>(dirs);
  const bool has_clip = ctx.hasAttr("clip");
  const double clip = ctx.attrFloat("clip", 0.0f);
  const bool lbr = kind == CellKind::kGru && ctx.attrInt("linear_before_reset", 0) != 0;
  const bool input_forget = kind == CellKind::kLstm && ctx.attrInt("input_forget") != 0;

  const Tensor& X = ctx.input(0);
  if (X.rank() != 3) ctx.fail("X must have rank 3");
  const int64_t S = X.dims()[layout == 0 ? 0 : 1];
  const int64_t B = X.dims()[layout == 0 ? 1 : 0];
  const int64_t I = X.dims()[2];
  const Tensor& Wt = ctx.input(1);
  const Tensor& Rt = ctx.input(2);
  const int64_t G = gatesOf(kind);
  const int64_t H = Rt.rank() == 3 ? Rt.dims()[2] : -1;
  // Empty tensors may declare dims whose products overflow: sizes below are checked.
  const int64_t GH = ctx.sizeMul(G, H);
  if (Wt.dims() != std::vector<int64_t>{dirs, GH, I}) ctx.fail("W has the wrong shape");
  if (Rt.dims() != std::vector<int64_t>{dirs, GH, H}) ctx.fail("R has the wrong shape");
  const int64_t DBH = ctx.sizeMul(ctx.sizeMul(dirs, B), H);
  if (ctx.hasAttr("hidden_size") && ctx.attrInt("hidden_size", 0) != H) {
    ctx.fail("hidden_size does not match R");
  }
  const std::vector<double> x = readAll(X);
  const std::vector<double> w = readAll(Wt);
  const std::vector<double> r = readAll(Rt);
  std::vector<double> bias(static_cast<size_t>(ctx.sizeMul(dirs * 2, GH)), 0.0);
  if (ctx.hasInput(3)) {
    bias = readAll(ctx.input(3));
    if (bias.size() != static_cast<size_t>(dirs * 2 * GH)) ctx.fail("B has the wrong shape");
  }
  std::vector<int64_t> lens(static_cast<size_t>(B), S);
  if (ctx.hasInput(4)) {
    lens = toInt64Vector(ctx, ctx.input(4));
    if (lens.size() != static_cast<size_t>(B))
      ctx.fail("sequence_lens must have batch_size entries");
    for (int64_t l : lens) {
      if (l < 0 || l > S) ctx.fail("sequence_lens entries must be in [0, seq_length]");
    }
  }
  // State tensors are [dirs, B, H] (layout 0) or [B, dirs, H] (layout 1).
  auto stateIndex = [&](int64_t d, int64_t b, int64_t h) {
    return static_cast<size_t>(layout == 0 ? (d * B + b) * H + h : (b * dirs + d) * H + h);
  };
  auto readState = [&](size_t input) {
    std::vector<double> s(static_cast<size_t>(DBH), 0.0);
    if (ctx.hasInput(input)) {
      s = readAll(ctx.input(input));
      if (s.size() != static_cast<size_t>(DBH)) {
        ctx.fail("initial state " + std::to_string(input) + " has the wrong shape");
      }
    }
    return s;
  };
  const std::vector<double> init_h = readState(5);
  const std::vector<double> init_c = kind == CellKind::kLstm ? readState(6) : std::vector<double>();
  std::vector<double> peep(static_cast<size_t>(ctx.sizeMul(dirs * 3, H)), 0.0);
  if (kind == CellKind::kLstm && ctx.hasInput(7)) {
    peep = readAll(ctx.input(7));
    if (peep.size() != static_cast<size_t>(dirs * 3 * H)) ctx.fail("P has the wrong shape");
  }

  std::vector<double> y(static_cast<size_t>(ctx.sizeMul(S, DBH)), 0.0);
  std::vector<double> yh(static_cast<size_t>(DBH), 0.0);
  std::vector<double> yc(static_cast<size_t>(DBH), 0.0);
  auto yIndex = [&](int64_t t, int64_t d, int64_t b, int64_t h) {
    return static_cast<size_t>(layout == 0 ? ((t * dirs + d) * B + b) * H + h
                                           : ((b * S + t) * dirs + d) * H + h);
  };
  auto xAt = [&](int64_t t, int64_t b) {
    return &x[static_cast<size_t>(layout == 0 ? (t * B + b) * I : (b * S + t) * I)];
  };
  auto clipped = [&](double v) { return has_clip ? std::max(-clip, std::min(clip, v)) : v; };

  std::vector<double> proj(static_cast<size_t>(ctx.sizeMul(S, GH)));  // per batch row: X_t W^T + Wb
  std::vector<double> rec(static_cast<size_t>(GH));                   // H_{t-1} R^T + Rb
  std::vector<double> h(static_cast<size_t>(H)), c(static_cast<size_t>(H)),
      tmp(static_cast<size_t>(H));
  std::vector<double> z(static_cast<size_t>(H)), rg(static_cast<size_t>(H)),
      rh(static_cast<size_t>(H));  // GRU gates
  for (int d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    const double* W = &w[static_cast<size_t>(d * GH * I)];
    const double* R = &r[static_cast<size_t>(d * GH * H)];
    const double* Wb = &bias[static_cast<size_t>(d * 2 * GH)];
    const double* Rb = Wb + GH;
    const double* P = &peep[static_cast<size_t>(d * 3 * H)];
    const Activation& f = acts[static_cast<size_t>(d) * acts_per_dir];
    const Activation& g =
        acts[std::min(static_cast<size_t>(d) * acts_per_dir + 1, acts.size() - 1)];
    const Activation& hact =
        acts[std::min(static_cast<size_t>(d) * acts_per_dir + 2, acts.size() - 1)];
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = lens[static_cast<size_t>(b)];
      for (int64_t t = 0; t < len; ++t) {
        const double* xt = xAt(t, b);
        for (int64_t j = 0; j < GH; ++j) {
          proj[static_cast<size_t>(t * GH + j)] = Wb[j] + simd::dotHwy(xt, W + j * I, I);
        }
      }
      for (int64_t k = 0; k < H; ++k) {
        h[static_cast<size_t>(k)] = init_h[stateIndex(d, b, k)];
        if (kind == CellKind::kLstm) c[static_cast<size_t>(k)] = init_c[stateIndex(d, b, k)];
      }
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = reverse ? len - 1 - step : step;
        const double* xp = &proj[static_cast<size_t>(t * GH)];
        // Recurrent projection of the previous state (GRU's candidate gate may
        // need r ⊙ h first, handled below).
        const int64_t rows = kind == CellKind::kGru && !lbr ? 2 * H : GH;
        for (int64_t j = 0; j < rows; ++j) {
          rec[static_cast<size_t>(j)] = Rb[j] + simd::dotHwy(h.data(), R + j * H, H);
        }
        if (kind == CellKind::kRnn) {
          for (int64_t k = 0; k < H; ++k)
            h[static_cast<size_t>(k)] = f(clipped(xp[k] + rec[static_cast<size_t>(k)]));
        } else if (kind == CellKind::kGru) {
          // Gates z, r, h.
          for (int64_t k = 0; k < H; ++k) {
            z[static_cast<size_t>(k)] = f(clipped(xp[k] + rec[static_cast<size_t>(k)]));
            rg[static_cast<size_t>(k)] = f(clipped(xp[H + k] + rec[static_cast<size_t>(H + k)]));
          }
          if (lbr) {
            for (int64_t k = 0; k < H; ++k)
              tmp[static_cast<size_t>(k)] =
                  g(clipped(xp[2 * H + k] +
                            rg[static_cast<size_t>(k)] * rec[static_cast<size_t>(2 * H + k)]));
          } else {
            for (int64_t k = 0; k < H; ++k)
              rh[static_cast<size_t>(k)] = rg[static_cast<size_t>(k)] * h[static_cast<size_t>(k)];
            for (int64_t j = 0; j < H; ++j) {
              const double s = Rb[2 * H + j] + simd::dotHwy(rh.data(), R + (2 * H + j) * H, H);
              tmp[static_cast<size_t>(j)] = g(clipped(xp[2 * H + j] + s));
            }
          }
          for (int64_t k = 0; k < H; ++k) {
            const double zk = z[static_cast<size_t>(k)];
            h[static_cast<size_t>(k)] =
                (1 - zk) * tmp[static_cast<size_t>(k)] + zk * h[static_cast<size_t>(k)];
          }
        } else {
          // Gates i, o, f, c; peepholes P = [Pi, Po, Pf].
          for (int64_t k = 0; k < H; ++k) {
            const auto kk = static_cast<size_t>(k);
            const double cprev = c[kk];
            const double gi = f(clipped(xp[k] + rec[kk] + P[k] * cprev));
            double gf = f(clipped(xp[2 * H + k] + rec[static_cast<size_t>(2 * H + k)] +
                                  P[2 * H + k] * cprev));
            if (input_forget) gf = 1 - gi;
            const double gc = g(clipped(xp[3 * H + k] + rec[static_cast<size_t>(3 * H + k)]));
            const double cn = gf * cprev + gi * gc;
            const double go =
                f(clipped(xp[H + k] + rec[static_cast<size_t>(H + k)] + P[H + k] * cn));
            c[kk] = cn;
            h[kk] = go * hact(cn);
          }
        }
        for (int64_t k = 0; k < H; ++k)
          y[yIndex(t, d, b, k)] = h[static_cast<size_t>(k)];
      }
      for (int64_t k = 0; k < H; ++k) {
        yh[stateIndex(d, b, k)] = h[static_cast<size_t>(k)];
        if (kind == CellKind::kLstm) yc[stateIndex(d, b, k)] = c[static_cast<size_t>(k)];
      }
    }
  }
  if (ctx.hasOutput(0)) writeAll(ctx.output(0), y);
  if (ctx.hasOutput(1)) writeAll(ctx.output(1), yh);
  if (kind == CellKind::kLstm && ctx.hasOutput(2)) writeAll(ctx.output(2), yc);
}

}  // namespace
}  // namespace kernels

void registerRecurrentOps(OpRegistry& r) {
  using namespace kernels;
  for (int v : {7, 14, 22}) {
    r.add({"", "RNN", v, inferRecurrent<CellKind::kRnn>, computeRecurrent<CellKind::kRnn>});
    r.add({"", "GRU", v, inferRecurrent<CellKind::kGru>, computeRecurrent<CellKind::kGru>});
    r.add({"", "LSTM", v, inferRecurrent<CellKind::kLstm>, computeRecurrent<CellKind::kLstm>});
  }
}

}  // namespace onnxfold

// flex attention family: ai.onnx.preview FlexAttention (1). See op_registry.h
// for the infer()/compute() contract.
//
//   scores = (Q . K^T) * scale            [B, Hq, L, S]
//   scores = score_mod(scores)            a graph attribute, when given
//   probs  = Softmax(scores, axis=-1)
//   probs  = prob_mod(probs)              a graph attribute, when given
//   Y      = probs . V                    [B, Hq, L, Ev]
//
// Query head h reads K/V head h / (Hq / Hkv) (contiguous groups). The numbers
// follow the op's function body, from which the node tests are generated:
// sqrt(scale) multiplies Q and K in T1 (so the scores are rounded to T1), the
// scores are cast to the softmax precision (float for non-double inputs unless
// softmax_precision says otherwise), softmax, prob_mod and probs . V run in
// that precision, and Y is cast back to T1. A row masked out entirely (all
// -inf) gives NaN, as Softmax does; the spec's Attention errata do not apply.
//
// The modifier graphs run on the whole [B, Hq, L, S] tensor through
// kernels/subgraph_eval.h, which needs the model's opsets from the caller
// (ComputeContext::subgraph_env); without them the node is not evaluated.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ir/error.h"
#include "kernels/common.h"
#include "kernels/eval_budget.h"
#include "kernels/float_math.h"
#include "kernels/simd.h"
#include "kernels/subgraph_eval.h"

namespace onnxfold {
namespace kernels {
namespace {

enum FlexIn { kQ, kK, kV };

// v as element type t would hold it (the rounding a kernel materializing v in t does).
double roundTo(DataType t, double v) {
  if (t == DataType::kDouble) return v;
  double r = v;
  dispatchNumeric(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    r = toDouble(fromDouble<T>(v));
  });
  return r;
}

// y += alpha * x: Highway for float, the scalar reference for double.
inline void axpy(float alpha, const float* x, float* y, int64_t n) {
  simd::axpyHwy(alpha, x, y, n);
}
inline void axpy(double alpha, const double* x, double* y, int64_t n) {
  simd::axpyScalar(alpha, x, y, n);
}

std::string dimsText(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// The score_mod / prob_mod graph, checked for one input and one output; null when absent.
const Graph* modifier(const OpContext& ctx, const char* name) {
  const Attribute* a = ctx.attr(name);
  if (a == nullptr) return nullptr;
  if (a->type != AttrType::kGraph || !a->g) ctx.fail(std::string(name) + " must be a graph");
  if (a->g->inputs().size() != 1 || a->g->outputs().size() != 1) {
    ctx.fail(std::string(name) + " must take one input and give one output (it takes " +
             std::to_string(a->g->inputs().size()) + " and gives " +
             std::to_string(a->g->outputs().size()) + ")");
  }
  return a->g.get();
}

// The element type of the scores and probabilities.
DataType softmaxType(const OpContext& ctx, DataType t1) {
  if (!ctx.hasAttr("softmax_precision")) {
    return t1 == DataType::kDouble ? DataType::kDouble : DataType::kFloat;
  }
  const int64_t p = ctx.attrInt("softmax_precision", 1);
  const auto sp = static_cast<DataType>(static_cast<int32_t>(p));
  if (p != static_cast<int32_t>(p) || !isFloatType(sp)) {
    ctx.fail("softmax_precision must be float, double, float16 or bfloat16 (got " +
             std::to_string(p) + ")");
  }
  return sp;
}

// ================================================================= inference

void inferFlexAttention(InferContext& ctx) {
  requireFloatInput(ctx, kQ, "Q");
  requireFloatInput(ctx, kK, "K");
  requireFloatInput(ctx, kV, "V");
  DataType t1 = DataType::kUndefined;
  for (size_t i : {kQ, kK, kV}) {
    const DataType t = ctx.inputDtype(i);
    if (t == DataType::kUndefined) continue;
    if (t1 != DataType::kUndefined && t != t1) {
      ctx.fail("Q, K and V must have the same element type");
    }
    t1 = t;
  }
  if (t1 != DataType::kUndefined) softmaxType(ctx, t1);
  modifier(ctx, "score_mod");
  modifier(ctx, "prob_mod");
  const Shape* s[3] = {ctx.inputShape(kQ), ctx.inputShape(kK), ctx.inputShape(kV)};
  static const char* const kNames[3] = {"Q", "K", "V"};
  for (size_t i = 0; i < 3; ++i) {
    if (s[i] != nullptr && s[i]->rank() != 4) {
      ctx.fail(std::string(kNames[i]) + " must be 4-D (batch, heads, sequence, head size), not " +
               std::to_string(s[i]->rank()) + "-D");
    }
  }
  // Known dims (input, axis) that must agree.
  auto mustMatch = [&](size_t a, size_t b, size_t axis, const char* what) {
    if (s[a] == nullptr || s[b] == nullptr) return;
    const Dim& x = s[a]->dims[axis];
    const Dim& y = s[b]->dims[axis];
    if (x.isKnown() && y.isKnown() && x.value != y.value) {
      ctx.fail(std::string(kNames[a]) + " and " + kNames[b] + " have different " + what + " (" +
               std::to_string(x.value) + " and " + std::to_string(y.value) + ")");
    }
  };
  mustMatch(kQ, kK, 0, "batch sizes");
  mustMatch(kQ, kV, 0, "batch sizes");
  mustMatch(kK, kV, 1, "head counts");
  mustMatch(kK, kV, 2, "sequence lengths");
  mustMatch(kQ, kK, 3, "head sizes");
  const Shape* kv = s[kK] != nullptr ? s[kK] : s[kV];
  if (s[kQ] != nullptr && kv != nullptr && s[kQ]->dims[1].isKnown() && kv->dims[1].isKnown() &&
      (kv->dims[1].value <= 0 || s[kQ]->dims[1].value % kv->dims[1].value != 0)) {
    ctx.fail("the query head count (" + std::to_string(s[kQ]->dims[1].value) +
             ") must be a multiple of the key/value head count (" +
             std::to_string(kv->dims[1].value) + ")");
  }
  auto dim = [&](size_t input, size_t axis) -> Dim {
    if (s[input] == nullptr) return ctx.newSymbol();
    const Dim& d = s[input]->dims[axis];
    return d.isKnown() || !d.param.empty() ? d : ctx.newSymbol();
  };
  Dim batch = dim(kQ, 0);
  for (size_t i : {kK, kV}) {
    if (!batch.isKnown() && s[i] != nullptr && s[i]->dims[0].isKnown()) batch = s[i]->dims[0];
  }
  ctx.setOutput(0, t1, Shape{{batch, dim(kQ, 1), dim(kQ, 2), dim(kV, 3)}, {}});
}

// ================================================================= compute

// Runs modifier `g` (score_mod or prob_mod) on `v`, held as a `type` tensor of `dims`.
std::vector<double> applyModifier(const ComputeContext& ctx, const char* name, const Graph& g,
                                  DataType type, const std::vector<int64_t>& dims,
                                  const std::vector<double>& v) {
  Tensor in(type, dims);
  writeAll(in, v);
  std::vector<Tensor> out;
  try {
    out = evaluateSubgraph(g, {&in}, *ctx.subgraph_env);
  } catch (const ResourceError&) {
    throw;
  } catch (const UnsupportedError& e) {
    ctx.unsupported(std::string(name) + ": " + e.what());
  } catch (const std::exception& e) {
    ctx.fail(std::string(name) + ": " + e.what());
  }
  if (out.at(0).dtype() != type || out[0].dims() != dims) {
    ctx.fail(std::string(name) + " gave " + std::string(dataTypeName(out[0].dtype())) +
             dimsText(out[0].dims()) + ", expected " + std::string(dataTypeName(type)) +
             dimsText(dims));
  }
  return readAll(out[0]);
}

// Acc: double when T1 or the softmax precision is double, else float.
template <class Acc>
void flexAttentionImpl(ComputeContext& ctx, DataType t1, DataType sp) {
  const Tensor& Qt = ctx.input(kQ);
  const Tensor& Kt = ctx.input(kK);
  const Tensor& Vt = ctx.input(kV);
  if (Qt.rank() != 4 || Kt.rank() != 4 || Vt.rank() != 4) ctx.fail("Q, K and V must be 4-D");
  const std::vector<int64_t>& qd = Qt.dims();
  const std::vector<int64_t>& kd = Kt.dims();
  const std::vector<int64_t>& vd = Vt.dims();
  const int64_t B = qd[0], Hq = qd[1], L = qd[2], E = qd[3];
  const int64_t Hkv = kd[1], S = kd[2], Ev = vd[3];
  if (kd[0] != B || vd[0] != B) ctx.fail("Q, K and V have different batch sizes");
  if (vd[1] != Hkv || vd[2] != S) ctx.fail("K and V must agree on heads and sequence length");
  if (kd[3] != E) ctx.fail("Q and K have different head sizes");
  if (Hkv <= 0 || Hq % Hkv != 0) {
    ctx.fail("the query head count must be a multiple of the key/value head count");
  }
  const int64_t group = Hq / Hkv;

  // The function body computes the default scale, and sqrt(scale), in float32.
  const float scale = ctx.hasAttr("scale")
                          ? ctx.attrFloat("scale", 1.0f)
                          : 1.0f / std::sqrt(static_cast<float>(std::max<int64_t>(E, 1)));
  // A scale that is not positive has no square root: it multiplies the scores instead.
  const bool split = scale > 0;
  const double sq = split ? roundTo(t1, std::sqrt(scale)) : 1.0;
  auto scaled = [&](const Tensor& t) {
    std::vector<double> raw = readAll(t);
    std::vector<Acc> out(raw.size());
    for (size_t i = 0; i < raw.size(); ++i)
      out[i] = static_cast<Acc>(roundTo(t1, raw[i] * sq));
    return out;
  };
  const std::vector<Acc> q = scaled(Qt), k = scaled(Kt);
  std::vector<Acc> v(static_cast<size_t>(Vt.numElements()));
  {
    const std::vector<double> raw = readAll(Vt);
    for (size_t i = 0; i < raw.size(); ++i)
      v[i] = static_cast<Acc>(roundTo(sp, raw[i]));
  }

  const std::vector<int64_t> sdims = {B, Hq, L, S};
  const int64_t n_scores = ctx.sizeMul(ctx.sizeMul(B * Hq, L), S);
  // The scores can be far larger than Y (2 GiB for a 64 KiB result), out of the size
  // budget's sight: they count against the run's bytes before they are allocated (in wasm
  // such an allocation traps).
  EvalBudget::chargeBytes(static_cast<uint64_t>(n_scores) * sizeof(double), "FlexAttention scores");
  std::vector<double> scores(static_cast<size_t>(n_scores));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < Hq; ++h) {
      const Acc* kb = k.data() + (b * Hkv + h / group) * S * E;
      for (int64_t i = 0; i < L; ++i) {
        const Acc* qi = q.data() + ((b * Hq + h) * L + i) * E;
        double* row = scores.data() + ((b * Hq + h) * L + i) * S;
        for (int64_t j = 0; j < S; ++j) {
          double d = roundTo(t1, static_cast<double>(simd::dotHwy(qi, kb + j * E, E)));
          if (!split) d = roundTo(t1, d * scale);
          row[j] = roundTo(sp, d);
        }
      }
    }
  }
  if (const Graph* g = modifier(ctx, "score_mod")) {
    scores = applyModifier(ctx, "score_mod", *g, sp, sdims, scores);
  }
  // Softmax over each row, materialized in the softmax precision.
  for (size_t r = 0; r + static_cast<size_t>(S) <= scores.size() && S > 0; r += S) {
    double* row = scores.data() + r;
    double mx = -INFINITY;
    for (int64_t j = 0; j < S; ++j)
      mx = std::max(mx, row[j]);
    double sum = 0;
    for (int64_t j = 0; j < S; ++j)
      sum += row[j] = fm::exp(row[j] - mx);
    for (int64_t j = 0; j < S; ++j)
      row[j] = roundTo(sp, row[j] / sum);
  }
  if (const Graph* g = modifier(ctx, "prob_mod")) {
    scores = applyModifier(ctx, "prob_mod", *g, sp, sdims, scores);
  }

  std::vector<double> y(static_cast<size_t>(B * Hq * L * Ev));
  std::vector<Acc> acc(static_cast<size_t>(Ev));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < Hq; ++h) {
      const Acc* vb = v.data() + (b * Hkv + h / group) * S * Ev;
      for (int64_t i = 0; i < L; ++i) {
        const double* p = scores.data() + ((b * Hq + h) * L + i) * S;
        std::fill(acc.begin(), acc.end(), Acc(0));
        for (int64_t j = 0; j < S; ++j)
          axpy(static_cast<Acc>(p[j]), vb + j * Ev, acc.data(), Ev);
        double* yo = y.data() + ((b * Hq + h) * L + i) * Ev;
        for (int64_t e = 0; e < Ev; ++e)
          yo[e] = roundTo(sp, static_cast<double>(acc[static_cast<size_t>(e)]));
      }
    }
  }
  writeAll(ctx.output(0), y);  // the cast back to T1
}

void computeFlexAttention(ComputeContext& ctx) {
  const DataType t1 = ctx.input(kQ).dtype();
  if (!isFloatType(t1)) ctx.fail("Q must be a float tensor");
  if (ctx.input(kK).dtype() != t1 || ctx.input(kV).dtype() != t1) {
    ctx.fail("Q, K and V must have the same element type");
  }
  const DataType sp = softmaxType(ctx, t1);
  // Checked before any work: propagation evaluates small nodes without an environment.
  for (const char* name : {"score_mod", "prob_mod"}) {
    if (modifier(ctx, name) != nullptr && ctx.subgraph_env == nullptr) {
      ctx.unsupported(std::string(name) + " cannot run: the caller gave no model opsets");
    }
  }
  if (t1 == DataType::kDouble || sp == DataType::kDouble) {
    flexAttentionImpl<double>(ctx, t1, sp);
  } else {
    flexAttentionImpl<float>(ctx, t1, sp);
  }
}

}  // namespace
}  // namespace kernels

void registerFlexAttentionOps(OpRegistry& r) {
  r.add({"ai.onnx.preview", "FlexAttention", 1, kernels::inferFlexAttention,
         kernels::computeFlexAttention, kOpWritesWholeOutputs | kOpEvaluatesSubgraphs});
}

}  // namespace onnxfold

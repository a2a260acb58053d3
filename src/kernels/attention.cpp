// attention op family: Attention (23, 24), RotaryEmbedding (23) and
// LinearAttention (27). See op_registry.h for the infer()/compute() contract.
//
// Attention follows the spec's errata semantics (the node tests are generated
// from them): softcap before the mask, bottom-right causal alignment (offset =
// past length, or nonpad_kv_seqlen - q_len per batch for an external cache),
// GQA by interleaved head repetition (q head h reads kv head h / group), and a
// fully masked query row gives zeros, not NaN. float, float16 and bfloat16 are
// computed in float with the intermediate results rounded to the element type
// where the reference materializes them (scaled Q and K, scores, softmax);
// double is computed in double. The two hot loops (Q.K dot products and the
// P.V accumulation) use the Highway kernels of simd.h.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/float_math.h"
#include "kernels/simd.h"

namespace onnxfold {
namespace kernels {

// ================================================================= dot and axpy

// float goes through the Highway kernels of simd.h, double through their
// scalar references.
namespace attn {
namespace {
inline float dot(const float* a, const float* b, int64_t n) {
  return simd::dotHwy(a, b, n);
}
inline double dot(const double* a, const double* b, int64_t n) {
  return simd::dotScalar(a, b, n);
}
inline void axpy(float alpha, const float* x, float* y, int64_t n) {
  simd::axpyHwy(alpha, x, y, n);
}
inline void axpy(double alpha, const double* x, double* y, int64_t n) {
  simd::axpyScalar(alpha, x, y, n);
}
}  // namespace
}  // namespace attn

namespace {

// Rounds v to what element type t can hold (float16/bfloat16/float), as a
// kernel materializing the intermediate in that type would.
double roundTo(DataType t, double v) {
  switch (t) {
    case DataType::kFloat16:
      return halfToFloat(floatToHalf(static_cast<float>(v)));
    case DataType::kBfloat16:
      return bfloat16ToFloat(floatToBfloat16(static_cast<float>(v)));
    case DataType::kFloat:
      return static_cast<float>(v);
    default:
      return v;
  }
}

template <class Acc>
std::vector<Acc> readAs(const OpContext& ctx, const Tensor& t) {
  std::vector<Acc> v(static_cast<size_t>(t.numElements()));
  const bool ok = dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<Acc>(toDouble(t.at<T>(i)));
  });
  if (!ok) ctx.unsupported("unsupported element type " + std::string(dataTypeName(t.dtype())));
  return v;
}

template <class Acc>
void writeAs(Tensor& t, const Acc* v, size_t n) {
  dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = mutableDataAs<T>(t);
    for (size_t i = 0; i < n; ++i)
      p[i] = fromDouble<T>(static_cast<double>(v[i]));
  });
}

// Sum of two dims: known when both are, else a fresh symbol (a known 0 keeps the other).
Dim addDims(InferContext& ctx, const Dim& a, const Dim& b) {
  if (a.isKnown() && b.isKnown()) return Dim::known(ctx.sizeAdd(a.value, b.value));
  if (a.isKnown() && a.value == 0) return b;
  if (b.isKnown() && b.value == 0) return a;
  return ctx.newSymbol();
}

Dim known(InferContext& ctx, const Dim& d) {
  return d.isKnown() || !d.param.empty() ? d : ctx.newSymbol();
}

// ================================================================= Attention

enum AttnIn { kQ, kK, kV, kMask, kPastK, kPastV, kNonpad };

void inferAttention(InferContext& ctx) {
  requireFloatInput(ctx, kQ, "Q");
  requireFloatInput(ctx, kK, "K");
  requireFloatInput(ctx, kV, "V");
  const DataType t1 = ctx.inputDtype(kQ);
  const DataType t2 = ctx.inputDtype(kV);
  const int64_t mode = ctx.attrInt("qk_matmul_output_mode");
  if (mode < 0 || mode > 3) ctx.fail("qk_matmul_output_mode must be 0..3");
  if (ctx.hasInput(kPastK) != ctx.hasInput(kPastV)) {
    ctx.fail("past_key and past_value must be given together");
  }
  const Shape* q = ctx.inputShape(kQ);
  const Shape* k = ctx.inputShape(kK);
  const Shape* v = ctx.inputShape(kV);
  const Shape* pk = ctx.inputShape(kPastK);
  size_t rank = q ? q->rank() : k ? k->rank() : v ? v->rank() : 0;
  if (rank != 0 && rank != 3 && rank != 4) ctx.fail("Q, K and V must be 3-D or 4-D");
  for (const Shape* s : {q, k, v})
    if (s != nullptr && s->rank() != rank) ctx.fail("Q, K and V must have the same rank");
  auto setAll = [&](auto&& f) {
    for (size_t i = 0; i < ctx.numOutputs(); ++i)
      f(i);
  };
  if (rank == 0) {
    setAll([&](size_t i) { ctx.setOutputUnknownRank(i, i == 2 ? t2 : t1); });
    return;
  }
  auto dim = [&](const Shape* s, size_t i) -> Dim {
    return s != nullptr ? known(ctx, s->dims[i]) : ctx.newSymbol();
  };
  Dim B = q ? dim(q, 0) : dim(k, 0);
  Dim Hq, Hkv, Sq, Skv, Dh, Dv;
  if (rank == 4) {
    Hq = dim(q, 1);
    Sq = dim(q, 2);
    Dh = dim(q, 3);
    Hkv = k ? dim(k, 1) : dim(v, 1);
    Skv = k ? dim(k, 2) : dim(v, 2);
    Dv = dim(v, 3);
  } else {
    if (!ctx.hasAttr("q_num_heads") || !ctx.hasAttr("kv_num_heads")) {
      ctx.fail("3-D inputs need the q_num_heads and kv_num_heads attributes");
    }
    const int64_t hq = ctx.attrInt("q_num_heads", 0), hkv = ctx.attrInt("kv_num_heads", 0);
    if (hq <= 0 || hkv <= 0) ctx.fail("q_num_heads and kv_num_heads must be positive");
    Hq = Dim::known(hq);
    Hkv = Dim::known(hkv);
    Sq = dim(q, 1);
    Skv = k ? dim(k, 1) : dim(v, 1);
    auto per_head = [&](const Shape* s, int64_t h) -> Dim {
      if (s == nullptr || !s->dims[2].isKnown()) return ctx.newSymbol();
      if (s->dims[2].value % h != 0) ctx.fail("hidden size is not a multiple of the head count");
      return Dim::known(s->dims[2].value / h);
    };
    Dh = per_head(q, hq);
    Dv = per_head(v, hkv);
  }
  if (Hq.isKnown() && Hkv.isKnown() && (Hkv.value == 0 || Hq.value % Hkv.value != 0)) {
    ctx.fail("q_num_heads must be a multiple of kv_num_heads");
  }
  Dim P = pk != nullptr ? (pk->rank() == 4 ? dim(pk, 2) : ctx.newSymbol()) : Dim::known(0);
  if (pk != nullptr && pk->rank() != 4) ctx.fail("past_key must be 4-D");
  const Dim total = addDims(ctx, P, Skv);
  Shape y;
  if (rank == 4) {
    y.dims = {B, Hq, Sq, Dv};
  } else {
    Dim hidden = Hq.isKnown() && Dv.isKnown() ? Dim::known(ctx.sizeMul(Hq.value, Dv.value))
                                              : ctx.newSymbol();
    if (!hidden.isKnown() && Hq == Hkv && v != nullptr) hidden = known(ctx, v->dims[2]);
    y.dims = {B, Sq, hidden};
  }
  ctx.setOutput(0, t1, std::move(y));
  if (ctx.numOutputs() > 1) ctx.setOutput(1, t1, Shape{{B, Hkv, total, Dh}, {}});
  if (ctx.numOutputs() > 2) ctx.setOutput(2, t2, Shape{{B, Hkv, total, Dv}, {}});
  if (ctx.numOutputs() > 3) ctx.setOutput(3, t1, Shape{{B, Hq, Sq, total}, {}});
}

// 3-D [B, S, H*D] or 4-D [B, H, S, D] as 4-D [B, H, S, D].
template <class Acc>
std::vector<Acc> toBhsd(const OpContext& ctx, const Tensor& t, int64_t heads, int64_t& S,
                        int64_t& D) {
  std::vector<Acc> raw = readAs<Acc>(ctx, t);
  if (t.rank() == 4) {
    S = t.dims()[2];
    D = t.dims()[3];
    return raw;
  }
  const int64_t B = t.dims()[0];
  S = t.dims()[1];
  if (t.dims()[2] % heads != 0) ctx.fail("hidden size is not a multiple of the head count");
  D = t.dims()[2] / heads;
  std::vector<Acc> out(raw.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < heads; ++h)
        std::copy_n(raw.data() + ((b * S + s) * heads + h) * D, D,
                    out.data() + ((b * heads + h) * S + s) * D);
  return out;
}

template <class Acc>
void attentionImpl(ComputeContext& ctx) {
  const Tensor& Qt = ctx.input(kQ);
  const Tensor& Kt = ctx.input(kK);
  const Tensor& Vt = ctx.input(kV);
  const DataType t1 = Qt.dtype();
  const size_t rank = Qt.rank();
  const int64_t B = Qt.dims()[0];
  int64_t Hq, Hkv;
  if (rank == 4) {
    Hq = Qt.dims()[1];
    Hkv = Kt.dims()[1];
    if (Vt.dims()[1] != Hkv) ctx.fail("K and V have different head counts");
  } else {
    Hq = ctx.attrInt("q_num_heads", 0);
    Hkv = ctx.attrInt("kv_num_heads", 0);
  }
  if (Hq <= 0 || Hkv <= 0 || Hq % Hkv != 0)
    ctx.fail("q_num_heads must be a multiple of kv_num_heads");
  int64_t Sq, Dh, Skv, Dk, Skv2, Dv;
  const std::vector<Acc> Q = toBhsd<Acc>(ctx, Qt, Hq, Sq, Dh);
  std::vector<Acc> K = toBhsd<Acc>(ctx, Kt, Hkv, Skv, Dk);
  std::vector<Acc> V = toBhsd<Acc>(ctx, Vt, Hkv, Skv2, Dv);
  if (Dk != Dh) ctx.fail("Q and K have different head sizes");
  if (Skv2 != Skv) ctx.fail("K and V have different sequence lengths");
  if (Kt.dims()[0] != B || Vt.dims()[0] != B) ctx.fail("Q, K and V have different batch sizes");

  // KV cache: present = concat(past, new) on the sequence axis.
  int64_t P = 0;
  int64_t T = Skv;
  if (ctx.hasInput(kPastK)) {
    const Tensor& pk = ctx.input(kPastK);
    const Tensor& pv = ctx.input(kPastV);
    P = pk.dims()[2];
    if (pk.rank() != 4 || pk.dims()[0] != B || pk.dims()[1] != Hkv || pk.dims()[3] != Dh ||
        pv.rank() != 4 || pv.dims()[0] != B || pv.dims()[1] != Hkv || pv.dims()[2] != P ||
        pv.dims()[3] != Dv) {
      ctx.fail("past_key/past_value shapes do not match K/V");
    }
    // Empty caches may declare lengths whose sum or product overflows.
    T = ctx.sizeAdd(P, Skv);
    const std::vector<Acc> pkv = readAs<Acc>(ctx, pk), pvv = readAs<Acc>(ctx, pv);
    auto cat = [&](const std::vector<Acc>& past, const std::vector<Acc>& cur, int64_t D) {
      std::vector<Acc> out(static_cast<size_t>(ctx.sizeMul(ctx.sizeMul(B * Hkv, T), D)));
      for (int64_t bh = 0; bh < B * Hkv; ++bh) {
        std::copy_n(past.data() + bh * P * D, P * D, out.data() + bh * T * D);
        std::copy_n(cur.data() + bh * Skv * D, Skv * D, out.data() + (bh * T + P) * D);
      }
      return out;
    };
    K = cat(pkv, K, Dh);
    V = cat(pvv, V, Dv);
  }
  if (ctx.hasOutput(1)) writeAs(ctx.output(1), K.data(), K.size());
  if (ctx.hasOutput(2)) writeAs(ctx.output(2), V.data(), V.size());

  // Scale Q and K by sqrt(scale) each (the spec's overflow-safe form).
  const double scale = ctx.hasAttr("scale") ? static_cast<double>(ctx.attrFloat("scale", 1.0f))
                                            : 1.0 / std::sqrt(static_cast<double>(Dh));
  const double sq = roundTo(t1, std::sqrt(scale));
  std::vector<Acc> Qs(Q.size());
  for (size_t i = 0; i < Q.size(); ++i)
    Qs[i] = static_cast<Acc>(roundTo(t1, static_cast<double>(Q[i]) * sq));
  for (Acc& x : K)
    x = static_cast<Acc>(roundTo(t1, static_cast<double>(x) * sq));

  // Additive bias [B or 1, Hq or 1, Sq, T] from the mask, causality and padding.
  const double ninf = -std::numeric_limits<double>::infinity();
  std::vector<int64_t> mdims;  // mask dims right-aligned to 4-D
  std::vector<double> mask;
  bool bool_mask = false;
  if (ctx.hasInput(kMask)) {
    const Tensor& m = ctx.input(kMask);
    if (m.rank() < 1 || m.rank() > 4) ctx.fail("attn_mask must have rank 1 to 4");
    mdims.assign(4 - m.rank(), 1);
    mdims.insert(mdims.end(), m.dims().begin(), m.dims().end());
    if (mdims[3] > T) ctx.fail("attn_mask is longer than the total sequence length");
    const int64_t want[4] = {B, Hq, Sq, T};
    for (int i = 0; i < 3; ++i) {
      if (mdims[i] != 1 && mdims[i] != want[i]) {
        ctx.fail("attn_mask does not broadcast to (batch, q_num_heads, q_len, total_len)");
      }
    }
    bool_mask = m.dtype() == DataType::kBool;
    mask = readAs<double>(ctx, m);
  }
  std::vector<int64_t> nonpad;
  if (ctx.hasInput(kNonpad)) {
    nonpad = toInt64Vector(ctx, ctx.input(kNonpad));
    if (static_cast<int64_t>(nonpad.size()) != B)
      ctx.fail("nonpad_kv_seqlen must have batch_size elements");
  }
  const bool causal = ctx.attrInt("is_causal") != 0;
  auto bias = [&](int64_t b, int64_t h, int64_t i, int64_t j) -> double {
    double v = 0;
    if (!mask.empty()) {
      if (j >= mdims[3]) return ninf;  // shorter masks are padded with -inf
      const int64_t mb = mdims[0] == 1 ? 0 : b, mh = mdims[1] == 1 ? 0 : h,
                    mi = mdims[2] == 1 ? 0 : i;
      const double m =
          mask[static_cast<size_t>(((mb * mdims[1] + mh) * mdims[2] + mi) * mdims[3] + j)];
      if (bool_mask) {
        if (m == 0) return ninf;
      } else {
        v = roundTo(t1, m);
      }
    }
    if (causal) {
      // j > i + offset with offset = P, or nonpad - Sq rearranged so that a hostile
      // nonpad_kv_seqlen (INT64_MIN) cannot overflow.
      if (P > 0 || nonpad.empty() ? j > i + P : j - i + Sq > nonpad[static_cast<size_t>(b)])
        return ninf;
    }
    if (!nonpad.empty() && j >= nonpad[static_cast<size_t>(b)]) return ninf;
    return v;
  };

  const double softcap = ctx.attrFloat("softcap");
  const int64_t mode = ctx.attrInt("qk_matmul_output_mode");
  DataType sm_type = t1;  // precision the softmax result is held in
  if (ctx.hasAttr("softmax_precision")) {
    sm_type = static_cast<DataType>(ctx.attrInt("softmax_precision", 1));
    if (!isFloatType(sm_type)) ctx.fail("softmax_precision must be a float type");
  }
  const int64_t group = Hq / Hkv;
  std::vector<Acc> Y(static_cast<size_t>(B * Hq * Sq * Dv));
  std::vector<Acc> QK;
  if (ctx.hasOutput(3)) QK.resize(static_cast<size_t>(B * Hq * Sq * T));
  std::vector<double> row(static_cast<size_t>(T));
  std::vector<Acc> prob(static_cast<size_t>(T)), acc(static_cast<size_t>(Dv));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t hk = h / group;  // interleaved repeat: [h0, h0, h1, h1, ...]
      const Acc* kb = K.data() + (b * Hkv + hk) * T * Dh;
      const Acc* vb = V.data() + (b * Hkv + hk) * T * Dv;
      for (int64_t i = 0; i < Sq; ++i) {
        const Acc* qi = Qs.data() + ((b * Hq + h) * Sq + i) * Dh;
        Acc* qk_out = QK.empty() ? nullptr : QK.data() + ((b * Hq + h) * Sq + i) * T;
        double mx = ninf;
        for (int64_t j = 0; j < T; ++j) {
          double s = roundTo(t1, static_cast<double>(attn::dot(qi, kb + j * Dh, Dh)));
          if (qk_out != nullptr && mode == 0) qk_out[j] = static_cast<Acc>(s);
          if (softcap > 0) s = roundTo(t1, softcap * fm::tanh(s / softcap));
          if (qk_out != nullptr && mode == 1) qk_out[j] = static_cast<Acc>(s);
          s = roundTo(t1, s + bias(b, h, i, j));
          if (qk_out != nullptr && mode == 2) qk_out[j] = static_cast<Acc>(s);
          row[static_cast<size_t>(j)] = s;
          mx = std::max(mx, s);
        }
        // Softmax; a fully masked row (max -inf) gives zeros rather than NaN.
        if (mx == ninf) {
          std::fill(prob.begin(), prob.end(), Acc(0));
        } else {
          double sum = 0;
          for (double& s : row) {
            s = fm::exp(s - mx);
            sum += s;
          }
          for (int64_t j = 0; j < T; ++j)
            prob[static_cast<size_t>(j)] =
                static_cast<Acc>(roundTo(sm_type, row[static_cast<size_t>(j)] / sum));
        }
        if (qk_out != nullptr && mode == 3) {
          for (int64_t j = 0; j < T; ++j)
            qk_out[j] =
                static_cast<Acc>(roundTo(t1, static_cast<double>(prob[static_cast<size_t>(j)])));
        }
        std::fill(acc.begin(), acc.end(), Acc(0));
        for (int64_t j = 0; j < T; ++j) {
          if (prob[static_cast<size_t>(j)] != 0)
            attn::axpy(prob[static_cast<size_t>(j)], vb + j * Dv, acc.data(), Dv);
        }
        Acc* yo = rank == 4 ? Y.data() + ((b * Hq + h) * Sq + i) * Dv
                            : Y.data() + ((b * Sq + i) * Hq + h) * Dv;
        std::copy(acc.begin(), acc.end(), yo);
      }
    }
  }
  writeAs(ctx.output(0), Y.data(), Y.size());
  if (ctx.hasOutput(3)) writeAs(ctx.output(3), QK.data(), QK.size());
}

void computeAttention(ComputeContext& ctx) {
  if (ctx.input(kQ).rank() != 3 && ctx.input(kQ).rank() != 4) ctx.fail("Q must be 3-D or 4-D");
  if (ctx.input(kK).rank() != ctx.input(kQ).rank() ||
      ctx.input(kV).rank() != ctx.input(kQ).rank()) {
    ctx.fail("Q, K and V must have the same rank");
  }
  if (ctx.input(kQ).dtype() == DataType::kDouble) {
    attentionImpl<double>(ctx);
  } else {
    attentionImpl<float>(ctx);
  }
}

// ================================================================= RotaryEmbedding

void inferRotary(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  if (t != DataType::kUndefined && t != DataType::kFloat && t != DataType::kFloat16 &&
      t != DataType::kBfloat16) {
    ctx.fail("input must be float, float16 or bfloat16");
  }
  const Shape* x = ctx.inputShape(0);
  if (x == nullptr) {
    ctx.setOutputUnknownRank(0, t);
    return;
  }
  if (x->rank() != 3 && x->rank() != 4) ctx.fail("input must be 3-D or 4-D");
  if (x->rank() == 3 && ctx.attrInt("num_heads", 0) <= 0) {
    ctx.fail("3-D input needs the num_heads attribute");
  }
  ctx.setOutput(0, t, *x);
}

void computeRotary(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& cosT = ctx.input(1);
  const Tensor& sinT = ctx.input(2);
  const bool has_pos = ctx.hasInput(3);
  const DataType t = X.dtype();
  const bool interleaved = ctx.attrInt("interleaved") != 0;
  const int64_t B = X.dims()[0];
  int64_t S, H, D;
  // Element (b, s, h, d) lives at ((b*bs + s*ss + h*hs) + d).
  int64_t bs, ss, hs;
  if (X.rank() == 4) {
    H = X.dims()[1];
    S = X.dims()[2];
    D = X.dims()[3];
    // An empty X (B = 0) may declare dims whose product overflows.
    hs = ctx.sizeMul(S, D);
    bs = ctx.sizeMul(H, hs);
    ss = D;
  } else if (X.rank() == 3) {
    H = ctx.attrInt("num_heads", 0);
    if (H <= 0) ctx.fail("3-D input needs the num_heads attribute");
    S = X.dims()[1];
    if (X.dims()[2] % H != 0) ctx.fail("hidden size is not a multiple of num_heads");
    D = X.dims()[2] / H;
    ss = H * D;
    bs = ctx.sizeMul(S, ss);
    hs = D;
  } else {
    ctx.fail("input must be 3-D or 4-D");
  }
  int64_t rd = ctx.attrInt("rotary_embedding_dim");
  if (rd == 0) rd = D;
  if (rd > D || rd % 2 != 0) ctx.fail("rotary_embedding_dim must be even and at most head_size");
  const int64_t half = rd / 2;
  if (cosT.dims() != sinT.dims()) ctx.fail("cos_cache and sin_cache must have the same shape");
  if (cosT.dims().empty() || cosT.dims().back() != half) {
    ctx.fail("the last dim of cos_cache must be rotary_embedding_dim / 2");
  }
  std::vector<int64_t> pos;
  if (has_pos) {
    pos = toInt64Vector(ctx, ctx.input(3));
    if (static_cast<int64_t>(pos.size()) != B * S) ctx.fail("position_ids must be [batch, seq]");
    if (cosT.rank() != 2) ctx.fail("with position_ids the caches must be 2-D");
    for (int64_t p : pos)
      if (p < 0 || p >= cosT.dims()[0]) ctx.fail("position id out of range of the caches");
  } else if (cosT.rank() != 3 || cosT.dims()[0] != B || cosT.dims()[1] != S) {
    ctx.fail("without position_ids the caches must be [batch, seq, dim / 2]");
  }
  const std::vector<float> x = readAs<float>(ctx, X);
  const std::vector<float> cs = readAs<float>(ctx, cosT), sn = readAs<float>(ctx, sinT);
  std::vector<float> y(x);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t s = 0; s < S; ++s) {
      const int64_t row = has_pos ? pos[static_cast<size_t>(b * S + s)] : b * S + s;
      const float* c = cs.data() + row * half;
      const float* sv = sn.data() + row * half;
      for (int64_t h = 0; h < H; ++h) {
        const float* xi = x.data() + b * bs + s * ss + h * hs;
        float* yo = y.data() + b * bs + s * ss + h * hs;
        for (int64_t k = 0; k < half; ++k) {
          const int64_t i1 = interleaved ? 2 * k : k;
          const int64_t i2 = interleaved ? 2 * k + 1 : k + half;
          const double x1 = xi[i1], x2 = xi[i2];
          // Products rounded to the element type, as the reference computes them.
          const double c1 = roundTo(t, c[k] * x1), s2 = roundTo(t, sv[k] * x2);
          const double s1 = roundTo(t, sv[k] * x1), c2 = roundTo(t, c[k] * x2);
          yo[i1] = static_cast<float>(c1 - s2);
          yo[i2] = static_cast<float>(s1 + c2);
        }
      }
    }
  }
  writeAs(ctx.output(0), y.data(), y.size());
}

// ================================================================= LinearAttention

enum LinIn { kLQ, kLK, kLV, kLPast, kLDecay, kLBeta, kLErase };

void inferLinearAttention(InferContext& ctx) {
  for (size_t i = 0; i < ctx.numInputs(); ++i)
    if (ctx.hasInput(i)) requireFloatInput(ctx, i, "input");
  const DataType t = ctx.inputDtype(kLQ);
  const int64_t hq = ctx.attrInt("q_num_heads", 0), hkv = ctx.attrInt("kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0) {
    ctx.fail("q_num_heads must be a positive multiple of kv_num_heads");
  }
  const std::string rule = ctx.attrString("update_rule");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta") {
    ctx.unsupported("unsupported update_rule '" + rule + "'");
  }
  const bool gating = rule == "gated" || rule == "gated_delta";
  const bool delta = rule == "delta" || rule == "gated_delta";
  if (gating != ctx.hasInput(kLDecay)) {
    ctx.fail("update_rule '" + rule + (gating ? "' requires" : "' forbids") + " the decay input");
  }
  if (delta != ctx.hasInput(kLBeta)) {
    ctx.fail("update_rule '" + rule + (delta ? "' requires" : "' forbids") + " the beta input");
  }
  const DataType st = ctx.hasInput(kLPast) ? ctx.inputDtype(kLPast) : t;
  const Shape* q = ctx.inputShape(kLQ);
  const Shape* v = ctx.inputShape(kLV);
  for (const Shape* s : {q, ctx.inputShape(kLK), v})
    if (s != nullptr && s->rank() != 3) ctx.fail("query, key and value must be 3-D");
  auto dim = [&](const Shape* s, size_t i) -> Dim {
    return s != nullptr ? known(ctx, s->dims[i]) : ctx.newSymbol();
  };
  auto per_head = [&](const Shape* s, int64_t h) -> Dim {
    if (s == nullptr || !s->dims[2].isKnown()) return ctx.newSymbol();
    if (s->dims[2].value % h != 0) ctx.fail("hidden size is not a multiple of the head count");
    return Dim::known(s->dims[2].value / h);
  };
  const Dim B = q ? dim(q, 0) : dim(v, 0);
  const Dim Tn = q ? dim(q, 1) : dim(v, 1);
  const Dim dk = per_head(q, hq), dv = per_head(v, hkv);
  const Dim hid = dv.isKnown() ? Dim::known(ctx.sizeMul(hq, dv.value)) : ctx.newSymbol();
  ctx.setOutput(0, t, Shape{{B, Tn, hid}, {}});
  if (ctx.numOutputs() > 1) ctx.setOutput(1, st, Shape{{B, Dim::known(hkv), dk, dv}, {}});
}

void computeLinearAttention(ComputeContext& ctx) {
  const Tensor& Qt = ctx.input(kLQ);
  const Tensor& Kt = ctx.input(kLK);
  const Tensor& Vt = ctx.input(kLV);
  const int64_t hq = ctx.attrInt("q_num_heads", 0), hkv = ctx.attrInt("kv_num_heads", 0);
  const std::string rule = ctx.attrString("update_rule");
  const bool gating = rule == "gated" || rule == "gated_delta";
  const bool delta = rule == "delta" || rule == "gated_delta";
  if (Qt.rank() != 3 || Kt.rank() != 3 || Vt.rank() != 3)
    ctx.fail("query, key and value must be 3-D");
  const int64_t B = Qt.dims()[0], T = Qt.dims()[1];
  const int64_t dk = Qt.dims()[2] / hq, dv = Vt.dims()[2] / hkv;
  if (Kt.dims()[2] != hkv * dk || Kt.dims()[0] != B || Vt.dims()[0] != B || Kt.dims()[1] != T ||
      Vt.dims()[1] != T) {
    ctx.fail("query, key and value shapes disagree");
  }
  const std::vector<float> q = readAs<float>(ctx, Qt), k = readAs<float>(ctx, Kt),
                           v = readAs<float>(ctx, Vt);
  // With T = 0 the state's declared dims may multiply out of int64.
  std::vector<float> state(
      static_cast<size_t>(ctx.sizeMul(ctx.sizeMul(ctx.sizeMul(B, hkv), dk), dv)), 0.0f);
  if (ctx.hasInput(kLPast)) {
    const Tensor& ps = ctx.input(kLPast);
    if (ps.dims() != std::vector<int64_t>{B, hkv, dk, dv}) ctx.fail("past_state shape mismatch");
    state = readAs<float>(ctx, ps);
  }
  std::vector<float> decay, beta, erase;
  int64_t decay_w = 0, beta_w = 0;
  if (gating) {
    const Tensor& d = ctx.input(kLDecay);
    decay_w = d.rank() == 3 ? d.dims()[2] : -1;
    if (decay_w != hkv && decay_w != hkv * dk)
      ctx.fail("decay must be [B, T, H_kv] or [B, T, H_kv*d_k]");
    decay = readAs<float>(ctx, d);
  }
  if (delta) {
    const Tensor& bt = ctx.input(kLBeta);
    beta_w = bt.rank() == 3 ? bt.dims()[2] : -1;
    if (beta_w != hkv && beta_w != 1) ctx.fail("beta must be [B, T, H_kv] or [B, T, 1]");
    beta = readAs<float>(ctx, bt);
    if (ctx.hasInput(kLErase)) erase = readAs<float>(ctx, ctx.input(kLErase));
  }
  double scale = ctx.attrFloat("scale");
  if (scale == 0.0) scale = 1.0 / std::sqrt(static_cast<double>(dk));
  const int64_t group = hq / hkv;
  std::vector<float> out(static_cast<size_t>(B * T * hq * dv));
  std::vector<float> vt(static_cast<size_t>(dv)), ke(static_cast<size_t>(dk));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      const int64_t bt = b * T + t;
      for (int64_t h = 0; h < hkv; ++h) {
        float* S = state.data() + (b * hkv + h) * dk * dv;
        const float* kt = k.data() + (bt * hkv + h) * dk;
        const float* vin = v.data() + (bt * hkv + h) * dv;
        if (gating) {
          for (int64_t i = 0; i < dk; ++i) {
            const float g = decay_w == hkv ? decay[static_cast<size_t>(bt * hkv + h)]
                                           : decay[static_cast<size_t>((bt * hkv + h) * dk + i)];
            const float e = fm::exp(g);
            for (int64_t m = 0; m < dv; ++m)
              S[i * dv + m] *= e;
          }
        }
        std::copy_n(vin, dv, vt.data());
        if (delta) {
          for (int64_t i = 0; i < dk; ++i)
            ke[static_cast<size_t>(i)] =
                erase.empty() ? kt[i] : erase[static_cast<size_t>((bt * hkv + h) * dk + i)] * kt[i];
          const float bv = beta[static_cast<size_t>(bt * beta_w + (beta_w == 1 ? 0 : h))];
          for (int64_t m = 0; m < dv; ++m) {
            float r = 0;
            for (int64_t i = 0; i < dk; ++i)
              r += S[i * dv + m] * ke[static_cast<size_t>(i)];
            vt[static_cast<size_t>(m)] = bv * (vt[static_cast<size_t>(m)] - r);
          }
        }
        for (int64_t i = 0; i < dk; ++i)
          attn::axpy(kt[i], vt.data(), S + i * dv, dv);  // S += k (outer) v
        for (int64_t g = 0; g < group; ++g) {
          const int64_t hh = h * group + g;
          const float* qt = q.data() + (bt * hq + hh) * dk;
          float* o = out.data() + (bt * hq + hh) * dv;
          std::fill(o, o + dv, 0.0f);
          for (int64_t i = 0; i < dk; ++i)
            attn::axpy(qt[i], S + i * dv, o, dv);
          for (int64_t m = 0; m < dv; ++m)
            o[m] = static_cast<float>(scale * o[m]);
        }
      }
    }
  }
  writeAs(ctx.output(0), out.data(), out.size());
  if (ctx.hasOutput(1)) writeAs(ctx.output(1), state.data(), state.size());
}

}  // namespace
}  // namespace kernels

void registerAttentionOps(OpRegistry& r) {
  using namespace kernels;
  for (int v : {23, 24})
    r.add({"", "Attention", v, inferAttention, computeAttention});
  r.add({"", "RotaryEmbedding", 23, inferRotary, computeRotary});
  r.add({"", "LinearAttention", 27, inferLinearAttention, computeLinearAttention});
}

}  // namespace onnxfold

// DQ(a), DQ(b) -> MatMul / Gemm becomes MatMulInteger with a float rescale.
//
// Before:  %m = MatMul(DQ(%aq, sa, za), DQ(%bq, sb, zb))
//     or:  %m = Gemm(DQ(%aq, sa, za), DQ(%bq, sb, zb), %c) {transB}
// After:   %acc = MatMulInteger(%aq, %bq', za, zb)             (int32)
//          %m = Mul(Cast(Add(%acc, %cq)), sa*sb) [+ %c_f]
//
// Conditions: a per tensor, b per tensor or per output column, both 8-bit; b
// of a's signedness or a constant (then shifted by 128 into it: quant.h
// paramsIn).
// MatMul: b per column means a 2-D b quantized along axis 1. Gemm: transA = 0,
// alpha = beta = 1, b a constant 2-D tensor (transB = 1: transposed here, so a
// per-row quantization along axis 0 becomes per column); C absent, an int32
// constant dequantized with zero point 0 and scale sa*sb (added before the
// Cast), or a constant float32 [N] (added after the Mul).
// Algebra: (DQ(a) x DQ(b))[i, n] = sa * sb[n] * sum_k (aq - za) * (bq - zb[n]);
// MatMulInteger computes the sum exactly in int32.
#include "passes/quant/quant.h"

namespace onnxfold::quant {

namespace {

struct QuantMatMul {
  QParams a, b;
  Node* adq = nullptr;
  Node* bdq = nullptr;
  bool transpose_b = false;
  const Tensor* bias_q = nullptr;
  const Tensor* bias_f = nullptr;
  int64_t columns = 1;
};

std::optional<QuantMatMul> matchQuantMatMul(const Node& n) {
  QuantMatMul m;
  m.adq = dequantizeOf(n.input(0));
  m.bdq = dequantizeOf(n.input(1));
  if (m.adq == nullptr || m.bdq == nullptr) {
    return std::nullopt;  // inputs do not both come from DequantizeLinear
  }
  auto a = paramsOf(m.adq);
  auto b = paramsOf(m.bdq);
  if (!a || !b) return std::nullopt;
  if (!a->perTensor() || !is8Bit(a->qtype) || !is8Bit(b->qtype)) {
    return std::nullopt;  // a is not per-tensor 8-bit or b is not 8-bit
  }
  const bool gemm = n.isOp("Gemm");
  const int64_t b_rank = rankOf(m.bdq->input(0));
  if (gemm) {
    if (n.attrInt("transA", 0) != 0 || n.attrFloat("alpha", 1.0F) != 1.0F ||
        n.attrFloat("beta", 1.0F) != 1.0F) {
      return std::nullopt;  // Gemm with transA or alpha/beta other than 1
    }
    const Tensor* bt = constantOf(m.bdq->input(0));
    if (bt == nullptr || bt->rank() != 2) {
      return std::nullopt;  // Gemm weight is not a constant matrix
    }
    m.transpose_b = n.attrInt("transB", 0) != 0;
    m.columns = bt->dims()[m.transpose_b ? 0 : 1];
    if (!b->perTensor() && b->axis != (m.transpose_b ? 0 : 1)) {
      return std::nullopt;  // Gemm weight is not quantized per output column
    }
  } else {
    if (!b->perTensor() && !(b_rank == 2 && b->axis == 1)) {
      return std::nullopt;  // b is quantized neither per tensor nor per column
    }
    if (!b->perTensor()) m.columns = static_cast<int64_t>(b->scale.size());
  }
  if (gemm && n.input(2) != nullptr) {
    const Tensor* cf = constantOf(n.input(2));
    Node* cdq = dequantizeOf(n.input(2));
    if (cf != nullptr && cf->dtype() == DataType::kFloat && cf->rank() == 1 &&
        cf->numElements() == m.columns) {
      m.bias_f = cf;
    } else if (isQuantBias(cdq, *a, *b, m.columns)) {
      m.bias_q = constantOf(cdq->input(0));
    } else {
      return std::nullopt;  // Gemm C is neither a constant float [N] nor an int32 quantized bias
    }
  }
  if (b->qtype != a->qtype && constantOf(m.bdq->input(0)) == nullptr) {
    return std::nullopt;  // b of the other signedness, computed at run time (quant.h paramsIn)
  }
  m.a = *a;
  m.b = *b;
  return m;
}

class MatMulIntegerPattern : public RewritePattern {
 public:
  explicit MatMulIntegerPattern(const char* op)
      : RewritePattern(std::string(op[0] == 'G' ? "gemm" : "matmul") + "-integer", op, 1) {}

  bool matchAndRewrite(Node& n, Rewriter& rw) const override {
    const std::optional<QuantMatMul> qm = matchQuantMatMul(n);
    if (!qm) return false;
    const QuantMatMul& m = *qm;
    // b in a's signedness (quant.h paramsIn: uint8 x int8 saturates on some CPUs).
    const QParams bp = paramsIn(m.b, m.a.qtype);
    const std::string base = n.output(0)->name();
    Value* bq = weightIn(rw, m.bdq->input(0), bp.qtype, m.transpose_b);
    Value* zb = weightZeroPoint(rw, m.b, bp, base + "_b");
    Node* mi = createTyped(rw, "MatMulInteger",
                           {m.adq->input(0), bq, zeroPointValue(rw, m.a, base + "_a"), zb}, &n,
                           DataType::kInt32, n.output(0));
    mi->name = n.name;
    Rescale r;
    r.acc = mi->output(0);
    r.like = n.output(0);
    r.before = &n;
    r.rank = 1;  // per-column operands are [N], broadcast on the last axis
    r.channel_axis = 0;
    r.scale = biasScale(m.a, m.b, m.b.perTensor() ? 1 : m.columns);
    r.bias_q = m.bias_q;
    r.bias_f = m.bias_f;
    r.base = base;
    rw.replaceNode(&n, {buildRescale(rw, r)});
    return true;
  }
};

}  // namespace

void addMatMulIntegerPatterns(PatternList& out) {
  out.push_back(std::make_unique<MatMulIntegerPattern>("MatMul"));
  out.push_back(std::make_unique<MatMulIntegerPattern>("Gemm"));
}

}  // namespace onnxfold::quant

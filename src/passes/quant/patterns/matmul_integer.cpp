// DQ(a), DQ(b) -> MatMul / Gemm becomes MatMulInteger with a float rescale.
//
// Before:  %m = MatMul(DQ(%aq, sa, za), DQ(%bq, sb, zb))
//     or:  %m = Gemm(DQ(%aq, sa, za), DQ(%bq, sb, zb), %c) {transB}
// After:   %acc = MatMulInteger(%aq, %bq', za, zb)             (int32)
//          %m = Mul(Cast(Add(%acc, %cq)), sa*sb) [+ %c_f]
//
// Conditions: a per tensor, b per tensor or per output column, both 8-bit.
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

std::optional<QuantMatMul> matchQuantMatMul(const Node& n, std::string& why) {
  QuantMatMul m;
  m.adq = dequantizeOf(n.input(0));
  m.bdq = dequantizeOf(n.input(1));
  if (m.adq == nullptr || m.bdq == nullptr) {
    why = "inputs do not both come from DequantizeLinear";
    return std::nullopt;
  }
  auto a = paramsOf(m.adq, why);
  auto b = paramsOf(m.bdq, why);
  if (!a || !b) return std::nullopt;
  if (!a->perTensor() || !is8Bit(a->qtype) || !is8Bit(b->qtype)) {
    why = "a is not per-tensor 8-bit or b is not 8-bit";
    return std::nullopt;
  }
  const bool gemm = n.isOp("Gemm");
  const int64_t b_rank = rankOf(m.bdq->input(0));
  if (gemm) {
    if (n.attrInt("transA", 0) != 0 || n.attrFloat("alpha", 1.0F) != 1.0F ||
        n.attrFloat("beta", 1.0F) != 1.0F) {
      why = "Gemm with transA or alpha/beta other than 1";
      return std::nullopt;
    }
    const Tensor* bt = constantOf(m.bdq->input(0));
    if (bt == nullptr || bt->rank() != 2) {
      why = "Gemm weight is not a constant matrix";
      return std::nullopt;
    }
    m.transpose_b = n.attrInt("transB", 0) != 0;
    m.columns = bt->dims()[m.transpose_b ? 0 : 1];
    if (!b->perTensor() && b->axis != (m.transpose_b ? 0 : 1)) {
      why = "Gemm weight is not quantized per output column";
      return std::nullopt;
    }
  } else {
    if (!b->perTensor() && !(b_rank == 2 && b->axis == 1)) {
      why = "b is quantized neither per tensor nor per column";
      return std::nullopt;
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
      why = "Gemm C is neither a constant float [N] nor an int32 quantized bias";
      return std::nullopt;
    }
  }
  m.a = *a;
  m.b = *b;
  return m;
}

class MatMulIntegerPattern : public RewritePattern {
 public:
  explicit MatMulIntegerPattern(const char* op)
      : RewritePattern(std::string(op[0] == 'G' ? "gemm" : "matmul") + "-integer", op, 1) {}

  bool match(const Model&, Node& n, std::string& why) const override {
    return matchQuantMatMul(n, why).has_value();
  }

  void rewrite(Node& n, Rewriter& rw) const override {
    std::string why;
    const QuantMatMul m = *matchQuantMatMul(n, why);
    const std::string base = n.output(0)->name();
    Value* bq = m.bdq->input(0);
    if (m.transpose_b) bq = rw.constant(transposed8(*constantOf(bq)), bq->name() + "_t");
    Value* zb = uniformOrSelf(rw, zeroPointValue(rw, m.b, base + "_b"), m.b.zero_point, m.b.qtype,
                              base + "_b_zero_point");
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
  }
};

}  // namespace

void addMatMulIntegerPatterns(PatternList& out) {
  out.push_back(std::make_unique<MatMulIntegerPattern>("MatMul"));
  out.push_back(std::make_unique<MatMulIntegerPattern>("Gemm"));
}

}  // namespace onnxfold::quant

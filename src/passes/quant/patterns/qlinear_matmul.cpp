// DQ(a), DQ(b) -> MatMul (or a bias-free Gemm) -> Q(y) becomes one QLinearMatMul.
//
// Before:  %m = MatMul(DQ(%aq, sa, za), DQ(%bq, sb, zb)); %yq = Q(%m, sy, zy)
//     or:  %m = Gemm(DQ(%aq, sa, za), DQ(%bq, sb, zb)) {transB}; %yq = Q(%m, sy, zy)
// After:   %yq = QLinearMatMul(%aq, sa, za, %bq', sb, zb, sy, zy)
//
// Conditions: all three quantizations constant and 8-bit, a and y of one type,
// b of a's signedness or a constant (then shifted by 128 into it: quant.h
// paramsIn); a and y per tensor;
// b per tensor, or per column when b is a 2-D tensor quantized along axis 1
// (the spec's per-column form); the MatMul/Gemm feeds only the Q. Gemm: no C,
// transA = 0, alpha = beta = 1, b a constant 2-D tensor; with transB = 1 it is
// transposed here (%bq'), so its per-row quantization (axis 0) is per column.
// A Gemm with C goes to MatMulInteger instead (matmul_integer.cpp): the bias
// must be added before the requantization.
// Algebra: QLinearMatMul is defined as this composition with an int32
// accumulation; the float product differs only by float rounding of the sum.
#include "passes/quant/quant.h"

namespace onnxfold::quant {

namespace {

class QLinearMatMulPattern : public RewritePattern {
 public:
  QLinearMatMulPattern() : RewritePattern("qlinear-matmul", "QuantizeLinear", 1) {}

  bool matchAndRewrite(Node& q, Rewriter& rw) const override {
    Node* mm = q.input(0) != nullptr ? q.input(0)->producer() : nullptr;
    if (mm == nullptr || !(mm->isOp("MatMul") || mm->isOp("Gemm")) || !hasSingleUse(q.input(0)) ||
        mm->graph() != q.graph()) {
      return false;  // MatMul/Gemm does not feed the QuantizeLinear alone
    }
    Node* adq = dequantizeOf(mm->input(0));
    Node* bdq = dequantizeOf(mm->input(1));
    if (adq == nullptr || bdq == nullptr) {
      return false;  // inputs do not both come from DequantizeLinear
    }
    const std::optional<QParams> a = paramsOf(adq), b = paramsOf(bdq), y = paramsOf(&q);
    if (!a || !b || !y) return false;
    if (!is8Bit(a->qtype) || !is8Bit(b->qtype) || !is8Bit(y->qtype)) {
      return false;  // not 8-bit
    }
    if (!a->perTensor() || !y->perTensor()) {
      return false;  // a or y is not quantized per tensor
    }
    if (!qlinearTypesRun(a->qtype, y->qtype)) {
      return false;  // no runtime kernel for these types: the integer form takes it
    }
    if (b->qtype != a->qtype && constantOf(bdq->input(0)) == nullptr) {
      return false;  // b of the other signedness, computed at run time (quant.h paramsIn)
    }
    int64_t column_axis = 1;
    if (mm->isOp("Gemm")) {
      const Tensor* bt = constantOf(bdq->input(0));
      if (mm->input(2) != nullptr || mm->attrInt("transA", 0) != 0 ||
          mm->attrFloat("alpha", 1.0F) != 1.0F || mm->attrFloat("beta", 1.0F) != 1.0F ||
          bt == nullptr || bt->rank() != 2) {
        return false;  // Gemm with C, transA, alpha/beta other than 1 or a non-constant weight
      }
      if (mm->attrInt("transB", 0) != 0) column_axis = 0;
    }
    if (!b->perTensor() && !(rankOf(bdq->input(0)) == 2 && b->axis == column_axis)) {
      return false;  // b is quantized neither per tensor nor per column
    }
    // b in a's signedness (quant.h paramsIn: uint8 x int8 saturates on some CPUs); a Gemm
    // transB weight transposed.
    const QParams bp = paramsIn(*b, a->qtype);
    const std::string base = mm->output(0)->name();
    Value* bq = weightIn(rw, bdq->input(0), bp.qtype, column_axis == 0);
    Node* n = createTyped(rw, "QLinearMatMul",
                          {adq->input(0), scaleValue(*a), zeroPointValue(rw, *a, base + "_a"), bq,
                           scaleValue(*b), weightZeroPoint(rw, *b, bp, base + "_b"), scaleValue(*y),
                           zeroPointValue(rw, *y, base + "_y")},
                          &q, y->qtype, q.output(0));
    n->name = mm->name;
    rw.replaceNode(&q, {n->output(0)});
    rw.erase(mm);
    return true;
  }
};

}  // namespace

void addQLinearMatMulPatterns(PatternList& out) {
  out.push_back(std::make_unique<QLinearMatMulPattern>());
}

}  // namespace onnxfold::quant

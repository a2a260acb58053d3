// DQ(x), DQ(w) [, DQ(bias)] -> Conv -> Q(y) becomes one QLinearConv.
//
// Before:  %c = Conv(DQ(%xq, sx, zx), DQ(%wq, sw, zw), DQ(%bq, sx*sw, 0)); %yq = Q(%c, sy, zy)
// After:   %yq = QLinearConv(%xq, sx, zx, %wq, sw, zw, sy, zy, %bq)   (Conv's attributes)
//
// Conditions (matchQuantConv in quant.cpp): x per tensor, 8-bit; w a constant
// 8-bit tensor, per tensor or per output channel (axis 0); the bias absent or
// an int32 constant dequantized with zero point 0 and scale sx * sw (what
// quant-fold-weights makes of a float bias); Q per tensor, 8-bit; the Conv
// feeds only the Q; x and y of one type. The weight takes x's signedness
// (shifted by 128 when it has the other one: quant.h paramsIn), so the op is
// uint8/uint8/uint8 or int8/int8/int8. A per-channel weight zero point that is
// uniform becomes a scalar.
// Algebra: QLinearConv is defined as exactly this composition, with the
// accumulation in int32 and the rescale sx*sw/sy applied before rounding; the
// float Conv differs only by float rounding of the same sum.
#include "passes/quant/quant.h"

namespace onnxfold::quant {

namespace {

class QLinearConvPattern : public RewritePattern {
 public:
  QLinearConvPattern() : RewritePattern("qlinear-conv", "QuantizeLinear", 1) {}

  bool matchAndRewrite(Node& q, Rewriter& rw) const override {
    Node* conv = q.input(0) != nullptr ? q.input(0)->producer() : nullptr;
    if (conv == nullptr || !conv->isOp("Conv") || !hasSingleUse(q.input(0)) ||
        conv->graph() != q.graph()) {
      return false;  // Conv does not feed the QuantizeLinear alone
    }
    const std::optional<QParams> yq = paramsOf(&q);
    if (!yq || !yq->perTensor() || !is8Bit(yq->qtype)) {
      return false;  // output quantization is not per-tensor 8-bit
    }
    const std::optional<QuantConv> qc = matchQuantConv(conv);
    if (!qc) return false;
    const QuantConv& c = *qc;
    const QParams& y = *yq;
    if (!qlinearTypesRun(c.x.qtype, y.qtype)) {
      return false;  // no runtime kernel for these types: the integer form takes it
    }
    // The weight in x's signedness (quant.h paramsIn: uint8 x int8 saturates on some CPUs).
    const QParams w = paramsIn(c.w, c.x.qtype);
    const std::string base = conv->output(0)->name();
    Value* zw = weightZeroPoint(rw, c.w, w, base + "_w");
    std::vector<Value*> in = {c.x_q,
                              scaleValue(c.x),
                              zeroPointValue(rw, c.x, base + "_x"),
                              weightIn(rw, c.w_q, w.qtype, false),
                              scaleValue(c.w),
                              zw,
                              scaleValue(y),
                              zeroPointValue(rw, y, base + "_y")};
    if (c.bias_q != nullptr) in.push_back(c.bias_q);
    Node* n = createTyped(rw, "QLinearConv", in, &q, y.qtype, q.output(0));
    copyAttributes(rw, *conv, n);
    n->name = conv->name;
    rw.replaceNode(&q, {n->output(0)});
    rw.erase(conv);
    return true;
  }
};

}  // namespace

void addQLinearConvPatterns(PatternList& out) {
  out.push_back(std::make_unique<QLinearConvPattern>());
}

}  // namespace onnxfold::quant

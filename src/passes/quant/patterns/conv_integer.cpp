// DQ(x), DQ(w) [, bias] -> Conv becomes ConvInteger with a float rescale.
//
// Before:  %c = Conv(DQ(%xq, sx, zx), DQ(%wq, sw, zw), %bias)
// After:   %acc = ConvInteger(%xq, %wq, zx, zw)               (int32, Conv's attributes)
//          %c = Mul(Cast(Add(%acc, %bq)), sx*sw) [+ %bias_f]
//
// Conditions: as for qlinear_conv.cpp (matchQuantConv), except that no Q needs
// to follow and the bias may be either the int32 DQ form (added before the
// Cast, as QLinearConv does) or a constant float32 [M] (added after the Mul);
// the weight's zero points all equal (the spec allows one per output channel,
// but ONNX Runtime's ConvInteger fails on them at run time: such a Conv stays
// DQ -> Conv). The weight takes x's signedness (shifted by 128 when it has the
// other one: quant.h paramsIn).
// sx*sw is per tensor or per output channel ([M, 1, ...]).
// Algebra: Conv(DQ(x), DQ(w)) = sx * sw[m] * sum((xq - zx) * (wq - zw)) +
// bias; ConvInteger computes the sum exactly in int32, and
// DQ(bq) = sx * sw[m] * bq.
#include "passes/quant/quant.h"

namespace onnxfold::quant {

namespace {

class ConvIntegerPattern : public RewritePattern {
 public:
  ConvIntegerPattern() : RewritePattern("conv-integer", "Conv", 1) {}

  bool matchAndRewrite(Node& conv, Rewriter& rw) const override {
    if (conv.output(0) == nullptr) return false;
    const std::optional<QuantConv> qc = matchQuantConv(&conv, /*allow_float_bias=*/true);
    if (!qc) return false;
    const QuantConv& c = *qc;
    if (!uniformZeroPoint(c.w)) {
      return false;  // per-channel weight zero points differ: no ConvInteger kernel takes them
    }
    // The weight in x's signedness (quant.h paramsIn: int8 x uint8 saturates on some CPUs).
    const QParams w = paramsIn(c.w, c.x.qtype);
    const std::string base = conv.output(0)->name();
    Value* zw = weightZeroPoint(rw, c.w, w, base + "_w");
    Node* ci = createTyped(
        rw, "ConvInteger",
        {c.x_q, weightIn(rw, c.w_q, w.qtype, false), zeroPointValue(rw, c.x, base + "_x"), zw},
        &conv, DataType::kInt32, conv.output(0));
    copyAttributes(rw, conv, ci);
    ci->name = conv.name;
    Rescale r;
    r.acc = ci->output(0);
    r.like = conv.output(0);
    r.before = &conv;
    r.rank = rankOf(c.w_q);  // the output has the weight's rank
    r.channel_axis = 1;
    r.scale = biasScale(c.x, c.w, c.w.perTensor() ? 1 : c.channels);
    r.bias_q = c.bias_q != nullptr ? constantOf(c.bias_q) : nullptr;
    r.bias_f = c.bias_f;
    r.base = base;
    rw.replaceNode(&conv, {buildRescale(rw, r)});
    return true;
  }
};

}  // namespace

void addConvIntegerPatterns(PatternList& out) {
  out.push_back(std::make_unique<ConvIntegerPattern>());
}

}  // namespace onnxfold::quant

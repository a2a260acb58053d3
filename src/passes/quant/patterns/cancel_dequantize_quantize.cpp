// A DequantizeLinear followed by a QuantizeLinear with the same parameters
// gives back the quantized tensor.
//
// Before:  %f = DQ(%q, s, z); %r = Q(%f, s, z)
// After:   %r is %q (the DQ stays for its other users, if any)
//
// Conditions: both have constant, identical parameters (type, layout, scale
// and zero point; an absent zero point is 0); Q has no output_dtype other than
// the DQ input's type (paramsOf compares the quantized types).
// Algebra: Q(DQ(q)) = sat(round(((q - z) * s) / s) + z); (q - z) * s / s is
// within one float rounding of the integer q - z, whose magnitude is below
// 2^17, so it rounds back to q - z, and q is in range -- unless (q - z) * s
// overflows or is subnormal, so roundTrips() checks every q for the actual s. The converse, Q then
// DQ, loses precision and is never removed here.
#include "passes/quant/quant.h"

namespace onnxfold::quant {

namespace {

class CancelDequantizeQuantize : public RewritePattern {
 public:
  CancelDequantizeQuantize() : RewritePattern("cancel-dequantize-quantize", "QuantizeLinear", 4) {}

  bool matchAndRewrite(Node& q, Rewriter& rw) const override {
    Node* dq = dequantizeOf(q.input(0));
    if (dq == nullptr) {
      return false;  // input is not a DequantizeLinear
    }
    auto a = paramsOf(dq);
    auto b = paramsOf(&q);
    if (!a || !b) return false;
    if (!sameParams(*a, *b) || a->qtype == DataType::kInt32) {
      return false;  // parameters differ
    }
    const int64_t out_type = dq->attrInt("output_dtype", 0);
    if (out_type != 0 && out_type != static_cast<int64_t>(DataType::kFloat)) {
      return false;  // DequantizeLinear does not produce float32
    }
    if (!roundTrips(*a)) return false;  // the algebra above, checked for these very scales
    rw.replaceNode(&q, {dq->input(0)});
    return true;
  }
};

}  // namespace

void addCancelDequantizeQuantizePatterns(PatternList& out) {
  out.push_back(std::make_unique<CancelDequantizeQuantize>());
}

}  // namespace onnxfold::quant

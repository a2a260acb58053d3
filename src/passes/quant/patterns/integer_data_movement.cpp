// Data movement between a DequantizeLinear and a QuantizeLinear with the same
// parameters runs on the quantized tensor.
//
// Before:  %f = DQ(%q, s, z); %m = Op(%f, rest...); %r = Q(%m, s, z)
//          (Concat: every input a DQ with those parameters)
// After:   %r = Op(%q, rest...)
//
// Ops: Reshape, Transpose, Flatten, Squeeze, Unsqueeze, Slice, Gather (data
// input), Concat, MaxPool (opset >= 12 for 8-bit inputs; no Indices output).
// Conditions: DQ and Q per tensor, constant and identical; the Op feeds only
// the Q (DQs may have other users, they stay for them); the Op's schema at the
// opset takes the quantized type (MaxPool: int8 and uint8 from opset 12, so a
// 16-bit one stays float).
// Algebra: these ops only select, reorder or copy elements (MaxPool selects
// the largest, and DQ is increasing since s > 0), so they commute with the
// elementwise DQ, and Q(DQ(q)) = q (see cancel_dequantize_quantize.cpp).
#include "passes/quant/quant.h"

namespace onnxfold::quant {

namespace {

class IntegerDataMovement : public RewritePattern {
 public:
  explicit IntegerDataMovement(std::string op)
      : RewritePattern("integer-" + op, "QuantizeLinear", 2), op_(std::move(op)) {}

  bool matchAndRewrite(Node& q, Rewriter& rw) const override {
    Node* m = q.input(0) != nullptr ? q.input(0)->producer() : nullptr;
    if (m == nullptr || !m->isOp(op_) || !hasSingleUse(q.input(0)) || m->graph() != q.graph()) {
      return false;  // does not feed the QuantizeLinear alone
    }
    if (op_ == "MaxPool") {
      if (rw.opset() < 12) {
        return false;  // 8-bit MaxPool needs opset 12
      }
      if (m->output(1) != nullptr && (m->output(1)->hasUses() || m->output(1)->isGraphOutput())) {
        return false;  // MaxPool Indices output is used
      }
    }
    auto p = paramsOf(&q);
    if (!p) return false;
    if (!p->perTensor()) {
      return false;  // per-axis quantization
    }
    const size_t n = op_ == "Concat" ? m->numInputs() : 1;
    for (size_t i = 0; i < n; ++i) {
      Node* dq = dequantizeOf(m->input(i));
      if (dq == nullptr) {
        return false;  // input  is not a DequantizeLinear
      }
      auto d = paramsOf(dq);
      if (!d) return false;
      if (!sameParams(*d, *p)) {
        return false;  // DequantizeLinear and QuantizeLinear parameters differ
      }
    }
    if (!schemaTakes(op_, rw.opset(), 0, p->qtype)) {
      return false;  // the op does not take the quantized type at this opset
    }
    if (!roundTrips(*p)) return false;  // moving integers instead assumes Q(DQ(q)) = q
    std::vector<Value*> inputs = m->inputs();
    for (size_t i = 0; i < n; ++i)
      inputs[i] = inputs[i]->producer()->input(0);
    const DataType t = p->qtype;
    Node* nm = createTyped(rw, op_, inputs, &q, t, q.output(0));
    copyAttributes(rw, *m, nm);
    nm->name = m->name;
    rw.replaceNode(&q, {nm->output(0)});
    rw.erase(m);
    return true;
  }

 private:
  std::string op_;
};

}  // namespace

void addIntegerDataMovementPatterns(PatternList& out) {
  for (const char* op : {"Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Slice",
                         "Gather", "Concat", "MaxPool"})
    out.push_back(std::make_unique<IntegerDataMovement>(op));
}

}  // namespace onnxfold::quant

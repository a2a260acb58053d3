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
// the Q (DQs may have other users, they stay for them).
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

  bool match(const Model& model, Node& q, std::string& why) const override {
    Node* m = q.input(0) != nullptr ? q.input(0)->producer() : nullptr;
    if (m == nullptr || !m->isOp(op_) || !hasSingleUse(q.input(0)) || m->graph() != q.graph()) {
      why = op_ + " does not feed the QuantizeLinear alone";
      return false;
    }
    if (op_ == "MaxPool") {
      if (model.opsetVersion("") < 12) {
        why = "8-bit MaxPool needs opset 12";
        return false;
      }
      if (m->output(1) != nullptr && (m->output(1)->hasUses() || m->output(1)->isGraphOutput())) {
        why = "MaxPool Indices output is used";
        return false;
      }
    }
    auto p = paramsOf(&q, why);
    if (!p) return false;
    if (!p->perTensor()) {
      why = "per-axis quantization";
      return false;
    }
    const size_t n = op_ == "Concat" ? m->numInputs() : 1;
    for (size_t i = 0; i < n; ++i) {
      Node* dq = dequantizeOf(m->input(i));
      if (dq == nullptr) {
        why = op_ + " input " + std::to_string(i) + " is not a DequantizeLinear";
        return false;
      }
      auto d = paramsOf(dq, why);
      if (!d) return false;
      if (!sameParams(*d, *p)) {
        why = "DequantizeLinear and QuantizeLinear parameters differ";
        return false;
      }
    }
    return roundTrips(*p, why);  // moving integers instead assumes Q(DQ(q)) = q
  }

  void rewrite(Node& q, Rewriter& rw) const override {
    Node* m = q.input(0)->producer();
    std::vector<Value*> inputs = m->inputs();
    const size_t n = op_ == "Concat" ? inputs.size() : 1;
    for (size_t i = 0; i < n; ++i)
      inputs[i] = inputs[i]->producer()->input(0);
    std::string why;
    const DataType t = paramsOf(&q, why)->qtype;
    Node* nm = createTyped(rw, op_, inputs, &q, t, q.output(0));
    copyAttributes(*m, nm);
    nm->name = m->name;
    rw.replaceNode(&q, {nm->output(0)});
    rw.erase(m);
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

// A Clip or Relu right before a QuantizeLinear moves into the integer domain,
// or disappears when the quantization already saturates at its bounds.
//
// Before:  %c = Clip(%y, lo, hi) (or Relu(%y): lo = 0, hi = +inf); %q = Q(%c, s, z)
// After:   %q = Q(%y, s, z)                              when Q(lo) <= qmin and Q(hi) >= qmax
//          %q = Clip(Q(%y, s, z), Q(lo), Q(hi))          otherwise (integer Clip, opset >= 12)
//
// Conditions: Q is per tensor with constant parameters; lo and hi are
// constants (scalars); the Clip feeds only the Q; an integer Clip only on
// int8/uint8 (the Clip kernels of ONNX Runtime have no 16-bit ones: it loads a
// 16-bit Clip as its function body and finds no Where for it), so a 16-bit Q
// keeps its float Clip unless the Clip disappears.
// Algebra: Q(v) = sat(round(v / s) + z) is monotone non-decreasing in v, so
// Q(clip(v, lo, hi)) = clamp(Q(v), Q(lo), Q(hi)) for every v, and the clamp is
// the identity when Q(lo) and Q(hi) are the type's limits (Relu before a
// quantization with z = qmin, the ReLU6 of a 6/255-scaled uint8 tensor).
#include <cmath>
#include <limits>

#include "passes/quant/quant.h"

namespace onnxfold::quant {

namespace {

// The scalar float constant `v`, or nullopt.
std::optional<float> scalarOf(const Value* v) {
  const Tensor* t = constantOf(v);
  if (t == nullptr || t->numElements() != 1 || t->dtype() != DataType::kFloat) return std::nullopt;
  return t->at<float>(0);
}

struct Bounds {
  float lo, hi;
};

std::optional<Bounds> boundsOf(const Rewriter& rw, const Node* n) {
  const float inf = std::numeric_limits<float>::infinity();
  if (n->isOp("Relu")) return Bounds{0.0F, inf};
  Bounds b{-inf, inf};
  if (rw.opset() < 11) {
    b.lo = n->attrFloat("min", -inf);
    b.hi = n->attrFloat("max", inf);
    return b;
  }
  if (n->input(1) != nullptr) {
    auto lo = scalarOf(n->input(1));
    if (!lo) return std::nullopt;
    b.lo = *lo;
  }
  if (n->input(2) != nullptr) {
    auto hi = scalarOf(n->input(2));
    if (!hi) return std::nullopt;
    b.hi = *hi;
  }
  if (std::isnan(b.lo) || std::isnan(b.hi) || b.lo > b.hi) return std::nullopt;
  return b;
}

class FoldClipIntoQuantize : public RewritePattern {
 public:
  explicit FoldClipIntoQuantize(const char* op)
      : RewritePattern(std::string("fold-") + (op[0] == 'C' ? "clip" : "relu") + "-into-quantize",
                       "QuantizeLinear", 3),
        op_(op) {}

  bool matchAndRewrite(Node& q, Rewriter& rw) const override {
    Node* c = q.input(0) != nullptr ? q.input(0)->producer() : nullptr;
    if (c == nullptr || !c->isOp(op_) || !hasSingleUse(q.input(0)) || c->graph() != q.graph()) {
      return false;  // does not feed the QuantizeLinear alone
    }
    auto p = paramsOf(&q);
    if (!p) return false;
    if (!p->perTensor()) {
      return false;  // per-axis quantization
    }
    if (dtypeOf(c->input(0)) != DataType::kFloat) {
      return false;  // input is not float32
    }
    auto b = boundsOf(rw, c);
    if (!b) {
      return false;  // bounds are not constant scalars
    }
    int64_t qmin = 0, qmax = 0;
    quantRange(p->qtype, qmin, qmax);
    const int64_t lo_q = quantizeOne(b->lo, p->scale[0], p->zero_point[0], p->qtype);
    const int64_t hi_q = quantizeOne(b->hi, p->scale[0], p->zero_point[0], p->qtype);
    const DataType qtype = p->qtype;
    const bool saturates = lo_q <= qmin && hi_q >= qmax;
    if (!saturates && rw.opset() < 12) {
      return false;  // an integer Clip needs opset 12
    }
    if (!saturates && !is8Bit(qtype)) {
      return false;  // no runtime has a 16-bit integer Clip
    }

    Node* nq = createTyped(rw, "QuantizeLinear", q.inputs(), &q, qtype, q.output(0));
    rw.setInput(nq, 0, c->input(0));
    copyAttributes(rw, q, nq);
    Value* out = nq->output(0);
    if (!saturates) {
      Value* lo = rw.constant(intTensor(qtype, {}, {lo_q}), q.output(0)->name() + "_clip_min");
      Value* hi = rw.constant(intTensor(qtype, {}, {hi_q}), q.output(0)->name() + "_clip_max");
      out = createTyped(rw, "Clip", {out, lo, hi}, &q, qtype, q.output(0))->output(0);
    }
    rw.replaceNode(&q, {out});
    rw.erase(c);
    return true;
  }

 private:
  const char* op_;
};

}  // namespace

void addFoldClipIntoQuantizePatterns(PatternList& out) {
  out.push_back(std::make_unique<FoldClipIntoQuantize>("Clip"));
  out.push_back(std::make_unique<FoldClipIntoQuantize>("Relu"));
}

}  // namespace onnxfold::quant

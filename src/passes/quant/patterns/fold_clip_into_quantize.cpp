// A Clip or Relu right before a QuantizeLinear moves into the integer domain,
// or disappears when the quantization already saturates at its bounds.
//
// Before:  %c = Clip(%y, lo, hi) (or Relu(%y): lo = 0, hi = +inf); %q = Q(%c, s, z)
// After:   %q = Q(%y, s, z)                              when Q(lo) <= qmin and Q(hi) >= qmax
//          %q = Clip(Q(%y, s, z), Q(lo), Q(hi))          otherwise (integer Clip, opset >= 12)
//
// Conditions: Q is per tensor with constant parameters; lo and hi are
// constants (scalars); the Clip feeds only the Q.
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

std::optional<Bounds> boundsOf(const Model& model, const Node* n) {
  const float inf = std::numeric_limits<float>::infinity();
  if (n->isOp("Relu")) return Bounds{0.0F, inf};
  Bounds b{-inf, inf};
  if (model.opsetVersion("") < 11) {
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

  bool match(const Model& model, Node& q, std::string& why) const override {
    Node* c = q.input(0) != nullptr ? q.input(0)->producer() : nullptr;
    if (c == nullptr || !c->isOp(op_) || !hasSingleUse(q.input(0)) || c->graph() != q.graph()) {
      why = std::string(op_) + " does not feed the QuantizeLinear alone";
      return false;
    }
    auto p = paramsOf(&q, why);
    if (!p) return false;
    if (!p->perTensor()) {
      why = "per-axis quantization";
      return false;
    }
    if (dtypeOf(c->input(0)) != DataType::kFloat) {
      why = "input is not float32";
      return false;
    }
    auto b = boundsOf(model, c);
    if (!b) {
      why = "bounds are not constant scalars";
      return false;
    }
    int64_t qmin = 0, qmax = 0;
    quantRange(p->qtype, qmin, qmax);
    lo_ = quantizeOne(b->lo, p->scale[0], p->zero_point[0], p->qtype);
    hi_ = quantizeOne(b->hi, p->scale[0], p->zero_point[0], p->qtype);
    qtype_ = p->qtype;
    saturates_ = lo_ <= qmin && hi_ >= qmax;
    if (!saturates_ && model.opsetVersion("") < 12) {
      why = "an integer Clip needs opset 12";
      return false;
    }
    return true;
  }

  void rewrite(Node& q, Rewriter& rw) const override {
    Node* c = q.input(0)->producer();
    Node* nq = createTyped(rw, "QuantizeLinear", q.inputs(), &q, qtype_, q.output(0));
    nq->setInput(0, c->input(0));
    copyAttributes(q, nq);
    Value* out = nq->output(0);
    if (!saturates_) {
      Value* lo = rw.constant(intTensor(qtype_, {}, {lo_}), q.output(0)->name() + "_clip_min");
      Value* hi = rw.constant(intTensor(qtype_, {}, {hi_}), q.output(0)->name() + "_clip_max");
      out = createTyped(rw, "Clip", {out, lo, hi}, &q, qtype_, q.output(0))->output(0);
    }
    rw.replaceNode(&q, {out});
    rw.erase(c);
  }

 private:
  const char* op_;
  mutable int64_t lo_ = 0, hi_ = 0;
  mutable DataType qtype_ = DataType::kUndefined;
  mutable bool saturates_ = false;
};

}  // namespace

void addFoldClipIntoQuantizePatterns(PatternList& out) {
  out.push_back(std::make_unique<FoldClipIntoQuantize>("Clip"));
  out.push_back(std::make_unique<FoldClipIntoQuantize>("Relu"));
}

}  // namespace onnxfold::quant

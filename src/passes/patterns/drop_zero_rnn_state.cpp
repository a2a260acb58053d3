// Initial states of recurrent ops that are known to be all zeros are dropped.
//
// Before:  %h0 = Slice(ConstantOfShape(Concat(2, Unsqueeze(Gather(Shape(x))), 128)), ...)
//          %y, ... = LSTM(%x, %W, %R, %B, _, %h0, %c0)
// After:   %y, ... = LSTM(%x, %W, %R, %B)
//
// Exporters build zero initial_h / initial_c from the runtime batch size (a
// Shape -> Gather -> Concat -> ConstantOfShape chain that folding cannot
// remove, since the batch is dynamic). RNN, GRU and LSTM define a missing
// initial state as zeros of exactly that shape, so the input can go, and the
// chain that built it becomes dead.
//
// A value is known zero when it is a constant of zeros, a ConstantOfShape whose
// value is 0 (or absent: float 0), or a shape-only op (Slice, Reshape, Squeeze,
// Unsqueeze, Transpose, Expand, Flatten, Identity) or a Cast of a known-zero
// value. The zero tensor must have rank 3 when its rank is known: a wrong shape
// would make the original model fail, and we do not want to hide that.
#include "passes/patterns/patterns.h"

namespace onnxfold {

namespace {

using namespace patterns;

bool knownZero(const Value* v, int depth) {
  if (v == nullptr || depth > 8) return false;
  if (const Tensor* t = constantOf(v)) {
    return allElementsEqual(*t, 0.0);
  }
  const Node* p = v->producer();
  if (p == nullptr || !p->domain.empty()) return false;
  if (p->op_type == "ConstantOfShape") {
    const Attribute* a = p->attr("value");
    if (a == nullptr) return true;  // the default is float32 0
    return a->type == AttrType::kTensor && allElementsEqual(a->t, 0.0);
  }
  static const char* kShapeOnly[] = {"Slice",  "Reshape", "Squeeze",  "Unsqueeze", "Transpose",
                                     "Expand", "Flatten", "Identity", "Cast"};
  for (const char* op : kShapeOnly) {
    if (p->op_type == op) return p->output(0) == v && knownZero(p->input(0), depth + 1);
  }
  return false;
}

class DropZeroRnnState : public RewritePattern {
 public:
  explicit DropZeroRnnState(const char* op)
      : RewritePattern(std::string("drop-zero-initial-state-") + op, op, 1),
        // LSTM: initial_h at 5, initial_c at 6 (P at 7 stays); RNN/GRU: initial_h at 5.
        last_state_(std::string(op) == "LSTM" ? 6 : 5) {}

  bool matchAndRewrite(Node& n, Rewriter& rw) const override {
    if (!n.domain.empty()) return false;
    std::vector<size_t> zero;  // initial states known to be zero
    for (size_t i = 5; i <= last_state_; ++i) {
      if (droppable(n.input(i))) zero.push_back(i);
    }
    if (zero.empty()) return false;
    for (size_t i : zero)
      rw.setInput(&n, i, nullptr);
    // Optional inputs at the end are simply left out.
    while (n.numInputs() > 0 && n.input(n.numInputs() - 1) == nullptr)
      rw.removeInput(&n, n.numInputs() - 1);
    return true;
  }

 private:
  // A present state, of rank 3 when known, whose value is known to be zero.
  static bool droppable(const Value* s) {
    if (s == nullptr) return false;
    const Shape* shape = shapeOf(s);
    return (shape == nullptr || shape->rank() == 3) && knownZero(s, 0);
  }

  size_t last_state_;
};

}  // namespace

void addDropZeroRnnStatePatterns(PatternList& out) {
  for (const char* op : {"RNN", "GRU", "LSTM"})
    out.push_back(std::make_unique<DropZeroRnnState>(op));
}

}  // namespace onnxfold

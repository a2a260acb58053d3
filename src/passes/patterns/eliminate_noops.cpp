// Nodes that pass their input through unchanged are removed.
//
// Before:  %y = Op(%x, ...)
// After:   %y is %x      (a graph output keeps its name, see Rewriter::replaceValue)
//
// One pattern per op, each with its conditions and why it is the identity:
//   Cast         `to` is x's dtype: converting to the same type changes nothing.
//   Expand       constant shape s with rank(s) <= rank(x) and each right-aligned
//                s[i] 1 or x's known dim: broadcast(shape(x), s) = shape(x), so
//                nothing is enlarged or copied.
//   Pad          pads (attribute below opset 11, constant input from 11) all 0:
//                nothing is added or cropped, whatever the mode.
//   Slice        steps 1 and, on every sliced axis, start clamps to 0 and end to
//                the dim (known, or end = INT64_MAX): every element is selected.
//   Identity     always, except when y is a graph output and x cannot take its
//                name (a graph input, initializer, outer value or another
//                output): the Identity that carries the name is then needed.
//   Dropout      inference mode (opset < 7: is_test != 0; 7-11: always;
//                from 12: training_mode absent or a constant false) and the
//                mask output unused: y = x.
//   Concat       a single input: the concatenation of one tensor is itself.
//   Split        a single output: the one part is the whole input.
// Shared: x is present, and the node is in the default domain.
#include <limits>

#include "passes/patterns/patterns.h"

namespace onnxfold {

namespace {

using namespace patterns;

bool hasInput(const Rewriter&, const Chain& c) {
  return c[0]->input(0) != nullptr && c[0]->output(0) != nullptr;
}

bool castToSameType(const Rewriter&, const Chain& c) {
  const Node* n = c[0];
  const DataType in = dtypeOf(n->input(0));
  if (in == DataType::kUndefined) return false;                        // input dtype is unknown
  if (n->attrInt("to", -1) != static_cast<int64_t>(in)) return false;  // Cast changes the dtype
  return true;
}

bool expandKeepsShape(const Rewriter& rw, const Chain& c) {
  const Node* n = c[0];
  if (rw.opset() < 8 || n->numInputs() < 2) return false;  // no shape input
  const std::optional<std::vector<int64_t>> s = constantInts(n->input(1));
  if (!s) return false;                                     // shape is not constant
  if (!broadcastKeepsShape(*s, n->input(0))) return false;  // Expand enlarges its input (or may)
  return true;
}

bool zeroPads(const Rewriter& rw, const Chain& c) {
  const Node* n = c[0];
  std::optional<std::vector<int64_t>> pads = intsOperand(rw, n, "pads", 1, 11);
  if (!pads && rw.opset() < 2) pads = n->attrInts("paddings");
  if (!pads || pads->empty()) return false;  // pads are not constant
  for (int64_t p : *pads) {
    if (p != 0) return false;  // pads are not all zero
  }
  return true;
}

bool selectsAll(const Rewriter& rw, const Chain& c) {
  const Node* n = c[0];
  const Shape* x = shapeOf(n->input(0));
  if (x == nullptr) return false;  // input rank is unknown
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
  if (rw.opset() < 10) {
    if (n->attr("starts") == nullptr || n->attr("ends") == nullptr) return false;  // no starts/ends
    starts = n->attrInts("starts");
    ends = n->attrInts("ends");
    if (n->attr("axes")) axes = n->attrInts("axes");
  } else {
    starts = constantInts(n->input(1));
    ends = constantInts(n->input(2));
    if (n->input(3) != nullptr) axes = constantInts(n->input(3));
    if (n->input(4) != nullptr) {
      steps = constantInts(n->input(4));
      if (!steps) return false;  // steps are not constant
    }
    if (n->input(3) != nullptr && !axes) return false;  // axes are not constant
  }
  if (!starts || !ends || starts->empty() || starts->size() != ends->size())
    return false;  // starts/ends are not constant
  const auto r = static_cast<int64_t>(x->rank());
  if (!axes) {
    axes.emplace();
    for (size_t i = 0; i < starts->size(); ++i)
      axes->push_back(static_cast<int64_t>(i));
  }
  if (axes->size() != starts->size() || (steps && steps->size() != starts->size()))
    return false;  // slice operands differ in length
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (size_t i = 0; i < starts->size(); ++i) {
    if (steps && (*steps)[i] != 1) return false;  // a step is not 1
    int64_t a = (*axes)[i];
    if (a < 0) a += r;
    if (a < 0 || a >= r) return false;  // axis out of range
    const Dim& d = x->dims[static_cast<size_t>(a)];
    const int64_t start = (*starts)[i];
    const int64_t end = (*ends)[i];
    if (d.isKnown()) {
      const int64_t dim = d.value;
      const int64_t s = start < 0 ? std::max<int64_t>(0, start + dim) : std::min(start, dim);
      const int64_t e = end < 0 ? std::max<int64_t>(0, end + dim) : std::min(end, dim);
      if (s != 0 || e != dim) return false;  // slice does not select the whole axis
    } else if (start != 0 || end != kMax) {
      return false;  // axis size is unknown
    }
  }
  return true;
}

bool identityCanGo(const Rewriter&, const Chain& c) {
  const Node* n = c[0];
  if (n->numInputs() != 1 || n->numOutputs() != 1) return false;  // not a plain Identity
  // Not when the Identity carries a graph output's name x cannot take.
  return !n->output(0)->isGraphOutput() || n->graph()->canTakeOutputName(n->input(0));
}

bool inferenceDropout(const Rewriter& rw, const Chain& c) {
  const Node* n = c[0];
  const int64_t opset = rw.opset();
  if (opset < 1) return rw.notifyMatchFailure(*n, "no default-domain opset: mode unknown");
  if (opset < 7 && n->attrInt("is_test", 0) == 0) return false;  // Dropout is in training mode
  if (opset >= 12 && n->input(2) != nullptr) {
    const Tensor* t = constantOf(n->input(2));
    if (t == nullptr)
      return rw.notifyMatchFailure(*n, "training_mode is not a constant: Dropout may be random");
    if (t->dtype() != DataType::kBool || t->numElements() != 1 || t->at<uint8_t>(0) != 0)
      return false;  // Dropout is in training mode
  }
  for (size_t i = 1; i < n->numOutputs(); ++i) {
    const Value* v = n->output(i);
    if (v != nullptr && (v->hasUses() || v->isGraphOutput())) return false;  // Dropout mask is used
  }
  return true;
}

bool singleConcatInput(const Rewriter&, const Chain& c) {
  return c[0]->numInputs() == 1;
}

bool singleSplitOutput(const Rewriter&, const Chain& c) {
  return c[0]->numOutputs() == 1;
}

void remove(const Chain& c, Rewriter& rw) {
  bypass(c[0], c[0]->input(0), rw);
}

void add(PatternList& out, const char* op, const char* name,
         std::function<bool(const Rewriter&, const Chain&)> check) {
  ChainSpec spec;
  spec.name = name;
  spec.ops = {op};
  spec.benefit = 3;
  spec.constraints = {hasInput, std::move(check)};
  spec.build = remove;
  out.push_back(makeChainPattern(std::move(spec)));
}

}  // namespace

void addEliminateNoOpPatterns(PatternList& out) {
  add(out, "Cast", "eliminate-noop-cast", castToSameType);
  add(out, "Expand", "eliminate-noop-expand", expandKeepsShape);
  add(out, "Pad", "eliminate-noop-pad", zeroPads);
  add(out, "Slice", "eliminate-noop-slice", selectsAll);
  add(out, "Dropout", "eliminate-inference-dropout", inferenceDropout);
  add(out, "Concat", "eliminate-single-input-concat", singleConcatInput);
  add(out, "Split", "eliminate-single-output-split", singleSplitOutput);
}

void addEliminateIdentityPatterns(PatternList& out) {
  add(out, "Identity", "eliminate-identity", identityCanGo);
}

}  // namespace onnxfold

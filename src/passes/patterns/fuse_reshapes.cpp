// Reshape chains become one Reshape; a Reshape to the input's own shape goes.
//
// 1. fuse-reshapes
//    Before:  %t = Reshape(%x, %s1); %y = Reshape(%t, %s2)
//    After:   %y = Reshape(%x, %s2)
//    Conditions: opset >= 5 (shape as input); %s2 is a constant with no 0
//    entry, or the second Reshape has allowzero = 1 (a 0 is then a literal
//    size, not a copy of %t's dim); the first Reshape feeds only the second.
//    Algebra: without copied dims the result of Reshape(%t, %s2) depends only
//    on %s2 and the element count (the -1 entry), and %t has the same elements
//    in the same order as %x.
//
// 2. eliminate-noop-reshape
//    Before:  %y = Reshape(%x, %s)
//    After:   %y is %x
//    Conditions: %s is a constant of x's rank and, position by position, a 0
//    (allowzero = 0: copies x's dim, known or symbolic), x's known dim, or a
//    single -1 when every dim of x is known and x has elements. Algebra: the
//    target shape is x's shape and Reshape keeps the element order.
#include "passes/patterns/patterns.h"

namespace onnxfold {

namespace {

using namespace patterns;

bool noCopiedDims(const Rewriter& rw, const Chain& c) {
  const Node* second = c[1];
  if (rw.opset() < 5 || second->numInputs() < 2) return false;  // shape is an attribute
  if (c[0]->input(0) == nullptr) return false;                  // Reshape has no input
  const std::optional<std::vector<int64_t>> s2 = constantInts(second->input(1));
  if (!s2) return false;  // second Reshape shape is not constant
  if (rw.opset() < 14 || second->attrInt("allowzero", 0) == 0) {  // allowzero from Reshape-14
    for (int64_t d : *s2) {
      if (d == 0) return false;  // second Reshape copies a dim of the first's output
    }
  }
  return true;
}

void fuse(const Chain& c, Rewriter& rw) {
  Node* first = c[0];
  Node* second = c[1];
  rw.setInput(second, 0, first->input(0));
  rw.erase(first);
}

bool sameShape(const Rewriter& rw, const Chain& c) {
  const Node* r = c[0];
  if (rw.opset() < 5 || r->numInputs() < 2) return false;  // shape is an attribute
  const Shape* x = shapeOf(r->input(0));
  if (x == nullptr) return false;  // input rank is unknown
  const std::optional<std::vector<int64_t>> s = constantInts(r->input(1));
  if (!s || s->size() != x->rank()) return false;  // shape is not a constant of the input's rank
  const bool allowzero = rw.opset() >= 14 && r->attrInt("allowzero", 0) != 0;
  bool all_known = true;
  int64_t count = 1;
  for (const Dim& d : x->dims) {
    all_known &= d.isKnown();
    if (d.isKnown()) count *= d.value;
  }
  int minus_ones = 0;
  for (size_t i = 0; i < s->size(); ++i) {
    const int64_t t = (*s)[i];
    const Dim& d = x->dims[i];
    if (t == 0 && !allowzero) continue;
    if (d.isKnown() && t == d.value) continue;
    if (t == -1 && all_known && count > 0 && ++minus_ones == 1) continue;
    return false;  // target shape differs from the input's
  }
  return true;
}

void remove(const Chain& c, Rewriter& rw) {
  bypass(c[0], c[0]->input(0), rw);
}

}  // namespace

void addFuseReshapesPatterns(PatternList& out) {
  {
    ChainSpec spec;
    spec.name = "eliminate-noop-reshape";
    spec.ops = {"Reshape"};
    spec.benefit = 3;
    spec.constraints = {sameShape};
    spec.build = remove;
    out.push_back(makeChainPattern(std::move(spec)));
  }
  {
    ChainSpec spec;
    spec.name = "fuse-reshapes";
    spec.ops = {"Reshape", "Reshape"};
    spec.benefit = 2;
    spec.constraints = {noCopiedDims};
    spec.build = fuse;
    out.push_back(makeChainPattern(std::move(spec)));
  }
}

}  // namespace onnxfold

// A Squeeze and an Unsqueeze of the same axes, one right after the other,
// cancel.
//
// Before:  %t = Unsqueeze(%x, axes = A); %y = Squeeze(%t, axes = A)
//     or:  %t = Squeeze(%x, axes = A);   %y = Unsqueeze(%t, axes = A)
// After:   %y is %x
//
// Conditions: both axes lists are given (attribute below opset 13, constant
// input from 13) and name the same set of axes once normalized: negative axes
// count from the end of the rank-(r + k) tensor, which is %t for Unsqueeze
// then Squeeze and %x for Squeeze then Unsqueeze (r + k = rank of x then,
// which must be known only when an axis is negative); the first node feeds
// only the second. Algebra: Unsqueeze inserts size-1 dims at the axes of its
// output and Squeeze removes exactly those; Squeeze succeeded only if x had
// size 1 at those axes, and Unsqueeze puts them back in place.
#include <algorithm>

#include "passes/patterns/patterns.h"

namespace onnxfold {

namespace {

using namespace patterns;

std::optional<std::vector<int64_t>> axesOf(const Rewriter& rw, const Node* n) {
  return intsOperand(rw, n, "axes", 1, 13);
}

// Sorted axes normalized against `rank` (< 0: unknown, then negatives fail).
std::optional<std::vector<int64_t>> normalized(std::vector<int64_t> axes, int64_t rank) {
  for (int64_t& a : axes) {
    if (a < 0) {
      if (rank < 0) return std::nullopt;
      a += rank;
    }
    if (a < 0 || (rank >= 0 && a >= rank)) return std::nullopt;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return std::nullopt;
  return axes;
}

bool sameAxes(const Rewriter& rw, const Chain& c) {
  if (c[0]->input(0) == nullptr) return false;  // no input
  const auto a1 = axesOf(rw, c[0]);
  const auto a2 = axesOf(rw, c[1]);
  if (!a1 || !a2 || a1->empty() || a1->size() != a2->size())
    return false;  // axes are unknown or differ
  // The rank the axes of both nodes refer to: the larger of x and t.
  int64_t rank = -1;
  if (const Shape* x = shapeOf(c[0]->input(0))) {
    rank = static_cast<int64_t>(x->rank());
    if (c[0]->op_type == "Unsqueeze") rank += static_cast<int64_t>(a1->size());
  }
  const auto n1 = normalized(*a1, rank);
  const auto n2 = normalized(*a2, rank);
  if (!n1 || !n2 || *n1 != *n2) return false;  // axes are unknown or differ
  return true;
}

void cancel(const Chain& c, Rewriter& rw) {
  Value* x = c[0]->input(0);
  rw.replaceNode(c[1], {x});
  rw.erase(c[0]);
}

}  // namespace

void addCancelSqueezeUnsqueezePatterns(PatternList& out) {
  for (const auto& [first, second] :
       {std::pair<const char*, const char*>{"Unsqueeze", "Squeeze"}, {"Squeeze", "Unsqueeze"}}) {
    ChainSpec spec;
    spec.name = std::string("cancel-") +
                (std::string(first) == "Squeeze" ? "squeeze-unsqueeze" : "unsqueeze-squeeze");
    spec.ops = {first, second};
    spec.benefit = 2;
    spec.constraints = {sameAxes};
    spec.build = cancel;
    out.push_back(makeChainPattern(std::move(spec)));
  }
}

}  // namespace onnxfold

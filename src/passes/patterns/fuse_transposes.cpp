// Two consecutive Transposes become one, or none when they cancel.
//
// Before:  %t = Transpose(%x, perm = p1); %y = Transpose(%t, perm = p2)
// After:   %y = Transpose(%x, perm = p)      (p = identity: %y is %x)
//
// Conditions: both perms are permutations of the same rank (an absent perm
// reverses the axes, which needs the rank of %x); the first Transpose feeds
// only the second. Algebra: t[i] = x[p1[i]] and y[j] = t[p2[j]], so
//   p[j] = p1[p2[j]].
#include "passes/patterns/patterns.h"

namespace onnxfold {

namespace {

using namespace patterns;

bool isPermutation(const std::vector<int64_t>& p) {
  std::vector<bool> seen(p.size(), false);
  for (int64_t a : p) {
    if (a < 0 || a >= static_cast<int64_t>(p.size()) || seen[static_cast<size_t>(a)]) return false;
    seen[static_cast<size_t>(a)] = true;
  }
  return true;
}

// The perm of a Transpose of a rank-`rank` input (rank < 0: unknown).
std::optional<std::vector<int64_t>> permOf(const Node* t, int64_t rank) {
  if (const Attribute* a = t->attr("perm")) {
    if (a->type != AttrType::kInts || !isPermutation(a->ints)) return std::nullopt;
    if (rank >= 0 && static_cast<int64_t>(a->ints.size()) != rank) return std::nullopt;
    return a->ints;
  }
  if (rank < 0) return std::nullopt;
  std::vector<int64_t> p(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i)
    p[static_cast<size_t>(i)] = rank - 1 - i;
  return p;
}

int64_t rankOf(const Value* v) {
  const Shape* s = shapeOf(v);
  return s ? static_cast<int64_t>(s->rank()) : -1;
}

std::optional<std::vector<int64_t>> composed(const Chain& c) {
  const int64_t rank = rankOf(c[0]->input(0));
  const auto p1 = permOf(c[0], rank);
  if (!p1) return std::nullopt;
  const auto p2 = permOf(c[1], static_cast<int64_t>(p1->size()));
  if (!p2 || p2->size() != p1->size()) return std::nullopt;
  std::vector<int64_t> p(p1->size());
  for (size_t j = 0; j < p.size(); ++j)
    p[j] = (*p1)[static_cast<size_t>((*p2)[j])];
  return p;
}

bool composable(const Rewriter&, const Chain& c) {
  if (c[0]->input(0) == nullptr) return false;  // Transpose has no input
  return composed(c).has_value();               // false: perms unknown or invalid
}

void build(const Chain& c, Rewriter& rw) {
  Node* first = c[0];
  Node* second = c[1];
  const std::vector<int64_t> p = *composed(c);
  Value* x = first->input(0);
  bool identity = true;
  for (size_t j = 0; j < p.size(); ++j)
    identity &= p[j] == static_cast<int64_t>(j);
  if (identity) {
    rw.replaceNode(second, {x});
  } else {
    rw.setInput(second, 0, x);
    rw.setAttr(second, Attribute::makeInts("perm", p));
  }
  rw.erase(first);
}

}  // namespace

void addFuseTransposesPatterns(PatternList& out) {
  ChainSpec spec;
  spec.name = "fuse-transposes";
  spec.ops = {"Transpose", "Transpose"};
  spec.benefit = 1;
  spec.constraints = {composable};
  spec.build = build;
  out.push_back(makeChainPattern(std::move(spec)));
}

}  // namespace onnxfold

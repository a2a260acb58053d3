// Arithmetic with an identity constant is removed.
//
// Before:  %y = Mul(%x, %one)   Mul(%one, %x)   Add(%x, %zero)   Add(%zero, %x)
//              Sub(%x, %zero)   Div(%x, %one)
// After:   %y is %x
//
// Conditions: the constant's every element is 1 (Mul, Div) or 0 (Add, Sub; -0
// counts); it has x's dtype (so y keeps x's dtype); broadcasting it against x
// gives x's shape: rank(c) <= rank(x) and each right-aligned dim of c is 1 or
// x's known dim (a constant that would add dims or stretch a size-1 dim of x
// leaves the node alone); opset >= 7 (numpy broadcasting). Algebra: x * 1 =
// x / 1 = x and x + 0 = x - 0 = x element by element, for integers exactly and
// for floats too (NaN stays NaN; x + 0 may turn -0 into +0, which compares
// equal).
#include "passes/patterns/patterns.h"

namespace onnxfold {

namespace {

using namespace patterns;

// The identity element of the op and which inputs may hold it.
struct Identity {
  const char* op;
  const char* name;
  double value;
  bool commutes;  // the constant may be either input
};

constexpr Identity kIdentities[] = {
    {"Mul", "eliminate-mul-by-one", 1.0, true},
    {"Add", "eliminate-add-zero", 0.0, true},
    {"Sub", "eliminate-sub-zero", 0.0, false},
    {"Div", "eliminate-div-by-one", 1.0, false},
};

// Index of the input that passes through, or -1.
int passThrough(const Identity& id, const Node* n) {
  if (n->numInputs() != 2 || n->input(0) == nullptr || n->input(1) == nullptr) return -1;
  for (int k : {1, 0}) {
    if (k == 0 && !id.commutes) break;
    const Tensor* c = constantOf(n->input(static_cast<size_t>(k)));
    const Value* x = n->input(static_cast<size_t>(1 - k));
    if (c == nullptr || c->dtype() != dtypeOf(x)) continue;
    if (!broadcastKeepsShape(c->dims(), x) || !allElementsEqual(*c, id.value)) continue;
    return 1 - k;
  }
  return -1;
}

void addPattern(PatternList& out, const Identity& id) {
  ChainSpec spec;
  spec.name = id.name;
  spec.ops = {id.op};
  spec.benefit = 3;
  // Not with legacy broadcasting (opset < 7); an identity constant that keeps x's shape and
  // dtype.
  spec.constraints = {[id](const Rewriter& rw, const Chain& c) {
    return rw.opset() >= 7 && passThrough(id, c[0]) >= 0;
  }};
  spec.build = [id](const Chain& c, Rewriter& rw) {
    bypass(c[0], c[0]->input(static_cast<size_t>(passThrough(id, c[0]))), rw);
  };
  out.push_back(makeChainPattern(std::move(spec)));
}

}  // namespace

void addArithmeticIdentityPatterns(PatternList& out) {
  for (const Identity& id : kIdentities)
    addPattern(out, id);
}

}  // namespace onnxfold

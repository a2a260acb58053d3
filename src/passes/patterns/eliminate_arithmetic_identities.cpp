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
//
// Kept: the scale Mul and bias Add of a decomposed LayerNormalization or RMSNorm,
// (x - mean) / Sqrt(var + eps) * scale + bias. ONNX Runtime fuses the whole only with them
// in place: without them the normalization runs as eight separate ops (minibert's first
// LayerNorm, whose scale is ones and bias zeros).
#include <string_view>

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

// x / Sqrt(...): the normalized value of a decomposed LayerNormalization or RMSNorm.
bool isNormalized(const Value* x) {
  const Node* div = x != nullptr ? x->producer() : nullptr;
  if (div == nullptr || !div->isOp("Div") || div->numInputs() != 2) return false;
  const Value* d = div->input(1);
  return d != nullptr && d->producer() != nullptr && d->producer()->isOp("Sqrt");
}

// y = op(x, identity) is the affine tail of a normalization the runtime fuses.
bool isNormalizationTail(const Identity& id, const Value* x) {
  if (std::string_view(id.op) == "Mul") return isNormalized(x);
  if (std::string_view(id.op) != "Add") return false;
  const Node* mul = x->producer();
  return mul != nullptr && mul->isOp("Mul") && mul->numInputs() == 2 &&
         (isNormalized(mul->input(0)) || isNormalized(mul->input(1)));
}

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
    if (rw.opset() < 7) return false;
    const int k = passThrough(id, c[0]);
    if (k < 0) return false;
    if (isNormalizationTail(id, c[0]->input(static_cast<size_t>(k)))) {
      return rw.notifyMatchFailure(
          *c[0],
          "kept: the scale or bias of a decomposed normalization (ONNX Runtime fuses it "
          "whole)");
    }
    return true;
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

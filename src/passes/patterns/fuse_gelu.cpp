// A decomposed Gelu becomes the standard op (opset 20).
//
// Before (erf):   %y = x * 0.5 * (1 + Erf(x / sqrt(2)))   (Erf's operand also x * (1/sqrt(2)))
// Before (tanh):  %y = x * 0.5 * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
//                 (x^3 as Pow(x, 3), x * x * x in any grouping)
// After:          %y = Gelu(%x, approximate = "none" | "tanh")
//
// The products may be grouped and ordered any way: the root Mul's operands, and those of
// Muls that feed only it, are gathered into factors, which must be x, 0.5 and (1 + Erf/Tanh(..))
// of the same x; Add's operands in either order. Conditions: opset >= 20; x is float32 or
// float16; every constant has one element (rank <= 1) and equals the exact value within the
// rounding of x's dtype (float32: 2^-22 relative, float16: 2^-10); every intermediate value
// feeds only the chain and is not a graph output. Algebra: Gelu's definition.
#include <cmath>

#include "kernels/common.h"
#include "passes/patterns/patterns.h"

namespace onnxfold {

namespace {

using namespace patterns;

Node* producerOf(const Value* v, const char* op) {
  Node* n = v != nullptr ? v->producer() : nullptr;
  if (n == nullptr || !n->isOp(op)) return nullptr;
  const bool unary = std::string_view(op) == "Erf" || std::string_view(op) == "Tanh";
  return n->numInputs() == (unary ? 1u : 2u) ? n : nullptr;
}

std::optional<double> scalarValue(const Value* v) {
  const Tensor* t = constantOf(v);
  if (t == nullptr || t->numElements() != 1 || t->rank() > 1) return std::nullopt;
  switch (t->dtype()) {
    case DataType::kFloat:
      return static_cast<double>(t->at<float>(0));
    case DataType::kFloat16:
      return static_cast<double>(kernels::halfToFloat(t->at<uint16_t>(0)));
    default:
      return std::nullopt;
  }
}

struct Match {
  bool rank0_only = false;   // x may be a scalar: a constant of rank 1 would add a dim
  std::vector<Node*> nodes;  // everything the Gelu replaces but the root
  DataType dt = DataType::kUndefined;

  bool near(const Value* v, double exact) const {
    const auto c = scalarValue(v);
    if (c && rank0_only && constantOf(v)->rank() != 0) return false;
    const double tol = dt == DataType::kFloat16 ? 0x1p-10 : 0x1p-22;
    return c && std::fabs(*c - exact) <= tol * std::fabs(exact);
  }
};

// The factors of a product rooted at `n`: its operands, and those of the Muls that feed only
// it (they go into `m.nodes`).
void factors(Node* n, std::vector<Value*>& out, Match& m, int depth) {
  for (Value* v : n->inputs()) {
    Node* p = producerOf(v, "Mul");
    if (p != nullptr && depth < 3 && hasSingleUse(v)) {
      m.nodes.push_back(p);
      factors(p, out, m, depth + 1);
    } else {
      out.push_back(v);
    }
  }
}

// 1 + op(...): the Add and the op's input, when `v` is one.
Node* onePlus(const Value* v, const char* op, Match& m) {
  Node* add = producerOf(v, "Add");
  if (add == nullptr || !hasSingleUse(v)) return nullptr;
  for (size_t i = 0; i < 2; ++i) {
    Node* f = producerOf(add->input(i), op);
    if (f != nullptr && hasSingleUse(add->input(i)) && m.near(add->input(1 - i), 1.0)) {
      m.nodes.push_back(add);
      m.nodes.push_back(f);
      return f;
    }
  }
  return nullptr;
}

// x / sqrt(2) or x * (1 / sqrt(2)): true when `v` is one of x.
bool scaledX(const Value* v, const Value* x, Match& m) {
  if (!hasSingleUse(v)) return false;
  if (Node* d = producerOf(v, "Div"); d != nullptr) {
    if (d->input(0) != x || !m.near(d->input(1), std::sqrt(2.0))) return false;
    m.nodes.push_back(d);
    return true;
  }
  Node* mul = producerOf(v, "Mul");
  if (mul == nullptr) return false;
  for (size_t i = 0; i < 2; ++i) {
    if (mul->input(i) == x && m.near(mul->input(1 - i), std::sqrt(0.5))) {
      m.nodes.push_back(mul);
      return true;
    }
  }
  return false;
}

// x^3 as Pow(x, 3) or a product of three x.
bool cube(Value* v, const Value* x, Match& m) {
  if (!hasSingleUse(v)) return false;
  if (Node* p = producerOf(v, "Pow"); p != nullptr) {
    if (p->input(0) != x || !m.near(p->input(1), 3.0)) return false;
    m.nodes.push_back(p);
    return true;
  }
  Node* mul = producerOf(v, "Mul");
  if (mul == nullptr) return false;
  m.nodes.push_back(mul);
  std::vector<Value*> f;
  factors(mul, f, m, 1);
  return f.size() == 3 && f[0] == x && f[1] == x && f[2] == x;
}

// sqrt(2/pi) * (x + 0.044715 * x^3): true when `v` is that of x.
bool tanhArgument(Value* v, const Value* x, Match& m) {
  Node* mul = producerOf(v, "Mul");
  if (mul == nullptr || !hasSingleUse(v)) return false;
  m.nodes.push_back(mul);
  std::vector<Value*> f;
  factors(mul, f, m, 1);
  if (f.size() != 2) return false;
  for (size_t i = 0; i < 2; ++i) {
    if (!m.near(f[i], 0.7978845608028654 /* sqrt(2/pi) */)) continue;
    Value* inner = f[1 - i];
    Node* add = producerOf(inner, "Add");
    if (add == nullptr || !hasSingleUse(inner)) return false;
    m.nodes.push_back(add);
    for (size_t j = 0; j < 2; ++j) {
      if (add->input(j) != x) continue;
      Value* term = add->input(1 - j);
      Node* tm = producerOf(term, "Mul");
      if (tm == nullptr || !hasSingleUse(term)) return false;
      m.nodes.push_back(tm);
      std::vector<Value*> g;
      factors(tm, g, m, 1);
      // 0.044715 * x^3, or 0.044715 * x * x * x flattened.
      size_t xs = 0, consts = 0;
      Value* rest = nullptr;
      for (Value* gv : g) {
        if (gv == x)
          ++xs;
        else if (m.near(gv, 0.044715))
          ++consts;
        else
          rest = gv;
      }
      if (consts != 1) return false;
      if (xs == 3 && rest == nullptr) return true;
      return xs == 0 && rest != nullptr && g.size() == 2 && cube(rest, x, m);
    }
    return false;
  }
  return false;
}

class FuseGelu : public RewritePattern {
 public:
  FuseGelu() : RewritePattern("fuse-gelu", "Mul", 2) {}

  bool matchAndRewrite(Node& root, Rewriter& rw) const override {
    if (rw.opset() < 20 || root.numInputs() != 2) return false;
    Match m;
    std::vector<Value*> f;
    factors(&root, f, m, 0);
    if (f.size() != 3) return false;
    // Which factor is 1 + Erf/Tanh(...): the x is the non-constant other one.
    for (size_t i = 0; i < 3; ++i) {
      const Value* a = f[(i + 1) % 3];
      const Value* b = f[(i + 2) % 3];
      Value* x = constantOf(a) != nullptr ? const_cast<Value*>(b) : const_cast<Value*>(a);
      const Value* half = x == a ? b : a;
      m.dt = dtypeOf(x);
      if (m.dt != DataType::kFloat && m.dt != DataType::kFloat16) continue;
      m.rank0_only = shapeOf(x) == nullptr || shapeOf(x)->rank() == 0;
      if (!m.near(half, 0.5)) continue;
      Match tried = m;
      const char* approximate = nullptr;
      if (Node* erf = onePlus(f[i], "Erf", tried); erf != nullptr) {
        if (scaledX(erf->input(0), x, tried)) approximate = "none";
      } else if (Node* th = onePlus(f[i], "Tanh", tried); th != nullptr) {
        if (tanhArgument(th->input(0), x, tried)) approximate = "tanh";
      }
      if (approximate == nullptr) continue;
      rewrite(root, x, approximate, tried, rw);
      return true;
    }
    return false;
  }

 private:
  static void rewrite(Node& root, Value* x, const char* approximate, const Match& m, Rewriter& rw) {
    Value* y = root.output(0);
    const std::string name = y->name();
    Node* gelu = rw.create("Gelu", {x}, 1, &root);
    gelu->name = root.name;
    rw.setAttr(gelu, Attribute::makeString("approximate", approximate));
    gelu->output(0)->type = y->type;
    rw.replaceNode(&root, {gelu->output(0)});
    // Users before producers: m.nodes lists producers after the node they feed.
    for (Node* n : m.nodes)
      rw.erase(n);
    if (gelu->output(0)->name() != name) rw.rename(gelu->output(0), name);
  }
};

}  // namespace

void addFuseGeluPatterns(PatternList& out) {
  out.push_back(std::make_unique<FuseGelu>());
}

}  // namespace onnxfold

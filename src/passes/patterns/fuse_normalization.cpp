// A decomposed LayerNormalization or RMS normalization becomes the standard op.
//
// Before (LayerNormalization, the exporters' form):
//   %m = ReduceMean(%x, axes A); %d = Sub(%x, %m); %q = Pow(%d, 2) | Mul(%d, %d)
//   %v = ReduceMean(%q, axes A); %e = Add(%v, %eps); %s = Sqrt(%e)
//   %n = Div(%d, %s) | Mul(%d, Reciprocal(%s)); %y = Add(Mul(%n, %scale), %bias)
// After:  %y = LayerNormalization(%x, %scale, %bias, axis = first of A, epsilon = eps)
// Before (RMS, Llama's form): the same without %m and %d (%q = Pow(%x, 2) | Mul(%x, %x),
//   %n = Div(%x, %s) | Mul(%x, Reciprocal(%s)), %y = Mul(%n, %scale))
// After:  %y = RMSNormalization(%x, %scale, axis, epsilon)
// Float16 exports (HF's LlamaRMSNorm, make_llm --dtype float16) compute the core in float32:
//   %x32 = Cast(%x16, to = float); core on %x32; %n16 = Cast(%n, to = %x16's type); tail on %n16
// After:  the op on %x16 (stash_type 1: the core in float32, then cast back, then the tail in
//   float16, which is the ops' function body).
//
// Conditions: opset >= 17 (LayerNormalization) / >= 23 (RMSNormalization); x is float32 or
// float16; both ReduceMeans reduce the same axes, the trailing ones of x (all negative and
// ending at -1, or x's rank known), keepdims = 1; the exponent is the constant 2; eps is a
// constant of one element; scale and bias are optional (ones / none), constants of x's dtype
// whose dims broadcast within the normalized dims (1 elsewhere), and the normalized dims are
// known when a constant must be made for them; every intermediate value feeds only the chain
// and is not a graph output. Either operand order of Add and Mul matches.
// Algebra: the ops' definitions (ONNX's function bodies) are this computation; stash_type = 1
// computes in float32, the same as the decomposed form for float32 input, and more precise for
// float16.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/common.h"
#include "passes/patterns/patterns.h"

namespace onnxfold {

namespace {

using namespace patterns;

Node* producerOf(const Value* v, const char* op) {
  Node* n = v != nullptr ? v->producer() : nullptr;
  return n != nullptr && n->isOp(op) ? n : nullptr;
}

// The input of a binary node that is not `v` (null when both are `v` or it is not binary).
Value* otherInput(const Node* n, const Value* v) {
  if (n->numInputs() != 2) return nullptr;
  if (n->input(0) == v && n->input(1) != v) return n->input(1);
  if (n->input(1) == v && n->input(0) != v) return n->input(0);
  return nullptr;
}

// The one use of `v` when it has exactly one and is no graph output.
Node* soleUser(const Value* v) {
  if (!hasSingleUse(v)) return nullptr;
  for (const Use& u : v->uses()) {
    if (u.user != nullptr) return u.user;
  }
  return nullptr;
}

// The normalized value: the Div / Mul(Reciprocal) whose output is the chain's %n.
struct Core {
  Node* root = nullptr;     // Div or Mul
  Node* recip = nullptr;    // Reciprocal (Mul form)
  Node* sqrt = nullptr;     // Sqrt
  Node* add_eps = nullptr;  // Add
  Node* var = nullptr;      // ReduceMean of the square
  Node* square = nullptr;   // Pow or Mul
  Node* sub = nullptr;      // LayerNorm only
  Node* mean = nullptr;     // LayerNorm only
  Value* x = nullptr;
  double eps = 0;
  std::vector<int64_t> axes;  // as written
};

// The reduced axes of a ReduceMean with keepdims = 1, or nullopt.
std::optional<std::vector<int64_t>> meanAxes(const Rewriter& rw, const Node* n) {
  if (n->attrInt("keepdims", 1) != 1) return std::nullopt;
  auto axes = intsOperand(rw, n, "axes", 1, 18);
  if (!axes || axes->empty()) return std::nullopt;
  return axes;
}

// The first normalized axis when `axes` are x's trailing axes, else nullopt.
std::optional<int64_t> trailingAxis(std::vector<int64_t> axes, const Value* x) {
  const Shape* s = shapeOf(x);
  const auto k = static_cast<int64_t>(axes.size());
  if (s != nullptr) {
    const auto r = static_cast<int64_t>(s->rank());
    for (int64_t& a : axes) {
      if (a < -r || a >= r) return std::nullopt;
      if (a < 0) a += r;
    }
    std::sort(axes.begin(), axes.end());
    for (int64_t i = 0; i < k; ++i) {
      if (axes[static_cast<size_t>(i)] != r - k + i) return std::nullopt;
    }
    return r - k;
  }
  std::sort(axes.begin(), axes.end());
  for (int64_t i = 0; i < k; ++i) {
    if (axes[static_cast<size_t>(i)] != -k + i) return std::nullopt;
  }
  return -k;
}

std::optional<double> scalarValue(const Value* v) {
  const Tensor* t = constantOf(v);
  if (t == nullptr || t->numElements() != 1) return std::nullopt;
  switch (t->dtype()) {
    case DataType::kFloat:
      return static_cast<double>(t->at<float>(0));
    case DataType::kDouble:
      return t->at<double>(0);
    case DataType::kFloat16:
      return static_cast<double>(kernels::halfToFloat(t->at<uint16_t>(0)));
    default:
      return std::nullopt;
  }
}

// Matches the core at a Div or Mul; nullopt when it is not one.
std::optional<Core> matchCore(const Rewriter& rw, Node& root) {
  Core c;
  c.root = &root;
  if (root.numInputs() != 2) return std::nullopt;
  Value* num = nullptr;
  if (root.isOp("Div")) {
    c.sqrt = producerOf(root.input(1), "Sqrt");
    num = root.input(0);
  } else {
    for (size_t i = 0; i < 2 && c.recip == nullptr; ++i) {
      c.recip = producerOf(root.input(i), "Reciprocal");
      num = root.input(1 - i);
    }
    if (c.recip == nullptr || !hasSingleUse(c.recip->output(0))) return std::nullopt;
    c.sqrt = producerOf(c.recip->input(0), "Sqrt");
  }
  if (c.sqrt == nullptr || !hasSingleUse(c.sqrt->output(0)) || num == nullptr) return std::nullopt;
  c.add_eps = producerOf(c.sqrt->input(0), "Add");
  if (c.add_eps == nullptr || !hasSingleUse(c.add_eps->output(0))) return std::nullopt;
  for (size_t i = 0; i < 2 && c.var == nullptr; ++i) {
    c.var = producerOf(c.add_eps->input(i), "ReduceMean");
    if (c.var != nullptr) {
      const auto eps = scalarValue(c.add_eps->input(1 - i));
      if (!eps || constantOf(c.add_eps->input(1 - i))->rank() > 1)
        return std::nullopt;  // eps is not a constant scalar
      c.eps = *eps;
    }
  }
  if (c.var == nullptr || !hasSingleUse(c.var->output(0))) return std::nullopt;
  c.square = c.var->input(0) != nullptr ? c.var->input(0)->producer() : nullptr;
  if (c.square == nullptr || !hasSingleUse(c.square->output(0))) return std::nullopt;
  if (c.square->isOp("Pow")) {
    const auto e = scalarValue(c.square->input(1));
    if (c.square->input(0) != num || !e || *e != 2.0) return std::nullopt;
  } else if (!c.square->isOp("Mul") || c.square->numInputs() != 2 || c.square->input(0) != num ||
             c.square->input(1) != num) {
    return std::nullopt;
  }
  auto axes = meanAxes(rw, c.var);
  if (!axes) return std::nullopt;
  c.axes = *axes;
  c.sub = producerOf(num, "Sub");
  if (c.sub != nullptr && (c.mean = producerOf(c.sub->input(1), "ReduceMean")) != nullptr &&
      c.mean->input(0) == c.sub->input(0)) {
    // LayerNorm: num = x - mean(x) feeds the square and the root only.
    c.x = c.sub->input(0);
    if (num->isGraphOutput() || !hasSingleUse(c.mean->output(0))) return std::nullopt;
    for (const Use& u : num->uses()) {
      if (u.user != nullptr && u.user != c.square && u.user != &root) return std::nullopt;
    }
    auto mean_axes = meanAxes(rw, c.mean);
    if (!mean_axes) return std::nullopt;
    std::vector<int64_t> a = *mean_axes, b = c.axes;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    if (a != b) return std::nullopt;  // the two means reduce different axes
  } else {
    c.sub = c.mean = nullptr;
    c.x = num;
  }
  const DataType dt = dtypeOf(c.x);
  if (dt != DataType::kFloat && dt != DataType::kFloat16) return std::nullopt;
  return c;
}

// A constant's elements broadcast to `dims` (numpy rules; the caller checked they do).
Tensor broadcastTo(const Tensor& t, const std::vector<int64_t>& dims) {
  Tensor out(t.dtype(), dims);
  const size_t elem = t.numElements() > 0 ? t.byteSize() / static_cast<size_t>(t.numElements()) : 0;
  // t's dims right-aligned with `dims`; any before them are 1 (affineOperand).
  const size_t r = dims.size(), tr = std::min(t.rank(), r), off = r - tr;
  const std::vector<int64_t> td(t.dims().end() - static_cast<std::ptrdiff_t>(tr), t.dims().end());
  std::vector<int64_t> in_strides(r, 0);
  int64_t s = 1;
  for (size_t j = tr; j-- > 0;) {
    in_strides[off + j] = td[j] == 1 ? 0 : s;
    s *= td[j];
  }
  const int64_t n = out.numElements();
  uint8_t* dst = out.mutableBytes();
  const uint8_t* src = t.bytes();
  std::vector<int64_t> idx(r, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t k = 0;
    for (size_t j = 0; j < r; ++j)
      k += idx[j] * in_strides[j];
    std::memcpy(dst + static_cast<size_t>(i) * elem, src + static_cast<size_t>(k) * elem, elem);
    for (size_t j = r; j-- > 0;) {
      if (++idx[j] < dims[j]) break;
      idx[j] = 0;
    }
  }
  return out;
}

Tensor onesOf(DataType dt, const std::vector<int64_t>& dims) {
  Tensor t(dt, dims);
  uint8_t* p = t.mutableBytes();
  for (int64_t i = 0; i < t.numElements(); ++i) {
    if (dt == DataType::kFloat) {
      const float one = 1;
      std::memcpy(p + i * 4, &one, 4);
    } else {
      const uint16_t one = kernels::floatToHalf(1.0f);
      std::memcpy(p + i * 2, &one, 2);
    }
  }
  return t;
}

// An affine operand: a constant of x's dtype whose dims broadcast within the normalized dims
// (rank <= x's rank; 1 on every axis before `axis`). `k`: the number of normalized axes.
bool affineOperand(const Tensor* t, DataType dt, const Value* x, size_t k) {
  if (t == nullptr || t->dtype() != dt) return false;
  const Shape* s = shapeOf(x);
  if (s != nullptr && t->rank() > s->rank()) return false;
  const std::vector<int64_t>& d = t->dims();
  for (size_t j = 0; j + k < d.size(); ++j) {
    if (d[j] != 1) return false;  // varies along an axis that is not normalized
  }
  // Each normalized dim of the constant is 1 or x's dim (when known).
  return broadcastKeepsShape(std::vector<int64_t>(d.end() - std::min(k, d.size()), d.end()), x) ||
         s == nullptr;
}

// The normalized dims of x (its last k dims), when all are known.
std::optional<std::vector<int64_t>> normalizedDims(const Value* x, size_t k) {
  const Shape* s = shapeOf(x);
  if (s == nullptr || s->rank() < k) return std::nullopt;
  std::vector<int64_t> d;
  for (size_t j = s->rank() - k; j < s->rank(); ++j) {
    if (!s->dims[j].isKnown()) return std::nullopt;
    d.push_back(s->dims[j].value);
  }
  return d;
}

// The operand for the op's scale/bias: the constant itself when its dims are the normalized
// dims, else a new constant of those dims (ones when `t` is null). Null when unknown.
Value* affineValue(Rewriter& rw, Value* v, const Tensor* t, DataType dt,
                   const std::optional<std::vector<int64_t>>& nd, const std::string& base) {
  if (t != nullptr && nd && t->dims() == *nd) return v;
  if (!nd) return nullptr;
  return rw.constant(t != nullptr ? broadcastTo(*t, *nd) : onesOf(dt, *nd), base);
}

class FuseNormalization : public RewritePattern {
 public:
  // `layer`: LayerNormalization, else RMSNormalization; `root`: Div, or Mul (by Reciprocal).
  FuseNormalization(bool layer, const char* root)
      : RewritePattern(std::string(layer ? "fuse-layer-normalization" : "fuse-rms-normalization") +
                           (std::string_view(root) == "Mul" ? "-reciprocal" : ""),
                       root, 2),
        layer_(layer) {}

  bool matchAndRewrite(Node& root, Rewriter& rw) const override {
    if (rw.opset() < (layer_ ? 17 : 23)) return false;  // where the op exists
    auto core = matchCore(rw, root);
    if (!core || (core->sub != nullptr) != layer_) return false;
    const bool layer = layer_;
    const std::optional<int64_t> axis = trailingAxis(core->axes, core->x);
    if (!axis) return rw.notifyMatchFailure(root, "normalization over axes that are not trailing");
    const size_t k = core->axes.size();
    // The float16 export's Casts around a float32 core: the op takes the float16 x.
    Value* x = core->x;
    Node* cast_in = nullptr;
    Node* cast_out = nullptr;
    if (Node* c = producerOf(core->x, "Cast");
        c != nullptr && dtypeOf(core->x) == DataType::kFloat) {
      const DataType narrow = dtypeOf(c->input(0));
      Node* back = soleUser(root.output(0));
      if ((narrow == DataType::kFloat16 || narrow == DataType::kBfloat16) && back != nullptr &&
          back->isOp("Cast") && back->attrInt("to", 0) == static_cast<int64_t>(narrow)) {
        cast_in = c;
        cast_out = back;
        x = c->input(0);
      }
    }
    const DataType dt = dtypeOf(x);

    // The affine tail: Mul by a constant scale, then (LayerNorm) Add of a constant bias.
    Node* last = cast_out != nullptr ? cast_out : &root;
    Node* mul = nullptr;
    Node* add = nullptr;
    Value *scale = nullptr, *bias = nullptr;
    if (Node* u = soleUser(last->output(0)); u != nullptr && u->isOp("Mul")) {
      Value* s = otherInput(u, last->output(0));
      if (affineOperand(constantOf(s), dt, x, k)) {
        mul = last = u;
        scale = s;
      }
    }
    if (layer && mul != nullptr) {
      if (Node* u = soleUser(mul->output(0)); u != nullptr && u->isOp("Add")) {
        Value* b = otherInput(u, mul->output(0));
        if (affineOperand(constantOf(b), dt, x, k)) {
          add = last = u;
          bias = b;
        }
      }
    }
    if (!layer && mul == nullptr) return false;  // RMS without a scale: left for a later form
    const std::optional<std::vector<int64_t>> nd = normalizedDims(x, k);
    const Tensor* scale_t = constantOf(scale);
    const Tensor* bias_t = constantOf(bias);
    if ((scale_t == nullptr || scale_t->dims() != nd) && !nd)
      return rw.notifyMatchFailure(root, "normalization: the normalized dims are unknown");
    if (bias_t != nullptr && bias_t->dims() != nd && !nd)
      return rw.notifyMatchFailure(root, "normalization: the normalized dims are unknown");

    // Rewrite.
    Value* y = last->output(0);
    const std::string name = y->name();
    Value* scale_v = affineValue(rw, scale, scale_t, dt, nd, name + "_scale");
    Value* bias_v =
        bias != nullptr ? affineValue(rw, bias, bias_t, dt, nd, name + "_bias") : nullptr;
    std::vector<Value*> inputs = {x, scale_v};
    if (bias_v != nullptr) inputs.push_back(bias_v);
    Node* fused = rw.create(layer ? "LayerNormalization" : "RMSNormalization", inputs, 1, last);
    fused->name = !last->name.empty() ? last->name : root.name;
    rw.setAttr(fused, Attribute::makeInt("axis", *axis));
    rw.setAttr(fused, Attribute::makeFloat("epsilon", static_cast<float>(core->eps)));
    fused->output(0)->type = y->type;
    rw.replaceNode(last, {fused->output(0)});
    for (Node* n : {add, mul, cast_out, &root, core->recip, core->sqrt, core->add_eps, core->var,
                    core->square, core->sub, core->mean}) {
      if (n != nullptr && n != last) rw.erase(n);
    }
    // The Cast to float32 goes unless something else reads the float32 x.
    if (cast_in != nullptr && cast_in->output(0)->uses().empty() &&
        !cast_in->output(0)->isGraphOutput())
      rw.erase(cast_in);
    if (fused->output(0)->name() != name) rw.rename(fused->output(0), name);
    return true;
  }

 private:
  bool layer_;
};

}  // namespace

void addFuseNormalizationPatterns(PatternList& out) {
  for (bool layer : {true, false}) {
    out.push_back(std::make_unique<FuseNormalization>(layer, "Div"));
    out.push_back(std::make_unique<FuseNormalization>(layer, "Mul"));
  }
}

}  // namespace onnxfold

#include "passes/shape_chains.h"

#include <cstring>

namespace onnxfold {

namespace {

// The symbolic element `d` is x's dim `x`: the same named symbol (an unnamed unknown dim
// reads as -1 and matches nothing).
bool sameDim(const Dim& d, const Dim& x) {
  return !d.isKnown() && !d.param.empty() && d.param == x.param;
}

Tensor int64Vector(const std::vector<int64_t>& v) {
  Tensor t(DataType::kInt64, {static_cast<int64_t>(v.size())});
  if (!v.empty()) std::memcpy(t.mutableBytes(), v.data(), v.size() * sizeof(int64_t));
  return t;
}

}  // namespace

std::optional<Tensor> constantShapeInput(const Node& n, const Propagation& prop) {
  const bool reshape = n.isOp("Reshape");
  if ((!reshape && !n.isOp("Expand")) || n.numInputs() < 2) return std::nullopt;
  const Value* x = n.input(0);
  const Value* s = n.input(1);
  if (x == nullptr || s == nullptr || prop.knownValue(s) != nullptr) return std::nullopt;
  const Fact* f = prop.fact(s);
  const Type& xt = prop.typeOf(x);
  if (f == nullptr || !f->symbolic || xt.kind != Type::Kind::kTensor || !xt.shape)
    return std::nullopt;
  const SymbolicValue& sv = *f->symbolic;
  const std::vector<Dim>& xd = xt.shape->dims;
  if (reshape && n.attrInt("allowzero", 0) != 0) return std::nullopt;  // 0 would be a size

  std::vector<int64_t> out(sv.size());
  int infer_at = -1;  // the one element Reshape infers: a literal -1, or one we make -1
  bool made_minus_one = false;
  bool others_positive = true;  // every element but that one is a known size > 0
  for (size_t i = 0; i < sv.size(); ++i) {
    const Dim& d = sv[i];
    if (d.value < -1 || (!reshape && d.value == -1 && d.param.empty())) return std::nullopt;
    if (d.isKnown()) {
      out[i] = d.value;
      others_positive = others_positive && d.value > 0;
      continue;
    }
    if (d.param.empty()) {  // a literal -1 (Shape names every unknown dim it reads)
      if (infer_at >= 0) return std::nullopt;
      infer_at = static_cast<int>(i);
      out[i] = -1;
      continue;
    }
    if (reshape && i < xd.size() && sameDim(d, xd[i])) {
      out[i] = 0;
      others_positive = false;  // a copied dim may be 0 at run time
      continue;
    }
    // Expand aligns right: element i broadcasts against x's dim i - (|s| - rank x).
    if (!reshape && sv.size() >= xd.size() && i >= sv.size() - xd.size() &&
        sameDim(d, xd[i - (sv.size() - xd.size())])) {
      out[i] = 1;
      continue;
    }
    if (!reshape || infer_at >= 0) return std::nullopt;
    infer_at = static_cast<int>(i);
    out[i] = -1;
    made_minus_one = true;
  }
  // A -1 we make infers the element's value exactly when the other factors are > 0.
  if (made_minus_one && !others_positive) return std::nullopt;
  return int64Vector(out);
}

}  // namespace onnxfold

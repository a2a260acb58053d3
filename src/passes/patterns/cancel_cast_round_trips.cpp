// A Cast of shape values to a narrower integer type and straight back cancels, and so does a
// Cast to a type that holds every value of the source type exactly and straight back.
//
// Before:  %s = Shape(%x); %t = Cast(%s, to = INT32); %y = Cast(%t, to = INT64)
// After:   %y is %s
//
// Conditions: %s is int64 and holds tensor dims: a Shape output, or a Gather, Slice,
// Squeeze, Unsqueeze, Identity or Concat of such values and of constants in [0, 2^31); the
// first Cast is to INT32 or UINT32 and feeds only the second, which casts back to INT64.
// Algebra: the narrowing Cast keeps every value in [0, 2^31), and widening it back restores
// it. A dim of 2^31 or more would need an axis of 2 GiB elements or more, which neither
// onnxruntime-web nor a wasm32 heap can hold (exporters emit these Casts for int32 index
// math that makes the same assumption).
//
// Before:  %t = Cast(%x: T, to = W); %y = Cast(%t, to = T)    (W holds every T exactly:
//          float -> double, float16 -> float, int8 -> int32, bool -> uint8, ...)
// After:   %y is %x
// Algebra: the widening is injective and the narrowing inverts it (a NaN stays a NaN). Also
// ONNX Runtime 1.30 fails on float -> double -> float feeding an If body ("Missing Input").
#include <cstdint>

#include "passes/patterns/patterns.h"

namespace onnxfold {

namespace {

using namespace patterns;

// Whether `v` holds only tensor dims or small non-negative constants (depth-limited walk).
bool holdsDims(const Rewriter& rw, const Value* v, int depth = 8) {
  if (v == nullptr || depth == 0 || dtypeOf(v) != DataType::kInt64) return false;
  if (const Tensor* t = constantOf(v)) {
    for (int64_t i = 0; i < t->numElements(); ++i) {
      const int64_t e = t->at<int64_t>(static_cast<size_t>(i));
      if (e < 0 || e > INT32_MAX) return false;
    }
    return true;
  }
  const Node* p = v->producer();
  if (p == nullptr || !p->domain.empty()) return false;
  if (p->op_type == "Shape") return true;
  if (p->op_type == "Gather" || p->op_type == "Slice" || p->op_type == "Squeeze" ||
      p->op_type == "Unsqueeze" || p->op_type == "Identity") {
    return holdsDims(rw, p->input(0), depth - 1);
  }
  if (p->op_type == "Concat") {
    for (const Value* in : p->inputs()) {
      if (!holdsDims(rw, in, depth - 1)) return false;
    }
    return true;
  }
  return false;
}

bool roundTripOfDims(const Rewriter& rw, const Chain& c) {
  const int64_t narrow = c[0]->attrInt("to", -1);
  if (narrow != static_cast<int64_t>(DataType::kInt32) &&
      narrow != static_cast<int64_t>(DataType::kUint32)) {
    return false;  // not a cast to a 32-bit integer
  }
  if (c[1]->attrInt("to", -1) != static_cast<int64_t>(DataType::kInt64)) return false;
  return holdsDims(rw, c[0]->input(0));
}

// Whether every value of `from` is exactly a value of `to` (so a Cast there and back is x).
bool widensExactly(DataType from, DataType to) {
  using D = DataType;
  auto in = [to](std::initializer_list<D> ts) {
    for (D t : ts)
      if (t == to) return true;
    return false;
  };
  switch (from) {
    case D::kBool:
      return in({D::kUint8, D::kInt8, D::kUint16, D::kInt16, D::kUint32, D::kInt32, D::kUint64,
                 D::kInt64, D::kFloat16, D::kFloat, D::kDouble});
    case D::kInt8:
      return in({D::kInt16, D::kInt32, D::kInt64, D::kFloat16, D::kFloat, D::kDouble});
    case D::kUint8:
      return in({D::kUint16, D::kInt16, D::kUint32, D::kInt32, D::kUint64, D::kInt64, D::kFloat16,
                 D::kFloat, D::kDouble});
    case D::kInt16:
      return in({D::kInt32, D::kInt64, D::kFloat, D::kDouble});
    case D::kUint16:
      return in({D::kUint32, D::kInt32, D::kUint64, D::kInt64, D::kFloat, D::kDouble});
    case D::kInt32:
      return in({D::kInt64, D::kDouble});
    case D::kUint32:
      return in({D::kUint64, D::kInt64, D::kDouble});
    case D::kFloat16:
    case D::kBfloat16:
      return in({D::kFloat, D::kDouble});
    case D::kFloat:
      return to == D::kDouble;
    default:
      return false;
  }
}

bool exactRoundTrip(const Rewriter&, const Chain& c) {
  const DataType from = dtypeOf(c[0]->input(0));
  const auto wide = static_cast<DataType>(c[0]->attrInt("to", -1));
  return from != DataType::kUndefined && widensExactly(from, wide) &&
         c[1]->attrInt("to", -1) == static_cast<int64_t>(from);
}

void cancel(const Chain& c, Rewriter& rw) {
  rw.replaceNode(c[1], {c[0]->input(0)});
  rw.erase(c[0]);
}

}  // namespace

void addCancelCastRoundTripPatterns(PatternList& out) {
  ChainSpec spec;
  spec.name = "cancel-cast-round-trip";
  spec.ops = {"Cast", "Cast"};
  spec.benefit = 2;
  spec.constraints = {roundTripOfDims};
  spec.build = cancel;
  out.push_back(makeChainPattern(spec));
  spec.name = "cancel-exact-cast-round-trip";
  spec.constraints = {exactRoundTrip};
  out.push_back(makeChainPattern(std::move(spec)));
}

}  // namespace onnxfold

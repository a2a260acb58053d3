// Helpers shared by the freezing patterns (declared in patterns.h): reading
// constant operands, broadcast checks and the channel layout of convolutions.
#include <cmath>

#include "kernels/common.h"
#include "passes/patterns/patterns.h"

namespace onnxfold::patterns {

bool isFloat32Or64(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble;
}

const Shape* shapeOf(const Value* v) {
  if (v == nullptr || !v->type.isTensor() || !v->type.shape) return nullptr;
  return &*v->type.shape;
}

DataType dtypeOf(const Value* v) {
  return v != nullptr && v->type.isTensor() ? v->type.elem_type : DataType::kUndefined;
}

std::optional<std::vector<int64_t>> knownDims(const Value* v) {
  if (const Tensor* t = constantOf(v)) return t->dims();
  if (isStaticTensor(v)) return staticDimsOf(v);
  return std::nullopt;
}

std::optional<std::vector<int64_t>> constantInts(const Value* v) {
  const Tensor* t = constantOf(v);
  if (t == nullptr || t->rank() > 1) return std::nullopt;
  std::vector<int64_t> out(static_cast<size_t>(t->numElements()));
  for (size_t i = 0; i < out.size(); ++i) {
    if (t->dtype() == DataType::kInt64)
      out[i] = t->at<int64_t>(i);
    else if (t->dtype() == DataType::kInt32)
      out[i] = t->at<int32_t>(i);
    else
      return std::nullopt;
  }
  return out;
}

std::optional<std::vector<int64_t>> intsOperand(const Rewriter& rw, const Node* n, const char* attr,
                                                size_t input, int64_t input_since) {
  if (rw.opset() < input_since) {
    const Attribute* a = n->attr(attr);
    if (a == nullptr || a->type != AttrType::kInts) return std::nullopt;
    return a->ints;
  }
  if (n->input(input) == nullptr) return std::nullopt;
  return constantInts(n->input(input));
}

bool broadcastKeepsShape(const std::vector<int64_t>& c, const Value* x) {
  const Shape* s = shapeOf(x);
  if (s == nullptr || c.size() > s->rank()) return false;
  const size_t off = s->rank() - c.size();
  for (size_t j = 0; j < c.size(); ++j) {
    const Dim& d = s->dims[off + j];
    if (c[j] != 1 && !(d.isKnown() && d.value == c[j])) return false;
  }
  return true;
}

bool isPerChannel(const std::vector<int64_t>& c, size_t rank, int64_t channels) {
  if (c.size() > rank || rank < 2) return false;
  const size_t off = rank - c.size();
  for (size_t j = 0; j < c.size(); ++j) {
    if (c[j] == 1) continue;
    if (off + j != 1 || c[j] != channels) return false;
  }
  return true;
}

std::vector<double> perChannelValues(const Tensor& c, int64_t channels) {
  std::vector<double> v(static_cast<size_t>(channels));
  const bool uniform = c.numElements() == 1;
  for (size_t m = 0; m < v.size(); ++m)
    v[m] = floatAt(c, uniform ? 0 : m);
  return v;
}

bool allElementsEqual(const Tensor& t, double v) {
  if (!t.isLoaded()) return false;
  const auto n = static_cast<size_t>(t.numElements());
  auto all = [&](auto read) {
    for (size_t i = 0; i < n; ++i) {
      if (!(read(i) == v)) return false;  // -0.0 == 0.0; NaN never matches
    }
    return true;
  };
  switch (t.dtype()) {
    case DataType::kFloat:
      return all([&](size_t i) { return static_cast<double>(t.at<float>(i)); });
    case DataType::kDouble:
      return all([&](size_t i) { return t.at<double>(i); });
    case DataType::kFloat16:
      return all([&](size_t i) { return double{kernels::halfToFloat(t.at<uint16_t>(i))}; });
    case DataType::kBfloat16:
      return all([&](size_t i) { return double{kernels::bfloat16ToFloat(t.at<uint16_t>(i))}; });
    case DataType::kInt8:
      return all([&](size_t i) { return static_cast<double>(t.at<int8_t>(i)); });
    case DataType::kUint8:
      return all([&](size_t i) { return static_cast<double>(t.at<uint8_t>(i)); });
    case DataType::kInt16:
      return all([&](size_t i) { return static_cast<double>(t.at<int16_t>(i)); });
    case DataType::kUint16:
      return all([&](size_t i) { return static_cast<double>(t.at<uint16_t>(i)); });
    case DataType::kInt32:
      return all([&](size_t i) { return static_cast<double>(t.at<int32_t>(i)); });
    case DataType::kUint32:
      return all([&](size_t i) { return static_cast<double>(t.at<uint32_t>(i)); });
    case DataType::kInt64:
      return all([&](size_t i) { return static_cast<double>(t.at<int64_t>(i)); });
    case DataType::kUint64:
      return all([&](size_t i) { return static_cast<double>(t.at<uint64_t>(i)); });
    default:
      return false;
  }
}

bool convOutputChannels(const Node* conv, const std::vector<int64_t>& w, int64_t& channels) {
  if (w.size() < 3) return false;  // Conv weight rank is below 3
  for (int64_t d : w) {
    if (d <= 0) return false;  // an empty dim: nothing to fold, and no channel stride
  }
  const int64_t group = conv->attrInt("group", 1);
  if (group < 1) return false;  // Conv group is not positive
  if (conv->op_type == "ConvTranspose") {
    // W: [C, M/group, k...]; output channel m = (c / (C/group)) * (M/group) + w1.
    if (w[0] % group != 0) return false;  // ConvTranspose group does not divide the input channels
    channels = w[1] * group;
  } else {
    // W: [M, C/group, k...]; the output channel is dim 0 whatever the group.
    if (w[0] % group != 0) return false;  // Conv group does not divide the output channels
    channels = w[0];
  }
  return true;
}

void bypass(Node* n, Value* x, Rewriter& rw) {
  rw.replaceNode(n, {x});
}

Tensor scaleOutputChannels(const Tensor& w, bool transpose, int64_t group,
                           const std::vector<double>& s) {
  // Output channel of each weight element: dim 0 for Conv; for ConvTranspose,
  // dim 1 within each group of dim 0. Written straight into the new tensor
  // (every element), in double and rounded once, as W's dtype.
  const auto& d = w.dims();
  const int64_t inner = w.numElements() / (d[0] * d[1]);
  Tensor out = Tensor::uninitialized(w.dtype(), d);
  auto scale = [&](auto tag) {
    using T = decltype(tag);
    const uint8_t* in = w.bytes();  // a view into the model: may be unaligned
    T* o = reinterpret_cast<T*>(out.mutableBytes());
    for (int64_t i0 = 0; i0 < d[0]; ++i0) {
      for (int64_t i1 = 0; i1 < d[1]; ++i1) {
        const double m = s[static_cast<size_t>(transpose ? (i0 / (d[0] / group)) * d[1] + i1 : i0)];
        const int64_t base = (i0 * d[1] + i1) * inner;
        for (int64_t k = base; k < base + inner; ++k) {
          T v;
          std::memcpy(&v, in + k * sizeof(T), sizeof(T));
          o[k] = static_cast<T>(static_cast<double>(v) * m);
        }
      }
    }
  };
  if (w.dtype() == DataType::kDouble)
    scale(double{});
  else
    scale(float{});
  return out;
}

}  // namespace onnxfold::patterns

// Helpers shared by the freezing patterns (declared in patterns.h): reading
// constant operands, broadcast checks and the channel layout of convolutions.
#include <cmath>
#include <cstring>

#include "kernels/common.h"
#include "passes/fold_recipe.h"
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

namespace {

// Each output channel m of W times s[m], in double and rounded once to W's dtype, one
// contiguous block of a channel at a time (a Conv's channel is one block): one multiplier per
// block rather than an index computation per element.
template <class T>
void scaleChannelBlocks(const uint8_t* in, T* out, const std::vector<int64_t>& d, bool transpose,
                        int64_t group, const std::vector<double>& s) {
  const int64_t inner = checkedElementCount(d) / (d[0] * d[1]);
  const int64_t block = transpose ? inner : d[1] * inner;  // elements of one channel in a row
  const int64_t blocks = d[0] * d[1] * inner / block;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t i0 = transpose ? b / d[1] : b;
    const int64_t i1 = transpose ? b % d[1] : 0;
    const double m = s[static_cast<size_t>(transpose ? (i0 / (d[0] / group)) * d[1] + i1 : i0)];
    const uint8_t* src = in + b * block * static_cast<int64_t>(sizeof(T));  // may be unaligned
    T* dst = out + b * block;
    for (int64_t k = 0; k < block; ++k) {
      T v;
      std::memcpy(&v, src + k * static_cast<int64_t>(sizeof(T)), sizeof(T));
      dst[k] = static_cast<T>(static_cast<double>(v) * m);
    }
  }
}

// W with its output channels scaled, as a fold recipe's step.
class ScaleOutputChannels : public FoldRecipe::Step {
 public:
  ScaleOutputChannels(bool transpose, int64_t group, std::vector<double> s)
      : transpose_(transpose), group_(group), s_(std::move(s)) {}
  Tensor compute(const std::vector<const Tensor*>& inputs) const override {
    const Tensor& w = *inputs.at(0);
    Tensor out = Tensor::uninitialized(w.dtype(), w.dims());
    if (w.dtype() == DataType::kDouble) {
      scaleChannelBlocks(w.bytes(), reinterpret_cast<double*>(out.mutableBytes()), w.dims(),
                         transpose_, group_, s_);
    } else {
      scaleChannelBlocks(w.bytes(), reinterpret_cast<float*>(out.mutableBytes()), w.dims(),
                         transpose_, group_, s_);
    }
    return out;
  }
  void hash(Fnv1a& h) const override {
    h.str("scale-output-channels");
    h.pod(transpose_);
    h.pod(group_);
    for (double v : s_)
      h.pod(v);
  }
  std::string describe() const override {
    return std::string("the rescaled weight of a ") + (transpose_ ? "ConvTranspose" : "Conv");
  }

 private:
  bool transpose_;
  int64_t group_;
  std::vector<double> s_;
};

}  // namespace

Tensor scaleOutputChannels(const Tensor& w, bool transpose, int64_t group, std::vector<double> s) {
  return FoldRecipe::computeOrDefer(
      std::make_unique<ScaleOutputChannels>(transpose, group, std::move(s)), w, w.dtype(),
      w.dims());
}

}  // namespace onnxfold::patterns

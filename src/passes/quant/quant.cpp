// Helpers shared by the quantization-finalize passes and patterns (quant.h).
#include "passes/quant/quant.h"

#include <cmath>
#include <cstring>

#include "ir/error.h"
#include "passes/fold_recipe.h"
#include "schema/op_schema.h"

namespace onnxfold::quant {

namespace {

bool readInt(const Tensor& t, size_t i, int64_t& out) {
  switch (t.dtype()) {
    case DataType::kInt8:
      out = t.at<int8_t>(i);
      return true;
    case DataType::kUint8:
      out = t.at<uint8_t>(i);
      return true;
    case DataType::kInt16:
      out = t.at<int16_t>(i);
      return true;
    case DataType::kUint16:
      out = t.at<uint16_t>(i);
      return true;
    case DataType::kInt32:
      out = t.at<int32_t>(i);
      return true;
    case DataType::kInt64:
      out = t.at<int64_t>(i);
      return true;
    default:
      return false;
  }
}

}  // namespace

const Tensor* constantOf(const Value* v) {
  if (v == nullptr || !v->isConstant()) return nullptr;
  const Tensor* t = v->initializer();
  return t->isLoaded() ? t : nullptr;
}

DataType dtypeOf(const Value* v) {
  if (v == nullptr) return DataType::kUndefined;
  if (const Tensor* t = constantOf(v)) return t->dtype();
  return v->type.isTensor() ? v->type.elem_type : DataType::kUndefined;
}

int64_t rankOf(const Value* v) {
  if (v == nullptr) return -1;
  if (const Tensor* t = constantOf(v)) return static_cast<int64_t>(t->rank());
  if (v->type.isTensor() && v->type.shape) return static_cast<int64_t>(v->type.shape->rank());
  return -1;
}

bool quantRange(DataType t, int64_t& lo, int64_t& hi) {
  switch (t) {
    case DataType::kInt8:
      lo = -128, hi = 127;
      return true;
    case DataType::kUint8:
      lo = 0, hi = 255;
      return true;
    case DataType::kInt16:
      lo = -32768, hi = 32767;
      return true;
    case DataType::kUint16:
      lo = 0, hi = 65535;
      return true;
    case DataType::kInt4:
      lo = -8, hi = 7;
      return true;
    case DataType::kUint4:
      lo = 0, hi = 15;
      return true;
    case DataType::kInt32:
      lo = INT32_MIN, hi = INT32_MAX;
      return true;
    default:
      return false;
  }
}

bool is8Bit(DataType t) {
  return t == DataType::kInt8 || t == DataType::kUint8;
}

bool qlinearTypesRun(DataType x, DataType y) {
  return is8Bit(x) && y == x;
}

bool schemaTakes(const std::string& op, int64_t opset, size_t input, DataType t) {
  const OpSchema* s = OpSchemas::instance().find("", op, opset);
  const FormalParameter* f = s != nullptr ? s->input(input) : nullptr;
  return f != nullptr &&
         s->types[static_cast<size_t>(f->type)].allows(Type::tensor(t, std::nullopt));
}

bool uniformZeroPoint(const QParams& p) {
  for (int64_t z : p.zero_point) {
    if (z != p.zero_point.front()) return false;
  }
  return true;
}

int64_t quantizeOne(float x, float scale, int64_t zero_point, DataType t) {
  int64_t lo = 0, hi = 0;
  quantRange(t, lo, hi);
  const float v = x / scale;  // float division, as the QuantizeLinear kernel does
  double q = std::isnan(v) ? 0.0 : std::nearbyint(static_cast<double>(v)) + double(zero_point);
  q = std::min(std::max(q, static_cast<double>(lo)), static_cast<double>(hi));
  return static_cast<int64_t>(q);
}

bool roundTrips(const QParams& p) {
  int64_t lo = 0, hi = 0;
  if (!quantRange(p.qtype, lo, hi) || hi - lo > (1 << 16)) {
    return false;  // the quantized type's range is too wide to check
  }
  for (size_t i = 0; i < p.scale.size(); ++i) {
    const float s = p.scale[i];
    const int64_t z = i < p.zero_point.size() ? p.zero_point[i] : 0;
    for (int64_t q = lo; q <= hi; ++q) {
      const float x = static_cast<float>(q - z) * s;  // DequantizeLinear
      if (quantizeOne(x, s, z, p.qtype) != q) {
        return false;  // Q(DQ(q)) is another value: the scale loses q
      }
    }
  }
  return true;
}

std::optional<QParams> paramsOf(const Node* n) {
  const bool is_q = n->isOp("QuantizeLinear");
  if (!is_q && !n->isOp("DequantizeLinear")) {
    return std::nullopt;  // not a QuantizeLinear/DequantizeLinear
  }
  if (n->attrInt("block_size", 0) != 0) {
    return std::nullopt;  // blocked quantization is not handled
  }
  const Tensor* s = constantOf(n->input(1));
  if (s == nullptr || s->dtype() != DataType::kFloat || s->rank() > 1 || s->numElements() < 1) {
    return std::nullopt;  // scale is not a constant float32 scalar or 1-D tensor
  }
  QParams p;
  p.node = n;
  p.scale_dims = s->dims();
  for (int64_t i = 0; i < s->numElements(); ++i) {
    const float f = s->at<float>(static_cast<size_t>(i));
    if (!(f > 0) || !std::isfinite(f)) {
      return std::nullopt;  // scale is not positive and finite
    }
    p.scale.push_back(f);
  }
  const Tensor* zp = nullptr;
  if (n->input(2) != nullptr) {
    zp = constantOf(n->input(2));
    if (zp == nullptr || zp->numElements() != s->numElements()) {
      return std::nullopt;  // zero point is not a constant of the scale's size
    }
  }
  // The quantized type: DQ's input; Q's output_dtype, else its zero point, else uint8.
  if (is_q) {
    const auto attr = static_cast<DataType>(n->attrInt("output_dtype", 0));
    p.qtype = attr != DataType::kUndefined ? attr : zp != nullptr ? zp->dtype() : DataType::kUint8;
  } else {
    p.qtype = dtypeOf(n->input(0));
    // Types may not be inferred yet: the zero point has the input's type.
    if (p.qtype == DataType::kUndefined && zp != nullptr) p.qtype = zp->dtype();
  }
  int64_t lo = 0, hi = 0;
  if (!quantRange(p.qtype, lo, hi)) {
    return std::nullopt;  // quantized type is not an integer type
  }
  if (zp != nullptr && zp->dtype() != p.qtype) {
    return std::nullopt;  // zero point type differs from the quantized type
  }
  p.zero_point.assign(p.scale.size(), 0);
  for (size_t i = 0; zp != nullptr && i < p.scale.size(); ++i) {
    if (!readInt(*zp, i, p.zero_point[i])) {
      return std::nullopt;  // zero point type is not an integer type
    }
  }
  // One scale is per tensor whatever the axis; otherwise per axis along `axis`.
  if (p.scale.size() == 1) return p;
  const int64_t rank = rankOf(n->input(0));
  int64_t axis = n->attrInt("axis", 1);
  if (axis < 0) axis += rank;
  if (rank < 0 || axis < 0 || axis >= rank || s->rank() != 1) {
    return std::nullopt;  // per-axis quantization of a tensor of unknown rank
  }
  p.axis = axis;
  return p;
}

bool sameParams(const QParams& a, const QParams& b) {
  return a.qtype == b.qtype && a.axis == b.axis && a.scale == b.scale &&
         a.zero_point == b.zero_point;
}

Node* dequantizeOf(const Value* v) {
  if (v == nullptr || v->producer() == nullptr) return nullptr;
  Node* p = v->producer();
  return p->isOp("DequantizeLinear") ? p : nullptr;
}

Tensor intTensor(DataType t, std::vector<int64_t> dims, const std::vector<int64_t>& values) {
  Tensor out(t, std::move(dims));
  uint8_t* b = out.mutableBytes();
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t v = values[i];
    switch (t) {
      case DataType::kInt8: {
        const auto x = static_cast<int8_t>(v);
        std::memcpy(b + i, &x, 1);
        break;
      }
      case DataType::kUint8: {
        const auto x = static_cast<uint8_t>(v);
        std::memcpy(b + i, &x, 1);
        break;
      }
      case DataType::kInt16: {
        const auto x = static_cast<int16_t>(v);
        std::memcpy(b + i * 2, &x, 2);
        break;
      }
      case DataType::kUint16: {
        const auto x = static_cast<uint16_t>(v);
        std::memcpy(b + i * 2, &x, 2);
        break;
      }
      case DataType::kInt32: {
        const auto x = static_cast<int32_t>(v);
        std::memcpy(b + i * 4, &x, 4);
        break;
      }
      case DataType::kInt64:
        std::memcpy(b + i * 8, &v, 8);
        break;
      default:
        throw Error("quant: cannot build an integer tensor of type " +
                    std::string(dataTypeName(t)));
    }
  }
  return out;
}

Tensor transposed8(const Tensor& t) {
  const int64_t r = t.dims()[0], c = t.dims()[1];
  Tensor out(t.dtype(), {c, r});
  uint8_t* o = out.mutableBytes();
  const uint8_t* in = t.bytes();
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < c; ++j)
      o[j * r + i] = in[i * c + j];
  }
  return out;
}

QParams paramsIn(const QParams& w, DataType t) {
  if (w.qtype == t) return w;
  QParams p = w;
  p.qtype = t;
  const int64_t shift = t == DataType::kUint8 ? 128 : -128;
  for (int64_t& z : p.zero_point)
    z += shift;
  return p;
}

namespace {

// An 8-bit weight in the type (and layout) an integer op takes: the sign flipped (int8 <->
// uint8, zero point moved by 128) and/or transposed: weightIn's step (deferred when large).
class WeightIn : public FoldRecipe::Step {
 public:
  WeightIn(DataType t, bool flip, bool transpose) : t_(t), flip_(flip), transpose_(transpose) {}
  Tensor compute(const std::vector<const Tensor*>& inputs) const override {
    const Tensor& c = *inputs.at(0);
    Tensor w(t_, c.dims());
    std::memcpy(w.mutableBytes(), c.bytes(), static_cast<size_t>(c.numElements()));
    if (flip_) {
      uint8_t* b = w.mutableBytes();
      for (int64_t i = 0; i < w.numElements(); ++i)
        b[i] ^= 0x80;
    }
    return transpose_ ? transposed8(w) : w;
  }
  void hash(Fnv1a& h) const override {
    h.str("quant-weight-in");
    h.pod(static_cast<int32_t>(t_));
    h.pod(flip_);
    h.pod(transpose_);
  }
  std::string describe() const override { return "an 8-bit weight made for an integer op"; }

 private:
  DataType t_;
  bool flip_, transpose_;
};

}  // namespace

Value* weightIn(Rewriter& rw, Value* wq, DataType t, bool transpose) {
  const Tensor* c = constantOf(wq);
  const bool flip = c != nullptr && c->dtype() != t;
  if (!flip && !transpose) return wq;
  std::vector<int64_t> dims = c->dims();
  if (transpose) std::swap(dims[0], dims[1]);
  Tensor w = FoldRecipe::computeOrDefer(std::make_unique<WeightIn>(t, flip, transpose), *c, t,
                                        std::move(dims));
  return rw.constant(
      std::move(w),
      wq->name() + (flip ? (t == DataType::kUint8 ? "_u8" : "_s8") : "") + (transpose ? "_t" : ""));
}

Value* weightZeroPoint(Rewriter& rw, const QParams& original, const QParams& p,
                       const std::string& base) {
  if (p.qtype == original.qtype) {
    return uniformOrSelf(rw, zeroPointValue(rw, original, base), p.zero_point, p.qtype,
                         base + "_zero_point");
  }
  if (uniformZeroPoint(p))
    return rw.constant(intTensor(p.qtype, {}, {p.zero_point.front()}), base + "_zp");
  return rw.constant(intTensor(p.qtype, p.scale_dims, p.zero_point), base + "_zp");
}

Tensor floatTensor(std::vector<int64_t> dims, const std::vector<float>& values) {
  Tensor out(DataType::kFloat, std::move(dims));
  if (!values.empty()) std::memcpy(out.mutableBytes(), values.data(), values.size() * 4);
  return out;
}

Tensor int64Tensor(const std::vector<int64_t>& values) {
  return intTensor(DataType::kInt64, {static_cast<int64_t>(values.size())}, values);
}

Node* createTyped(Rewriter& rw, const std::string& op, const std::vector<Value*>& inputs,
                  Node* before, DataType t, const Value* like) {
  Node* n = rw.create(op, inputs, 1, before);
  n->output(0)->type =
      Type::tensor(t, like != nullptr && like->type.isTensor() ? like->type.shape : std::nullopt);
  return n;
}

void copyAttributes(Rewriter& rw, const Node& from, Node* to) {
  for (const Attribute& a : from.attributes)
    rw.setAttr(to, a.copyWithoutGraphs());
}

Value* zeroPointValue(Rewriter& rw, const QParams& p, const std::string& base) {
  if (p.node->input(2) != nullptr) return p.node->input(2);
  return rw.constant(intTensor(p.qtype, {}, {0}), base + "_zero_point");
}

Value* uniformOrSelf(Rewriter& rw, Value* v, const std::vector<int64_t>& values, DataType t,
                     const std::string& base) {
  for (int64_t x : values) {
    if (x != values.front()) return v;
  }
  if (v != nullptr && constantOf(v) != nullptr && constantOf(v)->rank() == 0) return v;
  return rw.constant(intTensor(t, {}, {values.empty() ? 0 : values.front()}), base);
}

namespace {

// dims for `n` values along `axis` of a rank-`rank` tensor: [n, 1, ...] (the
// leading dims broadcast); [] when n == 1.
std::vector<int64_t> channelDims(size_t n, int64_t rank, int64_t axis) {
  if (n == 1) return {};
  std::vector<int64_t> d(static_cast<size_t>(rank - axis), 1);
  d[0] = static_cast<int64_t>(n);
  return d;
}

}  // namespace

Value* buildRescale(Rewriter& rw, const Rescale& r) {
  Value* v = r.acc;
  if (r.bias_q != nullptr) {
    Tensor b = *r.bias_q;
    b.reshape(channelDims(static_cast<size_t>(b.numElements()), r.rank, r.channel_axis));
    Value* bv = rw.constant(std::move(b), r.base + "_bias_i32");
    v = createTyped(rw, "Add", {v, bv}, r.before, DataType::kInt32, r.like)->output(0);
  }
  Node* cast = createTyped(rw, "Cast", {v}, r.before, DataType::kFloat, r.like);
  rw.setAttr(cast, Attribute::makeInt("to", static_cast<int64_t>(DataType::kFloat)));
  Value* s = rw.constant(floatTensor(channelDims(r.scale.size(), r.rank, r.channel_axis), r.scale),
                         r.base + "_rescale");
  v = createTyped(rw, "Mul", {cast->output(0), s}, r.before, DataType::kFloat, r.like)->output(0);
  if (r.bias_f != nullptr) {
    Tensor b = *r.bias_f;
    b.reshape(channelDims(static_cast<size_t>(b.numElements()), r.rank, r.channel_axis));
    Value* bv = rw.constant(std::move(b), r.base + "_bias");
    v = createTyped(rw, "Add", {v, bv}, r.before, DataType::kFloat, r.like)->output(0);
  }
  return v;
}

std::vector<float> biasScale(const QParams& x, const QParams& w, int64_t channels) {
  std::vector<float> s(static_cast<size_t>(channels));
  for (size_t c = 0; c < s.size(); ++c)
    s[c] = x.scale[0] * w.scale[w.perTensor() ? 0 : c];
  return s;
}

bool isQuantBias(const Node* bias_dq, const QParams& x, const QParams& w, int64_t channels) {
  if (bias_dq == nullptr) return false;
  const Tensor* b = constantOf(bias_dq->input(0));
  if (b == nullptr || b->dtype() != DataType::kInt32 || b->rank() != 1 ||
      b->numElements() != channels)
    return false;
  const auto p = paramsOf(bias_dq);
  if (!p) return false;
  for (int64_t z : p->zero_point) {
    if (z != 0) return false;
  }
  const std::vector<float> want = biasScale(x, w, channels);
  if (p->perTensor()) {
    // A per-tensor bias scale fits only a per-tensor weight.
    return w.perTensor() && p->scale[0] == want[0];
  }
  return p->axis == 0 && p->scale == want;
}

std::optional<QuantConv> matchQuantConv(Node* conv, bool allow_float_bias) {
  QuantConv q;
  q.conv = conv;
  Node* xdq = dequantizeOf(conv->input(0));
  Node* wdq = dequantizeOf(conv->input(1));
  if (xdq == nullptr || wdq == nullptr) {
    return std::nullopt;  // Conv input or weight does not come from DequantizeLinear
  }
  auto x = paramsOf(xdq);
  auto w = paramsOf(wdq);
  if (!x || !w) return std::nullopt;
  if (!x->perTensor() || !is8Bit(x->qtype) || !is8Bit(w->qtype)) {
    return std::nullopt;  // Conv input is not per-tensor 8-bit or weight is not 8-bit
  }
  const Tensor* wt = constantOf(wdq->input(0));
  if (wt == nullptr || wt->rank() < 3) {
    return std::nullopt;  // Conv weight is not a constant
  }
  q.channels = wt->dims()[0];
  if (!w->perTensor() && (w->axis != 0 || static_cast<int64_t>(w->scale.size()) != q.channels)) {
    return std::nullopt;  // Conv weight is not quantized per output channel (axis 0)
  }
  if (conv->input(2) != nullptr) {
    Node* bdq = dequantizeOf(conv->input(2));
    const Tensor* bf = constantOf(conv->input(2));
    if (allow_float_bias && bf != nullptr && bf->dtype() == DataType::kFloat &&
        bf->numElements() == q.channels) {
      q.bias_f = bf;
    } else if (!isQuantBias(bdq, *x, *w, q.channels)) {
      return std::nullopt;  // Conv bias is not int32 quantized with scale x_scale * w_scale
    }
    if (q.bias_f == nullptr) q.bias_q = bdq->input(0);
  }
  q.x = *x;
  q.w = *w;
  q.x_q = xdq->input(0);
  q.w_q = wdq->input(0);
  return q;
}

void noteOpsetKept(const Model& model, PassContext& ctx) {
  ctx.note("opset " + std::to_string(model.opsetVersion("")) +
           " kept: the integer ops used need opset 10 (an integer Clip 12)");
}

}  // namespace onnxfold::quant

// shape op family: Constant, Shape, Size, ConstantOfShape, Range, EyeLike,
// Identity. See op_registry.h for the contract of infer() and compute().
//
// These ops are the sources of shape arithmetic: Shape gives the known or
// symbolic dims of its input as a SymbolicValue, Constant and (when its
// input is known) Shape give their values during inference so later nodes
// see constants without running a kernel.
#include <cmath>
#include <limits>
#include <string>

#include "kernels/common.h"

namespace onnxfold {
namespace {

using namespace kernels;

Tensor int64Tensor(const std::vector<int64_t>& v, bool scalar = false) {
  Tensor t(DataType::kInt64,
           scalar ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(v.size())});
  if (!v.empty()) std::memcpy(t.mutableBytes(), v.data(), v.size() * 8);
  return t;
}

// ------------------------------------------------------------ Constant

// Dense tensor of a SparseTensor attribute (values scattered at indices).
Tensor densify(const OpContext& ctx, const SparseTensor& sp) {
  Tensor out(sp.values.dtype(), sp.dims);
  const int64_t nnz = sp.values.numElements();
  const auto rank = static_cast<int64_t>(sp.dims.size());
  const std::vector<int64_t> idx = toInt64Vector(ctx, sp.indices);
  const bool linear = sp.indices.rank() == 1;
  const int bits = bitsPerElement(out.dtype());
  if (bits < 8 && out.dtype() != DataType::kString)
    ctx.unsupported("sparse sub-byte values unsupported");
  const size_t es = static_cast<size_t>(bits / 8);
  uint8_t* dst = out.dtype() == DataType::kString ? nullptr : out.mutableBytes();
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t off = 0;
    if (linear) {
      off = idx[static_cast<size_t>(k)];
    } else {
      for (int64_t a = 0; a < rank; ++a)
        off = off * sp.dims[static_cast<size_t>(a)] + idx[static_cast<size_t>(k * rank + a)];
    }
    if (off < 0 || off >= out.numElements()) ctx.fail("sparse index out of range");
    if (dst == nullptr) {
      out.mutableStrings()[static_cast<size_t>(off)] = sp.values.strings()[static_cast<size_t>(k)];
    } else {
      std::memcpy(dst + static_cast<size_t>(off) * es,
                  sp.values.bytes() + static_cast<size_t>(k) * es, es);
    }
  }
  return out;
}

Tensor constantValue(const OpContext& ctx) {
  const auto& attrs = ctx.node().attributes;
  if (attrs.size() != 1) ctx.fail("exactly one value attribute is required");
  const Attribute& a = attrs[0];
  if (a.name == "value") return a.t.aligned();
  if (a.name == "sparse_value") return densify(ctx, a.sparse_tensor);
  if (a.name == "value_float" || a.name == "value_floats") {
    const bool scalar = a.name == "value_float";
    const std::vector<float> v = scalar ? std::vector<float>{a.f} : a.floats;
    Tensor t(DataType::kFloat, scalar ? std::vector<int64_t>{}
                                      : std::vector<int64_t>{static_cast<int64_t>(v.size())});
    if (!v.empty()) std::memcpy(t.mutableBytes(), v.data(), v.size() * 4);
    return t;
  }
  if (a.name == "value_int") return int64Tensor({a.i}, true);
  if (a.name == "value_ints") return int64Tensor(a.ints);
  if (a.name == "value_string" || a.name == "value_strings") {
    const bool scalar = a.name == "value_string";
    const std::vector<std::string> v = scalar ? std::vector<std::string>{a.s} : a.strings;
    Tensor t(DataType::kString, scalar ? std::vector<int64_t>{}
                                       : std::vector<int64_t>{static_cast<int64_t>(v.size())});
    t.mutableStrings() = v;
    return t;
  }
  ctx.fail("unknown attribute '" + a.name + "'");
}

void inferConstant(InferContext& ctx) {
  ctx.setOutputValue(0, constantValue(ctx));
}

void computeConstant(ComputeContext& ctx) {
  Tensor v = constantValue(ctx);
  Tensor& out = ctx.output(0);
  if (v.dtype() == DataType::kString)
    out.mutableStrings() = v.strings();
  else if (v.byteSize() != 0)
    std::memcpy(out.mutableBytes(), v.bytes(), v.byteSize());
}

// ------------------------------------------------------------ Shape / Size

// [start, end) of Shape-15's slice of a rank-`rank` shape, clamped.
void shapeRange(const OpContext& ctx, int64_t rank, int64_t& start, int64_t& end) {
  start = ctx.attrInt("start", 0);
  end = ctx.attrInt("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::min(std::max<int64_t>(start, 0), rank);
  end = std::min(std::max<int64_t>(end, 0), rank);
  if (end < start) end = start;
}

void inferShape(InferContext& ctx) {
  const Shape* s = ctx.inputShape(0);
  if (s == nullptr) {
    Shape out;
    out.dims.push_back(ctx.newSymbol());
    ctx.setOutput(0, DataType::kInt64, std::move(out));
    return;
  }
  int64_t start = 0, end = 0;
  shapeRange(ctx, static_cast<int64_t>(s->rank()), start, end);
  SymbolicValue dims(s->dims.begin() + start, s->dims.begin() + end);
  bool known = true;
  std::vector<int64_t> values;
  for (const Dim& d : dims) {
    known = known && d.isKnown();
    values.push_back(d.value);
  }
  if (known) {
    ctx.setOutputValue(0, int64Tensor(values));
    return;
  }
  ctx.setOutput(0, DataType::kInt64, std::vector<int64_t>{end - start});
  for (Dim& d : dims) {
    d.denotation.clear();
    // An unnamed unknown dim gets a symbol of its own: left as it is it would read as a
    // literal -1 (a Reshape target's "infer this one") wherever the shape goes.
    if (!d.isKnown() && d.param.empty()) d = ctx.newSymbol();
  }
  ctx.setOutputSymbolic(0, std::move(dims));
}

void computeShape(ComputeContext& ctx) {
  const std::vector<int64_t>& d = ctx.input(0).dims();
  int64_t start = 0, end = 0;
  shapeRange(ctx, static_cast<int64_t>(d.size()), start, end);
  int64_t* out = mutableDataAs<int64_t>(ctx.output(0));
  for (int64_t i = start; i < end; ++i)
    out[i - start] = d[static_cast<size_t>(i)];
}

void inferSize(InferContext& ctx) {
  if (auto d = staticDims(ctx.inputShape(0))) {
    ctx.setOutputValue(0, int64Tensor({product(*d, 0, d->size())}, true));
    return;
  }
  ctx.setOutput(0, DataType::kInt64, std::vector<int64_t>{});
}

void computeSize(ComputeContext& ctx) {
  *mutableDataAs<int64_t>(ctx.output(0)) = ctx.input(0).numElements();
}

// ------------------------------------------------------------ ConstantOfShape

Tensor constantOfShapeFill(const OpContext& ctx) {
  const Attribute* a = ctx.attr("value");
  if (a == nullptr) return Tensor(DataType::kFloat, {1});
  if (a->t.numElements() != 1) ctx.fail("'value' must hold exactly one element");
  return a->t.aligned();
}

void inferConstantOfShape(InferContext& ctx) {
  const Tensor fill = constantOfShapeFill(ctx);
  const DataType dt = fill.dtype();
  if (ctx.inputDtype(0) != DataType::kInt64 && ctx.inputDtype(0) != DataType::kUndefined) {
    ctx.fail("input must be int64");
  }
  if (auto sym = ctx.inputSymbolic(0)) {
    Shape out;
    for (const Dim& d : *sym) {
      if (d.isKnown() || !d.param.empty()) {
        out.dims.push_back(d);
      } else {
        if (d.value < -1 || (d.value == -1 && ctx.inputValue(0) != nullptr)) {
          ctx.fail("negative dimension in shape");
        }
        out.dims.push_back(ctx.newSymbol());
      }
    }
    ctx.setOutput(0, dt, std::move(out));
    return;
  }
  const Shape* s = ctx.inputShape(0);
  if (s != nullptr && s->rank() == 1 && s->dims[0].isKnown() &&
      s->dims[0].value <= kMaxDeclaredRank) {
    Shape out;
    for (int64_t k = 0; k < s->dims[0].value; ++k)
      out.dims.push_back(ctx.newSymbol());
    ctx.setOutput(0, dt, std::move(out));
    return;
  }
  ctx.setOutputUnknownRank(0, dt);
}

void computeConstantOfShape(ComputeContext& ctx) {
  const Tensor fill = constantOfShapeFill(ctx);
  Tensor& out = ctx.output(0);
  const auto n = static_cast<size_t>(out.numElements());
  if (fill.dtype() == DataType::kString) {
    for (auto& s : out.mutableStrings())
      s = fill.strings()[0];
    return;
  }
  if (n == 0) return;
  const int bits = bitsPerElement(fill.dtype());
  uint8_t* dst = out.mutableBytes();
  if (bits < 8) {
    // Packed types: replicate the element into every slot of a byte.
    const uint32_t v = fill.bytes()[0] & ((1u << bits) - 1);
    uint8_t b = 0;
    for (int k = 0; k < 8; k += bits)
      b = static_cast<uint8_t>(b | (v << k));
    std::memset(dst, b, out.byteSize());
    return;
  }
  const size_t es = static_cast<size_t>(bits / 8);
  for (size_t i = 0; i < n; ++i)
    std::memcpy(dst + i * es, fill.bytes(), es);
}

// ------------------------------------------------------------ Range

void inferRange(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  for (size_t i = 1; i < 3; ++i) {
    if (ctx.inputDtype(i) != dt) ctx.fail("start, limit and delta must have the same type");
  }
  switch (dt) {
    case DataType::kFloat:
    case DataType::kDouble:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
      break;
    case DataType::kFloat16:
    case DataType::kBfloat16:
      if (ctx.opset() < 27) ctx.fail("float16/bfloat16 Range needs opset 27");
      break;
    default:
      ctx.unsupported("unsupported type " + std::string(dataTypeName(dt)));
  }
  for (size_t i = 0; i < 3; ++i) {
    const Shape* s = ctx.inputShape(i);
    if (s != nullptr && s->rank() > 1) ctx.fail("start, limit and delta must be scalars");
  }
  if (ctx.allInputValuesKnown()) {
    for (size_t i = 0; i < 3; ++i) {
      if (ctx.inputValue(i)->numElements() != 1) ctx.fail("start, limit and delta must be scalars");
    }
    int64_t n = 0;
    if (dt == DataType::kInt64 || dt == DataType::kInt32 || dt == DataType::kInt16) {
      // Integer count read exactly (INT64_MAX does not survive a double); the span may not
      // fit int64.
      const int64_t s = toInt64Vector(ctx, *ctx.inputValue(0))[0];
      const int64_t l = toInt64Vector(ctx, *ctx.inputValue(1))[0];
      const int64_t d = toInt64Vector(ctx, *ctx.inputValue(2))[0];
      if (d == 0) ctx.fail("delta must not be zero");
      int64_t span = 0;
      if (!checkedAdd(l, -s, &span)) ctx.fail("limit - start overflows int64");
      // INT64_MIN / -1 is undefined behaviour; that count (2^63) does not fit int64 either.
      if (d == -1 && span == std::numeric_limits<int64_t>::min())
        ctx.fail("Range would have 2^63 elements");
      n = d > 0 ? (span > 0 ? span / d + (span % d != 0) : 0)
                : (span < 0 ? span / d + (span % d != 0) : 0);
    } else {
      const double start = scalarAsDouble(ctx, *ctx.inputValue(0));
      const double limit = scalarAsDouble(ctx, *ctx.inputValue(1));
      const double delta = scalarAsDouble(ctx, *ctx.inputValue(2));
      if (delta == 0) ctx.fail("delta must not be zero");
      if (!std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta)) {
        ctx.fail("start, limit and delta must be finite");  // ONNX Runtime fails at run time
      }
      const double q = std::ceil((limit - start) / delta);
      if (!(q < 9.2e18)) ctx.fail("Range would have " + std::to_string(q) + " elements");
      n = q > 0 ? static_cast<int64_t>(q) : 0;  // q may be far below INT64_MIN
    }
    ctx.setOutput(0, dt, std::vector<int64_t>{n});
    return;
  }
  Shape out;
  out.dims.push_back(ctx.newSymbol());
  ctx.setOutput(0, dt, std::move(out));
}

void computeRange(ComputeContext& ctx) {
  Tensor& out = ctx.output(0);
  const auto n = static_cast<size_t>(out.numElements());
  dispatchNumeric(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = mutableDataAs<T>(out);
    const T start = ctx.input(0).at<T>(0);
    const T delta = ctx.input(2).at<T>(0);
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      const float s = static_cast<float>(toDouble(start)), d = static_cast<float>(toDouble(delta));
      if (ctx.attrInt("stash_type", 1) == 1) {
        for (size_t i = 0; i < n; ++i)
          dst[i] = fromDouble<T>(s + static_cast<float>(i) * d);
      } else {
        T acc = start;  // successive additions rounded to T
        for (size_t i = 0; i < n; ++i) {
          dst[i] = acc;
          acc = fromDouble<T>(static_cast<float>(toDouble(acc)) + d);
        }
      }
    } else if constexpr (std::is_integral_v<T>) {
      for (size_t i = 0; i < n; ++i)
        dst[i] = static_cast<T>(start + static_cast<T>(i) * delta);
    } else {
      for (size_t i = 0; i < n; ++i)
        dst[i] = static_cast<T>(start + static_cast<T>(i) * delta);
    }
  });
}

// ------------------------------------------------------------ EyeLike

DataType eyeLikeType(const InferContext& ctx) {
  const int64_t dt = ctx.attrInt("dtype", 0);
  const DataType t = dt == 0 ? ctx.inputDtype(0) : static_cast<DataType>(dt);
  if (dt != 0 && !isKnownDataType(static_cast<int32_t>(dt))) ctx.fail("invalid dtype");
  return t;
}

void inferEyeLike(InferContext& ctx) {
  const DataType t = eyeLikeType(ctx);
  bool numeric = dispatchNumeric(t, [](auto) {});
  if (!numeric && t != DataType::kUndefined) {
    ctx.unsupported("unsupported type " + std::string(dataTypeName(t)));
  }
  const Shape* s = ctx.inputShape(0);
  if (s == nullptr) {
    Shape out;
    out.dims = {ctx.newSymbol(), ctx.newSymbol()};
    ctx.setOutput(0, t, std::move(out));
    return;
  }
  if (s->rank() != 2) ctx.fail("input must be 2-D");
  ctx.setOutput(0, t, *s);
}

void computeEyeLike(ComputeContext& ctx) {
  Tensor& out = ctx.output(0);
  const int64_t rows = out.dims()[0], cols = out.dims()[1];
  const int64_t k = ctx.attrInt("k");
  dispatchNumeric(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = mutableDataAs<T>(out);
    const T one = fromDouble<T>(1.0);
    for (int64_t i = 0; i < rows; ++i) {
      int64_t j = 0;  // a huge k overflows: that diagonal is outside the matrix
      if (checkedAdd(i, k, &j) && j >= 0 && j < cols) dst[i * cols + j] = one;
    }
  });
}

// ------------------------------------------------------------ Identity

void inferIdentity(InferContext& ctx) {
  if (const Type* t = ctx.inputType(0)) {
    ctx.setOutputType(0, *t);
  } else {
    ctx.setOutputUnknownRank(0, ctx.inputDtype(0));
  }
  if (auto sym = ctx.inputSymbolic(0)) ctx.setOutputSymbolic(0, *sym);
}

// The input itself (its storage shared, copied on write): a tensor, a sequence or an optional.
void computeIdentity(ComputeContext& ctx) {
  ctx.output(0) = ctx.input(0);
}

}  // namespace

void registerShapeOps(OpRegistry& r) {
  for (int v : {1, 9, 11, 12, 13, 19, 21, 23, 24, 25})
    r.add({"", "Constant", v, inferConstant, computeConstant});
  for (int v : {1, 13, 15, 19, 21, 23, 24, 25})
    r.add({"", "Shape", v, inferShape, computeShape});
  for (int v : {1, 13, 19, 21, 23, 24, 25})
    r.add({"", "Size", v, inferSize, computeSize});
  for (int v : {9, 20, 21, 23, 24, 25})
    r.add({"", "ConstantOfShape", v, inferConstantOfShape, computeConstantOfShape});
  for (int v : {11, 27})
    r.add({"", "Range", v, inferRange, computeRange});
  for (int v : {9, 22})
    r.add({"", "EyeLike", v, inferEyeLike, computeEyeLike});
  for (int v : {1, 13, 14, 16, 19, 21, 23, 24, 25})
    r.add({"", "Identity", v, inferIdentity, computeIdentity, kOpSizesOutputs});
}

}  // namespace onnxfold

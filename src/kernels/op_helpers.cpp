// The helpers of op_helpers.h.
#include "kernels/op_helpers.h"

namespace onnxfold {
namespace kernels {

void requireType(const InferContext& ctx, size_t i, bool ok, const char* what) {
  if (!ok) {
    ctx.unsupported("input " + std::to_string(i) + " has unsupported type " +
                    std::string(dataTypeName(ctx.inputDtype(i))) + " (expected " + what + ")");
  }
}

void requireType(const InferContext& ctx, size_t i, bool (*ok)(DataType), const char* what) {
  const DataType t = ctx.inputDtype(i);
  requireType(ctx, i, t == DataType::kUndefined || ok(t), what);
}

// Integer elements (any integer storage) as int64.
std::vector<int64_t> readInts(const OpContext& ctx, const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numElements()));
  const bool ok = dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<int64_t>(t.at<T>(i));
    } else {
      ctx.fail("expected an integer tensor, got " + std::string(dataTypeName(t.dtype())));
    }
  });
  if (!ok) ctx.fail("expected an integer tensor, got " + std::string(dataTypeName(t.dtype())));
  return v;
}

// Elements of any numeric tensor as doubles (reads with memcpy: infer() sees
// unaligned views).
std::vector<double> toDoubles(const OpContext& ctx, const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numElements()));
  const bool ok = dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = toDouble(t.at<T>(i));
  });
  if (!ok) ctx.unsupported("unsupported element type " + std::string(dataTypeName(t.dtype())));
  return v;
}

void fromDoubles(const OpContext& ctx, Tensor& t, const std::vector<double>& v) {
  const bool ok = dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = mutableDataAs<T>(t);
    for (size_t i = 0; i < v.size(); ++i)
      p[i] = fromDouble<T>(v[i]);
  });
  if (!ok) ctx.unsupported("unsupported element type " + std::string(dataTypeName(t.dtype())));
}

// The first dim of `s` (or a fresh symbol when rank or dim is unknown).
Dim dimOr(InferContext& ctx, const Shape* s, size_t i) {
  if (s != nullptr && i < s->rank()) {
    const Dim& d = s->dims[i];
    if (d.isKnown() || !d.param.empty()) return d;
  }
  return ctx.newSymbol();
}

std::vector<std::string> attrStrings(const OpContext& ctx, std::string_view name) {
  const Attribute* a = ctx.attr(name);
  return a != nullptr ? a->strings : std::vector<std::string>{};
}

const Tensor* attrTensor(const OpContext& ctx, std::string_view name) {
  const Attribute* a = ctx.attr(name);
  return a != nullptr && a->type == AttrType::kTensor ? &a->t : nullptr;
}

void setSameShape(InferContext& ctx, size_t out, DataType t, size_t in) {
  if (const Shape* s = ctx.inputShape(in)) {
    ctx.setOutput(out, t, *s);
  } else {
    ctx.setOutputUnknownRank(out, t);
  }
}

void inferSameAsInput0(InferContext& ctx) {
  setSameShape(ctx, 0, ctx.inputDtype(0), 0);
}

bool isSpaceCharRaw(uint8_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

}  // namespace kernels
}  // namespace onnxfold

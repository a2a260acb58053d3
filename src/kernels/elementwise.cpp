// The non-template machinery of elementwise.h: type classes, the broadcasting
// plan (legacy axis broadcasting included), the inference helpers, the reading
// of partly symbolic shape values and registration.
#include "kernels/elementwise.h"

#include <string>

namespace onnxfold::kernels::elementwise {

uint32_t classOf(DataType t) {
  if (t == DataType::kBool) return kB;
  if (t == DataType::kString) return kStr;
  if (t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 ||
      t == DataType::kBfloat16) {
    return kF;
  }
  if (isSignedInteger(t)) return kS;
  if (isUnsignedInteger(t)) return kU;
  if (t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E4M3FNUZ ||
      t == DataType::kFloat8E5M2 || t == DataType::kFloat8E5M2FNUZ) {
    return kF8;
  }
  return 0;
}

void requireType(const OpContext& ctx, DataType t, uint32_t mask, const char* what) {
  if (t == DataType::kUndefined || (classOf(t) & mask) != 0) return;
  ctx.unsupported(std::string(what) + " type " + std::string(dataTypeName(t)) +
                  " is not supported");
}

[[noreturn]] void failType(const OpContext& ctx, DataType t) {
  ctx.unsupported("type " + std::string(dataTypeName(t)) + " is not supported");
}

Plan makePlan(const OpContext& ctx, const std::vector<int64_t>& out,
              const std::vector<std::vector<int64_t>>& ins) {
  const size_t rank = out.size();
  const size_t k = ins.size();
  Plan p;
  p.total = kernels::product(out, 0, rank);
  std::vector<std::vector<bool>> flags;  // per collapsed axis: input broadcasts there
  for (size_t ax = 0; ax < rank; ++ax) {
    if (out[ax] == 1) continue;
    std::vector<bool> f(k);
    for (size_t j = 0; j < k; ++j) {
      const size_t r = ins[j].size();
      if (r > rank) ctx.fail("an input has a higher rank than the output");
      const int64_t d = ax < rank - r ? 1 : ins[j][ax - (rank - r)];
      if (d != 1 && d != out[ax]) ctx.fail("input shapes do not broadcast to the output");
      f[j] = d == 1;
    }
    if (!flags.empty() && flags.back() == f) {
      // Wrapping: an empty output's other dims may overflow int64 (runPlan never reads them).
      p.dims.back() = wrapMul(p.dims.back(), out[ax]);
    } else {
      p.dims.push_back(out[ax]);
      flags.push_back(std::move(f));
    }
  }
  if (p.dims.empty()) {
    p.dims.push_back(1);
    flags.emplace_back(k, true);
  }
  p.strides.assign(k, std::vector<int64_t>(p.dims.size(), 0));
  for (size_t j = 0; j < k; ++j) {
    int64_t s = 1;
    for (size_t c = p.dims.size(); c-- > 0;) {
      if (flags[c][j]) continue;
      p.strides[j][c] = s;
      s = wrapMul(s, p.dims[c]);
    }
  }
  return p;
}

namespace {

// Legacy (opset < 7) broadcasting: with broadcast=1 and `axis`, B's dims align
// with A's starting at `axis`; pad B with trailing 1s so numpy rules apply.
bool legacyAxisBroadcast(const OpContext& ctx) {
  return ctx.opset() < 7 && ctx.attrInt("broadcast", 0) == 1 && ctx.hasAttr("axis");
}
template <class D>
std::vector<D> legacyPad(const OpContext& ctx, size_t rank_a, std::vector<D> b, D one) {
  int64_t axis = ctx.attrInt("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(rank_a);
  // b.size() > rank_a - axis, not axis + b.size() > rank_a: the attribute may be INT64_MAX.
  if (axis < 0 || static_cast<int64_t>(b.size()) > static_cast<int64_t>(rank_a) - axis) {
    ctx.fail("legacy broadcast axis " + std::to_string(axis) + " does not fit");
  }
  b.resize(rank_a - static_cast<size_t>(axis), one);
  return b;
}

}  // namespace

std::vector<int64_t> effectiveDimsB(const OpContext& ctx, const Tensor& a, const Tensor& b) {
  if (!legacyAxisBroadcast(ctx)) return b.dims();
  return legacyPad<int64_t>(ctx, a.rank(), b.dims(), 1);
}

// ------------------------------------------------------------ inference helpers

void inferBroadcast(InferContext& ctx, size_t first, size_t count, DataType dtype) {
  std::optional<Shape> s;
  for (size_t i = first; i < first + count; ++i) {
    const Shape* si = ctx.inputShape(i);
    if (si == nullptr) {
      ctx.setOutputUnknownRank(0, dtype);
      return;
    }
    Shape cur = *si;
    if (i == 1 && first == 0 && legacyAxisBroadcast(ctx) && ctx.inputShape(0) != nullptr) {
      cur.dims = legacyPad<Dim>(ctx, ctx.inputShape(0)->rank(), cur.dims, Dim::known(1));
    }
    if (!s) {
      s = std::move(cur);
      continue;
    }
    std::optional<Shape> b = kernels::broadcastShapes(*s, cur);
    if (!b) ctx.fail("input shapes cannot be broadcast together");
    s = std::move(b);
  }
  ctx.setOutput(0, dtype, std::move(*s));
}

DataType firstKnownDtype(const InferContext& ctx, size_t first, size_t count) {
  for (size_t i = first; i < first + count; ++i) {
    const DataType t = ctx.inputDtype(i);
    if (t != DataType::kUndefined) return t;
  }
  return DataType::kUndefined;
}

void requireSameTypes(const InferContext& ctx, size_t first, size_t count) {
  const DataType t = firstKnownDtype(ctx, first, count);
  for (size_t i = first; i < first + count; ++i) {
    const DataType u = ctx.inputDtype(i);
    if (u != DataType::kUndefined && u != t) {
      ctx.fail("inputs have different types (" + std::string(dataTypeName(t)) + " and " +
               std::string(dataTypeName(u)) + ")");
    }
  }
}

std::optional<std::vector<SymElem>> symbolicElems(const InferContext& ctx, size_t i) {
  std::vector<SymElem> out;
  if (const Tensor* t = ctx.inputValue(i)) {
    if (t->rank() > 1 || t->numElements() > 64) return std::nullopt;
    if (t->dtype() != DataType::kInt64 && t->dtype() != DataType::kInt32) return std::nullopt;
    for (int64_t k = 0; k < t->numElements(); ++k) {
      SymElem e;
      e.known = true;
      e.v = t->dtype() == DataType::kInt64 ? t->at<int64_t>(static_cast<size_t>(k))
                                           : t->at<int32_t>(static_cast<size_t>(k));
      out.push_back(e);
    }
    return out;
  }
  std::optional<SymbolicValue> sv = ctx.inputSymbolic(i);
  if (!sv) return std::nullopt;
  for (const Dim& d : *sv) {
    SymElem e;
    // Without a symbol an element is a plain value (-1 in a Reshape target): every
    // unknown element gets a symbol where it is made (Shape, the arithmetic below).
    e.known = d.isKnown() || d.param.empty();
    e.v = d.value;
    e.dim = d;
    out.push_back(e);
  }
  return out;
}

std::optional<SymPair> symbolicPair(const InferContext& ctx, size_t ia, size_t ib) {
  const Shape* s0 = ctx.inputShape(ia);
  const Shape* s1 = ctx.inputShape(ib);
  if (s0 == nullptr || s1 == nullptr || s0->rank() > 1 || s1->rank() > 1) return std::nullopt;
  std::optional<std::vector<SymElem>> a = symbolicElems(ctx, ia);
  std::optional<std::vector<SymElem>> b = symbolicElems(ctx, ib);
  if (!a || !b) return std::nullopt;
  const size_t na = a->size(), nb = b->size();
  if (na != nb && na != 1 && nb != 1) return std::nullopt;
  SymPair p;
  // An empty side broadcasts the other to nothing (max() would read its element 0).
  p.n = na == 0 || nb == 0 ? 0 : std::max(na, nb);
  p.scalar = s0->rank() == 0 && s1->rank() == 0;
  for (size_t i = 0; i < p.n; ++i) {
    p.a.push_back((*a)[na == 1 ? 0 : i]);
    p.b.push_back((*b)[nb == 1 ? 0 : i]);
  }
  return p;
}

void setSymbolicResult(InferContext& ctx, DataType dt, const std::vector<SymElem>& r, bool scalar) {
  const bool all_known = std::all_of(r.begin(), r.end(), [](const SymElem& z) { return z.known; });
  if (all_known) {
    const auto n = static_cast<int64_t>(r.size());
    Tensor t(dt, scalar ? std::vector<int64_t>{} : std::vector<int64_t>{n});
    for (size_t i = 0; i < r.size(); ++i) {
      if (dt == DataType::kInt64)
        mutableDataAs<int64_t>(t)[i] = r[i].v;
      else
        mutableDataAs<int32_t>(t)[i] = static_cast<int32_t>(r[i].v);
    }
    ctx.setOutputValue(0, std::move(t));
    return;
  }
  SymbolicValue out;
  for (const SymElem& z : r) {
    Dim d = z.dim;
    if (z.known) {
      d = Dim();
      d.value = z.v;  // negative values stay values (a -1 in a Reshape target)
    } else if (d.param.empty()) {
      d = ctx.newSymbol();  // unnamed, it would read as the value -1
    }
    out.push_back(d);
  }
  ctx.setOutputSymbolic(0, std::move(out));
}

void addVersions(OpRegistry& r, std::string_view op, std::initializer_list<int> versions,
                 InferFn infer, ComputeFn compute) {
  for (int v : versions)
    r.add(OpEntry{"", op, v, infer, compute, kOpDefault});
}

}  // namespace onnxfold::kernels::elementwise

// The ops that order elements by value: TopK, Unique, ArgMax and ArgMin, which
// share numpy's sort order (NaN after every number). See op_registry.h for the
// infer()/compute() contract.
//
// Data-dependent output sizes (Unique, TopK's k) are read from the input
// values when they are known and are fresh symbols otherwise. 16-bit floats
// compare as float.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/common.h"
#include "kernels/indexing.h"

namespace onnxfold {
namespace {

using namespace kernels;

// Comparable key of an element: 16-bit floats compare as float.
template <class T>
auto keyOf(T v) {
  if constexpr (kIsHalfLike<T>)
    return static_cast<float>(toDouble(v));
  else
    return v;
}

template <class K>
bool isNan(K v) {
  if constexpr (std::is_floating_point_v<K>)
    return std::isnan(v);
  else
    return false;
}

// Strict weak order with NaN after every number (numpy's sort order).
template <class K>
bool lessNanLast(K a, K b) {
  if constexpr (std::is_floating_point_v<K>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

// ------------------------------------------------------------------ TopK

std::optional<int64_t> topKValue(const InferContext& ctx) {
  if (ctx.opset() < 10) return ctx.attrInt("k", -1);
  const Tensor* kv = ctx.inputValue(1);
  if (kv == nullptr) return std::nullopt;
  const std::vector<int64_t> k = toInt64Vector(ctx, *kv);
  if (k.size() != 1) ctx.fail("K must hold exactly one value");
  return k[0];
}

void inferTopK(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  const Shape* xs = ctx.inputShape(0);
  if (xs == nullptr) {
    ctx.setOutputUnknownRank(0, dt);
    if (ctx.numOutputs() > 1) ctx.setOutputUnknownRank(1, DataType::kInt64);
    return;
  }
  const int64_t axis = normalizeAxis(ctx, ctx.attrInt("axis"), static_cast<int64_t>(xs->rank()));
  Shape out = *xs;
  Dim& d = out.dims[static_cast<size_t>(axis)];
  const std::optional<int64_t> k = topKValue(ctx);
  if (k) {
    if (*k < 0) ctx.fail("k must be >= 0");
    if (d.isKnown() && *k > d.value)
      ctx.fail("k = " + std::to_string(*k) + " exceeds the axis size " + std::to_string(d.value));
    d = Dim::known(*k);
  } else {
    d = ctx.newSymbol();
  }
  ctx.setOutput(0, dt, out);
  if (ctx.numOutputs() > 1) ctx.setOutput(1, DataType::kInt64, out);
}

void computeTopK(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const auto& xd = x.dims();
  const auto axis =
      static_cast<size_t>(normalizeAxis(ctx, ctx.attrInt("axis"), static_cast<int64_t>(xd.size())));
  const bool largest = ctx.opset() < 11 || ctx.attrInt("largest") != 0;
  const int64_t n = xd[axis];
  const int64_t outer = product(xd, 0, axis);
  const int64_t inner = product(xd, axis + 1, xd.size());
  const Tensor& vals = ctx.output(0);
  const int64_t k = vals.dims()[axis];
  Tensor* values = ctx.hasOutput(0) ? &ctx.output(0) : nullptr;
  Tensor* indices = ctx.hasOutput(1) ? &ctx.output(1) : nullptr;
  const bool ok = dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = dataAs<T>(x);
    T* vo = values ? mutableDataAs<T>(*values) : nullptr;
    int64_t* io = indices ? mutableDataAs<int64_t>(*indices) : nullptr;
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < inner; ++j) {
        const T* row = in + o * n * inner + j;
        std::iota(order.begin(), order.end(), 0);
        // Ties keep the smaller index first; NaN counts as the largest value.
        auto cmp = [&](int64_t a, int64_t b) {
          const auto va = keyOf(row[a * inner]), vb = keyOf(row[b * inner]);
          if (largest ? lessNanLast(vb, va) : lessNanLast(va, vb)) return true;
          if (largest ? lessNanLast(va, vb) : lessNanLast(vb, va)) return false;
          return a < b;
        };
        std::partial_sort(order.begin(), order.begin() + k, order.end(), cmp);
        for (int64_t t = 0; t < k; ++t) {
          const int64_t dst = (o * k + t) * inner + j;
          if (vo) vo[dst] = row[order[static_cast<size_t>(t)] * inner];
          if (io) io[dst] = order[static_cast<size_t>(t)];
        }
      }
    }
  });
  if (!ok)
    ctx.unsupported("element type " + std::string(dataTypeName(x.dtype())) + " is not supported");
}

// ------------------------------------------------------------------ Unique

// All four outputs of Unique for a known input.
std::vector<Tensor> uniqueOutputs(const OpContext& ctx, const Tensor& x) {
  const auto& xd = x.dims();
  const bool has_axis = ctx.hasAttr("axis");
  const bool sorted = ctx.attrInt("sorted") != 0;
  size_t axis = 0;
  int64_t outer = 1, rows = x.numElements(), inner = 1;
  if (has_axis) {
    axis = static_cast<size_t>(
        normalizeAxis(ctx, ctx.attrInt("axis", 0), static_cast<int64_t>(xd.size())));
    outer = product(xd, 0, axis);
    rows = xd[axis];
    inner = product(xd, axis + 1, xd.size());
  }
  // Row r is the sub-tensor at position r along the axis (an element without axis).
  std::vector<int64_t> order(static_cast<size_t>(rows));
  std::iota(order.begin(), order.end(), 0);
  std::vector<bool> same_as_prev(order.size(), false);
  auto sortRows = [&](auto elem_less, auto elem_eq) {
    auto row_cmp = [&](int64_t a, int64_t b) {  // -1, 0, 1 lexicographically
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t j = 0; j < inner; ++j) {
          const int64_t ia = (o * rows + a) * inner + j, ib = (o * rows + b) * inner + j;
          if (elem_eq(ia, ib)) continue;
          return elem_less(ia, ib) ? -1 : 1;
        }
      }
      return 0;
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return row_cmp(a, b) < 0; });
    for (size_t i = 1; i < order.size(); ++i)
      same_as_prev[i] = row_cmp(order[i - 1], order[i]) == 0;
  };
  if (x.dtype() == DataType::kString) {
    const auto& s = x.strings();
    sortRows([&](int64_t a, int64_t b) { return s[a] < s[b]; },
             [&](int64_t a, int64_t b) { return s[a] == s[b]; });
  } else if (!dispatchNumeric(x.dtype(), [&](auto tag) {
               using T = typename decltype(tag)::type;
               const T* p = dataAs<T>(x);
               sortRows([&](int64_t a, int64_t b) { return lessNanLast(keyOf(p[a]), keyOf(p[b])); },
                        [&](int64_t a, int64_t b) {
                          const auto va = keyOf(p[a]), vb = keyOf(p[b]);
                          return va == vb || (isNan(va) && isNan(vb));
                        });
             })) {
    ctx.unsupported("element type " + std::string(dataTypeName(x.dtype())) + " is not supported");
  }
  // Groups of equal rows, in sorted order; the stable sort puts each group's
  // first occurrence first.
  std::vector<int64_t> first, counts;
  std::vector<int64_t> group_of(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || !same_as_prev[i]) {
      first.push_back(order[i]);
      counts.push_back(0);
    }
    ++counts.back();
    group_of[static_cast<size_t>(order[i])] = static_cast<int64_t>(first.size()) - 1;
  }
  const size_t u = first.size();
  std::vector<int64_t> pos(u);  // output position of each group
  std::iota(pos.begin(), pos.end(), 0);
  if (!sorted) {
    std::vector<int64_t> by_first(u);
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(),
              [&](int64_t a, int64_t b) { return first[a] < first[b]; });
    for (size_t p = 0; p < u; ++p)
      pos[static_cast<size_t>(by_first[p])] = static_cast<int64_t>(p);
  }
  std::vector<int64_t> ydims = has_axis ? xd : std::vector<int64_t>{};
  if (has_axis)
    ydims[axis] = static_cast<int64_t>(u);
  else
    ydims.push_back(static_cast<int64_t>(u));
  std::vector<Tensor> outs;
  outs.emplace_back(x.dtype(), ydims);
  outs.emplace_back(DataType::kInt64, std::vector<int64_t>{static_cast<int64_t>(u)});
  outs.emplace_back(DataType::kInt64, std::vector<int64_t>{rows});
  outs.emplace_back(DataType::kInt64, std::vector<int64_t>{static_cast<int64_t>(u)});
  Copier cp(ctx, x, outs[0]);
  int64_t* oi = u ? mutableDataAs<int64_t>(outs[1]) : nullptr;
  int64_t* oc = u ? mutableDataAs<int64_t>(outs[3]) : nullptr;
  for (size_t g = 0; g < u; ++g) {
    const int64_t p = pos[g];
    for (int64_t o = 0; o < outer; ++o)
      cp((o * static_cast<int64_t>(u) + p) * inner, (o * rows + first[g]) * inner, inner);
    oi[p] = first[g];
    oc[p] = counts[g];
  }
  int64_t* inv = rows ? mutableDataAs<int64_t>(outs[2]) : nullptr;
  for (int64_t r = 0; r < rows; ++r)
    inv[r] = pos[static_cast<size_t>(group_of[static_cast<size_t>(r)])];
  return outs;
}

void inferUnique(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  if (const Tensor* xv = ctx.inputValue(0)) {
    std::vector<Tensor> outs = uniqueOutputs(ctx, *xv);
    for (size_t i = 0; i < ctx.numOutputs() && i < outs.size(); ++i)
      ctx.setOutputValue(i, std::move(outs[i]));
    return;
  }
  const Shape* xs = ctx.inputShape(0);
  const Dim u = ctx.newSymbol();
  Dim rows;
  if (ctx.hasAttr("axis")) {
    if (xs == nullptr) {
      ctx.setOutputUnknownRank(0, dt);
    } else {
      const auto axis = static_cast<size_t>(
          normalizeAxis(ctx, ctx.attrInt("axis", 0), static_cast<int64_t>(xs->rank())));
      Shape y = *xs;
      rows = y.dims[axis];
      y.dims[axis] = u;
      ctx.setOutput(0, dt, y);
    }
  } else {
    ctx.setOutput(0, dt, Shape{{u}, {}});
    if (auto d = inputStaticDims(ctx, 0)) rows = Dim::known(numel(*d));
  }
  if (ctx.numOutputs() > 1) ctx.setOutput(1, DataType::kInt64, Shape{{u}, {}});
  if (ctx.numOutputs() > 2) ctx.setOutput(2, DataType::kInt64, Shape{{rows}, {}});
  if (ctx.numOutputs() > 3) ctx.setOutput(3, DataType::kInt64, Shape{{u}, {}});
}

void computeUnique(ComputeContext& ctx) {
  std::vector<Tensor> outs = uniqueOutputs(ctx, ctx.input(0));
  for (size_t i = 0; i < ctx.numOutputs() && i < outs.size(); ++i) {
    if (!ctx.hasOutput(i)) continue;
    Tensor& o = ctx.output(i);
    if (o.dims() != outs[i].dims()) ctx.fail("internal: Unique shape differs from inference");
    Copier(ctx, outs[i], o)(0, 0, o.numElements());
  }
}

// ------------------------------------------------------------------ ArgMax / ArgMin

void inferArg(InferContext& ctx) {
  const Shape* xs = ctx.inputShape(0);
  if (xs == nullptr) {
    ctx.setOutputUnknownRank(0, DataType::kInt64);
    return;
  }
  const auto axis = static_cast<size_t>(
      normalizeAxis(ctx, ctx.attrInt("axis"), static_cast<int64_t>(xs->rank())));
  Shape out = *xs;
  if (ctx.attrInt("keepdims") != 0)
    out.dims[axis] = Dim::known(1);
  else
    out.dims.erase(out.dims.begin() + static_cast<int64_t>(axis));
  ctx.setOutput(0, DataType::kInt64, out);
}

template <bool kMax>
void computeArg(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const auto& xd = x.dims();
  const auto axis =
      static_cast<size_t>(normalizeAxis(ctx, ctx.attrInt("axis"), static_cast<int64_t>(xd.size())));
  const bool last = ctx.opset() >= 12 && ctx.attrInt("select_last_index") != 0;
  const int64_t outer = product(xd, 0, axis);
  const int64_t n = xd[axis];
  const int64_t inner = product(xd, axis + 1, xd.size());
  if (n == 0) ctx.fail("cannot take the arg of an empty axis");
  int64_t* o = mutableDataAs<int64_t>(ctx.output(0));
  const bool ok = dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = dataAs<T>(x);
    for (int64_t b = 0; b < outer; ++b) {
      for (int64_t j = 0; j < inner; ++j) {
        const T* row = in + b * n * inner + j;
        int64_t best = 0;
        auto bv = keyOf(row[0]);
        for (int64_t t = 1; t < n; ++t) {
          const auto v = keyOf(row[t * inner]);
          if (isNan(bv)) break;  // numpy: the first NaN wins
          const bool better = kMax ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv);
          if (better || isNan(v)) {
            best = t;
            bv = v;
          }
        }
        o[b * inner + j] = best;
      }
    }
  });
  if (!ok)
    ctx.unsupported("element type " + std::string(dataTypeName(x.dtype())) + " is not supported");
}

}  // namespace

void registerSortingOps(OpRegistry& r) {
  for (int v : {1, 10, 11, 24})
    r.add({"", "TopK", v, inferTopK, computeTopK});
  r.add({"", "Unique", 11, inferUnique, computeUnique});
  for (int v : {1, 11, 12, 13}) {
    r.add({"", "ArgMax", v, inferArg, computeArg<true>});
    r.add({"", "ArgMin", v, inferArg, computeArg<false>});
  }
}

}  // namespace onnxfold

// The scatter family: Scatter (deprecated), ScatterElements, ScatterND (with
// their reductions) and TensorScatter, which writes updates into a KV cache.
// See op_registry.h for the infer()/compute() contract.
//
// Plain writes copy raw element bytes (every fixed-width dtype and strings);
// reductions dispatch over the numeric types and compute 16-bit floats in float.
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/common.h"
#include "kernels/elementwise.h"
#include "kernels/indexing.h"
#include "kernels/op_helpers.h"

namespace onnxfold {
namespace {

using namespace kernels;

void requireNumeric(const OpContext& ctx, DataType dt) {
  if (!dispatchNumeric(dt, [](auto) {})) {
    ctx.unsupported("element type " + std::string(dataTypeName(dt)) + " is not supported");
  }
}

// ------------------------------------------------------------------ scatter family

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Reduction parseReduction(const OpContext& ctx) {
  const std::string s = ctx.attrString("reduction", "none");
  if (s == "none") return Reduction::kNone;
  if (ctx.opset() >= 16 && s == "add") return Reduction::kAdd;
  if (ctx.opset() >= 16 && s == "mul") return Reduction::kMul;
  if (ctx.opset() >= 18 && s == "max") return Reduction::kMax;
  if (ctx.opset() >= 18 && s == "min") return Reduction::kMin;
  ctx.unsupported("reduction '" + s + "' is not supported at opset " + std::to_string(ctx.opset()));
}

template <class T>
T combine(T a, T b, Reduction r) {
  if constexpr (kIsHalfLike<T>) {
    return fromDouble<T>(
        combine<float>(static_cast<float>(toDouble(a)), static_cast<float>(toDouble(b)), r));
  } else if constexpr (std::is_same_v<T, bool>) {
    switch (r) {
      case Reduction::kAdd:
      case Reduction::kMax:
        return a || b;
      case Reduction::kMul:
      case Reduction::kMin:
        return a && b;
      default:
        return b;
    }
  } else {
    switch (r) {
      case Reduction::kAdd:  // integers wrap (signed overflow is undefined behaviour)
        return elementwise::wrapAdd(a, b);
      case Reduction::kMul:
        return elementwise::wrapMul(a, b);
      case Reduction::kMax:
        return std::max(a, b);
      case Reduction::kMin:
        return std::min(a, b);
      default:
        return b;
    }
  }
}

// Applies updates[u .. u+n) to out[o .. o+n) with the reduction.
class Scatterer {
 public:
  Scatterer(const OpContext& ctx, const Tensor& updates, Tensor& out, Reduction red)
      : ctx_(ctx), cp_(ctx, updates, out), red_(red), updates_(updates), out_(out) {
    if (red != Reduction::kNone) requireNumeric(ctx, out.dtype());
  }
  void operator()(int64_t o, int64_t u, int64_t n) const {
    if (red_ == Reduction::kNone) {
      cp_(o, u, n);
      return;
    }
    dispatchNumeric(out_.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* dst = reinterpret_cast<T*>(out_.mutableBytes());
      const T* src = dataAs<T>(updates_);
      for (int64_t k = 0; k < n; ++k)
        dst[o + k] = combine(dst[o + k], src[u + k], red_);
    });
  }

 private:
  const OpContext& ctx_;
  Copier cp_;
  Reduction red_;
  const Tensor& updates_;
  Tensor& out_;
};

void computeScatterElements(ComputeContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  Tensor& out = ctx.output(0);
  if (indices.dims() != updates.dims()) ctx.fail("indices and updates must have the same shape");
  if (indices.rank() != data.rank()) ctx.fail("data and indices must have the same rank");
  const auto r = static_cast<int64_t>(data.rank());
  const int64_t axis = normalizeAxis(ctx, ctx.attrInt("axis", 0), r);
  const Reduction red = ctx.opType() == "Scatter" ? Reduction::kNone : parseReduction(ctx);
  Copier(ctx, data, out)(0, 0, data.numElements());
  const std::vector<int64_t> idx = toInt64Vector(ctx, indices);
  std::vector<int64_t> strides = stridesOf(data.dims());
  const int64_t axis_stride = strides[static_cast<size_t>(axis)];
  const int64_t n = data.dims()[static_cast<size_t>(axis)];
  strides[static_cast<size_t>(axis)] = 0;
  for (size_t a = 0; a < data.rank(); ++a) {
    if (a != static_cast<size_t>(axis) && indices.dims()[a] > data.dims()[a])
      ctx.fail("indices dim " + std::to_string(a) + " exceeds the data dim");
  }
  Scatterer sc(ctx, updates, out, red);
  forEachBroadcast(indices.dims(), {strides}, [&](int64_t i, const std::vector<int64_t>& off) {
    sc(off[0] + checkIndex(ctx, idx[static_cast<size_t>(i)], n, "index") * axis_stride, i, 1);
  });
}

void computeScatterND(ComputeContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  Tensor& out = ctx.output(0);
  const auto& dd = data.dims();
  const auto& id = indices.dims();
  if (id.empty()) ctx.fail("indices must have rank >= 1");
  const auto k = static_cast<size_t>(id.back());
  if (k > dd.size()) ctx.fail("indices.shape[-1] exceeds the data rank");
  std::vector<int64_t> want(id.begin(), id.end() - 1);
  want.insert(want.end(), dd.begin() + static_cast<int64_t>(k), dd.end());
  if (updates.dims() != want) ctx.fail("updates shape must be indices.shape[:-1] + data.shape[k:]");
  const Reduction red = parseReduction(ctx);
  Copier(ctx, data, out)(0, 0, data.numElements());
  const std::vector<int64_t> idx = toInt64Vector(ctx, indices);
  const int64_t tuples = product(id, 0, id.size() - 1);
  const int64_t slice = product(dd, k, dd.size());
  const std::vector<int64_t> strides = stridesOf(dd);
  Scatterer sc(ctx, updates, out, red);
  for (int64_t t = 0; t < tuples; ++t)
    sc(tupleOffset(ctx, idx, t, k, dd, strides, 0), t * slice, slice);
}

// TensorScatter (opset 24): writes `update` into a KV cache along `axis`.
void computeTensorScatter(ComputeContext& ctx) {
  const Tensor& past = ctx.input(0);
  const Tensor& update = ctx.input(1);
  Tensor& out = ctx.output(0);
  const auto& pd = past.dims();
  const auto& ud = update.dims();
  const auto r = static_cast<int64_t>(pd.size());
  if (ud.size() != pd.size()) ctx.fail("update must have the rank of past_cache");
  const auto axis = static_cast<size_t>(normalizeAxis(ctx, ctx.attrInt("axis"), r));
  if (axis == 0) ctx.fail("axis cannot be the batch dimension 0");
  for (size_t a = 0; a < pd.size(); ++a) {
    if (a != axis && pd[a] != ud[a]) ctx.fail("update and past_cache differ outside the axis");
  }
  const std::string mode = ctx.attrString("mode");
  if (mode != "linear" && mode != "circular") ctx.fail("mode must be linear or circular");
  const int64_t max_len = pd[axis];
  const int64_t seq = ud[axis];
  std::vector<int64_t> wi;
  if (ctx.hasInput(2)) wi = toInt64Vector(ctx, ctx.input(2));
  if (!wi.empty() && static_cast<int64_t>(wi.size()) != pd[0])
    ctx.fail("write_indices must have batch_size elements");
  Copier cp(ctx, past, out);
  cp(0, 0, past.numElements());
  Copier ucp(ctx, update, out);
  const int64_t prefix = product(pd, 0, axis);
  const int64_t per_batch = product(pd, 1, axis);
  const int64_t inner = product(pd, axis + 1, pd.size());
  for (int64_t p = 0; p < prefix; ++p) {
    const int64_t batch = p / per_batch;
    const int64_t w = wi.empty() ? 0 : wi[static_cast<size_t>(batch)];
    for (int64_t s = 0; s < seq; ++s) {
      int64_t c = 0;
      if (!checkedAdd(w, s, &c)) ctx.fail("write index + position overflows int64");
      if (mode == "circular") {
        if (max_len == 0) ctx.fail("a circular write into an empty cache");  // % 0 is UB
        c %= max_len;
        if (c < 0) c += max_len;
      } else if (c < 0 || c >= max_len) {
        ctx.fail("write index " + std::to_string(c) + " is out of range for the cache");
      }
      ucp((p * max_len + c) * inner, (p * seq + s) * inner, inner);
    }
  }
}

}  // namespace

void registerScatterOps(OpRegistry& r) {
  for (int v : {9, 11})
    r.add({"", "Scatter", v, inferSameAsInput0, computeScatterElements});
  for (int v : {11, 13, 16, 18})
    r.add({"", "ScatterElements", v, inferSameAsInput0, computeScatterElements});
  for (int v : {11, 13, 16, 18})
    r.add({"", "ScatterND", v, inferSameAsInput0, computeScatterND});
  r.add({"", "TensorScatter", 24, inferSameAsInput0, computeTensorScatter});
}

}  // namespace onnxfold

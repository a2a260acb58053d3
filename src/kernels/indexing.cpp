// Indexing op family: ops that select, scatter or reorder elements by index.
//
//   Gather, GatherElements, GatherND, Scatter (deprecated), ScatterElements,
//   ScatterND, Slice, TopK, OneHot, Compress, NonZero, Unique, CumSum, CumProd,
//   ReverseSequence, TensorScatter, ArgMax, ArgMin.
//
// Gather and Slice also work on partly known int64 contents (SymbolicValue), so
// Shape(x:[batch,3]) -> Gather(1) folds to 3 even with a dynamic batch.
// Data-dependent output sizes (NonZero, Compress, Unique, TopK's k) are read
// from the input values when they are known and are fresh symbols otherwise.
// Pure data movement copies raw element bytes, so it covers every fixed-width
// dtype and strings; arithmetic (scatter reductions, cumulative ops, TopK,
// ArgMax) dispatches over the numeric types and computes 16-bit floats in float.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>

#include "kernels/common.h"

namespace onnxfold {
namespace {

using namespace kernels;

// ------------------------------------------------------------------ helpers

// Copies runs of elements between two tensors of the same dtype: memcpy for
// fixed-width types, string assignment for STRING. Sub-byte types are refused
// because their elements are not addressable.
class Copier {
 public:
  Copier(const OpContext& ctx, const Tensor& src, Tensor& dst) {
    if (src.dtype() != dst.dtype()) ctx.fail("internal: copy between different dtypes");
    if (src.dtype() == DataType::kString) {
      src_strings_ = &src.strings();
      dst_strings_ = &dst.mutableStrings();
      return;
    }
    const int bits = bitsPerElement(src.dtype());
    if (bits == 0 || bits % 8 != 0) {
      ctx.unsupported("element type " + std::string(dataTypeName(src.dtype())) +
                      " is not supported");
    }
    esz_ = static_cast<size_t>(bits / 8);
    src_ = src.bytes();
    dst_ = dst.numElements() > 0 ? dst.mutableBytes() : nullptr;
  }
  // dst[d .. d+n) = src[s .. s+n)
  void operator()(int64_t d, int64_t s, int64_t n) const {
    if (n <= 0) return;
    if (src_strings_ != nullptr) {
      std::copy_n(src_strings_->begin() + s, n, dst_strings_->begin() + d);
    } else {
      std::memcpy(dst_ + static_cast<size_t>(d) * esz_, src_ + static_cast<size_t>(s) * esz_,
                  static_cast<size_t>(n) * esz_);
    }
  }

 private:
  size_t esz_ = 0;
  const uint8_t* src_ = nullptr;
  uint8_t* dst_ = nullptr;
  const std::vector<std::string>* src_strings_ = nullptr;
  std::vector<std::string>* dst_strings_ = nullptr;
};

std::vector<int64_t> stridesOf(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    s[i - 1] = s[i] * dims[i];
  return s;
}

int64_t numel(const std::vector<int64_t>& dims) {
  return product(dims, 0, dims.size());
}

// An index into a dim of size n; negative counts from the end.
int64_t checkIndex(const OpContext& ctx, int64_t idx, int64_t n, const char* what) {
  const int64_t k = idx < 0 ? idx + n : idx;
  if (k < 0 || k >= n) {
    ctx.fail(std::string(what) + " " + std::to_string(idx) + " is out of range for a dim of " +
             std::to_string(n));
  }
  return k;
}

template <class T>
constexpr bool kIsHalfLike = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

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

bool isSmallIntType(DataType t) {
  return t == DataType::kInt64 || t == DataType::kInt32;
}

// A tensor holding a SymbolicValue whose elements are all known.
std::optional<Tensor> knownValueTensor(DataType dt, const std::vector<int64_t>& dims,
                                       const SymbolicValue& v) {
  for (const Dim& d : v) {
    if (!d.isKnown()) return std::nullopt;
  }
  Tensor t(dt, dims);
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == DataType::kInt64)
      mutableDataAs<int64_t>(t)[i] = v[i].value;
    else
      mutableDataAs<int32_t>(t)[i] = static_cast<int32_t>(v[i].value);
  }
  return t;
}

// Gives output 0 the value `v`: a constant when fully known, else symbolic.
void setSymbolicResult(InferContext& ctx, DataType dt, const std::vector<int64_t>& dims,
                       SymbolicValue v) {
  if (auto t = knownValueTensor(dt, dims, v)) {
    ctx.setOutputValue(0, std::move(*t));
  } else {
    ctx.setOutputSymbolic(0, std::move(v));
  }
}

// Every dim known, else null.
std::optional<std::vector<int64_t>> inputStaticDims(const InferContext& ctx, size_t i) {
  return staticDims(ctx.inputShape(i));
}

void requireNumeric(const OpContext& ctx, DataType dt) {
  if (!dispatchNumeric(dt, [](auto) {})) {
    ctx.unsupported("element type " + std::string(dataTypeName(dt)) + " is not supported");
  }
}

// ------------------------------------------------------------------ Gather

void inferGather(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  const Shape* ds = ctx.inputShape(0);
  const Shape* is = ctx.inputShape(1);
  if (ds == nullptr || is == nullptr) {
    ctx.setOutputUnknownRank(0, dt);
    return;
  }
  const auto r = static_cast<int64_t>(ds->rank());
  if (r == 0) ctx.fail("data must have rank >= 1");
  const int64_t axis = normalizeAxis(ctx, ctx.attrInt("axis", 0), r);
  Shape out;
  out.dims.assign(ds->dims.begin(), ds->dims.begin() + axis);
  out.dims.insert(out.dims.end(), is->dims.begin(), is->dims.end());
  out.dims.insert(out.dims.end(), ds->dims.begin() + axis + 1, ds->dims.end());
  ctx.setOutput(0, dt, out);

  // Shape arithmetic: Gather from a 1-D int64 value with constant indices.
  const Tensor* iv = ctx.inputValue(1);
  if (r != 1 || !isSmallIntType(dt) || iv == nullptr || iv->rank() > 1) return;
  const std::optional<SymbolicValue> sym = ctx.inputSymbolic(0);
  if (!sym) return;
  const auto n = static_cast<int64_t>(sym->size());
  SymbolicValue v;
  for (int64_t idx : toInt64Vector(ctx, *iv))
    v.push_back((*sym)[static_cast<size_t>(checkIndex(ctx, idx, n, "index"))]);
  setSymbolicResult(ctx, dt, iv->dims(), std::move(v));
}

void computeGather(ComputeContext& ctx) {
  const Tensor& data = ctx.input(0);
  Tensor& out = ctx.output(0);
  const std::vector<int64_t> idx = toInt64Vector(ctx, ctx.input(1));
  const auto& dd = data.dims();
  const auto r = static_cast<int64_t>(dd.size());
  const int64_t axis = normalizeAxis(ctx, ctx.attrInt("axis", 0), r);
  const int64_t outer = product(dd, 0, static_cast<size_t>(axis));
  const int64_t n = dd[static_cast<size_t>(axis)];
  const int64_t inner = product(dd, static_cast<size_t>(axis) + 1, dd.size());
  const auto m = static_cast<int64_t>(idx.size());
  std::vector<int64_t> norm(idx.size());
  for (size_t j = 0; j < idx.size(); ++j)
    norm[j] = checkIndex(ctx, idx[j], n, "index");
  Copier cp(ctx, data, out);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < m; ++j)
      cp((o * m + j) * inner, (o * n + norm[static_cast<size_t>(j)]) * inner, inner);
  }
}

// ------------------------------------------------------------------ GatherElements

void inferSameRankIndexed(InferContext& ctx, size_t shape_from) {
  const DataType dt = ctx.inputDtype(0);
  const Shape* s = ctx.inputShape(shape_from);
  if (s == nullptr) {
    ctx.setOutputUnknownRank(0, dt);
    return;
  }
  if (const Shape* ds = ctx.inputShape(0)) {
    if (ds->rank() != s->rank()) ctx.fail("data and indices must have the same rank");
    if (ds->rank() == 0) ctx.fail("data must have rank >= 1");
    normalizeAxis(ctx, ctx.attrInt("axis", 0), static_cast<int64_t>(ds->rank()));
  }
  ctx.setOutput(0, dt, *s);
}

void inferGatherElements(InferContext& ctx) {
  inferSameRankIndexed(ctx, 1);
}

void computeGatherElements(ComputeContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  Tensor& out = ctx.output(0);
  const auto r = static_cast<int64_t>(data.rank());
  const int64_t axis = normalizeAxis(ctx, ctx.attrInt("axis", 0), r);
  const std::vector<int64_t> idx = toInt64Vector(ctx, indices);
  std::vector<int64_t> strides = stridesOf(data.dims());
  const int64_t axis_stride = strides[static_cast<size_t>(axis)];
  const int64_t n = data.dims()[static_cast<size_t>(axis)];
  strides[static_cast<size_t>(axis)] = 0;  // the axis coordinate comes from the index
  for (size_t a = 0; a < data.rank(); ++a) {
    if (a != static_cast<size_t>(axis) && indices.dims()[a] > data.dims()[a])
      ctx.fail("indices dim " + std::to_string(a) + " exceeds the data dim");
  }
  Copier cp(ctx, data, out);
  forEachBroadcast(indices.dims(), {strides}, [&](int64_t i, const std::vector<int64_t>& off) {
    cp(i, off[0] + checkIndex(ctx, idx[static_cast<size_t>(i)], n, "index") * axis_stride, 1);
  });
}

// ------------------------------------------------------------------ GatherND

void inferGatherND(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  const Shape* ds = ctx.inputShape(0);
  const Shape* is = ctx.inputShape(1);
  const int64_t b = ctx.attrInt("batch_dims", 0);
  if (ds == nullptr || is == nullptr || is->rank() == 0 || !is->dims.back().isKnown()) {
    if (is != nullptr && is->rank() == 0) ctx.fail("indices must have rank >= 1");
    ctx.setOutputUnknownRank(0, dt);
    return;
  }
  const auto r = static_cast<int64_t>(ds->rank());
  const auto q = static_cast<int64_t>(is->rank());
  const int64_t k = is->dims.back().value;
  if (b < 0 || b >= std::min(r, q))
    ctx.fail("batch_dims must be in [0, min(rank(data), rank(indices)))");
  if (b + k > r) ctx.fail("indices.shape[-1] + batch_dims exceeds the data rank");
  Shape out;
  out.dims.assign(is->dims.begin(), is->dims.end() - 1);
  out.dims.insert(out.dims.end(), ds->dims.begin() + b + k, ds->dims.end());
  ctx.setOutput(0, dt, out);
}

void computeGatherND(ComputeContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  Tensor& out = ctx.output(0);
  const auto& dd = data.dims();
  const auto& id = indices.dims();
  const auto b = static_cast<size_t>(ctx.attrInt("batch_dims", 0));
  const auto k = static_cast<size_t>(id.back());
  for (size_t a = 0; a < b; ++a) {
    if (dd[a] != id[a]) ctx.fail("batch dims of data and indices differ");
  }
  const std::vector<int64_t> idx = toInt64Vector(ctx, indices);
  const int64_t batches = product(dd, 0, b);
  const int64_t per_batch = product(id, b, id.size() - 1);  // index tuples per batch
  const int64_t slice = product(dd, b + k, dd.size());
  const int64_t data_batch = product(dd, b, dd.size());
  const std::vector<int64_t> strides = stridesOf(dd);
  Copier cp(ctx, data, out);
  for (int64_t bi = 0; bi < batches; ++bi) {
    for (int64_t t = 0; t < per_batch; ++t) {
      const int64_t tuple = bi * per_batch + t;
      int64_t off = bi * data_batch;
      for (size_t j = 0; j < k; ++j) {
        const int64_t v = idx[static_cast<size_t>(tuple) * k + j];
        off += checkIndex(ctx, v, dd[b + j], "index") * strides[b + j];
      }
      cp(tuple * slice, off, slice);
    }
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
      case Reduction::kAdd:
        return static_cast<T>(a + b);
      case Reduction::kMul:
        return static_cast<T>(a * b);
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

void inferScatterLike(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  if (const Shape* s = ctx.inputShape(0))
    ctx.setOutput(0, dt, *s);
  else
    ctx.setOutputUnknownRank(0, dt);
}

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
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (size_t j = 0; j < k; ++j)
      off += checkIndex(ctx, idx[static_cast<size_t>(t) * k + j], dd[j], "index") * strides[j];
    sc(off, t * slice, slice);
  }
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
  const auto axis = static_cast<size_t>(normalizeAxis(ctx, ctx.attrInt("axis", -2), r));
  if (axis == 0) ctx.fail("axis cannot be the batch dimension 0");
  for (size_t a = 0; a < pd.size(); ++a) {
    if (a != axis && pd[a] != ud[a]) ctx.fail("update and past_cache differ outside the axis");
  }
  const std::string mode = ctx.attrString("mode", "linear");
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
      int64_t c = w + s;
      if (mode == "circular") {
        c %= max_len;
        if (c < 0) c += max_len;
      } else if (c < 0 || c >= max_len) {
        ctx.fail("write index " + std::to_string(c) + " is out of range for the cache");
      }
      ucp((p * max_len + c) * inner, (p * seq + s) * inner, inner);
    }
  }
}

// ------------------------------------------------------------------ Slice

struct SliceArgs {
  std::vector<int64_t> starts, ends, axes, steps;
};

// starts/ends/axes/steps from attributes (opset < 10) or inputs 1..4; nullopt
// when an input value is unknown. `axes_known` tells whether the sliced axes are.
template <class Get>
std::optional<SliceArgs> readSliceArgs(const OpContext& ctx, int64_t rank, Get get,
                                       bool* axes_known) {
  SliceArgs a;
  *axes_known = true;
  if (ctx.opset() < 10) {
    a.starts = ctx.attrInts("starts");
    a.ends = ctx.attrInts("ends");
    a.axes = ctx.attrInts("axes");
    if (!ctx.hasAttr("starts") || !ctx.hasAttr("ends")) ctx.fail("starts and ends are required");
  } else {
    bool present = false;
    const Tensor* axes = get(3, &present);
    if (present && axes == nullptr) *axes_known = false;
    if (axes != nullptr) a.axes = toInt64Vector(ctx, *axes);
    const Tensor* starts = get(1, &present);
    const Tensor* ends = get(2, &present);
    const Tensor* steps = get(4, &present);
    const bool steps_unknown = present && steps == nullptr;
    if (starts == nullptr || ends == nullptr || steps_unknown || !*axes_known) return std::nullopt;
    a.starts = toInt64Vector(ctx, *starts);
    a.ends = toInt64Vector(ctx, *ends);
    if (steps != nullptr) a.steps = toInt64Vector(ctx, *steps);
  }
  if (a.axes.empty()) {
    a.axes.resize(a.starts.size());
    std::iota(a.axes.begin(), a.axes.end(), 0);
  }
  if (a.steps.empty()) a.steps.assign(a.starts.size(), 1);
  if (a.starts.size() != a.ends.size() || a.starts.size() != a.axes.size() ||
      a.starts.size() != a.steps.size()) {
    ctx.fail("starts, ends, axes and steps must have the same length");
  }
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& ax : a.axes) {
    ax = normalizeAxis(ctx, ax, rank);
    if (seen[static_cast<size_t>(ax)]) ctx.fail("axes must not repeat");
    seen[static_cast<size_t>(ax)] = true;
  }
  for (int64_t s : a.steps) {
    if (s == 0) ctx.fail("steps must not be 0");
  }
  return a;
}

struct AxisRange {
  int64_t start, step, len;
};

// ONNX Slice clamping for one axis of size d.
AxisRange sliceAxis(int64_t d, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += d;
  if (end < 0) end += d;
  int64_t len;
  // 1 + (span - 1) / |step|: no intermediate overflows, even for steps of +-2^63.
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, d);
    end = std::clamp<int64_t>(end, 0, d);
    len = end > start ? 1 + (end - start - 1) / step : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, d - 1);
    end = std::clamp<int64_t>(end, -1, d - 1);
    const uint64_t magnitude = 0 - static_cast<uint64_t>(step);
    len = start > end ? 1 + static_cast<int64_t>(static_cast<uint64_t>(start - end - 1) / magnitude)
                      : 0;
  }
  // A step that takes one element never moves: 1 keeps offset arithmetic in range.
  if (len <= 1) step = 1;
  return {start, step, len};
}

void inferSlice(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  const Shape* ds = ctx.inputShape(0);
  if (ds == nullptr) {
    ctx.setOutputUnknownRank(0, dt);
    return;
  }
  const auto r = static_cast<int64_t>(ds->rank());
  bool axes_known = false;
  auto get = [&](size_t i, bool* present) -> const Tensor* {
    *present = ctx.hasInput(i);
    return ctx.inputValue(i);
  };
  const std::optional<SliceArgs> args = readSliceArgs(ctx, r, get, &axes_known);
  Shape out = *ds;
  if (!args) {
    // Rank is kept; sliced axes (all when unknown) get fresh symbols.
    std::vector<int64_t> axes;
    if (axes_known && ctx.hasInput(3)) axes = toInt64Vector(ctx, *ctx.inputValue(3));
    if (axes_known && !axes.empty()) {
      for (int64_t ax : axes)
        out.dims[static_cast<size_t>(normalizeAxis(ctx, ax, r))] = ctx.newSymbol();
    } else {
      for (Dim& d : out.dims)
        d = ctx.newSymbol();
    }
    ctx.setOutput(0, dt, out);
    return;
  }
  constexpr int64_t kToEnd = std::numeric_limits<int32_t>::max();
  for (size_t i = 0; i < args->axes.size(); ++i) {
    Dim& d = out.dims[static_cast<size_t>(args->axes[i])];
    const int64_t start = args->starts[i], end = args->ends[i], step = args->steps[i];
    if (d.isKnown()) {
      d = Dim::known(sliceAxis(d.value, start, end, step).len);
    } else if (!((step == 1 && start == 0 && end >= kToEnd) ||
                 (step == -1 && start >= kToEnd && end <= -kToEnd))) {
      d = ctx.newSymbol();  // the whole axis keeps its symbol; anything else is unknown
    }
  }
  ctx.setOutput(0, dt, out);

  // Shape arithmetic on a 1-D int64 value.
  if (r != 1 || !isSmallIntType(dt)) return;
  const std::optional<SymbolicValue> sym = ctx.inputSymbolic(0);
  if (!sym) return;
  const auto n = static_cast<int64_t>(sym->size());
  AxisRange ar{0, 1, n};
  if (!args->axes.empty()) ar = sliceAxis(n, args->starts[0], args->ends[0], args->steps[0]);
  SymbolicValue v;
  for (int64_t k = 0; k < ar.len; ++k)
    v.push_back((*sym)[static_cast<size_t>(ar.start + k * ar.step)]);
  setSymbolicResult(ctx, dt, {ar.len}, std::move(v));
}

// out[i...] = in[start + i*step ...] over every axis; the innermost axis is
// copied as one run when its step is 1.
void stridedCopy(const Copier& cp, const std::vector<int64_t>& in_dims,
                 const std::vector<int64_t>& out_dims, const std::vector<int64_t>& start,
                 const std::vector<int64_t>& step) {
  const size_t r = in_dims.size();
  if (numel(out_dims) == 0) return;
  if (r == 0) {
    cp(0, 0, 1);
    return;
  }
  const std::vector<int64_t> strides = stridesOf(in_dims);
  const int64_t inner = out_dims[r - 1];
  const int64_t rows = product(out_dims, 0, r - 1);
  std::vector<int64_t> coord(r - 1, 0);
  int64_t base = 0;
  for (size_t a = 0; a < r; ++a)
    base += start[a] * strides[a];
  for (int64_t row = 0; row < rows; ++row) {
    if (step[r - 1] == 1) {
      cp(row * inner, base, inner);
    } else {
      for (int64_t j = 0; j < inner; ++j)
        cp(row * inner + j, base + j * step[r - 1], 1);
    }
    for (size_t a = r - 1; a-- > 0;) {
      base += step[a] * strides[a];
      if (++coord[a] < out_dims[a]) break;
      base -= step[a] * strides[a] * out_dims[a];
      coord[a] = 0;
    }
  }
}

void computeSlice(ComputeContext& ctx) {
  const Tensor& data = ctx.input(0);
  Tensor& out = ctx.output(0);
  const auto r = static_cast<int64_t>(data.rank());
  bool axes_known = false;
  auto get = [&](size_t i, bool* present) -> const Tensor* {
    *present = ctx.hasInput(i);
    return ctx.hasInput(i) ? &ctx.input(i) : nullptr;
  };
  const SliceArgs args = *readSliceArgs(ctx, r, get, &axes_known);
  std::vector<int64_t> start(static_cast<size_t>(r), 0), step(static_cast<size_t>(r), 1);
  std::vector<int64_t> out_dims = data.dims();
  for (size_t i = 0; i < args.axes.size(); ++i) {
    const auto ax = static_cast<size_t>(args.axes[i]);
    const AxisRange ar = sliceAxis(data.dims()[ax], args.starts[i], args.ends[i], args.steps[i]);
    start[ax] = ar.start;
    step[ax] = ar.step;
    out_dims[ax] = ar.len;
  }
  if (out_dims != out.dims()) ctx.fail("internal: slice shape differs from the inferred shape");
  stridedCopy(Copier(ctx, data, out), data.dims(), out_dims, start, step);
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
  const int64_t axis =
      normalizeAxis(ctx, ctx.attrInt("axis", -1), static_cast<int64_t>(xs->rank()));
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
  const auto axis = static_cast<size_t>(
      normalizeAxis(ctx, ctx.attrInt("axis", -1), static_cast<int64_t>(xd.size())));
  const bool largest = ctx.opset() < 11 || ctx.attrInt("largest", 1) != 0;
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

// ------------------------------------------------------------------ OneHot

int64_t oneHotDepth(const OpContext& ctx, const Tensor& depth) {
  const double d = scalarAsDouble(ctx, depth);
  if (!(d >= 0)) ctx.fail("depth must be >= 0");
  return static_cast<int64_t>(d);
}

void inferOneHot(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(2);
  const Shape* is = ctx.inputShape(0);
  if (is == nullptr) {
    ctx.setOutputUnknownRank(0, dt);
    return;
  }
  const auto r = static_cast<int64_t>(is->rank());
  const int64_t axis = normalizeAxis(ctx, ctx.attrInt("axis", -1), r + 1);
  Shape out = *is;
  const Tensor* dv = ctx.inputValue(1);
  out.dims.insert(out.dims.begin() + axis,
                  dv ? Dim::known(oneHotDepth(ctx, *dv)) : ctx.newSymbol());
  ctx.setOutput(0, dt, out);
}

void computeOneHot(ComputeContext& ctx) {
  const Tensor& indices = ctx.input(0);
  const Tensor& values = ctx.input(2);
  Tensor& out = ctx.output(0);
  if (values.numElements() != 2) ctx.fail("values must hold [off_value, on_value]");
  const int64_t depth = oneHotDepth(ctx, ctx.input(1));
  const auto r = static_cast<int64_t>(indices.rank());
  const auto axis = static_cast<size_t>(normalizeAxis(ctx, ctx.attrInt("axis", -1), r + 1));
  // Indices may be any numeric type; non-integers are truncated toward zero.
  std::vector<int64_t> idx(static_cast<size_t>(indices.numElements()));
  if (!dispatchNumeric(indices.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* p = dataAs<T>(indices);
        for (size_t i = 0; i < idx.size(); ++i)
          idx[i] = static_cast<int64_t>(toDouble(p[i]));
      })) {
    ctx.fail("indices must be numeric");
  }
  const int64_t outer = product(indices.dims(), 0, axis);
  const int64_t inner = product(indices.dims(), axis, indices.rank());
  Copier cp(ctx, values, out);
  const int64_t total = out.numElements();
  for (int64_t i = 0; i < total; ++i)
    cp(i, 0, 1);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      int64_t v = idx[static_cast<size_t>(o * inner + j)];
      if (v < 0) v += depth;
      if (v < 0 || v >= depth) continue;  // out of range: the row stays off
      cp((o * depth + v) * inner + j, 1, 1);
    }
  }
}

// ------------------------------------------------------------------ Compress

// The kept positions along the compressed axis (or of the flattened input).
std::vector<int64_t> compressKept(const OpContext& ctx, const Tensor& cond, int64_t n) {
  if (cond.dtype() != DataType::kBool) ctx.fail("condition must be bool");
  if (cond.rank() != 1) ctx.fail("condition must be 1-D");
  const int64_t len = cond.numElements();
  if (n >= 0 && len > n) ctx.fail("condition is longer than the compressed axis");
  std::vector<int64_t> kept;
  const bool* c = dataAs<bool>(cond);
  for (int64_t i = 0; i < len; ++i) {
    if (c[i]) kept.push_back(i);
  }
  return kept;
}

void inferCompress(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  const Shape* xs = ctx.inputShape(0);
  const Tensor* cv = ctx.inputValue(1);
  const bool has_axis = ctx.hasAttr("axis");
  if (!has_axis) {
    int64_t n = -1;
    if (auto d = inputStaticDims(ctx, 0)) n = numel(*d);
    Shape out;
    out.dims.push_back(cv ? Dim::known(static_cast<int64_t>(compressKept(ctx, *cv, n).size()))
                          : ctx.newSymbol());
    ctx.setOutput(0, dt, out);
    return;
  }
  if (xs == nullptr) {
    ctx.setOutputUnknownRank(0, dt);
    return;
  }
  const int64_t axis = normalizeAxis(ctx, ctx.attrInt("axis", 0), static_cast<int64_t>(xs->rank()));
  Shape out = *xs;
  Dim& d = out.dims[static_cast<size_t>(axis)];
  d = cv ? Dim::known(static_cast<int64_t>(compressKept(ctx, *cv, d.value).size()))
         : ctx.newSymbol();
  ctx.setOutput(0, dt, out);
}

void computeCompress(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  Copier cp(ctx, x, out);
  if (!ctx.hasAttr("axis")) {
    const std::vector<int64_t> kept = compressKept(ctx, ctx.input(1), x.numElements());
    for (size_t i = 0; i < kept.size(); ++i)
      cp(static_cast<int64_t>(i), kept[i], 1);
    return;
  }
  const auto& xd = x.dims();
  const auto axis = static_cast<size_t>(
      normalizeAxis(ctx, ctx.attrInt("axis", 0), static_cast<int64_t>(xd.size())));
  const std::vector<int64_t> kept = compressKept(ctx, ctx.input(1), xd[axis]);
  const int64_t outer = product(xd, 0, axis);
  const int64_t inner = product(xd, axis + 1, xd.size());
  const auto m = static_cast<int64_t>(kept.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < m; ++j)
      cp((o * m + j) * inner, (o * xd[axis] + kept[static_cast<size_t>(j)]) * inner, inner);
  }
}

// ------------------------------------------------------------------ NonZero

// Flat positions of the non-zero elements (strings: non-empty).
std::vector<int64_t> nonZeroPositions(const OpContext& ctx, const Tensor& x) {
  std::vector<int64_t> pos;
  const int64_t n = x.numElements();
  if (x.dtype() == DataType::kString) {
    for (int64_t i = 0; i < n; ++i) {
      if (!x.strings()[static_cast<size_t>(i)].empty()) pos.push_back(i);
    }
    return pos;
  }
  if (!dispatchNumeric(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* p = dataAs<T>(x);
        for (int64_t i = 0; i < n; ++i) {
          if (toDouble(p[i]) != 0) pos.push_back(i);
        }
      })) {
    ctx.unsupported("element type " + std::string(dataTypeName(x.dtype())) + " is not supported");
  }
  return pos;
}

void inferNonZero(InferContext& ctx) {
  const Shape* xs = ctx.inputShape(0);
  Shape out;
  // A scalar behaves as a 1-element vector (numpy's nonzero on 0-d).
  out.dims.push_back(xs ? Dim::known(std::max<int64_t>(1, static_cast<int64_t>(xs->rank())))
                        : Dim());
  const Tensor* xv = ctx.inputValue(0);
  out.dims.push_back(xv ? Dim::known(static_cast<int64_t>(nonZeroPositions(ctx, *xv).size()))
                        : ctx.newSymbol());
  ctx.setOutput(0, DataType::kInt64, out);
}

void computeNonZero(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  const std::vector<int64_t> pos = nonZeroPositions(ctx, x);
  std::vector<int64_t> dims = x.dims();
  if (dims.empty()) dims.push_back(1);
  const std::vector<int64_t> strides = stridesOf(dims);
  int64_t* o = mutableDataAs<int64_t>(out);
  const size_t nnz = pos.size();
  for (size_t i = 0; i < nnz; ++i) {
    for (size_t a = 0; a < dims.size(); ++a)
      o[a * nnz + i] = (pos[i] / strides[a]) % dims[a];
  }
}

// ------------------------------------------------------------------ Unique

// All four outputs of Unique for a known input.
std::vector<Tensor> uniqueOutputs(const OpContext& ctx, const Tensor& x) {
  const auto& xd = x.dims();
  const bool has_axis = ctx.hasAttr("axis");
  const bool sorted = ctx.attrInt("sorted", 1) != 0;
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

// ------------------------------------------------------------------ CumSum / CumProd

void inferSameAsInput0(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  if (const Shape* s = ctx.inputShape(0))
    ctx.setOutput(0, dt, *s);
  else
    ctx.setOutputUnknownRank(0, dt);
}

template <bool kProduct>
void computeCumulative(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  const std::vector<int64_t> av = toInt64Vector(ctx, ctx.input(1));
  if (av.size() != 1) ctx.fail("axis must hold one value");
  const auto& xd = x.dims();
  const auto axis = static_cast<size_t>(normalizeAxis(ctx, av[0], static_cast<int64_t>(xd.size())));
  const bool exclusive = ctx.attrInt("exclusive", 0) != 0;
  const bool reverse = ctx.attrInt("reverse", 0) != 0;
  const int64_t outer = product(xd, 0, axis);
  const int64_t n = xd[axis];
  const int64_t inner = product(xd, axis + 1, xd.size());
  const bool ok = dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    // 16-bit floats accumulate in float; other types in their own type.
    using Acc = std::conditional_t<kIsHalfLike<T>, float,
                                   std::conditional_t<std::is_same_v<T, bool>, int64_t, T>>;
    const T* in = dataAs<T>(x);
    T* o = mutableDataAs<T>(out);
    for (int64_t b = 0; b < outer; ++b) {
      for (int64_t j = 0; j < inner; ++j) {
        Acc acc = kProduct ? Acc(1) : Acc(0);
        for (int64_t t = 0; t < n; ++t) {
          const int64_t i = reverse ? n - 1 - t : t;
          const int64_t off = (b * n + i) * inner + j;
          const Acc v = static_cast<Acc>(toDouble(in[off]));
          if (!exclusive) acc = kProduct ? static_cast<Acc>(acc * v) : static_cast<Acc>(acc + v);
          o[off] = fromDouble<T>(static_cast<double>(acc));
          if (exclusive) acc = kProduct ? static_cast<Acc>(acc * v) : static_cast<Acc>(acc + v);
        }
      }
    }
  });
  if (!ok)
    ctx.unsupported("element type " + std::string(dataTypeName(x.dtype())) + " is not supported");
}

// 64-bit integers must not pass through double: accumulate them exactly.
template <bool kProduct>
void computeCumulativeDispatch(ComputeContext& ctx) {
  const DataType dt = ctx.input(0).dtype();
  if (dt != DataType::kInt64 && dt != DataType::kUint64) {
    computeCumulative<kProduct>(ctx);
    return;
  }
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  const std::vector<int64_t> av = toInt64Vector(ctx, ctx.input(1));
  if (av.size() != 1) ctx.fail("axis must hold one value");
  const auto& xd = x.dims();
  const auto axis = static_cast<size_t>(normalizeAxis(ctx, av[0], static_cast<int64_t>(xd.size())));
  const bool exclusive = ctx.attrInt("exclusive", 0) != 0;
  const bool reverse = ctx.attrInt("reverse", 0) != 0;
  const int64_t outer = product(xd, 0, axis);
  const int64_t n = xd[axis];
  const int64_t inner = product(xd, axis + 1, xd.size());
  // Unsigned arithmetic wraps like two's complement for both signednesses.
  const uint64_t* in = dataAs<uint64_t>(x);
  uint64_t* o = mutableDataAs<uint64_t>(out);
  for (int64_t b = 0; b < outer; ++b) {
    for (int64_t j = 0; j < inner; ++j) {
      uint64_t acc = kProduct ? 1 : 0;
      for (int64_t t = 0; t < n; ++t) {
        const int64_t i = reverse ? n - 1 - t : t;
        const int64_t off = (b * n + i) * inner + j;
        if (!exclusive) acc = kProduct ? acc * in[off] : acc + in[off];
        o[off] = acc;
        if (exclusive) acc = kProduct ? acc * in[off] : acc + in[off];
      }
    }
  }
}

// ------------------------------------------------------------------ ReverseSequence

void computeReverseSequence(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  const auto& xd = x.dims();
  const auto r = static_cast<int64_t>(xd.size());
  if (r < 2) ctx.fail("input must have rank >= 2");
  const auto batch_axis = static_cast<size_t>(normalizeAxis(ctx, ctx.attrInt("batch_axis", 1), r));
  const auto time_axis = static_cast<size_t>(normalizeAxis(ctx, ctx.attrInt("time_axis", 0), r));
  if (batch_axis > 1 || time_axis > 1 || batch_axis == time_axis)
    ctx.fail("batch_axis and time_axis must be 0 and 1 in some order");
  const std::vector<int64_t> lens = toInt64Vector(ctx, ctx.input(1));
  if (static_cast<int64_t>(lens.size()) != xd[batch_axis])
    ctx.fail("sequence_lens must have batch_size elements");
  const std::vector<int64_t> strides = stridesOf(xd);
  const int64_t inner = product(xd, 2, xd.size());
  Copier cp(ctx, x, out);
  for (int64_t b = 0; b < xd[batch_axis]; ++b) {
    const int64_t len = lens[static_cast<size_t>(b)];
    if (len < 0 || len > xd[time_axis]) ctx.fail("sequence length out of range");
    for (int64_t t = 0; t < xd[time_axis]; ++t) {
      const int64_t src_t = t < len ? len - 1 - t : t;
      cp(b * strides[batch_axis] + t * strides[time_axis],
         b * strides[batch_axis] + src_t * strides[time_axis], inner);
    }
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
      normalizeAxis(ctx, ctx.attrInt("axis", 0), static_cast<int64_t>(xs->rank())));
  Shape out = *xs;
  if (ctx.attrInt("keepdims", 1) != 0)
    out.dims[axis] = Dim::known(1);
  else
    out.dims.erase(out.dims.begin() + static_cast<int64_t>(axis));
  ctx.setOutput(0, DataType::kInt64, out);
}

template <bool kMax>
void computeArg(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const auto& xd = x.dims();
  const auto axis = static_cast<size_t>(
      normalizeAxis(ctx, ctx.attrInt("axis", 0), static_cast<int64_t>(xd.size())));
  const bool last = ctx.opset() >= 12 && ctx.attrInt("select_last_index", 0) != 0;
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

void registerIndexingOps(OpRegistry& r) {
  for (int v : {1, 11, 13})
    r.add({"", "Gather", v, inferGather, computeGather});
  for (int v : {11, 13})
    r.add({"", "GatherElements", v, inferGatherElements, computeGatherElements});
  for (int v : {11, 12, 13})
    r.add({"", "GatherND", v, inferGatherND, computeGatherND});
  for (int v : {9, 11})
    r.add({"", "Scatter", v, inferScatterLike, computeScatterElements});
  for (int v : {11, 13, 16, 18})
    r.add({"", "ScatterElements", v, inferScatterLike, computeScatterElements});
  for (int v : {11, 13, 16, 18})
    r.add({"", "ScatterND", v, inferScatterLike, computeScatterND});
  r.add({"", "TensorScatter", 24, inferScatterLike, computeTensorScatter});
  for (int v : {1, 10, 11, 13})
    r.add({"", "Slice", v, inferSlice, computeSlice});
  for (int v : {1, 10, 11, 24})
    r.add({"", "TopK", v, inferTopK, computeTopK});
  for (int v : {9, 11})
    r.add({"", "OneHot", v, inferOneHot, computeOneHot});
  for (int v : {9, 11})
    r.add({"", "Compress", v, inferCompress, computeCompress});
  for (int v : {9, 13})
    r.add({"", "NonZero", v, inferNonZero, computeNonZero});
  r.add({"", "Unique", 11, inferUnique, computeUnique});
  for (int v : {11, 14})
    r.add({"", "CumSum", v, inferSameAsInput0, computeCumulativeDispatch<false>});
  r.add({"", "CumProd", 26, inferSameAsInput0, computeCumulativeDispatch<true>});
  r.add({"", "ReverseSequence", 10, inferSameAsInput0, computeReverseSequence});
  for (int v : {1, 11, 12, 13}) {
    r.add({"", "ArgMax", v, inferArg, computeArg<true>});
    r.add({"", "ArgMin", v, inferArg, computeArg<false>});
  }
}

}  // namespace onnxfold

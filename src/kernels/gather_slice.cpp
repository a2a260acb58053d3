// The ops that read elements by index or range: Gather, GatherElements,
// GatherND and Slice. See op_registry.h for the infer()/compute() contract.
//
// Gather and Slice also work on partly known int64 contents (SymbolicValue), so
// Shape(x:[batch,3]) -> Gather(1) folds to 3 even with a dynamic batch. They
// copy raw element bytes, so they cover every fixed-width dtype and strings.
#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/indexing.h"

namespace onnxfold {
namespace {

using namespace kernels;

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
  const int64_t axis = normalizeAxis(ctx, ctx.attrInt("axis"), r);
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
  const int64_t axis = normalizeAxis(ctx, ctx.attrInt("axis"), r);
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
    normalizeAxis(ctx, ctx.attrInt("axis"), static_cast<int64_t>(ds->rank()));
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
  const int64_t axis = normalizeAxis(ctx, ctx.attrInt("axis"), r);
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
  // k > r - b, not b + k > r: a declared indices.shape[-1] near INT64_MAX overflowed.
  if (k < 0 || k > r - b) ctx.fail("indices.shape[-1] + batch_dims exceeds the data rank");
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
      cp(tuple * slice, bi * data_batch + tupleOffset(ctx, idx, tuple, k, dd, strides, b), slice);
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
  // An empty axis stays empty (numpy); below, [0, d - 1] would be an empty clamp range and a
  // negative step would take one element of nothing.
  if (d == 0) return {0, 1, 0};
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
  // Any 0 first: numel() of an empty output's other dims may overflow.
  if (std::find(out_dims.begin(), out_dims.end(), 0) != out_dims.end()) return;
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

}  // namespace

void registerGatherSliceOps(OpRegistry& r) {
  for (int v : {1, 11, 13})
    r.add({"", "Gather", v, inferGather, computeGather});
  for (int v : {11, 13})
    r.add({"", "GatherElements", v, inferGatherElements, computeGatherElements});
  for (int v : {11, 12, 13})
    r.add({"", "GatherND", v, inferGatherND, computeGatherND});
  for (int v : {1, 10, 11, 13})
    r.add({"", "Slice", v, inferSlice, computeSlice});
}

}  // namespace onnxfold

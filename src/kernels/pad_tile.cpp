// The ops that replicate or pad the input through the axis tables of a mapped
// copy (data_movement.h): Expand, Tile, Pad, CenterCropPad and the deprecated
// Upsample (nearest). See op_registry.h for the infer()/compute() contract.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/data_movement.h"

namespace onnxfold {
namespace {

using namespace kernels;

// ------------------------------------------------------------ Expand / Tile

void inferExpand(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  auto target = ctx.inputSymbolic(1);
  const Shape* in = ctx.inputShape(0);
  if (!target) {
    const Shape* ts = ctx.inputShape(1);
    if (ts != nullptr && ts->rank() == 1 && ts->dims[0].isKnown() &&
        ts->dims[0].value <= kMaxDeclaredRank && in != nullptr) {
      const auto r = std::max<size_t>(in->rank(), static_cast<size_t>(ts->dims[0].value));
      ctx.setOutput(0, dt, unknownDims(ctx, r));
    } else {
      ctx.setOutputUnknownRank(0, dt);
    }
    return;
  }
  Shape t;
  for (const Dim& d : *target) {
    if (d.isKnown() || !d.param.empty()) {
      t.dims.push_back(d);
    } else {
      if (ctx.inputValue(1) != nullptr) ctx.fail("negative dim in the target shape");
      t.dims.push_back(ctx.newSymbol());
    }
  }
  if (in == nullptr) {
    ctx.setOutputUnknownRank(0, dt);
    return;
  }
  auto out = broadcastShapes(*in, t);
  if (!out) ctx.fail("input shape cannot be broadcast to the target shape");
  ctx.setOutput(0, dt, *out);
}

void computeExpand(ComputeContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  const std::vector<int64_t> strides = broadcastStrides(in.dims(), out.dims());
  std::vector<AxisMap> axes(out.rank());
  for (size_t k = 0; k < axes.size(); ++k)
    axes[k].stride = strides[k];
  mappedCopy(ctx, in, out, axes);
}

void inferTile(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  const Shape* in = ctx.inputShape(0);
  if (in == nullptr) {
    ctx.setOutputUnknownRank(0, dt);
    return;
  }
  auto reps = ctx.inputSymbolic(1);
  if (!reps) {
    ctx.setOutput(0, dt, unknownDims(ctx, in->rank()));
    return;
  }
  if (reps->size() != in->rank()) ctx.fail("repeats must have one entry per input dim");
  Shape out;
  for (size_t k = 0; k < in->rank(); ++k) {
    const Dim& r = (*reps)[k];
    const Dim& d = in->dims[k];
    if (r.isKnown() && r.value < 0) ctx.fail("negative repeat " + std::to_string(r.value));
    int64_t product = 0;
    if (r.isKnown() && d.isKnown() && !checkedMul(r.value, d.value, &product)) {
      ctx.fail("repeats " + std::to_string(r.value) + " x dim " + std::to_string(d.value) +
               " overflow int64");  // ONNX Runtime fails at run time
    }
    if (r.isKnown() && d.isKnown())
      out.dims.push_back(Dim::known(product));
    else if (r.isKnown() && r.value == 1)
      out.dims.push_back(d);
    else {
      if (ctx.inputValue(1) != nullptr && r.value < 0) ctx.fail("negative repeat");
      out.dims.push_back(ctx.newSymbol());
    }
  }
  ctx.setOutput(0, dt, out);
}

void computeTile(ComputeContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  const std::vector<int64_t> strides = rowMajorStrides(in.dims());
  std::vector<AxisMap> axes(out.rank());
  for (size_t k = 0; k < axes.size(); ++k) {
    axes[k].stride = strides[k];
    if (out.dims()[k] != in.dims()[k]) {
      axes[k].map.resize(static_cast<size_t>(out.dims()[k]));
      for (int64_t o = 0; o < out.dims()[k]; ++o)
        axes[k].map[static_cast<size_t>(o)] = o % in.dims()[k];
    }
  }
  mappedCopy(ctx, in, out, axes);
}

// ------------------------------------------------------------ Pad

// Per-axis begin/end pads (negative = crop), from the attribute or inputs.
// Returns false when they are not known yet.
bool padAmounts(const OpContext& ctx, size_t rank, const Tensor* pads_t, const Tensor* axes_t,
                bool has_axes, std::vector<int64_t>& begin, std::vector<int64_t>& end) {
  std::vector<int64_t> pads;
  if (ctx.opset() < 11) {
    pads = ctx.opset() < 2 ? ctx.attrInts("paddings") : ctx.attrInts("pads");
  } else {
    if (pads_t == nullptr) return false;
    pads = toInt64Vector(ctx, *pads_t);
  }
  std::vector<int64_t> axes;
  if (has_axes) {
    if (axes_t == nullptr) return false;
    axes = toInt64Vector(ctx, *axes_t);
  } else {
    axes.resize(rank);
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (pads.size() != 2 * axes.size()) {
    ctx.fail("pads has " + std::to_string(pads.size()) + " entries, expected " +
             std::to_string(2 * axes.size()));
  }
  begin.assign(rank, 0);
  end.assign(rank, 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    const auto a = static_cast<size_t>(normalizeAxis(ctx, axes[k], static_cast<int64_t>(rank)));
    begin[a] = pads[k];
    end[a] = pads[k + axes.size()];
  }
  return true;
}

std::string padMode(const OpContext& ctx) {
  const std::string mode = ctx.attrString("mode");
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      !(mode == "wrap" && ctx.opset() >= 19)) {
    ctx.unsupported("unsupported mode '" + mode + "'");
  }
  return mode;
}

void inferPad(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  padMode(ctx);
  const Shape* in = ctx.inputShape(0);
  if (in == nullptr) {
    ctx.setOutputUnknownRank(0, dt);
    return;
  }
  std::vector<int64_t> begin, end;
  if (!padAmounts(ctx, in->rank(), ctx.inputValue(1), ctx.inputValue(3), ctx.hasInput(3), begin,
                  end)) {
    ctx.setOutput(0, dt, unknownDims(ctx, in->rank()));
    return;
  }
  Shape out;
  for (size_t k = 0; k < in->rank(); ++k) {
    const Dim& d = in->dims[k];
    if (begin[k] == 0 && end[k] == 0) {
      out.dims.push_back(d);
    } else if (d.isKnown()) {
      int64_t v = 0;
      if (!checkedAdd(d.value, begin[k], &v) || !checkedAdd(v, end[k], &v)) {
        ctx.fail("pads make axis " + std::to_string(k) + " overflow int64");
      }
      if (v < 0) ctx.fail("pads crop axis " + std::to_string(k) + " below zero");
      out.dims.push_back(Dim::known(v));
    } else {
      out.dims.push_back(ctx.newSymbol());
    }
  }
  ctx.setOutput(0, dt, out);
}

// Output coordinate -> input coordinate on one axis for a pad mode (-1: constant). Negative
// pads crop first, then the kept range [lo, hi) is padded (as ONNX Runtime and the ONNX
// reference do): wrap and reflect repeat the kept range, not the whole axis.
std::vector<int64_t> padMap(const std::string& mode, int64_t in_dim, int64_t out_dim, int64_t begin,
                            int64_t end) {
  const int64_t lo = std::max<int64_t>(0, -begin);
  const int64_t hi = in_dim - std::max<int64_t>(0, -end);
  const int64_t extent = hi - lo;
  std::vector<int64_t> m(static_cast<size_t>(out_dim));
  for (int64_t o = 0; o < out_dim; ++o) {
    int64_t c = o - begin;
    if (c < lo || c >= hi) {
      if (mode == "constant") {
        c = -1;
      } else if (mode == "edge") {
        c = std::min(std::max(c, lo), hi - 1);
      } else if (mode == "wrap") {
        c = lo + (((c - lo) % extent) + extent) % extent;
      } else {  // reflect: mirror without repeating the edge (pads < extent: checked)
        c = c < lo ? 2 * lo - c : 2 * (hi - 1) - c;
      }
    }
    m[static_cast<size_t>(o)] = c;
  }
  return m;
}

// ONNX Runtime refuses these at run time, so a fold must not turn them into a constant:
// an edge/reflect/wrap axis cropped to nothing, a reflect pad as long as the kept range, and
// wrap of an empty input.
void checkPadModeExtents(const ComputeContext& ctx, const std::string& mode, const Tensor& in,
                         const Tensor& out, const std::vector<int64_t>& begin,
                         const std::vector<int64_t>& end) {
  if (mode == "constant") return;
  if (in.numElements() == 0) {
    // Nothing to repeat: fine while the output is empty too.
    if (mode == "wrap" || out.numElements() != 0) ctx.fail(mode + "-padding an empty input");
    return;
  }
  for (size_t k = 0; k < in.rank(); ++k) {
    const int64_t extent =
        in.dims()[k] + std::min<int64_t>(begin[k], 0) + std::min<int64_t>(end[k], 0);
    if (extent <= 0) {
      ctx.fail(mode + "-padding axis " + std::to_string(k) + " after its negative pads crop all " +
               std::to_string(in.dims()[k]) + " elements");
    }
    if (mode == "reflect" && (begin[k] > 0 || end[k] > 0) &&
        (begin[k] >= extent || end[k] >= extent)) {
      ctx.fail("reflect pads of axis " + std::to_string(k) + " (" + std::to_string(begin[k]) +
               ", " + std::to_string(end[k]) + ") must be below its length after cropping (" +
               std::to_string(extent) + ")");
    }
  }
}

void padCopy(const ComputeContext& ctx, const Tensor& in, Tensor& out, const std::string& mode,
             const std::vector<int64_t>& begin, const Tensor* fill) {
  const std::vector<int64_t> strides = rowMajorStrides(in.dims());
  std::vector<AxisMap> axes(out.rank());
  for (size_t k = 0; k < axes.size(); ++k) {
    axes[k].stride = strides[k];
    const int64_t end = out.dims()[k] - in.dims()[k] - begin[k];
    if (begin[k] != 0 || end != 0)
      axes[k].map = padMap(mode, in.dims()[k], out.dims()[k], begin[k], end);
  }
  mappedCopy(ctx, in, out, axes, fill);
}

void computePad(ComputeContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  std::vector<int64_t> begin, end;
  padAmounts(ctx, in.rank(), ctx.hasInput(1) ? &ctx.input(1) : nullptr,
             ctx.hasInput(3) ? &ctx.input(3) : nullptr, ctx.hasInput(3), begin, end);
  // The constant: attribute `value` (float) before 11, input 2 after.
  Tensor fill;
  if (ctx.opset() < 11) {
    fill = Tensor(in.dtype(), {});
    const double v = ctx.attrFloat("value");
    dispatchNumeric(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      *mutableDataAs<T>(fill) = fromDouble<T>(v);
    });
  } else if (ctx.hasInput(2) && ctx.input(2).numElements() > 0) {
    fill = ctx.input(2);
    if (fill.dtype() != in.dtype()) ctx.fail("constant_value must have the input's type");
  } else {
    fill = Tensor(in.dtype(), {});
    if (in.dtype() == DataType::kString) fill.mutableStrings().assign(1, std::string());
  }
  const std::string mode = padMode(ctx);
  checkPadModeExtents(ctx, mode, in, out, begin, end);
  padCopy(ctx, in, out, mode, begin, &fill);
}

// ------------------------------------------------------------ CenterCropPad

// Per-axis begin pad (negative: crop) moving the input to the center of `target`.
void inferCenterCropPad(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  const Shape* in = ctx.inputShape(0);
  if (in == nullptr) {
    ctx.setOutputUnknownRank(0, dt);
    return;
  }
  const auto rank = static_cast<int64_t>(in->rank());
  std::vector<int64_t> axes = ctx.attrInts("axes");
  if (axes.empty()) {
    axes.resize(in->rank());
    std::iota(axes.begin(), axes.end(), 0);
  }
  auto shape = ctx.inputSymbolic(1);
  if (shape && shape->size() != axes.size()) ctx.fail("shape must have one entry per axis");
  Shape out = *in;
  for (size_t k = 0; k < axes.size(); ++k) {
    const auto a = static_cast<size_t>(normalizeAxis(ctx, axes[k], rank));
    if (!shape) {
      out.dims[a] = ctx.newSymbol();
    } else {
      const Dim& d = (*shape)[k];
      out.dims[a] = d.isKnown() || !d.param.empty() ? d : ctx.newSymbol();
    }
  }
  ctx.setOutput(0, dt, out);
}

void computeCenterCropPad(ComputeContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  std::vector<int64_t> begin(in.rank(), 0);
  for (size_t k = 0; k < in.rank(); ++k) {
    const int64_t d = in.dims()[k], s = out.dims()[k];
    begin[k] = s >= d ? (s - d) / 2 : -((d - s) / 2);
  }
  padCopy(ctx, in, out, "constant", begin, nullptr);
}

// ------------------------------------------------------------ Upsample (deprecated)

bool upsampleScales(const OpContext& ctx, const Tensor* scales_t, std::vector<float>& scales) {
  if (ctx.opset() < 9) {
    scales = ctx.attrFloats("scales");
    return true;
  }
  if (scales_t == nullptr) return false;
  scales.clear();
  for (int64_t i = 0; i < scales_t->numElements(); ++i)
    scales.push_back(scales_t->at<float>(static_cast<size_t>(i)));
  return true;
}

void inferUpsample(InferContext& ctx) {
  // The type and shape do not depend on the mode (only nearest is computed).
  const DataType dt = ctx.inputDtype(0);
  const Shape* in = ctx.inputShape(0);
  std::vector<float> scales;
  if (in == nullptr) {
    ctx.setOutputUnknownRank(0, dt);
    return;
  }
  if (ctx.opset() >= 9 && ctx.inputDtype(1) != DataType::kFloat &&
      ctx.inputDtype(1) != DataType::kUndefined) {
    ctx.fail("scales must be float");
  }
  if (!upsampleScales(ctx, ctx.inputValue(1), scales)) {
    ctx.setOutput(0, dt, unknownDims(ctx, in->rank()));
    return;
  }
  if (scales.size() != in->rank()) ctx.fail("scales must have one entry per input dim");
  Shape out;
  for (size_t k = 0; k < in->rank(); ++k) {
    const Dim& d = in->dims[k];
    if (!(scales[k] >= 1)) ctx.fail("scales must be >= 1");  // NaN too
    if (scales[k] == 1) {
      out.dims.push_back(d);
    } else if (d.isKnown()) {
      const double v = std::floor(d.value * scales[k]);
      // A huge scale (or inf) gives a dim that does not convert to int64.
      if (!(v < 9.2e18)) ctx.fail("scales give an output dim that does not fit int64");
      out.dims.push_back(Dim::known(static_cast<int64_t>(v)));
    } else {
      out.dims.push_back(ctx.newSymbol());
    }
  }
  ctx.setOutput(0, dt, out);
}

void computeUpsample(ComputeContext& ctx) {
  if (ctx.attrString("mode", "nearest") != "nearest")
    ctx.unsupported("only nearest mode is computed");
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  std::vector<float> scales;
  upsampleScales(ctx, ctx.hasInput(1) ? &ctx.input(1) : nullptr, scales);
  const std::vector<int64_t> strides = rowMajorStrides(in.dims());
  std::vector<AxisMap> axes(out.rank());
  for (size_t k = 0; k < axes.size(); ++k) {
    axes[k].stride = strides[k];
    if (out.dims()[k] != in.dims()[k]) {
      axes[k].map.resize(static_cast<size_t>(out.dims()[k]));
      for (int64_t o = 0; o < out.dims()[k]; ++o) {
        const auto c = static_cast<int64_t>(std::floor(static_cast<float>(o) / scales[k]));
        axes[k].map[static_cast<size_t>(o)] = std::min(c, in.dims()[k] - 1);
      }
    }
  }
  mappedCopy(ctx, in, out, axes);
}

}  // namespace

void registerPadTileOps(OpRegistry& r) {
  for (int v : {8, 13})
    r.add({"", "Expand", v, inferExpand, computeExpand});
  for (int v : {1, 6, 13})
    r.add({"", "Tile", v, inferTile, computeTile});
  for (int v : {1, 2, 11, 13, 18, 19, 21, 23, 24, 25})
    r.add({"", "Pad", v, inferPad, computePad});
  r.add({"", "CenterCropPad", 18, inferCenterCropPad, computeCenterCropPad});
  for (int v : {7, 9})
    r.add({"", "Upsample", v, inferUpsample, computeUpsample});
}

}  // namespace onnxfold

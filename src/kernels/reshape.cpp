// The reshape family: Reshape, Flatten, Squeeze and Unsqueeze, which keep every
// element in place and only change the shape (compute() is a plain copy). See
// op_registry.h for the infer()/compute() contract.
//
// They also carry partially known int64 contents through, for shape arithmetic.
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/data_movement.h"

namespace onnxfold {
namespace {

using namespace kernels;

// Reshape-like ops keep the contents: a 0-d/1-d int64 input keeps its symbolic value.
void propagateSymbolic(InferContext& ctx, size_t out_rank) {
  if (out_rank > 1) return;
  const DataType t = ctx.inputDtype(0);
  if (t != DataType::kInt64 && t != DataType::kInt32) return;
  if (auto sym = ctx.inputSymbolic(0)) ctx.setOutputSymbolic(0, *sym);
}

// Axes from the attribute (before `input_since`) or from input `idx` (then).
// Returns false when they come from an input whose value is unknown.
bool readAxes(InferContext& ctx, int input_since, size_t idx, std::vector<int64_t>& axes,
              bool& given) {
  given = false;
  if (ctx.opset() < input_since) {
    given = ctx.hasAttr("axes");
    axes = ctx.attrInts("axes");
    return true;
  }
  if (!ctx.hasInput(idx)) return true;
  given = true;
  const Tensor* v = ctx.inputValue(idx);
  if (v == nullptr) return false;
  axes = toInt64Vector(ctx, *v);
  return true;
}

// ------------------------------------------------------------ Reshape

std::vector<Dim> reshapeTarget(InferContext& ctx, bool& ok) {
  ok = true;
  if (ctx.opset() < 5) {
    std::vector<Dim> t;
    for (int64_t v : ctx.attrInts("shape")) {
      Dim d;
      d.value = v;
      t.push_back(d);
    }
    return t;
  }
  if (auto sym = ctx.inputSymbolic(1)) return *sym;
  ok = false;
  return {};
}

void inferReshape(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  bool ok = false;
  std::vector<Dim> target = reshapeTarget(ctx, ok);
  if (!ok) {
    const Shape* ts = ctx.inputShape(1);
    if (ts != nullptr && ts->rank() == 1 && ts->dims[0].isKnown() &&
        ts->dims[0].value <= kMaxDeclaredRank) {
      ctx.setOutput(0, dt, unknownDims(ctx, static_cast<size_t>(ts->dims[0].value)));
    } else {
      ctx.setOutputUnknownRank(0, dt);
    }
    return;
  }
  // allowzero exists from Reshape-14; before, a 0 always copies the input's dim.
  const bool allowzero = ctx.opset() >= 14 && ctx.attrInt("allowzero") != 0;
  const bool exact = ctx.opset() < 5 || ctx.inputValue(1) != nullptr;  // -1 entries are literal
  const Shape* in = ctx.inputShape(0);
  Shape out;
  int64_t infer_at = -1;
  size_t literal_minus = 0;
  for (const Dim& d : target) {
    if (!d.isKnown() && d.param.empty() && d.value == -1) ++literal_minus;
    if (exact && d.value < -1) ctx.fail("invalid shape entry " + std::to_string(d.value));
  }
  if (exact && literal_minus > 1) ctx.fail("at most one -1 is allowed in the shape");
  for (size_t k = 0; k < target.size(); ++k) {
    const Dim& d = target[k];
    if (d.isKnown()) {
      if (d.value == 0 && !allowzero) {
        if (in == nullptr) {
          out.dims.push_back(ctx.newSymbol());
        } else if (k >= in->rank()) {
          ctx.fail("shape entry 0 at index " + std::to_string(k) + " has no input dim to copy");
        } else {
          out.dims.push_back(in->dims[k]);
        }
      } else {
        out.dims.push_back(Dim::known(d.value));
      }
    } else if (d.param.empty() && literal_minus == 1) {
      infer_at = static_cast<int64_t>(k);
      out.dims.push_back(Dim());
    } else if (!d.param.empty()) {
      out.dims.push_back(Dim::symbol(d.param));
    } else {
      out.dims.push_back(ctx.newSymbol());
    }
  }
  if (allowzero && infer_at >= 0) {
    for (const Dim& d : out.dims) {
      if (d.isKnown() && d.value == 0) ctx.fail("allowzero with both 0 and -1 in the shape");
    }
  }
  // Element counts: known factors and symbols of the input, cancelled against the output.
  bool counts_known = in != nullptr;
  int64_t in_known = 1;
  std::vector<std::string> in_syms;
  if (in != nullptr) {
    for (const Dim& d : in->dims) {
      if (d.isKnown()) {
        // No tensor holds more than int64 elements: a product past it is a hostile shape.
        in_known = ctx.sizeMul(in_known, d.value);
      } else if (!d.param.empty()) {
        in_syms.push_back(d.param);
      } else {
        counts_known = false;
      }
    }
  }
  int64_t out_known = 1;
  bool out_cancelled = true;
  for (size_t k = 0; k < out.dims.size(); ++k) {
    if (static_cast<int64_t>(k) == infer_at) continue;
    const Dim& d = out.dims[k];
    if (d.isKnown()) {
      out_known = ctx.sizeMul(out_known, d.value);  // as above
      continue;
    }
    auto it = std::find(in_syms.begin(), in_syms.end(), d.param);
    if (!d.param.empty() && it != in_syms.end())
      in_syms.erase(it);
    else
      out_cancelled = false;
  }
  if (infer_at >= 0) {
    Dim& d = out.dims[static_cast<size_t>(infer_at)];
    if (counts_known && out_cancelled && in_syms.empty()) {
      if (out_known == 0 || in_known % out_known != 0) {
        ctx.fail("cannot reshape " + std::to_string(in_known) + " elements with -1");
      }
      d = Dim::known(in_known / out_known);
    } else if (counts_known && out_cancelled && in_syms.size() == 1 && out_known == in_known) {
      d = Dim::symbol(in_syms[0]);  // [batch, 64] -> {-1, 64} keeps "batch"
    } else {
      d = ctx.newSymbol();
    }
  } else if (counts_known && out_cancelled && in_syms.empty() && in_known != out_known) {
    ctx.fail("cannot reshape " + std::to_string(in_known) + " elements into " +
             std::to_string(out_known));
  }
  ctx.setOutput(0, dt, out);
  propagateSymbolic(ctx, out.rank());
}

void computeCopy(ComputeContext& ctx) {
  copyAll(ctx.input(0), ctx.output(0));
}

// ------------------------------------------------------------ Flatten

void inferFlatten(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  const Shape* in = ctx.inputShape(0);
  if (in == nullptr) {
    ctx.setOutput(0, dt, unknownDims(ctx, 2));
    return;
  }
  const auto rank = static_cast<int64_t>(in->rank());
  int64_t axis = ctx.attrInt("axis");
  if (axis < -rank || axis > rank) ctx.fail("axis " + std::to_string(axis) + " out of range");
  if (axis < 0) axis += rank;
  auto merge = [&](size_t b, size_t e) {
    if (e - b == 1) return in->dims[b];
    int64_t p = 1;
    for (size_t k = b; k < e; ++k) {
      if (!in->dims[k].isKnown()) return ctx.newSymbol();
      if (!checkedMul(p, in->dims[k].value, &p)) ctx.fail("the flattened size overflows int64");
    }
    return Dim::known(p);
  };
  Shape out;
  out.dims = {merge(0, static_cast<size_t>(axis)), merge(static_cast<size_t>(axis), in->rank())};
  ctx.setOutput(0, dt, out);
}

// ------------------------------------------------------------ Squeeze / Unsqueeze

void inferSqueeze(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  std::vector<int64_t> axes;
  bool given = false;
  const bool known = readAxes(ctx, 13, 1, axes, given);
  const Shape* in = ctx.inputShape(0);
  if (in == nullptr || !known) {
    ctx.setOutputUnknownRank(0, dt);
    return;
  }
  const auto rank = static_cast<int64_t>(in->rank());
  std::vector<bool> drop(in->rank(), false);
  if (given) {
    for (int64_t a : axes) {
      const auto k = static_cast<size_t>(normalizeAxis(ctx, a, rank));
      if (in->dims[k].isKnown() && in->dims[k].value != 1) {
        ctx.fail("cannot squeeze axis " + std::to_string(a) + " of size " +
                 std::to_string(in->dims[k].value));
      }
      drop[k] = true;
    }
  } else {
    for (size_t k = 0; k < in->rank(); ++k) {
      if (!in->dims[k].isKnown()) {
        ctx.setOutputUnknownRank(0, dt);  // a symbolic dim might be 1
        return;
      }
      drop[k] = in->dims[k].value == 1;
    }
  }
  Shape out;
  for (size_t k = 0; k < in->rank(); ++k)
    if (!drop[k]) out.dims.push_back(in->dims[k]);
  ctx.setOutput(0, dt, out);
  propagateSymbolic(ctx, out.rank());
}

void inferUnsqueeze(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  std::vector<int64_t> axes;
  bool given = false;
  const bool known = readAxes(ctx, 13, 1, axes, given);
  const Shape* in = ctx.inputShape(0);
  if (!given && known) ctx.fail("axes are required");
  if (in == nullptr || !known) {
    ctx.setOutputUnknownRank(0, dt);
    return;
  }
  const auto out_rank = static_cast<int64_t>(in->rank() + axes.size());
  std::vector<bool> ins(static_cast<size_t>(out_rank), false);
  for (int64_t a : axes) {
    const auto k = static_cast<size_t>(normalizeAxis(ctx, a, out_rank));
    if (ins[k]) ctx.fail("duplicate axis " + std::to_string(a));
    ins[k] = true;
  }
  Shape out;
  size_t src = 0;
  for (size_t k = 0; k < ins.size(); ++k)
    out.dims.push_back(ins[k] ? Dim::known(1) : in->dims[src++]);
  ctx.setOutput(0, dt, out);
  propagateSymbolic(ctx, out.rank());
}

}  // namespace

void registerReshapeOps(OpRegistry& r) {
  for (int v : {1, 5, 13, 14, 19, 21, 23, 24, 25})
    r.add({"", "Reshape", v, inferReshape, computeCopy});
  for (int v : {1, 9, 11, 13, 21, 23, 24, 25})
    r.add({"", "Flatten", v, inferFlatten, computeCopy});
  for (int v : {1, 11, 13, 21, 23, 24, 25}) {
    r.add({"", "Squeeze", v, inferSqueeze, computeCopy});
    r.add({"", "Unsqueeze", v, inferUnsqueeze, computeCopy});
  }
}

}  // namespace onnxfold

// Concat and Split: row copies along one axis. See op_registry.h for the
// infer()/compute() contract.
//
// Concat of 1-D int64 shape values also carries their partly known contents
// (Concat([batch], [-1]) -> {batch, -1}).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/data_movement.h"

namespace onnxfold {
namespace {

using namespace kernels;

// ------------------------------------------------------------ Concat

void inferConcat(InferContext& ctx) {
  const size_t n = ctx.numInputs();
  if (n == 0) ctx.fail("at least one input is required");
  const DataType dt = ctx.inputDtype(0);
  for (size_t i = 1; i < n; ++i) {
    if (ctx.inputDtype(i) != dt && ctx.inputDtype(i) != DataType::kUndefined) {
      ctx.fail("inputs must have the same type");
    }
  }
  if (ctx.opset() >= 4 && !ctx.hasAttr("axis")) ctx.fail("attribute 'axis' is required");
  const Shape* first = nullptr;
  for (size_t i = 0; i < n; ++i) {
    if (ctx.inputShape(i) != nullptr) {
      first = ctx.inputShape(i);
      break;
    }
  }
  if (first == nullptr) {
    ctx.setOutputUnknownRank(0, dt);
    return;
  }
  const auto rank = static_cast<int64_t>(first->rank());
  if (rank == 0) ctx.fail("scalars cannot be concatenated");
  const auto axis = static_cast<size_t>(normalizeAxis(ctx, ctx.attrInt("axis", 1), rank));
  Shape out = *first;
  int64_t sum = 0;
  bool sum_known = true;
  for (size_t i = 0; i < n; ++i) {
    const Shape* s = ctx.inputShape(i);
    if (s == nullptr) {
      sum_known = false;
      continue;
    }
    if (static_cast<int64_t>(s->rank()) != rank) ctx.fail("inputs must have the same rank");
    for (size_t k = 0; k < s->rank(); ++k) {
      if (k == axis) {
        if (!s->dims[k].isKnown()) {
          sum_known = false;
        } else if (!checkedAdd(sum, s->dims[k].value, &sum)) {
          ctx.fail("the concatenated dim overflows int64");  // huge dims of a fuzzed model
        }
        continue;
      }
      const Dim& a = out.dims[k];
      const Dim& b = s->dims[k];
      if (a.isKnown() && b.isKnown() && a.value != b.value) {
        ctx.fail("dim " + std::to_string(k) + " differs: " + std::to_string(a.value) + " vs " +
                 std::to_string(b.value));
      }
      if (!a.isKnown() && b.isKnown()) out.dims[k] = b;
    }
  }
  out.dims[axis] = sum_known ? Dim::known(sum) : ctx.newSymbol();
  ctx.setOutput(0, dt, out);
  // Shape arithmetic: Concat([batch], [-1]) -> {batch, -1}.
  if (rank == 1 && (dt == DataType::kInt64 || dt == DataType::kInt32)) {
    SymbolicValue v;
    for (size_t i = 0; i < n; ++i) {
      auto sym = ctx.inputSymbolic(i);
      if (!sym) return;
      v.insert(v.end(), sym->begin(), sym->end());
    }
    ctx.setOutputSymbolic(0, std::move(v));
  }
}

void computeConcat(ComputeContext& ctx) {
  Tensor& out = ctx.output(0);
  const auto rank = static_cast<int64_t>(out.rank());
  const auto axis = static_cast<size_t>(normalizeAxis(ctx, ctx.attrInt("axis", 1), rank));
  const int64_t outer = product(out.dims(), 0, axis);
  const int64_t out_row = product(out.dims(), axis, out.dims().size());
  const bool strings = out.dtype() == DataType::kString;
  const size_t es = strings ? 0 : elementBytes(ctx, out.dtype());
  uint8_t* dst = strings || out.numElements() == 0 ? nullptr : out.mutableBytes();
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    if (!ctx.hasInput(i)) continue;
    const Tensor& in = ctx.input(i);
    const int64_t row = product(in.dims(), axis, in.dims().size());
    for (int64_t o = 0; o < outer && row > 0; ++o) {
      if (strings) {
        const auto& s = in.strings();
        std::copy(s.begin() + o * row, s.begin() + (o + 1) * row,
                  out.mutableStrings().begin() + o * out_row + offset);
      } else {
        std::memcpy(dst + static_cast<size_t>(o * out_row + offset) * es,
                    in.bytes() + static_cast<size_t>(o * row) * es, static_cast<size_t>(row) * es);
      }
    }
    offset += row;
  }
}

// ------------------------------------------------------------ Split

// The split sizes, or empty when they are not known yet.
std::vector<int64_t> splitSizes(const OpContext& ctx, const Tensor* split_input,
                                bool has_split_input, int64_t dim, size_t n_out) {
  std::vector<int64_t> split;
  if (ctx.opset() < 13) {
    split = ctx.attrInts("split");
  } else if (has_split_input) {
    if (split_input == nullptr) return {};
    split = toInt64Vector(ctx, *split_input);
  }
  if (!split.empty()) {
    if (split.size() != n_out)
      ctx.fail("split has " + std::to_string(split.size()) + " entries for " +
               std::to_string(n_out) + " outputs");
    int64_t sum = 0;
    for (int64_t s : split) {
      if (s < 0) ctx.fail("negative split size");
      if (!checkedAdd(sum, s, &sum)) ctx.fail("split sizes overflow int64");  // fuzzed sizes
    }
    if (dim >= 0 && sum != dim)
      ctx.fail("split sizes sum to " + std::to_string(sum) + ", not the axis size " +
               std::to_string(dim));
    return split;
  }
  if (dim < 0) return {};
  const int64_t parts = ctx.opset() >= 18 && ctx.hasAttr("num_outputs")
                            ? ctx.attrInt("num_outputs", 0)
                            : static_cast<int64_t>(n_out);
  if (parts != static_cast<int64_t>(n_out)) ctx.fail("num_outputs differs from the output count");
  if (parts <= 0) ctx.fail("no outputs");
  if (ctx.opset() < 18 && dim % parts != 0) {
    ctx.fail("axis size " + std::to_string(dim) + " is not divisible by " + std::to_string(parts));
  }
  // Opset 18: ceil-sized chunks, the last one smaller.
  // ceil(dim / parts) without dim + parts - 1, which wraps for a dim near INT64_MAX (fuzzed).
  const int64_t chunk = dim / parts + (dim % parts != 0 ? 1 : 0);
  int64_t left = dim;
  for (int64_t k = 0; k < parts; ++k) {
    const int64_t c = std::min(chunk, left);
    split.push_back(c);
    left -= c;
  }
  return split;
}

void inferSplit(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  const size_t n_out = ctx.numOutputs();
  const Shape* in = ctx.inputShape(0);
  if (in == nullptr) {
    for (size_t i = 0; i < n_out; ++i)
      ctx.setOutputUnknownRank(i, dt);
    return;
  }
  const auto axis = static_cast<size_t>(
      normalizeAxis(ctx, ctx.attrInt("axis", 0), static_cast<int64_t>(in->rank())));
  const Dim& d = in->dims[axis];
  const std::vector<int64_t> split =
      splitSizes(ctx, ctx.inputValue(1), ctx.hasInput(1), d.isKnown() ? d.value : -1, n_out);
  for (size_t i = 0; i < n_out; ++i) {
    Shape s = *in;
    s.dims[axis] = split.empty() ? ctx.newSymbol() : Dim::known(split[i]);
    ctx.setOutput(i, dt, s);
  }
}

void computeSplit(ComputeContext& ctx) {
  const Tensor& in = ctx.input(0);
  const auto axis = static_cast<size_t>(
      normalizeAxis(ctx, ctx.attrInt("axis", 0), static_cast<int64_t>(in.rank())));
  const int64_t outer = product(in.dims(), 0, axis);
  const int64_t in_row = product(in.dims(), axis, in.dims().size());
  const bool strings = in.dtype() == DataType::kString;
  const size_t es = strings ? 0 : elementBytes(ctx, in.dtype());
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.numOutputs(); ++i) {
    const int64_t inner = product(in.dims(), axis + 1, in.dims().size());
    int64_t row = 0;
    if (ctx.hasOutput(i)) {
      Tensor& out = ctx.output(i);
      row = product(out.dims(), axis, out.dims().size());
      for (int64_t o = 0; o < outer && row > 0; ++o) {
        if (strings) {
          std::copy(in.strings().begin() + o * in_row + offset,
                    in.strings().begin() + o * in_row + offset + row,
                    out.mutableStrings().begin() + o * row);
        } else {
          std::memcpy(out.mutableBytes() + static_cast<size_t>(o * row) * es,
                      in.bytes() + static_cast<size_t>(o * in_row + offset) * es,
                      static_cast<size_t>(row) * es);
        }
      }
    } else {
      // An omitted output still consumes its slice: recompute its size.
      const std::vector<int64_t> split =
          splitSizes(ctx, ctx.hasInput(1) ? &ctx.input(1) : nullptr, ctx.hasInput(1),
                     in.dims()[axis], ctx.numOutputs());
      row = split[i] * inner;
    }
    offset += row;
  }
}

}  // namespace

void registerConcatSplitOps(OpRegistry& r) {
  for (int v : {1, 4, 11, 13})
    r.add({"", "Concat", v, inferConcat, computeConcat});
  for (int v : {1, 2, 11, 13, 18})
    r.add({"", "Split", v, inferSplit, computeSplit});
}

}  // namespace onnxfold

// data_movement op family: Reshape, Flatten, Squeeze, Unsqueeze, Transpose,
// Concat, Split, Expand, Tile, Pad, CenterCropPad, DepthToSpace,
// SpaceToDepth, Trilu, Upsample. See op_registry.h for the contract of
// infer() and compute().
//
// Every index-moving kernel is one "mapped copy": for each output axis, a
// stride into the input and an optional table from output coordinate to
// input coordinate (-1 = fill value). Transpose permutes strides, Expand
// zeroes them, Tile/Pad/Upsample use tables. Contiguous inner runs are
// memcpy'd, and 2-D (batched) transposes take a cache-blocked path.
// Reshape-like ops (Reshape, Flatten, Squeeze, Unsqueeze) also carry
// partially known int64 contents through, for shape arithmetic.
#include "kernels/data_movement.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "kernels/common.h"

namespace onnxfold {
namespace kernels {

// ------------------------------------------------------------ element copies

// Bytes per element; fails for packed sub-byte types, which index-moving ops do not support.
size_t elementBytes(const OpContext& ctx, DataType t) {
  const int bits = bitsPerElement(t);
  if (t != DataType::kString && bits < 8) {
    ctx.unsupported(std::string("element type ") + std::string(dataTypeName(t)) +
                    " is not supported by this kernel");
  }
  return static_cast<size_t>(bits / 8);
}

// One output axis of a mapped copy.
struct AxisMap {
  int64_t stride = 0;        // input element stride for one step of the input coordinate
  std::vector<int64_t> map;  // output coordinate -> input coordinate (-1: fill); empty: identity
};

// Copies in -> out element by element through the axis maps. `copy(dst, src)`
// moves one element, `copyRun(dst, src, n)` a contiguous run, `fill(dst)` writes the pad value.
template <class Copy, class CopyRun, class Fill>
void mappedCopyImpl(const std::vector<int64_t>& out_dims, const std::vector<AxisMap>& axes,
                    Copy copy, CopyRun copy_run, Fill fill) {
  const size_t rank = out_dims.size();
  int64_t total = 1;
  for (int64_t d : out_dims)
    total *= d;
  if (total == 0) return;
  if (rank == 0) {
    copy(0, 0);
    return;
  }
  const int64_t inner = out_dims[rank - 1];
  const AxisMap& last = axes[rank - 1];
  const bool contiguous = last.map.empty() && last.stride == 1;
  std::vector<int64_t> idx(rank, 0);
  int64_t dst = 0;
  for (int64_t outer = total / inner; outer > 0; --outer) {
    int64_t base = 0;
    bool valid = true;
    for (size_t a = 0; a + 1 < rank; ++a) {
      const AxisMap& m = axes[a];
      const int64_t c = m.map.empty() ? idx[a] : m.map[static_cast<size_t>(idx[a])];
      if (c < 0) {
        valid = false;
        break;
      }
      base += c * m.stride;
    }
    if (!valid) {
      for (int64_t j = 0; j < inner; ++j)
        fill(dst + j);
    } else if (contiguous) {
      copy_run(dst, base, inner);
    } else if (last.map.empty()) {
      for (int64_t j = 0; j < inner; ++j)
        copy(dst + j, base + j * last.stride);
    } else {
      for (int64_t j = 0; j < inner; ++j) {
        const int64_t c = last.map[static_cast<size_t>(j)];
        if (c < 0)
          fill(dst + j);
        else
          copy(dst + j, base + c * last.stride);
      }
    }
    dst += inner;
    for (size_t a = rank - 1; a-- > 0;) {
      if (++idx[a] < out_dims[a]) break;
      idx[a] = 0;
    }
  }
}

template <size_t ES>
void mappedCopyBytes(const uint8_t* in, uint8_t* out, const std::vector<int64_t>& out_dims,
                     const std::vector<AxisMap>& axes, const uint8_t* fill_value) {
  mappedCopyImpl(
      out_dims, axes, [&](int64_t d, int64_t s) { std::memcpy(out + d * ES, in + s * ES, ES); },
      [&](int64_t d, int64_t s, int64_t n) {
        std::memcpy(out + d * ES, in + s * ES, static_cast<size_t>(n) * ES);
      },
      [&](int64_t d) {
        if (fill_value != nullptr)
          std::memcpy(out + d * ES, fill_value, ES);
        else
          std::memset(out + d * ES, 0, ES);
      });
}

// out = in through `axes`; `fill` (null: zeros / empty strings) is one element of out's type.
// `dims` overrides out's dims (a reshaped view of the output), else out.dims().
void mappedCopy(const OpContext& ctx, const Tensor& in, Tensor& out,
                const std::vector<AxisMap>& axes, const Tensor* fill = nullptr,
                const std::vector<int64_t>* dims = nullptr) {
  const DataType dt = out.dtype();
  const std::vector<int64_t>& out_dims = dims != nullptr ? *dims : out.dims();
  if (out.numElements() == 0) return;
  if (dt == DataType::kString) {
    const auto& src = in.strings();
    auto& dst = out.mutableStrings();
    const std::string fs = fill != nullptr ? fill->strings()[0] : std::string();
    mappedCopyImpl(
        out_dims, axes,
        [&](int64_t d, int64_t s) { dst[static_cast<size_t>(d)] = src[static_cast<size_t>(s)]; },
        [&](int64_t d, int64_t s, int64_t n) {
          std::copy(src.begin() + s, src.begin() + s + n, dst.begin() + d);
        },
        [&](int64_t d) { dst[static_cast<size_t>(d)] = fs; });
    return;
  }
  const size_t es = elementBytes(ctx, dt);
  const uint8_t* fv = fill != nullptr ? fill->bytes() : nullptr;
  const uint8_t* src = in.bytes();
  uint8_t* dst = out.mutableBytes();
  switch (es) {
    case 1:
      return mappedCopyBytes<1>(src, dst, out_dims, axes, fv);
    case 2:
      return mappedCopyBytes<2>(src, dst, out_dims, axes, fv);
    case 4:
      return mappedCopyBytes<4>(src, dst, out_dims, axes, fv);
    case 8:
      return mappedCopyBytes<8>(src, dst, out_dims, axes, fv);
    case 16:
      return mappedCopyBytes<16>(src, dst, out_dims, axes, fv);
    default:
      ctx.unsupported("unsupported element size");
  }
}

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t k = dims.size(); k-- > 1;)
    s[k - 1] = s[k] * dims[k];
  return s;
}

// ------------------------------------------------------------ transpose

// Reference: out[c][r] = in[r][c] for each of `batch` rows x cols matrices.
template <class T>
void transpose2DScalar(const T* in, T* out, int64_t batch, int64_t rows, int64_t cols) {
  for (int64_t b = 0; b < batch; ++b) {
    const T* src = in + b * rows * cols;
    T* dst = out + b * rows * cols;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        dst[c * rows + r] = src[r * cols + c];
  }
}

// Cache-blocked in 8x8 tiles, each written row by row (contiguous stores). Larger
// tiles, or stores down a column, alias in L1 when a dim is a power of two
// (4 KB apart) and ran at 0.6 GB/s on 1024x256 floats; this runs at ~10 GB/s.
template <class T>
void transpose2DBlocked(const T* in, T* out, int64_t batch, int64_t rows, int64_t cols) {
  constexpr int64_t kTile = 8;
  // `in` may be a misaligned view into the model's bytes: loads go through memcpy.
  const auto* bytes = reinterpret_cast<const uint8_t*>(in);
  for (int64_t b = 0; b < batch; ++b) {
    const uint8_t* src = bytes + b * rows * cols * static_cast<int64_t>(sizeof(T));
    T* dst = out + b * rows * cols;
    for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
      const int64_t r1 = std::min(rows, r0 + kTile);
      for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
        const int64_t c1 = std::min(cols, c0 + kTile);
        for (int64_t c = c0; c < c1; ++c) {
          for (int64_t r = r0; r < r1; ++r)
            std::memcpy(&dst[c * rows + r], src + (r * cols + c) * static_cast<int64_t>(sizeof(T)),
                        sizeof(T));
        }
      }
    }
  }
}

template void transpose2DScalar<uint32_t>(const uint32_t*, uint32_t*, int64_t, int64_t, int64_t);
template void transpose2DBlocked<uint32_t>(const uint32_t*, uint32_t*, int64_t, int64_t, int64_t);

// Drops size-1 axes and merges axes that stay adjacent under `perm`, so e.g.
// [N,C,H,W] with perm [0,2,3,1] becomes [N, C, HW] with perm [0,2,1].
void simplifyPermutation(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm,
                         std::vector<int64_t>& sdims, std::vector<int64_t>& sperm) {
  std::vector<int64_t> keep;  // old axis -> new axis (or -1)
  std::vector<int64_t> kept_dims;
  keep.assign(dims.size(), -1);
  for (size_t a = 0; a < dims.size(); ++a) {
    if (dims[a] != 1) {
      keep[a] = static_cast<int64_t>(kept_dims.size());
      kept_dims.push_back(dims[a]);
    }
  }
  std::vector<int64_t> p;
  for (int64_t a : perm) {
    if (keep[static_cast<size_t>(a)] >= 0) p.push_back(keep[static_cast<size_t>(a)]);
  }
  // Merge runs p[i], p[i]+1, ... in output order.
  std::vector<std::vector<int64_t>> groups;
  for (int64_t a : p) {
    if (!groups.empty() && groups.back().back() + 1 == a)
      groups.back().push_back(a);
    else
      groups.push_back({a});
  }
  std::vector<size_t> order(groups.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t x, size_t y) { return groups[x][0] < groups[y][0]; });
  sdims.assign(groups.size(), 1);
  std::vector<int64_t> new_index(groups.size());
  for (size_t k = 0; k < order.size(); ++k) {
    new_index[order[k]] = static_cast<int64_t>(k);
    for (int64_t a : groups[order[k]])
      sdims[k] *= kept_dims[static_cast<size_t>(a)];
  }
  sperm.resize(groups.size());
  for (size_t g = 0; g < groups.size(); ++g)
    sperm[g] = new_index[g];
}

void transposeTensor(const OpContext& ctx, const Tensor& in, Tensor& out,
                     const std::vector<int64_t>& perm) {
  std::vector<int64_t> sdims, sperm;
  simplifyPermutation(in.dims(), perm, sdims, sperm);
  const DataType dt = in.dtype();
  const bool batched = sdims.size() == 3 && sperm == std::vector<int64_t>{0, 2, 1};
  if (dt != DataType::kString && (batched || (sdims.size() == 2 && sperm[0] == 1))) {
    const int64_t batch = batched ? sdims[0] : 1;
    const int64_t rows = sdims[sdims.size() - 2], cols = sdims[sdims.size() - 1];
    switch (elementBytes(ctx, dt)) {
      case 1:
        return transpose2DBlocked(reinterpret_cast<const uint8_t*>(in.bytes()),
                                  mutableDataAs<uint8_t>(out), batch, rows, cols);
      case 2:
        return transpose2DBlocked(reinterpret_cast<const uint16_t*>(in.bytes()),
                                  mutableDataAs<uint16_t>(out), batch, rows, cols);
      case 4:
        return transpose2DBlocked(reinterpret_cast<const uint32_t*>(in.bytes()),
                                  mutableDataAs<uint32_t>(out), batch, rows, cols);
      case 8:
        return transpose2DBlocked(reinterpret_cast<const uint64_t*>(in.bytes()),
                                  mutableDataAs<uint64_t>(out), batch, rows, cols);
      default:
        break;
    }
  }
  const std::vector<int64_t> strides = rowMajorStrides(in.dims());
  std::vector<AxisMap> axes(perm.size());
  std::vector<int64_t> out_dims(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) {
    axes[k].stride = strides[static_cast<size_t>(perm[k])];
    out_dims[k] = in.dims()[static_cast<size_t>(perm[k])];
  }
  mappedCopy(ctx, in, out, axes, nullptr, &out_dims);
}

}  // namespace kernels

namespace {

using namespace kernels;

// ------------------------------------------------------------ shared helpers

void copyAll(const Tensor& in, Tensor& out) {
  if (in.dtype() == DataType::kString)
    out.mutableStrings() = in.strings();
  else if (in.byteSize() != 0)
    std::memcpy(out.mutableBytes(), in.bytes(), std::min(in.byteSize(), out.byteSize()));
}

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

Shape unknownDims(InferContext& ctx, size_t rank) {
  Shape s;
  for (size_t k = 0; k < rank; ++k)
    s.dims.push_back(ctx.newSymbol());
  return s;
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
  const bool allowzero = ctx.attrInt("allowzero", 0) != 0;
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
  int64_t axis = ctx.attrInt("axis", 1);
  if (axis < -rank || axis > rank) ctx.fail("axis " + std::to_string(axis) + " out of range");
  if (axis < 0) axis += rank;
  auto merge = [&](size_t b, size_t e) {
    if (e - b == 1) return in->dims[b];
    int64_t p = 1;
    for (size_t k = b; k < e; ++k) {
      if (!in->dims[k].isKnown()) return ctx.newSymbol();
      p *= in->dims[k].value;
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

// ------------------------------------------------------------ Transpose

std::vector<int64_t> permOf(const OpContext& ctx, size_t rank) {
  std::vector<int64_t> perm = ctx.attrInts("perm");
  if (!ctx.hasAttr("perm")) {
    perm.resize(rank);
    for (size_t k = 0; k < rank; ++k)
      perm[k] = static_cast<int64_t>(rank - 1 - k);
  }
  if (perm.size() != rank)
    ctx.fail("perm has " + std::to_string(perm.size()) + " entries for rank " +
             std::to_string(rank));
  std::vector<bool> seen(rank, false);
  for (int64_t& p : perm) {
    p = normalizeAxis(ctx, p, static_cast<int64_t>(rank));
    if (seen[static_cast<size_t>(p)]) ctx.fail("perm is not a permutation");
    seen[static_cast<size_t>(p)] = true;
  }
  return perm;
}

void inferTranspose(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  const Shape* in = ctx.inputShape(0);
  if (in == nullptr) {
    if (ctx.hasAttr("perm")) {
      ctx.setOutput(0, dt, unknownDims(ctx, ctx.attrInts("perm").size()));
    } else {
      ctx.setOutputUnknownRank(0, dt);
    }
    return;
  }
  const std::vector<int64_t> perm = permOf(ctx, in->rank());
  Shape out;
  for (int64_t p : perm)
    out.dims.push_back(in->dims[static_cast<size_t>(p)]);
  ctx.setOutput(0, dt, out);
}

void computeTranspose(ComputeContext& ctx) {
  const Tensor& in = ctx.input(0);
  transposeTensor(ctx, in, ctx.output(0), permOf(ctx, in.rank()));
}

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
  const std::string mode = ctx.attrString("mode", "constant");
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
      const int64_t v = d.value + begin[k] + end[k];
      if (v < 0) ctx.fail("pads crop axis " + std::to_string(k) + " below zero");
      out.dims.push_back(Dim::known(v));
    } else {
      out.dims.push_back(ctx.newSymbol());
    }
  }
  ctx.setOutput(0, dt, out);
}

// Output coordinate -> input coordinate on one axis for a pad mode (-1: constant).
std::vector<int64_t> padMap(const OpContext& ctx, const std::string& mode, int64_t in_dim,
                            int64_t out_dim, int64_t begin) {
  std::vector<int64_t> m(static_cast<size_t>(out_dim));
  for (int64_t o = 0; o < out_dim; ++o) {
    int64_t c = o - begin;
    if (c < 0 || c >= in_dim) {
      if (mode == "constant") {
        c = -1;
      } else if (in_dim == 0) {
        ctx.fail("cannot " + mode + "-pad an empty axis");
      } else if (mode == "edge") {
        c = std::min(std::max<int64_t>(c, 0), in_dim - 1);
      } else if (mode == "wrap") {
        c = ((c % in_dim) + in_dim) % in_dim;
      } else {  // reflect: mirror without repeating the edge
        if (in_dim == 1) {
          c = 0;
        } else {
          const int64_t period = 2 * (in_dim - 1);
          c = ((c % period) + period) % period;
          if (c >= in_dim) c = period - c;
        }
      }
    }
    m[static_cast<size_t>(o)] = c;
  }
  return m;
}

void padCopy(const ComputeContext& ctx, const Tensor& in, Tensor& out, const std::string& mode,
             const std::vector<int64_t>& begin, const Tensor* fill) {
  const std::vector<int64_t> strides = rowMajorStrides(in.dims());
  std::vector<AxisMap> axes(out.rank());
  for (size_t k = 0; k < axes.size(); ++k) {
    axes[k].stride = strides[k];
    if (begin[k] != 0 || in.dims()[k] != out.dims()[k])
      axes[k].map = padMap(ctx, mode, in.dims()[k], out.dims()[k], begin[k]);
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
    const double v = ctx.attrFloat("value", 0.0f);
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
  padCopy(ctx, in, out, padMode(ctx), begin, &fill);
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

// ------------------------------------------------------------ DepthToSpace / SpaceToDepth

int64_t blockSize(const OpContext& ctx) {
  const int64_t b = ctx.attrInt("blocksize", 0);
  if (b <= 0) ctx.fail("blocksize must be positive");
  ctx.sizeMul(b, b);  // blocksize^2 divides or multiplies the channels: it must not wrap
  return b;
}

void inferDepthToSpace(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  const int64_t b = blockSize(ctx);
  const std::string mode = ctx.attrString("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") ctx.fail("mode must be DCR or CRD");
  const Shape* in = ctx.inputShape(0);
  if (in == nullptr) {
    ctx.setOutput(0, dt, unknownDims(ctx, 4));
    return;
  }
  if (in->rank() != 4) ctx.fail("input must be 4-D");
  Shape out = *in;
  const Dim& c = in->dims[1];
  if (c.isKnown() && c.value % (b * b) != 0) ctx.fail("channels are not divisible by blocksize^2");
  out.dims[1] = c.isKnown() ? Dim::known(c.value / (b * b)) : ctx.newSymbol();
  for (size_t k = 2; k < 4; ++k) {
    out.dims[k] =
        in->dims[k].isKnown() ? Dim::known(ctx.sizeMul(in->dims[k].value, b)) : ctx.newSymbol();
  }
  ctx.setOutput(0, dt, out);
}

// Both ops are a 6-D transpose of a reshaped input.
void blockTranspose(ComputeContext& ctx, const std::vector<int64_t>& dims6,
                    const std::vector<int64_t>& perm) {
  Tensor view = ctx.input(0);
  view.reshape(dims6);
  transposeTensor(ctx, view, ctx.output(0), perm);
}

void computeDepthToSpace(ComputeContext& ctx) {
  const std::vector<int64_t>& d = ctx.input(0).dims();
  const int64_t b = blockSize(ctx);
  const int64_t c = d[1] / (b * b);
  if (ctx.attrString("mode", "DCR") == "CRD")
    blockTranspose(ctx, {d[0], c, b, b, d[2], d[3]}, {0, 1, 4, 2, 5, 3});
  else
    blockTranspose(ctx, {d[0], b, b, c, d[2], d[3]}, {0, 3, 4, 1, 5, 2});
}

void inferSpaceToDepth(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  const int64_t b = blockSize(ctx);
  const Shape* in = ctx.inputShape(0);
  if (in == nullptr) {
    ctx.setOutput(0, dt, unknownDims(ctx, 4));
    return;
  }
  if (in->rank() != 4) ctx.fail("input must be 4-D");
  Shape out = *in;
  const Dim& c = in->dims[1];
  out.dims[1] = c.isKnown() ? Dim::known(ctx.sizeMul(c.value, b * b)) : ctx.newSymbol();
  for (size_t k = 2; k < 4; ++k) {
    const Dim& d = in->dims[k];
    if (d.isKnown() && d.value % b != 0) ctx.fail("spatial dims are not divisible by blocksize");
    out.dims[k] = d.isKnown() ? Dim::known(d.value / b) : ctx.newSymbol();
  }
  ctx.setOutput(0, dt, out);
}

void computeSpaceToDepth(ComputeContext& ctx) {
  const std::vector<int64_t>& d = ctx.input(0).dims();
  const int64_t b = blockSize(ctx);
  blockTranspose(ctx, {d[0], d[1], d[2] / b, b, d[3] / b, b}, {0, 3, 5, 1, 2, 4});
}

// ------------------------------------------------------------ Trilu

void inferTrilu(InferContext& ctx) {
  const DataType dt = ctx.inputDtype(0);
  const Shape* in = ctx.inputShape(0);
  if (in == nullptr) {
    ctx.setOutputUnknownRank(0, dt);
    return;
  }
  if (in->rank() < 2) ctx.fail("input must have rank >= 2");
  ctx.setOutput(0, dt, *in);
}

void computeTrilu(ComputeContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  const int64_t k = ctx.hasInput(1) ? toInt64Vector(ctx, ctx.input(1)).at(0) : 0;
  const bool upper = ctx.attrInt("upper", 1) != 0;
  const auto& d = in.dims();
  const int64_t rows = d[d.size() - 2], cols = d[d.size() - 1];
  const int64_t batch = rows * cols == 0 ? 0 : in.numElements() / (rows * cols);
  const bool strings = in.dtype() == DataType::kString;
  const size_t es = strings ? 0 : elementBytes(ctx, in.dtype());
  copyAll(in, out);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        const bool keep = upper ? j - i >= k : j - i <= k;
        if (keep) continue;
        const int64_t idx = (b * rows + i) * cols + j;
        if (strings)
          out.mutableStrings()[static_cast<size_t>(idx)].clear();
        else
          std::memset(out.mutableBytes() + static_cast<size_t>(idx) * es, 0, es);
      }
    }
  }
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
  const DataType dt = ctx.inputDtype(0);
  if (ctx.attrString("mode", "nearest") != "nearest")
    ctx.unsupported("only nearest mode is supported");
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
    if (scales[k] < 1) ctx.fail("scales must be >= 1");
    if (scales[k] == 1)
      out.dims.push_back(d);
    else if (d.isKnown())
      out.dims.push_back(Dim::known(static_cast<int64_t>(std::floor(d.value * scales[k]))));
    else
      out.dims.push_back(ctx.newSymbol());
  }
  ctx.setOutput(0, dt, out);
}

void computeUpsample(ComputeContext& ctx) {
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

void registerDataMovementOps(OpRegistry& r) {
  for (int v : {1, 5, 13, 14, 19, 21, 23, 24, 25})
    r.add({"", "Reshape", v, inferReshape, computeCopy});
  for (int v : {1, 9, 11, 13, 21, 23, 24, 25})
    r.add({"", "Flatten", v, inferFlatten, computeCopy});
  for (int v : {1, 11, 13, 21, 23, 24, 25}) {
    r.add({"", "Squeeze", v, inferSqueeze, computeCopy});
    r.add({"", "Unsqueeze", v, inferUnsqueeze, computeCopy});
  }
  for (int v : {1, 13, 21, 23, 24, 25})
    r.add({"", "Transpose", v, inferTranspose, computeTranspose,
           kOpWritesWholeOutputs | kOpUnalignedInputs});
  for (int v : {1, 4, 11, 13})
    r.add({"", "Concat", v, inferConcat, computeConcat});
  for (int v : {1, 2, 11, 13, 18})
    r.add({"", "Split", v, inferSplit, computeSplit});
  for (int v : {8, 13})
    r.add({"", "Expand", v, inferExpand, computeExpand});
  for (int v : {1, 6, 13})
    r.add({"", "Tile", v, inferTile, computeTile});
  for (int v : {1, 2, 11, 13, 18, 19, 21, 23, 24, 25})
    r.add({"", "Pad", v, inferPad, computePad});
  r.add({"", "CenterCropPad", 18, inferCenterCropPad, computeCenterCropPad});
  for (int v : {1, 11, 13})
    r.add({"", "DepthToSpace", v, inferDepthToSpace, computeDepthToSpace});
  for (int v : {1, 13})
    r.add({"", "SpaceToDepth", v, inferSpaceToDepth, computeSpaceToDepth});
  r.add({"", "Trilu", 14, inferTrilu, computeTrilu});
  for (int v : {7, 9})
    r.add({"", "Upsample", v, inferUpsample, computeUpsample});
}

}  // namespace onnxfold

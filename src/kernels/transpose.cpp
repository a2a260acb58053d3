// Transpose, the ops that are a transpose of a reshaped input (DepthToSpace,
// SpaceToDepth), and Trilu, the other op on the layout of the trailing matrix
// axes. See op_registry.h for the infer()/compute() contract; the transpose
// itself is transposeTensor of data_movement.h.
#include <cstring>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/data_movement.h"

namespace onnxfold {
namespace {

using namespace kernels;

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

// ------------------------------------------------------------ DepthToSpace / SpaceToDepth

int64_t blockSize(const OpContext& ctx) {
  const int64_t b = ctx.attrInt("blocksize", 0);
  if (b <= 0) ctx.fail("blocksize must be positive");
  ctx.sizeMul(b, b);  // blocksize^2 divides or multiplies the channels: it must not wrap
  return b;
}

// A dim of the result: d * f, or d / f when `divide` (failing with `why` unless f divides d).
Dim blockDim(InferContext& ctx, const Dim& d, int64_t f, bool divide, const char* why) {
  if (!d.isKnown()) return ctx.newSymbol();
  if (!divide) return Dim::known(ctx.sizeMul(d.value, f));
  if (d.value % f != 0) ctx.fail(why);
  return Dim::known(d.value / f);
}

// [N, C, H, W] -> [N, C / b^2, H * b, W * b] (DepthToSpace, `to_space`) or the reverse.
void inferBlockShape(InferContext& ctx, int64_t b, bool to_space) {
  const DataType dt = ctx.inputDtype(0);
  const Shape* in = ctx.inputShape(0);
  if (in == nullptr) {
    ctx.setOutput(0, dt, unknownDims(ctx, 4));
    return;
  }
  if (in->rank() != 4) ctx.fail("input must be 4-D");
  Shape out = *in;
  out.dims[1] =
      blockDim(ctx, in->dims[1], b * b, to_space, "channels are not divisible by blocksize^2");
  for (size_t k = 2; k < 4; ++k) {
    out.dims[k] =
        blockDim(ctx, in->dims[k], b, !to_space, "spatial dims are not divisible by blocksize");
  }
  ctx.setOutput(0, dt, out);
}

void inferDepthToSpace(InferContext& ctx) {
  const int64_t b = blockSize(ctx);
  const std::string mode = ctx.attrString("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") ctx.fail("mode must be DCR or CRD");
  inferBlockShape(ctx, b, true);
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
  inferBlockShape(ctx, blockSize(ctx), false);
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
  const bool upper = ctx.attrInt("upper") != 0;
  const auto& d = in.dims();
  const int64_t rows = d[d.size() - 2], cols = d[d.size() - 1];
  // An empty input's rows * cols may overflow; a non-empty one's divides its element count.
  const int64_t batch = in.numElements() == 0 ? 0 : in.numElements() / (rows * cols);
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

}  // namespace

void registerTransposeOps(OpRegistry& r) {
  for (int v : {1, 13, 21, 23, 24, 25})
    r.add({"", "Transpose", v, inferTranspose, computeTranspose,
           kOpWritesWholeOutputs | kOpUnalignedInputs});
  for (int v : {1, 11, 13})
    r.add({"", "DepthToSpace", v, inferDepthToSpace, computeDepthToSpace});
  for (int v : {1, 13})
    r.add({"", "SpaceToDepth", v, inferSpaceToDepth, computeSpaceToDepth});
  r.add({"", "Trilu", 14, inferTrilu, computeTrilu});
}

}  // namespace onnxfold

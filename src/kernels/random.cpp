// random op family: RandomNormal, RandomUniform, their *Like forms,
// Bernoulli and Multinomial. Inference only: their outputs are typed and
// shaped but never computed, so nondeterministic nodes are never folded. See
// op_registry.h for the infer()/compute() contract.
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common.h"
#include "kernels/op_helpers.h"

namespace onnxfold {
namespace kernels {
namespace {

DataType dtypeAttr(const OpContext& ctx, const char* name, DataType dflt) {
  if (!ctx.hasAttr(name)) return dflt;
  const int64_t v = ctx.attrInt(name, 0);
  // Range first: a value past int32 would truncate to a valid type.
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max() ||
      !isKnownDataType(static_cast<int32_t>(v)))
    ctx.fail(std::string("invalid ") + name);
  return static_cast<DataType>(v);
}

void inferRandomShape(InferContext& ctx) {
  const DataType t = dtypeAttr(ctx, "dtype", DataType::kFloat);
  if (!ctx.hasAttr("shape")) ctx.fail("the shape attribute is required");
  const std::vector<int64_t> dims = ctx.attrInts("shape");
  for (int64_t d : dims) {
    if (d < 0) ctx.fail("shape entries must be non-negative");
  }
  ctx.setOutput(0, t, dims);
}

void inferRandomLike(InferContext& ctx) {
  const DataType in = ctx.inputDtype(0);
  setSameShape(ctx, 0, dtypeAttr(ctx, "dtype", in), 0);
}

void inferMultinomial(InferContext& ctx) {
  requireType(ctx, 0, isFloatType, "a float type");
  const DataType t = dtypeAttr(ctx, "dtype", DataType::kInt32);
  if (t != DataType::kInt32 && t != DataType::kInt64) ctx.fail("dtype must be int32 or int64");
  const int64_t samples = ctx.attrInt("sample_size");
  if (samples < 0) ctx.fail("sample_size must be non-negative");  // would be a negative dim
  Shape s;
  const Shape* x = ctx.inputShape(0);
  if (x != nullptr && x->rank() != 2) ctx.fail("input must be [batch_size, class_size]");
  s.dims.push_back(x != nullptr ? x->dims[0] : ctx.newSymbol());
  s.dims.push_back(Dim::known(samples));
  ctx.setOutput(0, t, std::move(s));
}

}  // namespace
}  // namespace kernels

void registerRandomOps(OpRegistry& r) {
  using namespace kernels;
  // Random generators: typed and shaped, never evaluated.
  for (int v : {1, 22}) {
    r.add({"", "RandomNormal", v, inferRandomShape, nullptr, kOpNondeterministic});
    r.add({"", "RandomUniform", v, inferRandomShape, nullptr, kOpNondeterministic});
    r.add({"", "RandomNormalLike", v, inferRandomLike, nullptr, kOpNondeterministic});
    r.add({"", "RandomUniformLike", v, inferRandomLike, nullptr, kOpNondeterministic});
  }
  for (int v : {15, 22})
    r.add({"", "Bernoulli", v, inferRandomLike, nullptr, kOpNondeterministic});
  for (int v : {7, 22})
    r.add({"", "Multinomial", v, inferMultinomial, nullptr, kOpNondeterministic});
}

}  // namespace onnxfold

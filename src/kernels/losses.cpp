// losses op family: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
// (with class weights, ignore_index, the three reductions and SCE's log_prob
// output). See op_registry.h for the infer()/compute() contract. Computed in
// double and rounded once.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common.h"
#include "kernels/float_math.h"
#include "kernels/op_helpers.h"

namespace onnxfold {
namespace kernels {
namespace {

// Shared by NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: input
// [N, C, d1..dk], target [N, d1..dk]; the loss is [N, d1..dk] or a scalar.
void inferLoss(InferContext& ctx) {
  requireType(ctx, 0, isFloatType, "a float type");
  const DataType t = ctx.inputDtype(0);
  const std::string reduction = ctx.attrString("reduction");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    ctx.fail("invalid reduction '" + reduction + "'");
  }
  const Shape* x = ctx.inputShape(0);
  const Shape* target = ctx.inputShape(1);
  if (x != nullptr && x->rank() < 2) ctx.fail("input must have rank >= 2 ([N, C, ...])");
  if (x != nullptr && target != nullptr && target->rank() + 1 != x->rank()) {
    ctx.fail("target must have rank one less than input");
  }
  if (reduction == "none") {
    if (target != nullptr) {
      ctx.setOutput(0, t, *target);
    } else if (x != nullptr) {
      Shape s = *x;
      s.dims.erase(s.dims.begin() + 1);
      ctx.setOutput(0, t, std::move(s));
    } else {
      ctx.setOutputUnknownRank(0, t);
    }
  } else {
    ctx.setOutput(0, t, Shape{});
  }
  // SoftmaxCrossEntropyLoss's optional log_prob: the input's shape.
  if (ctx.numOutputs() > 1) setSameShape(ctx, 1, t, 0);
}

// Loss from log-probabilities `logp` laid out [N, C, D].
std::vector<double> nllLoss(const OpContext& ctx, const std::vector<double>& logp,
                            const std::vector<int64_t>& target, const Tensor* weight_t, int64_t N,
                            int64_t C, int64_t D, const std::string& reduction) {
  const bool has_ii = ctx.hasAttr("ignore_index");
  const int64_t ii = ctx.attrInt("ignore_index", 0);
  std::vector<double> weight;
  if (weight_t != nullptr) {
    weight = readAll(*weight_t);
    if (static_cast<int64_t>(weight.size()) != C) ctx.fail("weight must have C elements");
  }
  std::vector<double> loss(static_cast<size_t>(N * D));
  double wsum = 0, lsum = 0;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t d = 0; d < D; ++d) {
      const auto i = static_cast<size_t>(n * D + d);
      const int64_t c = target[i];
      if (has_ii && c == ii) {
        loss[i] = 0;
        continue;
      }
      if (c < 0 || c >= C) {
        ctx.fail("target " + std::to_string(c) + " is out of range [0, " + std::to_string(C) + ")");
      }
      const double w = weight.empty() ? 1.0 : weight[static_cast<size_t>(c)];
      loss[i] = -logp[static_cast<size_t>((n * C + c) * D + d)] * w;
      wsum += w;
      lsum += loss[i];
    }
  }
  if (reduction == "none") return loss;
  if (reduction == "sum") return {lsum};
  // mean: weighted by the gathered weights (ignored entries count 0).
  return {lsum / wsum};
}

void computeNll(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t N = x.dims()[0], C = x.dims()[1];
  const int64_t D = product(x.dims(), 2, x.rank());
  const std::vector<int64_t> target = readInts(ctx, ctx.input(1));
  // sizeMul: with C = 0, N and D are declared dims whose product may overflow int64.
  if (static_cast<int64_t>(target.size()) != ctx.sizeMul(N, D)) ctx.fail("target shape mismatch");
  writeAll(ctx.output(0),
           nllLoss(ctx, readAll(x), target, ctx.hasInput(2) ? &ctx.input(2) : nullptr, N, C, D,
                   ctx.attrString("reduction")));
}

void computeSce(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t N = x.dims()[0], C = x.dims()[1];
  const int64_t D = product(x.dims(), 2, x.rank());
  const std::vector<int64_t> target = readInts(ctx, ctx.input(1));
  // sizeMul: with C = 0, N and D are declared dims whose product may overflow int64.
  if (static_cast<int64_t>(target.size()) != ctx.sizeMul(N, D)) ctx.fail("target shape mismatch");
  // log_softmax over the class axis.
  std::vector<double> v = readAll(x);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t d = 0; d < D; ++d) {
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t c = 0; c < C; ++c)
        mx = std::max(mx, v[static_cast<size_t>((n * C + c) * D + d)]);
      double s = 0;
      for (int64_t c = 0; c < C; ++c)
        s += fm::exp(v[static_cast<size_t>((n * C + c) * D + d)] - mx);
      const double ls = fm::log(s);
      for (int64_t c = 0; c < C; ++c) {
        double& e = v[static_cast<size_t>((n * C + c) * D + d)];
        e = e - mx - ls;
      }
    }
  }
  writeAll(ctx.output(0), nllLoss(ctx, v, target, ctx.hasInput(2) ? &ctx.input(2) : nullptr, N, C,
                                  D, ctx.attrString("reduction")));
  if (ctx.hasOutput(1)) writeAll(ctx.output(1), v);
}

}  // namespace
}  // namespace kernels

void registerLossOps(OpRegistry& r) {
  using namespace kernels;
  for (int v : {12, 13, 22})
    r.add({"", "NegativeLogLikelihoodLoss", v, inferLoss, computeNll});
  for (int v : {12, 13})
    r.add({"", "SoftmaxCrossEntropyLoss", v, inferLoss, computeSce});
}

}  // namespace onnxfold

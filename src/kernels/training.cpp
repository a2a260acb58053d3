// training op family: the ai.onnx.preview.training optimizers Adagrad, Adam
// and Momentum, each over lists of tensors. See op_registry.h for the
// infer()/compute() contract. Computed in double and rounded once.
#include <cmath>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/float_math.h"
#include "kernels/op_helpers.h"

namespace onnxfold {
namespace kernels {
namespace {

// Inputs R, T, then `groups` lists of n tensors; outputs are the updated lists
// after the first (X, [V,] [H]), each shaped like X. `groups` is 3 for Adagrad and Momentum,
// 4 for Adam; one instance each, as the registry takes plain functions.
template <int groups>
void inferOptimizer(InferContext& ctx) {
  const size_t n_in = ctx.numInputs();
  if (n_in < 2 || (n_in - 2) % static_cast<size_t>(groups) != 0) {
    ctx.fail("expected R, T and " + std::to_string(groups) + " lists of equal length");
  }
  const size_t n = (n_in - 2) / static_cast<size_t>(groups);
  if (ctx.numOutputs() > n * static_cast<size_t>(groups - 1)) ctx.fail("too many outputs");
  for (size_t o = 0; o < ctx.numOutputs(); ++o) {
    const size_t k = o % n;
    // Output list j (X_new, then V_new/H_new) mirrors input list 0, 2, 3.
    const size_t list = o / n == 0 ? 0 : o / n + 1;
    const size_t src = 2 + list * n + k;
    setSameShape(ctx, o, ctx.inputDtype(2 + k), src);
  }
}

template <int groups>
void computeOptimizer(ComputeContext& ctx) {
  const double R = scalarAsDouble(ctx, ctx.input(0));
  const double T = scalarAsDouble(ctx, ctx.input(1));
  const size_t n = (ctx.numInputs() - 2) / static_cast<size_t>(groups);
  const std::string op(ctx.opType());
  const double norm = ctx.attrFloat("norm_coefficient", 0.0f);
  for (size_t k = 0; k < n; ++k) {
    const std::vector<double> x = readAll(ctx.input(2 + k));
    const std::vector<double> g = readAll(ctx.input(2 + n + k));
    std::vector<double> a = readAll(ctx.input(2 + 2 * n + k));
    if (g.size() != x.size() || a.size() != x.size()) ctx.fail("X, G and states must match");
    std::vector<double> xn(x.size());
    std::vector<double> b;
    if (op == "Adagrad") {
      const double decay = ctx.attrFloat("decay_factor");
      const double eps = ctx.attrFloat("epsilon");
      const double r = R / (1 + T * decay);
      for (size_t i = 0; i < x.size(); ++i) {
        const double gr = norm * x[i] + g[i];
        a[i] += gr * gr;
        xn[i] = x[i] - r * gr / (std::sqrt(a[i]) + eps);
      }
    } else if (op == "Momentum") {
      const double alpha = ctx.attrFloat("alpha", 0.0f);
      const double beta = ctx.attrFloat("beta", 0.0f);
      const std::string mode = ctx.attrString("mode", "standard");
      if (mode != "standard" && mode != "nesterov") ctx.fail("invalid mode '" + mode + "'");
      const double beta_adj = T > 0 ? beta : 1.0;
      for (size_t i = 0; i < x.size(); ++i) {
        const double gr = norm * x[i] + g[i];
        a[i] = alpha * a[i] + beta_adj * gr;
        xn[i] = mode == "standard" ? x[i] - R * a[i] : x[i] - R * (gr + alpha * a[i]);
      }
    } else {
      const double alpha = ctx.attrFloat("alpha");
      const double beta = ctx.attrFloat("beta");
      const double eps = ctx.attrFloat("epsilon");
      const double post = ctx.attrFloat("norm_coefficient_post");
      b = readAll(ctx.input(2 + 3 * n + k));
      if (b.size() != x.size()) ctx.fail("X and H must match");
      const double r = T > 0 ? R * std::sqrt(1 - fm::pow(beta, T)) / (1 - fm::pow(alpha, T)) : R;
      for (size_t i = 0; i < x.size(); ++i) {
        const double gr = norm * x[i] + g[i];
        a[i] = alpha * a[i] + (1 - alpha) * gr;
        b[i] = beta * b[i] + (1 - beta) * gr * gr;
        xn[i] = (1 - post) * (x[i] - r * a[i] / (std::sqrt(b[i]) + eps));
      }
    }
    if (ctx.hasOutput(k)) writeAll(ctx.output(k), xn);
    if (ctx.hasOutput(n + k)) writeAll(ctx.output(n + k), a);
    if (!b.empty() && ctx.hasOutput(2 * n + k)) writeAll(ctx.output(2 * n + k), b);
  }
}

}  // namespace
}  // namespace kernels

void registerTrainingOps(OpRegistry& r) {
  using namespace kernels;
  r.add({"ai.onnx.preview.training", "Adagrad", 1, inferOptimizer<3>, computeOptimizer<3>});
  r.add({"ai.onnx.preview.training", "Momentum", 1, inferOptimizer<3>, computeOptimizer<3>});
  r.add({"ai.onnx.preview.training", "Adam", 1, inferOptimizer<4>, computeOptimizer<4>});
}

}  // namespace onnxfold

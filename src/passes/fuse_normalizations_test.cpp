// fuse-normalizations tests: the exporters' decomposed LayerNormalization, RMS normalization
// and Gelu become one op, computing the same (evaluated before and after), and every
// condition that must stop a fusion stops it; --target-opset's upgrade.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "ir/error.h"
#include "ir/verifier.h"
#include "kernels/common.h"
#include "passes/registry.h"
#include "passes/upgrade_opset.h"
#include "test_util.h"

namespace onnxfold {
namespace {

using test::attrs;
using test::countOps;
using test::floatTensor;
using test::int64Tensor;
using test::ModelBuilder;
using test::ramp;

// fold-constants (refines types, as in the pipeline), then fuse-normalizations; verifies the
// IR and returns the counters.
std::map<std::string, int64_t> runFusions(Model& m) {
  PassOptions options;
  PassContext ctx(options);
  createPass("fold-constants")->run(m, ctx);
  ctx.takeCounters();
  createPass("fuse-normalizations")->run(m, ctx);
  const VerifyResult v = verify(m);
  EXPECT_TRUE(v.ok) << v.message;
  return ctx.takeCounters();
}

// Runs the fusions and checks the outputs on `x` do not change.
std::map<std::string, int64_t> runAndCompare(Model& m, const Tensor& x) {
  const auto before = test::evaluateByFolding(m, {{"x", x}});
  auto counters = runFusions(m);
  const auto after = test::evaluateByFolding(m, {{"x", x}});
  EXPECT_EQ(before.size(), after.size());
  for (size_t k = 0; k < before.size() && k < after.size(); ++k) {
    EXPECT_EQ(before[k].size(), after[k].size());
    for (size_t i = 0; i < before[k].size() && i < after[k].size(); ++i)
      EXPECT_NEAR(before[k][i], after[k][i], 1e-5 * (1 + std::fabs(before[k][i]))) << i;
  }
  return counters;
}

// ------------------------------------------------------------------ LayerNormalization

struct LnSpec {
  int64_t opset = 17;
  std::vector<int64_t> axes = {-1};
  bool pow = true;          // Pow(d, 2), else Mul(d, d)
  bool reciprocal = false;  // Mul(d, Reciprocal(s)), else Div(d, s)
  float exponent = 2;
  bool eps_constant = true;
  bool scale = true, bias = true;
  bool extra_use = false;      // the Sqrt output also feeds a graph output
  bool output_of_sub = false;  // x - mean is also a graph output
};

std::unique_ptr<Model> layerNormModel(const LnSpec& s) {
  ModelBuilder b(s.opset);
  Value* x = b.input("x", DataType::kFloat, {2, 3, 4});
  auto mean = [&](Value* v) {
    if (s.opset >= 18)
      return b.op(
          "ReduceMean",
          {v, b.initializer(int64Tensor({(int64_t)s.axes.size()}, s.axes, "axes" + v->name()))});
    return b.op("ReduceMean", {v}, attrs(Attribute::makeInts("axes", s.axes)));
  };
  Value* d = b.op("Sub", {x, mean(x)});
  Value* sq = s.pow ? b.op("Pow", {d, b.initializer(floatTensor({}, {s.exponent}, "two"))})
                    : b.op("Mul", {d, d});
  Value* eps = s.eps_constant ? b.initializer(floatTensor({}, {1e-5f}, "eps"))
                              : b.input("eps", DataType::kFloat, {});
  Value* sd = b.op("Sqrt", {b.op("Add", {mean(sq), eps})});
  Value* n = s.reciprocal ? b.op("Mul", {d, b.op("Reciprocal", {sd})}) : b.op("Div", {d, sd});
  Value* y = n;
  if (s.scale) y = b.op("Mul", {y, b.initializer("scale", {4}, {0.5f, 1, 1.5f, -2})});
  if (s.bias) y = b.op("Add", {b.initializer("bias", {1, 4}, {0.1f, 0.2f, 0.3f, 0.4f}), y});
  y->setName("y");
  b.output(y);
  if (s.extra_use) b.output(b.op("Neg", {sd}));
  if (s.output_of_sub) b.output(d);
  return b.build();
}

Tensor lnInput() {
  return floatTensor({2, 3, 4}, ramp(24, 0.41f));
}

TEST(FuseLayerNormalization, ExporterFormBecomesOneOp) {
  auto m = layerNormModel({});
  auto counters = runAndCompare(*m, lnInput());
  EXPECT_EQ(counters["pattern fuse-layer-normalization"], 1);
  EXPECT_EQ(countOps(*m->graph, "LayerNormalization"), 1u);
  EXPECT_EQ(m->graph->numNodes(), 1u);
  EXPECT_EQ(m->graph->outputs()[0]->name(), "y");
}

TEST(FuseLayerNormalization, VariantsFuse) {
  LnSpec mul_square, recip, no_affine, two_axes, op18;
  mul_square.pow = false;
  recip.reciprocal = true;
  no_affine.scale = no_affine.bias = false;
  two_axes.axes = {-2, -1};
  op18.opset = 18;
  for (const LnSpec& s : {mul_square, recip, no_affine, two_axes, op18}) {
    auto m = layerNormModel(s);
    runAndCompare(*m, lnInput());
    EXPECT_EQ(countOps(*m->graph, "LayerNormalization"), 1u);
    EXPECT_EQ(m->graph->numNodes(), 1u);
  }
}

TEST(FuseLayerNormalization, ConditionsStopIt) {
  LnSpec low, not_trailing, wrong_exp, eps_input, extra_use, graph_output;
  low.opset = 16;
  not_trailing.axes = {1};
  wrong_exp.exponent = 3;
  eps_input.eps_constant = false;
  extra_use.extra_use = true;
  graph_output.output_of_sub = true;
  const std::pair<const char*, LnSpec> cases[] = {{"opset 16", low},
                                                  {"axes not trailing", not_trailing},
                                                  {"exponent 3", wrong_exp},
                                                  {"eps not constant", eps_input},
                                                  {"Sqrt has another use", extra_use},
                                                  {"x - mean is a graph output", graph_output}};
  for (const auto& [why, s] : cases) {
    auto m = layerNormModel(s);
    runFusions(*m);
    EXPECT_EQ(countOps(*m->graph, "LayerNormalization"), 0u) << why;
    EXPECT_EQ(countOps(*m->graph, "Sqrt"), 1u) << why;
  }
}

// ------------------------------------------------------------------ RMSNormalization

std::unique_ptr<Model> rmsModel(int64_t opset, float exponent = 2, bool scale_constant = true,
                                bool reciprocal = false) {
  ModelBuilder b(opset);
  Value* x = b.input("x", DataType::kFloat, {2, 3, 4});
  Value* sq = b.op("Pow", {x, b.initializer(floatTensor({}, {exponent}, "two"))});
  Value* m = opset >= 18 ? b.op("ReduceMean", {sq, b.initializer(int64Tensor({1}, {-1}, "axes"))})
                         : b.op("ReduceMean", {sq}, attrs(Attribute::makeInts("axes", {-1})));
  Value* sd = b.op("Sqrt", {b.op("Add", {m, b.initializer(floatTensor({}, {1e-6f}, "eps"))})});
  Value* w = scale_constant ? b.initializer("w", {4}, {1.1f, 0.9f, 1, 1.2f})
                            : b.input("w", DataType::kFloat, {4});
  Value* n = reciprocal ? b.op("Mul", {b.op("Reciprocal", {sd}), x}) : b.op("Div", {x, sd});
  Value* y = b.op("Mul", {w, n});
  y->setName("y");
  b.output(y);
  b.output(b.op("Relu", {x}));  // x has another use: fine
  return b.build();
}

TEST(FuseRmsNormalization, LlamaFormBecomesOneOp) {
  auto m = rmsModel(23);
  auto counters = runAndCompare(*m, lnInput());
  EXPECT_EQ(counters["pattern fuse-rms-normalization"], 1);
  EXPECT_EQ(countOps(*m->graph, "RMSNormalization"), 1u);
  EXPECT_EQ(m->graph->numNodes(), 2u);  // and the Relu
}

TEST(FuseRmsNormalization, ReciprocalFormFuses) {
  auto m = rmsModel(23, 2, true, true);
  auto counters = runAndCompare(*m, lnInput());
  EXPECT_EQ(counters["pattern fuse-rms-normalization-reciprocal"], 1);
  EXPECT_EQ(countOps(*m->graph, "RMSNormalization"), 1u);
  EXPECT_EQ(m->graph->numNodes(), 2u);
}

TEST(FuseRmsNormalization, ConditionsStopIt) {
  std::pair<const char*, std::unique_ptr<Model>> cases[] = {
      {"opset 22", rmsModel(22)},
      {"x^3", rmsModel(23, 3)},
      {"scale not constant", rmsModel(23, 2, false)}};
  for (auto& [why, m] : cases) {
    runFusions(*m);
    EXPECT_EQ(countOps(*m->graph, "RMSNormalization"), 0u) << why;
    EXPECT_EQ(countOps(*m->graph, "Sqrt"), 1u) << why;
  }
}

// ------------------------------------------------------------------ Gelu

enum class GeluForm { kTorchErf, kHalfFirst, kMulBySqrtHalf, kTanhPow, kTanhMulCube };

std::unique_ptr<Model> geluModel(GeluForm form, int64_t opset = 20, float sqrt2 = 1.4142135f,
                                 bool extra_use = false) {
  ModelBuilder b(opset);
  Value* x = b.input("x", DataType::kFloat, {2, 5});
  auto c = [&](float v) {
    static int k = 0;
    return b.initializer(floatTensor({}, {v}, "c" + std::to_string(k++)));
  };
  Value* y = nullptr;
  switch (form) {
    case GeluForm::kTorchErf: {  // x * (erf(x / sqrt 2) + 1) * 0.5
      Value* e = b.op("Erf", {b.op("Div", {x, c(sqrt2)})});
      Value* p = b.op("Mul", {x, b.op("Add", {e, c(1)})});
      if (extra_use) b.output(p);
      y = b.op("Mul", {p, c(0.5f)});
      break;
    }
    case GeluForm::kHalfFirst: {  // (0.5 * x) * (1 + erf(x / sqrt 2))
      Value* e = b.op("Erf", {b.op("Div", {x, c(sqrt2)})});
      y = b.op("Mul", {b.op("Mul", {c(0.5f), x}), b.op("Add", {c(1), e})});
      break;
    }
    case GeluForm::kMulBySqrtHalf: {  // x * (0.5 * (1 + erf(x * 0.70710678)))
      Value* e = b.op("Erf", {b.op("Mul", {x, c(0.70710678f)})});
      y = b.op("Mul", {x, b.op("Mul", {c(0.5f), b.op("Add", {e, c(1)})})});
      break;
    }
    case GeluForm::kTanhPow:
    case GeluForm::kTanhMulCube: {
      Value* cube = form == GeluForm::kTanhPow ? b.op("Pow", {x, c(3)})
                                               : b.op("Mul", {b.op("Mul", {x, x}), x});
      Value* inner = b.op("Add", {x, b.op("Mul", {c(0.044715f), cube})});
      Value* t = b.op("Tanh", {b.op("Mul", {inner, c(0.7978845608f)})});
      y = b.op("Mul", {b.op("Mul", {c(0.5f), x}), b.op("Add", {c(1), t})});
      break;
    }
  }
  y->setName("y");
  b.output(y);
  return b.build();
}

TEST(FuseGelu, EveryFormBecomesOneOp) {
  const std::pair<GeluForm, const char*> forms[] = {{GeluForm::kTorchErf, "none"},
                                                    {GeluForm::kHalfFirst, "none"},
                                                    {GeluForm::kMulBySqrtHalf, "none"},
                                                    {GeluForm::kTanhPow, "tanh"},
                                                    {GeluForm::kTanhMulCube, "tanh"}};
  for (const auto& [form, approximate] : forms) {
    auto m = geluModel(form);
    auto counters = runAndCompare(*m, floatTensor({2, 5}, ramp(10, 0.53f, -2.1f)));
    EXPECT_EQ(counters["pattern fuse-gelu"], 1) << approximate;
    ASSERT_EQ(m->graph->numNodes(), 1u) << approximate;
    const Node* g = *m->graph->nodes().begin();
    EXPECT_EQ(g->op_type, "Gelu");
    EXPECT_EQ(g->attrString("approximate", ""), approximate);
  }
}

TEST(FuseGelu, ConditionsStopIt) {
  std::pair<const char*, std::unique_ptr<Model>> cases[] = {
      {"opset 19", geluModel(GeluForm::kTorchErf, 19)},
      {"sqrt 2 off by 1e-4", geluModel(GeluForm::kTorchErf, 20, 1.4143f)},
      {"x * (erf + 1) is a graph output", geluModel(GeluForm::kTorchErf, 20, 1.4142135f, true)}};
  for (auto& [why, m] : cases) {
    runFusions(*m);
    EXPECT_EQ(countOps(*m->graph, "Gelu"), 0u) << why;
    EXPECT_EQ(countOps(*m->graph, "Erf"), 1u) << why;
  }
}
// ------------------------------------------------------------------ float16 exports

Tensor halfTensor(std::vector<int64_t> dims, const std::vector<float>& values, std::string name) {
  Tensor t(DataType::kFloat16, std::move(dims));
  t.name = std::move(name);
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t h = kernels::floatToHalf(values[i]);
    std::memcpy(t.mutableBytes() + 2 * i, &h, 2);
  }
  return t;
}

// A float16 export's normalization: x16 -> Cast(float) -> the float32 core -> Cast(float16) ->
// scale (and bias) in float16. `back`: the type the core is cast back to.
std::unique_ptr<Model> castNormModel(bool layer, DataType back = DataType::kFloat16,
                                     bool x32_output = false) {
  ModelBuilder b(23);
  Value* x16 = b.input("x", DataType::kFloat16, {2, 3, 4});
  Value* x = b.op("Cast", {x16}, attrs(Attribute::makeInt("to", 1)));
  auto mean = [&](Value* v) {
    return b.op("ReduceMean", {v, b.initializer(int64Tensor({1}, {-1}, "axes" + v->name()))});
  };
  Value* d = layer ? b.op("Sub", {x, mean(x)}) : x;
  Value* sq = b.op("Pow", {d, b.initializer(floatTensor({}, {2}, "two"))});
  Value* sd =
      b.op("Sqrt", {b.op("Add", {mean(sq), b.initializer(floatTensor({}, {1e-5f}, "eps"))})});
  Value* n = b.op("Cast", {b.op("Div", {d, sd})},
                  attrs(Attribute::makeInt("to", static_cast<int64_t>(back))));
  Value* y = b.op("Mul", {b.initializer(halfTensor({4}, {1.1f, 0.9f, 1, -1.25f}, "w")), n});
  if (layer) y = b.op("Add", {y, b.initializer(halfTensor({4}, {0.1f, 0, -0.2f, 0.3f}, "bias"))});
  y->setName("y");
  b.output(y);
  if (x32_output) b.output(b.op("Relu", {x}));
  return b.build();
}

Tensor halfInput() {
  std::vector<float> v = ramp(24, 0.41f);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = v[i] * (i % 3 == 0 ? 7.0f : -3.0f);
  return halfTensor({2, 3, 4}, v, "x");
}

TEST(FuseNormalizations, Float16ExportsCastsAroundAFloat32CoreFuse) {
  for (bool layer : {false, true}) {
    const char* op = layer ? "LayerNormalization" : "RMSNormalization";
    auto m = castNormModel(layer);
    const auto before = test::evaluateByFolding(*m, {{"x", halfInput()}});
    auto counters = runFusions(*m);
    EXPECT_EQ(
        counters[layer ? "pattern fuse-layer-normalization" : "pattern fuse-rms-normalization"], 1)
        << op;
    ASSERT_EQ(countOps(*m->graph, op), 1u) << op;
    EXPECT_EQ(m->graph->numNodes(), 1u) << op << ": the Casts went too";
    const Node* fused = m->graph->firstNode();
    EXPECT_EQ(fused->input(0)->type.elem_type, DataType::kFloat16) << op;
    EXPECT_EQ(fused->attrInt("stash_type", 1), 1) << op;
    const auto after = test::evaluateByFolding(*m, {{"x", halfInput()}});
    ASSERT_EQ(before.size(), 1u);
    ASSERT_EQ(after.size(), 1u);
    // The same function: the core in float32, then float16 steps; the decomposed core rounds
    // each op to float32 where the kernel keeps double, so allow one float16 step.
    for (size_t i = 0; i < before[0].size(); ++i)
      EXPECT_NEAR(before[0][i], after[0][i], 1e-3 * (1 + std::fabs(before[0][i]))) << op << i;
  }
}

TEST(FuseNormalizations, Float16CastFormConditions) {
  // Cast back to float32 (not x's type): the core is not x16's normalization; it stays.
  auto other = castNormModel(false, DataType::kFloat);
  runFusions(*other);
  EXPECT_EQ(countOps(*other->graph, "RMSNormalization"), 0u);
  // The float32 x has another use: the fusion takes x16, and the Cast stays for the Relu.
  auto shared = castNormModel(false, DataType::kFloat16, true);
  runFusions(*shared);
  EXPECT_EQ(countOps(*shared->graph, "RMSNormalization"), 1u);
  EXPECT_EQ(countOps(*shared->graph, "Cast"), 1u);
}

// ------------------------------------------------------------------ float16

// convert-float16 keeps the fused ops in float16 (their accumulation is internal; the
// decomposed LayerNorm's variance was a float32 island).
TEST(FuseNormalizations, Float16KeepsTheFusedOpsInFloat16) {
  auto ln = layerNormModel({});
  auto rms = rmsModel(23);
  auto gelu = geluModel(GeluForm::kTorchErf);
  const std::pair<Model*, const char*> cases[] = {
      {ln.get(), "LayerNormalization"}, {rms.get(), "RMSNormalization"}, {gelu.get(), "Gelu"}};
  for (const auto& [m, op] : cases) {
    runFusions(*m);
    ASSERT_EQ(countOps(*m->graph, op), 1u) << op;
    test::runPass(*m, "convert-float16");
    for (const Node* n : m->graph->nodes()) {
      if (n->op_type != op) continue;
      for (const Value* v : n->inputs())
        EXPECT_EQ(v->type.elem_type, DataType::kFloat16) << op << " input " << v->name();
      EXPECT_EQ(n->output(0)->type.elem_type, DataType::kFloat16) << op;
    }
  }
}

// ------------------------------------------------------------------ target opset

TEST(UpgradeOpset, MovesReduceAxesToAnInputThenFuses) {
  std::unique_ptr<Model> m = layerNormModel({14});
  m->ir_version = 7;  // as exported at opset 14
  EXPECT_TRUE(upgradeOpset(m, 18));
  EXPECT_EQ(m->opsetVersion(""), 18);
  EXPECT_EQ(m->ir_version, 8);  // what opset 18 needs
  for (const Node* n : m->graph->nodes()) {
    if (n->op_type == "ReduceMean") {
      EXPECT_EQ(n->attr("axes"), nullptr);
      EXPECT_EQ(n->numInputs(), 2u);
    }
  }
  runAndCompare(*m, lnInput());
  EXPECT_EQ(countOps(*m->graph, "LayerNormalization"), 1u);
}

TEST(UpgradeOpset, RefusesAnOpWhoseMeaningChanges) {
  ModelBuilder b(17);
  Value* x = b.input("x", DataType::kFloat, {1, 2, 3, 3});
  Value* g = b.input("grid", DataType::kFloat, {1, 2, 2, 2});
  b.output(b.op("GridSample", {x, g}, {}, "sampler"));  // mode 'bilinear' became 'linear' at 20
  std::unique_ptr<Model> m = b.build();
  try {
    upgradeOpset(m, 20);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GridSample"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sampler"), std::string::npos) << e.what();
  }
  EXPECT_EQ(m->opsetVersion(""), 17);  // unchanged
  EXPECT_FALSE(upgradeOpset(m, 16));   // never lowered
}

}  // namespace
}  // namespace onnxfold

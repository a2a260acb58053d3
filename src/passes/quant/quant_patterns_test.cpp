// Quantization-finalize tests: each pattern on a small QDQ graph, the ops it
// leaves, its numbers against the QDQ original (evaluated by the op
// registry's kernels), and the preconditions that must stop it.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/graph_builder.h"
#include "passes/quant/quant_test_util.h"

namespace onnxfold::quant::testing {
namespace {

constexpr DataType kU8 = DataType::kUint8;
constexpr DataType kI8 = DataType::kInt8;
constexpr DataType kI32 = DataType::kInt32;
constexpr DataType kF32 = DataType::kFloat;
// A float bias quantized to int32 moves by at most half a bias step
// (x scale 0.01 times the largest weight scale 0.006), plus float rounding.
constexpr double kHalfBiasStep = 0.5 * 0.01 * 0.006 + 1e-6;

struct ConvOpts {
  bool per_channel = true;
  bool bias = true;
  std::string act;  // "", "Relu", "Clip" (0..6)
  bool out_q = true;
  float sy = 0.05F;
  int64_t zy = 0;
  bool weight_const = true;
  bool out_per_axis = false;
  // Bias given as int32 -> DQ with this scale factor over sx*sw (1: consistent).
  float int_bias_scale_factor = 0;
  DataType x_type = DataType::kUint8;  // x's quantized type (zero point 128 for uint8, 0 for int8)
  DataType y_type = DataType::kUint8;  // y's
  std::vector<int64_t> w_zero_points = {0, 0, 0};  // per channel
};

ConvOpts with(void (*set)(ConvOpts&)) {
  ConvOpts o;
  set(o);
  return o;
}

const std::map<std::string, Tensor> convInputs() {
  return {{"x", test::floatTensor({1, 2, 5, 5}, ramp(50, 0.23F))}};
}

std::unique_ptr<Model> convModel(const ConvOpts& o) {
  QdqBuilder q;
  Value* x = q.b().input("x", kF32, {1, 2, 5, 5});
  const float sx = 0.01F;
  Value* xd = q.qdq(x, q.scale({sx}), q.zp(o.x_type, o.x_type == kU8 ? 128 : 0));
  const std::vector<float> sw =
      o.per_channel ? std::vector<float>{0.004F, 0.006F, 0.005F} : std::vector<float>{0.005F};
  Value* swv = q.scale(sw, o.per_channel);
  Value* zw = o.per_channel ? q.ints(kI8, {3}, o.w_zero_points) : q.zp(kI8, 0);
  Value* wf = o.weight_const ? q.floats({3, 2, 3, 3}, ramp(54, 0.29F))
                             : q.b().input("w", kF32, {3, 2, 3, 3});
  const int64_t axis = o.per_channel ? 0 : -100;
  Value* wd = q.dq(q.q(wf, swv, zw, axis), swv, zw, axis);
  Value* bias = nullptr;
  if (o.int_bias_scale_factor != 0) {
    std::vector<float> sb;
    for (float s : sw)
      sb.push_back(sx * s * o.int_bias_scale_factor);
    Value* bs = q.scale(sb, o.per_channel);
    Value* bz = o.per_channel ? q.ints(kI32, {3}, {0, 0, 0}) : q.zp(kI32, 0);
    bias = q.dq(q.ints(kI32, {3}, {1000, -2000, 500}, "bq"), bs, bz, axis);
  } else if (o.bias) {
    bias = q.floats({3}, {0.1F, -0.2F, 0.05F}, "b");
  }
  std::vector<Value*> in = {xd, wd};
  if (bias != nullptr) in.push_back(bias);
  Value* c = q.b().op("Conv", in, attrs(Attribute::makeInts("pads", {1, 1, 1, 1})));
  if (o.act == "Relu") c = q.b().op("Relu", {c});
  if (o.act == "Clip") c = q.b().op("Clip", {c, q.floats({}, {0.0F}), q.floats({}, {6.0F})});
  Value* y = c;
  if (o.out_q && o.out_per_axis) {
    Value* s = q.scale({0.05F, 0.04F, 0.06F}, true);
    Value* z = q.ints(kU8, {3}, {10, 20, 30});
    y = q.dq(q.q(c, s, z, 1), s, z, 1);
  } else if (o.out_q) {
    y = q.qdq(c, q.scale({o.sy}), q.zp(o.y_type, o.zy));
  }
  y->setName("y");
  q.b().output(y);
  return q.b().build();
}

// Finalizes `m` in `mode` and returns the largest output difference.
double finalizeAndCompare(Model& m, const std::string& mode,
                          const std::map<std::string, Tensor>& inputs) {
  const auto before = evaluateByFolding(m, inputs);
  finalize(m, mode);
  return maxDiff(before, evaluateByFolding(m, inputs));
}

// ------------------------------------------------------------------ fold weights

TEST(QuantFoldWeights, PerChannelWeightBecomesInt8AndBiasInt32) {
  auto m = convModel({});
  auto counters = runPasses(*m, {"quant-fold-weights"});
  EXPECT_EQ(counters["weights quantized"], 1);
  EXPECT_EQ(counters["biases quantized to int32"], 1);
  const Graph& g = *m->graph;
  // The activations' QuantizeLinear nodes are left (x and y).
  EXPECT_EQ(countOps(g, "QuantizeLinear"), 2u);
  const Node* conv = nullptr;
  for (const Node* n : g.nodes())
    if (n->op_type == "Conv") conv = n;
  ASSERT_NE(conv, nullptr);
  // The weight: exactly what the QuantizeLinear kernel computes.
  const Node* wdq = conv->input(1)->producer();
  const Tensor* wq = constantOf(wdq->input(0));
  ASSERT_NE(wq, nullptr);
  EXPECT_EQ(wq->dtype(), kI8);
  auto expect = test::runOp(
      "QuantizeLinear",
      {test::floatTensor({3, 2, 3, 3}, ramp(54, 0.29F)),
       test::floatTensor({3}, {0.004F, 0.006F, 0.005F}), intTensor(kI8, {3}, {0, 0, 0})},
      attrs(Attribute::makeInt("axis", 0)), 17, 1);
  EXPECT_TRUE(wq->sameContent(expect[0]));
  // The bias: int32, scale sx * sw per channel, zero point 0, round(b / scale).
  const Node* bdq = conv->input(2)->producer();
  ASSERT_NE(bdq, nullptr);
  EXPECT_EQ(bdq->op_type, "DequantizeLinear");
  EXPECT_EQ(bdq->attrInt("axis", 1), 0);
  const Tensor* bq = constantOf(bdq->input(0));
  const Tensor* bs = constantOf(bdq->input(1));
  ASSERT_TRUE(bq != nullptr && bs != nullptr);
  EXPECT_EQ(bq->dtype(), kI32);
  const float b[3] = {0.1F, -0.2F, 0.05F};
  const float sw[3] = {0.004F, 0.006F, 0.005F};
  for (size_t c = 0; c < 3; ++c) {
    const float s = 0.01F * sw[c];
    EXPECT_EQ(bs->at<float>(c), s);
    EXPECT_EQ(bq->at<int32_t>(c), static_cast<int32_t>(std::nearbyint(double(b[c]) / double(s))));
  }
}

TEST(QuantFoldWeights, PerTensorBiasHasScalarScale) {
  auto m = convModel(with([](ConvOpts& o) { o.per_channel = false; }));
  runPasses(*m, {"quant-fold-weights"});
  for (const Node* n : m->graph->nodes()) {
    if (n->op_type != "Conv") continue;
    const Node* bdq = n->input(2)->producer();
    ASSERT_NE(bdq, nullptr);
    EXPECT_EQ(constantOf(bdq->input(1))->rank(), 0u);
    EXPECT_EQ(constantOf(bdq->input(2))->dtype(), kI32);
  }
}

// An int16 output step (2e-5) finer than what rounding the bias to its int32 step (sx * sw, 4e-5
// to 6e-5) moves it by: the bias stays float, or the output would move by several steps. The
// Conv then takes the integer form with the float bias added after the rescale.
TEST(QuantFoldWeights, BiasStaysFloatWhenTheOutputStepIsFiner) {
  const auto fine = [](ConvOpts& o) {
    o.y_type = DataType::kInt16;
    o.sy = 2e-5F;
  };
  auto m = convModel(with(fine));
  auto counters = runPasses(*m, {"quant-fold-weights"});
  EXPECT_EQ(counters["weights quantized"], 1);
  EXPECT_EQ(counters.count("biases quantized to int32"), 0u);
  for (const char* mode : {"qoperator", "integer", "qdq-clean"}) {
    auto c = convModel(with(fine));
    // One output step, plus the float32 rounding of the two outputs (2^-23 of each, for outputs
    // up to 1): wasm rounds the rescale otherwise than native and landed 2.7e-8 past the step.
    EXPECT_LE(finalizeAndCompare(*c, mode, convInputs()), 2e-5 + 2 * 0x1p-23) << mode;
    EXPECT_EQ(countOps(*c->graph, "QLinearConv"), 0u) << mode;
  }
  // The same Conv before an 8-bit Q (step 0.05): int32.
  auto coarse = convModel({});
  counters = runPasses(*coarse, {"quant-fold-weights"});
  EXPECT_EQ(counters["biases quantized to int32"], 1);
}

// The same through float ops: Conv -> Mul -> Q. A 16-bit step there (2e-5) keeps the bias float
// (0.1234567 is 3086.4 steps of sx * sw = 4e-5: rounding moves it by 1.6e-5); an 8-bit one, or no
// Q at all (a float graph output), lets it become int32.
TEST(QuantFoldWeights, BiasLooksThroughFloatOpsForTheFinestStep) {
  for (const auto& [t, sy, want] : {std::tuple{DataType::kInt16, 2e-5F, 0},
                                    std::tuple{kU8, 0.05F, 1}, std::tuple{kF32, 0.0F, 1}}) {
    QdqBuilder q;
    Value* x = q.b().input("x", kF32, {1, 2, 5, 5});
    Value* xd = q.qdq(x, q.scale({0.01F}), q.zp(kU8, 128));
    Value* s = q.scale({0.004F});
    Value* z = q.zp(kI8, 0);
    Value* wd = q.dq(q.q(q.floats({3, 2, 3, 3}, ramp(54, 0.29F)), s, z), s, z);
    Value* c = q.b().op("Conv", {xd, wd, q.floats({3}, {0.1234567F, -0.2F, 0.05F}, "b")});
    Value* y = q.b().op("Mul", {c, q.floats({}, {1.5F})});
    if (t != kF32) y = q.qdq(y, q.scale({sy}), q.zp(t, 0));
    y->setName("y");
    q.b().output(y);
    auto m = q.b().build();
    auto counters = runPasses(*m, {"quant-fold-weights"});
    EXPECT_EQ(counters["biases quantized to int32"], want) << dataTypeName(t);
  }
}

TEST(QuantFoldWeights, NonConstantOrOverridableWeightsStay) {
  {
    auto m = convModel(with([](ConvOpts& o) { o.weight_const = false; }));
    auto counters = runPasses(*m, {"quant-fold-weights"});
    EXPECT_EQ(counters.count("weights quantized"), 0u);
    EXPECT_EQ(counters.count("biases quantized to int32"), 0u);
    EXPECT_EQ(countOps(*m->graph, "QuantizeLinear"), 3u);
  }
  {
    auto m = convModel({});
    for (Value* v : m->graph->initializers()) {
      if (v->initializer()->dtype() == kF32 && v->initializer()->numElements() == 54)
        m->graph->addInputForInitializer(GraphBuilder::key(), v);
    }
    auto counters = runPasses(*m, {"quant-fold-weights"});
    EXPECT_EQ(counters.count("weights quantized"), 0u);
  }
}

// ------------------------------------------------------------------ QLinearConv

TEST(QuantQLinearConv, PerChannelWithBias) {
  auto m = convModel({});
  const double d = finalizeAndCompare(*m, "qoperator", convInputs());
  EXPECT_LE(d, 0.05 * 1.0001);  // one output step
  const Graph& g = *m->graph;
  EXPECT_EQ(countOps(g, "QLinearConv"), 1u);
  EXPECT_EQ(countOps(g, "Conv"), 0u);
  EXPECT_EQ(countOps(g, "QuantizeLinear"), 1u);    // x
  EXPECT_EQ(countOps(g, "DequantizeLinear"), 1u);  // y
}

TEST(QuantQLinearConv, PerTensorWithoutBias) {
  auto m = convModel(with([](ConvOpts& o) {
    o.per_channel = false;
    o.bias = false;
  }));
  EXPECT_LE(finalizeAndCompare(*m, "qoperator", convInputs()), 0.05 * 1.0001);
  EXPECT_EQ(countOps(*m->graph, "QLinearConv"), 1u);
  for (const Node* n : m->graph->nodes()) {
    if (n->op_type == "QLinearConv") {
      EXPECT_EQ(n->numInputs(), 8u);
    }
  }
}

TEST(QuantQLinearConv, ConsistentInt32BiasIsUsed) {
  auto m = convModel(with([](ConvOpts& o) { o.int_bias_scale_factor = 1.0F; }));
  EXPECT_LE(finalizeAndCompare(*m, "qoperator", convInputs()), 0.05 * 1.0001);
  EXPECT_EQ(countOps(*m->graph, "QLinearConv"), 1u);
}

TEST(QuantQLinearConv, MismatchedBiasScaleIsNotFused) {
  auto m = convModel(with([](ConvOpts& o) { o.int_bias_scale_factor = 2.0F; }));
  EXPECT_EQ(finalizeAndCompare(*m, "qoperator", convInputs()), 0.0);
  EXPECT_EQ(countOps(*m->graph, "QLinearConv"), 0u);
  EXPECT_EQ(countOps(*m->graph, "ConvInteger"), 0u);
  EXPECT_EQ(countOps(*m->graph, "Conv"), 1u);
}

TEST(QuantQLinearConv, NonConstantWeightIsNotFused) {
  auto m = convModel(with([](ConvOpts& o) { o.weight_const = false; }));
  finalize(*m, "qoperator");
  EXPECT_EQ(countOps(*m->graph, "QLinearConv"), 0u);
  EXPECT_EQ(countOps(*m->graph, "Conv"), 1u);
}

TEST(QuantQLinearConv, PerAxisOutputQuantizationFallsBackToConvInteger) {
  auto m = convModel(with([](ConvOpts& o) { o.out_per_axis = true; }));
  EXPECT_LE(finalizeAndCompare(*m, "qoperator", convInputs()), 0.06 * 1.0001);
  EXPECT_EQ(countOps(*m->graph, "QLinearConv"), 0u);
  EXPECT_EQ(countOps(*m->graph, "ConvInteger"), 1u);
}

// ONNX Runtime implements QLinearConv for x/w/y uint8/uint8/uint8, uint8/int8/uint8 and
// int8/int8/int8 only (onnxfold writes the weight in x's signedness): a model with int8 x and
// uint8 y (valid ONNX) does not load there, so such a Conv takes the integer form
// (ConvInteger, float rescale, the Q kept).
TEST(QuantQLinearConv, TypesWithoutARuntimeKernelTakeTheIntegerForm) {
  for (const auto& types : {std::pair{kI8, kU8}, std::pair{kU8, kI8}}) {
    // A lambda cannot capture a structured binding before C++20 (emscripten's clang 14).
    auto m = convModel([&] {
      ConvOpts o;
      o.x_type = types.first;
      o.y_type = types.second;
      return o;
    }());
    EXPECT_LE(finalizeAndCompare(*m, "qoperator", convInputs()), 0.05 * 1.0001);
    EXPECT_EQ(countOps(*m->graph, "QLinearConv"), 0u);
    EXPECT_EQ(countOps(*m->graph, "ConvInteger"), 1u);
    EXPECT_EQ(countOps(*m->graph, "Conv"), 0u);
  }
  // int8 x, int8 w, int8 y has a kernel.
  auto m = convModel([] {
    ConvOpts o;
    o.x_type = kI8;
    o.y_type = kI8;
    return o;
  }());
  EXPECT_LE(finalizeAndCompare(*m, "qoperator", convInputs()), 0.05 * 1.0001);
  EXPECT_EQ(countOps(*m->graph, "QLinearConv"), 1u);
}

// Per-channel weight zero points that differ: QLinearConv takes them (ONNX Runtime runs it),
// ConvInteger does not (ONNX Runtime fails it at run time: "Non per-tensor quantization is not
// supported"), so without an output Q, and in integer mode, the Conv stays in float.
TEST(QuantConvInteger, PerChannelWeightZeroPointsThatDifferStay) {
  const auto opts = [](bool out_q) {
    ConvOpts o;
    o.w_zero_points = {0, 3, -2};
    o.out_q = out_q;
    return o;
  };
  auto q = convModel(opts(true));
  EXPECT_LE(finalizeAndCompare(*q, "qoperator", convInputs()), 0.05 * 1.0001);
  EXPECT_EQ(countOps(*q->graph, "QLinearConv"), 1u);
  for (const char* mode : {"qoperator", "integer"}) {
    auto m = convModel(opts(false));
    EXPECT_LE(finalizeAndCompare(*m, mode, convInputs()), kHalfBiasStep) << mode;
    EXPECT_EQ(countOps(*m->graph, "ConvInteger"), 0u) << mode;
    EXPECT_EQ(countOps(*m->graph, "Conv"), 1u) << mode;
  }
  // Equal per-channel zero points become one scalar, which ConvInteger takes.
  auto m = convModel([] {
    ConvOpts o;
    o.w_zero_points = {2, 2, 2};
    o.out_q = false;
    return o;
  }());
  EXPECT_LE(finalizeAndCompare(*m, "integer", convInputs()), kHalfBiasStep);
  ASSERT_EQ(countOps(*m->graph, "ConvInteger"), 1u);
  for (const Node* n : m->graph->nodes()) {
    if (n->op_type == "ConvInteger") {
      EXPECT_EQ(constantOf(n->input(3))->rank(), 0u);
    }
  }
}

// ------------------------------------------------------------------ Clip / Relu

TEST(QuantFoldClip, ReluDisappearsWhenZeroPointIsQmin) {
  auto m = convModel(with([](ConvOpts& o) {
    o.act = "Relu";
    o.zy = 0;
  }));
  EXPECT_LE(finalizeAndCompare(*m, "qoperator", convInputs()), 0.05 * 1.0001);
  EXPECT_EQ(countOps(*m->graph, "Relu"), 0u);
  EXPECT_EQ(countOps(*m->graph, "Clip"), 0u);
  EXPECT_EQ(countOps(*m->graph, "QLinearConv"), 1u);
}

TEST(QuantFoldClip, ReluBecomesIntegerClipOtherwise) {
  auto m = convModel(with([](ConvOpts& o) {
    o.act = "Relu";
    o.zy = 100;
  }));
  EXPECT_LE(finalizeAndCompare(*m, "qoperator", convInputs()), 0.05 * 1.0001);
  EXPECT_EQ(countOps(*m->graph, "Relu"), 0u);
  ASSERT_EQ(countOps(*m->graph, "Clip"), 1u);
  for (const Node* n : m->graph->nodes()) {
    if (n->op_type == "Clip") {
      EXPECT_EQ(dtypeOf(n->input(0)), kU8);
      EXPECT_EQ(constantOf(n->input(1))->at<uint8_t>(0), 100);  // Q(0) = zero point
    }
  }
  EXPECT_EQ(countOps(*m->graph, "QLinearConv"), 1u);
}

TEST(QuantFoldClip, Relu6WithSaturatingScaleDisappears) {
  auto m = convModel(with([](ConvOpts& o) {
    o.act = "Clip";
    o.sy = 6.0F / 255.0F;
    o.zy = 0;
  }));
  EXPECT_LE(finalizeAndCompare(*m, "qoperator", convInputs()), 6.0 / 255.0 * 1.0001);
  EXPECT_EQ(countOps(*m->graph, "Clip"), 0u);
  EXPECT_EQ(countOps(*m->graph, "QLinearConv"), 1u);
}

// A Relu before an int16 Q with zero point 0 would be an integer Clip(0, 32767): valid ONNX,
// but ONNX Runtime has no 16-bit Clip (the model does not load), so the Relu stays. Before a
// uint16 Q with zero point 0 it saturates at the bound itself and disappears.
TEST(QuantFoldClip, NoSixteenBitIntegerClip) {
  for (const DataType t : {DataType::kInt16, DataType::kUint16}) {
    QdqBuilder q(21);
    Value* x = q.b().input("x", kF32, {6});
    Value* y = q.qdq(q.b().op("Relu", {x}), q.scale({0.001F}), q.zp(t, 0));
    y->setName("y");
    q.b().output(y);
    auto m = q.b().build();
    const std::map<std::string, Tensor> in = {{"x", test::floatTensor({6}, ramp(6))}};
    EXPECT_EQ(finalizeAndCompare(*m, "qoperator", in), 0.0);
    EXPECT_EQ(countOps(*m->graph, "Clip"), 0u);
    EXPECT_EQ(countOps(*m->graph, "Relu"), t == DataType::kInt16 ? 1u : 0u);
  }
}

TEST(QuantFoldClip, NonConstantBoundStays) {
  QdqBuilder q;
  Value* x = q.b().input("x", kF32, {4});
  Value* hi = q.b().input("hi", kF32, {});
  Value* c = q.b().op("Clip", {x, q.floats({}, {0.0F}), hi});
  q.b().output(q.qdq(c, q.scale({0.1F}), q.zp(kU8, 0)));
  auto m = q.b().build();
  finalize(*m, "integer");
  EXPECT_EQ(countOps(*m->graph, "Clip"), 1u);
}

// ------------------------------------------------------------------ ConvInteger

TEST(QuantConvInteger, ConvWithoutOutputQuantization) {
  auto m = convModel(with([](ConvOpts& o) { o.out_q = false; }));
  EXPECT_LE(finalizeAndCompare(*m, "qoperator", convInputs()), kHalfBiasStep);
  EXPECT_EQ(countOps(*m->graph, "ConvInteger"), 1u);
  EXPECT_EQ(countOps(*m->graph, "Conv"), 0u);
  EXPECT_EQ(countOps(*m->graph, "Cast"), 1u);
}

TEST(QuantConvInteger, IntegerModeKeepsTheOutputQuantization) {
  auto m = convModel(with([](ConvOpts& o) {
    o.act = "Relu";
    o.zy = 0;
  }));
  EXPECT_LE(finalizeAndCompare(*m, "integer", convInputs()), 0.05 * 1.0001);
  EXPECT_EQ(countOps(*m->graph, "ConvInteger"), 1u);
  EXPECT_EQ(countOps(*m->graph, "QLinearConv"), 0u);
  EXPECT_EQ(countOps(*m->graph, "Relu"), 0u);
  EXPECT_EQ(countOps(*m->graph, "QuantizeLinear"), 2u);
}

// ------------------------------------------------------------------ MatMul / Gemm

std::unique_ptr<Model> matmulModel(const std::string& op, bool out_q, float alpha = 1.0F,
                                   bool bias = true, DataType a_type = kU8) {
  QdqBuilder q;
  Value* a = q.b().input("a", kF32, {2, 4});
  Value* ad = q.qdq(a, q.scale({0.01F}), q.zp(a_type, a_type == kU8 ? 128 : 0));
  Value* bd = nullptr;
  Value* y = nullptr;
  if (op == "MatMul") {
    Value* s = q.scale({0.005F});
    Value* z = q.zp(kI8, 3);
    bd = q.dq(q.q(q.floats({4, 3}, ramp(12, 0.41F)), s, z), s, z);
    y = q.b().op("MatMul", {ad, bd});
  } else {
    // Gemm, transB = 1, weight [3, 4] per output row (axis 0), float bias.
    Value* s = q.scale({0.004F, 0.005F, 0.006F}, true);
    Value* z = q.ints(kI8, {3}, {0, 0, 0});
    bd = q.dq(q.q(q.floats({3, 4}, ramp(12, 0.41F)), s, z, 0), s, z, 0);
    std::vector<Value*> in = {ad, bd};
    if (bias) in.push_back(q.floats({3}, {0.25F, -0.5F, 0.125F}, "bias"));
    y = q.b().op("Gemm", in,
                 attrs(Attribute::makeInt("transB", 1), Attribute::makeFloat("alpha", alpha)));
  }
  if (out_q) y = q.qdq(y, q.scale({0.02F}), q.zp(kU8, 128));
  y->setName("y");
  q.b().output(y);
  return q.b().build();
}

const std::map<std::string, Tensor> matmulInputs() {
  return {{"a", test::floatTensor({2, 4}, ramp(8, 0.33F))}};
}

TEST(QuantQLinearMatMul, MatMulBetweenDqAndQ) {
  auto m = matmulModel("MatMul", true);
  EXPECT_LE(finalizeAndCompare(*m, "qoperator", matmulInputs()), 0.02 * 1.0001);
  EXPECT_EQ(countOps(*m->graph, "QLinearMatMul"), 1u);
  EXPECT_EQ(countOps(*m->graph, "MatMul"), 0u);
}

// int8 a with uint8 y: valid ONNX, but ONNX Runtime has no QLinearMatMul kernel for it (the
// model does not load), so it takes the integer form.
TEST(QuantQLinearMatMul, TypesWithoutARuntimeKernelTakeTheIntegerForm) {
  auto m = matmulModel("MatMul", true, 1.0F, true, kI8);
  EXPECT_LE(finalizeAndCompare(*m, "qoperator", matmulInputs()), 0.02 * 1.0001);
  EXPECT_EQ(countOps(*m->graph, "QLinearMatMul"), 0u);
  EXPECT_EQ(countOps(*m->graph, "MatMulInteger"), 1u);
  EXPECT_EQ(countOps(*m->graph, "MatMul"), 0u);
}

TEST(QuantMatMulInteger, MatMulWithoutOutputQuantization) {
  auto m = matmulModel("MatMul", false);
  EXPECT_LE(finalizeAndCompare(*m, "integer", matmulInputs()), 1e-5);
  EXPECT_EQ(countOps(*m->graph, "MatMulInteger"), 1u);
}

TEST(QuantMatMulInteger, GemmTransposedPerChannelWithBias) {
  for (const char* mode : {"qoperator", "integer"}) {
    auto m = matmulModel("Gemm", false);
    EXPECT_LE(finalizeAndCompare(*m, mode, matmulInputs()), kHalfBiasStep) << mode;
    EXPECT_EQ(countOps(*m->graph, "MatMulInteger"), 1u) << mode;
    EXPECT_EQ(countOps(*m->graph, "Gemm"), 0u) << mode;
  }
  auto m = matmulModel("Gemm", true);
  EXPECT_LE(finalizeAndCompare(*m, "qoperator", matmulInputs()), 0.02 * 1.0001);
  EXPECT_EQ(countOps(*m->graph, "MatMulInteger"), 1u);
}

// The first node of `op` in `m`.
const Node* firstOp(const Model& m, const std::string& op) {
  for (const Node* n : m.graph->nodes())
    if (n->op_type == op) return n;
  return nullptr;
}

// Integer ops get operands of one signedness: ONNX Runtime's x86 kernels without VNNI saturate
// uint8 x int8 products summed in pairs (quant.h paramsIn). An int8 weight under a uint8
// activation becomes uint8 (bytes with the top bit flipped, zero points + 128), and the
// numbers do not move.
TEST(QuantSignedness, Int8WeightsUnderUint8ActivationsBecomeUint8) {
  auto folded = convModel({});
  runPasses(*folded, {"quant-fold-weights"});
  const Tensor* int8_weight = constantOf(firstOp(*folded, "Conv")->input(1)->producer()->input(0));
  ASSERT_NE(int8_weight, nullptr);
  ASSERT_EQ(int8_weight->dtype(), kI8);
  for (const bool qoperator : {true, false}) {
    const char* mode = qoperator ? "qoperator" : "integer";
    auto m = qoperator ? convModel({}) : convModel(with([](ConvOpts& o) { o.out_q = false; }));
    EXPECT_LE(finalizeAndCompare(*m, mode, convInputs()), qoperator ? 0.05 * 1.0001 : kHalfBiasStep)
        << mode;
    const Node* n = firstOp(*m, qoperator ? "QLinearConv" : "ConvInteger");
    ASSERT_NE(n, nullptr) << mode;
    const Tensor* w = constantOf(n->input(qoperator ? 3 : 1));
    const Tensor* zw = constantOf(n->input(qoperator ? 5 : 3));
    ASSERT_TRUE(w != nullptr && zw != nullptr) << mode;
    EXPECT_EQ(w->dtype(), kU8) << mode;
    ASSERT_EQ(w->numElements(), int8_weight->numElements());
    for (int64_t i = 0; i < w->numElements(); ++i)
      ASSERT_EQ(w->bytes()[i], int8_weight->bytes()[i] ^ 0x80) << mode << " at " << i;
    EXPECT_EQ(zw->dtype(), kU8) << mode;
    EXPECT_EQ(zw->rank(), 0) << mode;  // per-channel zero points 0, 0, 0: one 128
    EXPECT_EQ(zw->bytes()[0], 128) << mode;
  }
  // int8 activations keep the int8 weight.
  auto m = convModel(with([](ConvOpts& o) {
    o.x_type = kI8;
    o.y_type = kI8;
  }));
  EXPECT_LE(finalizeAndCompare(*m, "qoperator", convInputs()), 0.05 * 1.0001);
  const Node* n = firstOp(*m, "QLinearConv");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(constantOf(n->input(3))->dtype(), kI8);
}

TEST(QuantSignedness, MatMulWeightsFollowTheActivation) {
  for (DataType a_type : {kU8, kI8}) {
    for (const bool qoperator : {true, false}) {
      const char* mode = qoperator ? "qoperator" : "integer";
      // The MatMul weight is int8 with zero point 3 (matmulModel).
      auto m = matmulModel("MatMul", qoperator, 1.0F, true, a_type);
      EXPECT_LE(finalizeAndCompare(*m, mode, matmulInputs()), 0.02 * 1.0001) << mode;
      const bool qlinear = qoperator && a_type == kU8;
      const Node* n = firstOp(*m, qlinear ? "QLinearMatMul" : "MatMulInteger");
      ASSERT_NE(n, nullptr) << mode;
      const Tensor* b = constantOf(n->input(qlinear ? 3 : 1));
      const Tensor* zb = constantOf(n->input(qlinear ? 5 : 3));
      ASSERT_TRUE(b != nullptr && zb != nullptr);
      EXPECT_EQ(b->dtype(), a_type) << mode;
      EXPECT_EQ(zb->dtype(), a_type) << mode;
      EXPECT_EQ(static_cast<int>(zb->bytes()[0]), a_type == kU8 ? 131 : 3) << mode;
    }
  }
}

// A MatMul of two run-time operands of other signedness (uint8 a, int8 b) cannot be shifted:
// it stays in float.
TEST(QuantSignedness, RunTimeOperandsOfOtherSignednessStayFloat) {
  for (DataType b_type : {kI8, kU8}) {
    QdqBuilder q;
    Value* a = q.b().input("a", kF32, {2, 4});
    Value* b = q.b().input("b", kF32, {4, 3});
    Value* ad = q.qdq(a, q.scale({0.01F}), q.zp(kU8, 128));
    Value* bd = q.qdq(b, q.scale({0.01F}), q.zp(b_type, b_type == kU8 ? 128 : 0));
    Value* y = q.b().op("MatMul", {ad, bd});
    y->setName("y");
    q.b().output(y);
    auto m = q.b().build();
    finalize(*m, "integer");
    EXPECT_EQ(countOps(*m->graph, "MatMulInteger"), b_type == kU8 ? 1u : 0u);
  }
}

TEST(QuantQLinearMatMul, BiasFreeGemmWithTransposedPerRowWeight) {
  auto m = matmulModel("Gemm", true, 1.0F, /*bias=*/false);
  EXPECT_LE(finalizeAndCompare(*m, "qoperator", matmulInputs()), 0.02 * 1.0001);
  EXPECT_EQ(countOps(*m->graph, "QLinearMatMul"), 1u);
  EXPECT_EQ(countOps(*m->graph, "Gemm"), 0u);
  for (const Node* n : m->graph->nodes()) {
    if (n->op_type == "QLinearMatMul") {
      EXPECT_EQ(constantOf(n->input(3))->dims(), (std::vector<int64_t>{4, 3}));  // [K, N]
    }
  }
  // With alpha != 1 it is left alone.
  auto a = matmulModel("Gemm", true, 0.5F, false);
  finalize(*a, "qoperator");
  EXPECT_EQ(countOps(*a->graph, "QLinearMatMul"), 0u);
}

TEST(QuantMatMulInteger, GemmWithAlphaStays) {
  auto m = matmulModel("Gemm", false, 0.5F);
  EXPECT_EQ(finalizeAndCompare(*m, "qoperator", matmulInputs()), 0.0);
  EXPECT_EQ(countOps(*m->graph, "Gemm"), 1u);
  EXPECT_EQ(countOps(*m->graph, "MatMulInteger"), 0u);
}

// ------------------------------------------------------------------ data movement

std::unique_ptr<Model> movementModel(float second_scale, bool concat_mismatch) {
  QdqBuilder q;
  Value* x = q.b().input("x", kF32, {2, 3});
  Value* s = q.scale({0.01F});
  Value* z = q.zp(kU8, 128);
  Value* xd = q.qdq(x, s, z);
  Value* r = q.b().op("Reshape", {xd, q.ints(DataType::kInt64, {2}, {3, 2}, "shape")});
  Value* rd = q.qdq(r, q.scale({0.01F}), q.zp(kU8, 128));
  Value* t = q.b().op("Transpose", {rd}, attrs(Attribute::makeInts("perm", {1, 0})));
  Value* td = q.qdq(t, q.scale({second_scale}), q.zp(kU8, 128));
  Value* x2 = q.b().input("x2", kF32, {2, 3});
  Value* x2d = q.qdq(x2, q.scale({concat_mismatch ? 0.02F : 0.01F}), q.zp(kU8, 128));
  Value* cc = q.b().op("Concat", {td, x2d}, attrs(Attribute::makeInt("axis", 0)));
  Value* y = q.qdq(cc, q.scale({0.01F}), q.zp(kU8, 128));
  y->setName("y");
  q.b().output(y);
  return q.b().build();
}

const std::map<std::string, Tensor> movementInputs() {
  return {{"x", test::floatTensor({2, 3}, ramp(6, 0.31F))},
          {"x2", test::floatTensor({2, 3}, ramp(6, 0.17F))}};
}

TEST(QuantDataMovement, ReshapeTransposeConcatRunOnIntegers) {
  for (const char* mode : {"qoperator", "integer"}) {
    auto m = movementModel(0.01F, false);
    EXPECT_EQ(finalizeAndCompare(*m, mode, movementInputs()), 0.0) << mode;
    const Graph& g = *m->graph;
    for (const Node* n : g.nodes()) {
      if (n->op_type == "Reshape" || n->op_type == "Transpose" || n->op_type == "Concat") {
        EXPECT_EQ(dtypeOf(n->output(0)), kU8) << n->op_type;
      }
    }
    EXPECT_EQ(countOps(g, "QuantizeLinear"), 2u) << mode;    // x, x2
    EXPECT_EQ(countOps(g, "DequantizeLinear"), 1u) << mode;  // y
  }
}

TEST(QuantDataMovement, MismatchedParametersStayFloat) {
  auto m = movementModel(0.02F, true);
  EXPECT_EQ(finalizeAndCompare(*m, "qoperator", movementInputs()), 0.0);
  // Reshape between equal parameters moves; Transpose (0.01 -> 0.02) and
  // Concat (inputs 0.02 and 0.02 -> 0.01... mixed) stay float.
  for (const Node* n : m->graph->nodes()) {
    if (n->op_type == "Reshape") {
      EXPECT_EQ(dtypeOf(n->output(0)), kU8);
    }
    if (n->op_type == "Transpose" || n->op_type == "Concat") {
      EXPECT_NE(dtypeOf(n->output(0)), kU8) << n->op_type;
    }
  }
}

// ------------------------------------------------------------------ cleanup

TEST(QuantCleanup, DequantizeQuantizeWithSameParametersCancels) {
  for (bool same : {true, false}) {
    QdqBuilder q;
    Value* x = q.b().input("x", kF32, {5});
    Value* s = q.scale({0.1F});
    Value* z = q.zp(kU8, 10);
    Value* d = q.dq(q.q(x, s, z), s, z);
    Value* y = q.dq(q.q(d, q.scale({0.1F}), q.zp(kU8, same ? 10 : 11)), s, z);
    y->setName("y");
    q.b().output(y);
    auto m = q.b().build();
    const std::map<std::string, Tensor> in = {
        {"x", test::floatTensor({5}, {-1.0F, 0.04F, 0.05F, 0.15F, 30.0F})}};
    EXPECT_EQ(finalizeAndCompare(*m, "qdq-clean", in), 0.0);
    EXPECT_EQ(countOps(*m->graph, "QuantizeLinear"), same ? 1u : 2u);
  }
}

// A scale so large that (q - z) * s overflows float32: Q(DQ(q)) is not q, so the pair stays,
// and the result equals the reference evaluation. (A subnormal scale still round-trips: its
// multiples are exact.)
TEST(QuantCleanup, DequantizeQuantizeStaysWhenTheScaleBreaksTheRoundTrip) {
  for (float scale : {3.0e36F, 2.0e37F}) {
    QdqBuilder q;
    Value* x = q.b().input("x", kF32, {4});
    Value* s = q.scale({scale});
    Value* z = q.zp(kU8, 0);
    Value* d = q.dq(q.q(x, s, z), s, z);
    Value* y = q.dq(q.q(d, s, z), s, z);
    y->setName("y");
    q.b().output(y);
    auto m = q.b().build();
    const std::map<std::string, Tensor> in = {
        {"x", test::floatTensor({4}, {0.0F, 1.0e37F, 3.0e38F, 1.0e-41F})}};
    EXPECT_EQ(finalizeAndCompare(*m, "qdq-clean", in), 0.0) << scale;
    EXPECT_EQ(countOps(*m->graph, "QuantizeLinear"), 2u) << scale;
  }
}

TEST(QuantCleanup, QuantizeDequantizeIsNotAnIdentity) {
  QdqBuilder q;
  Value* x = q.b().input("x", kF32, {3});
  Value* y = q.qdq(x, q.scale({0.1F}), q.zp(kU8, 0));
  y->setName("y");
  q.b().output(y);
  auto m = q.b().build();
  for (const char* mode : {"qdq-clean", "qoperator", "integer"}) {
    auto c = m->clone();
    finalize(*c, mode);
    EXPECT_EQ(countOps(*c->graph, "QuantizeLinear"), 1u) << mode;
    EXPECT_EQ(countOps(*c->graph, "DequantizeLinear"), 1u) << mode;
  }
}

TEST(QuantPipeline, UnknownModeNamesTheValidOnes) {
  try {
    quantPipeline("qlinear");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'qlinear'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("qoperator, integer, qdq-clean"), std::string::npos) << msg;
  }
  for (const char* mode : {"qoperator", "integer", "qdq-clean"}) {
    for (const std::string& p : quantPipeline(mode)) {
      EXPECT_NE(createPass(p), nullptr) << p;
    }
  }
}

}  // namespace
}  // namespace onnxfold::quant::testing

namespace onnxfold::quant::testing {
namespace {

// Opset 21 quantizes to int4: the weight folds to a packed int4 initializer
// holding what the QuantizeLinear kernel computes; the 8-bit-only fusions
// leave its Conv alone.
TEST(QuantFoldWeights, Int4WeightsFoldAtOpset21) {
  QdqBuilder q(21);
  Value* x = q.b().input("x", DataType::kFloat, {1, 1, 3, 3});
  Value* xd = q.qdq(x, q.scale({0.01F}), q.zp(DataType::kUint8, 128));
  Value* s = q.scale({0.1F});
  Tensor z4(DataType::kInt4, {});
  z4.name = "z4";
  Value* z = q.b().initializer(std::move(z4));
  Value* w = q.floats({1, 1, 2, 2}, {0.31F, -0.74F, 0.05F, 0.9F});
  Value* wd = q.dq(q.q(w, s, z), s, z);
  Value* y = q.b().op("Conv", {xd, wd});
  y->setName("y");
  q.b().output(y);
  auto m = q.b().build();
  auto counters = runPasses(*m, {"quant-fold-weights"});
  EXPECT_EQ(counters["weights quantized"], 1);
  const Tensor* packed = nullptr;
  for (const Value* v : m->graph->initializers()) {
    if (v->initializer()->dtype() == DataType::kInt4) {
      if (v->initializer()->numElements() == 4) packed = v->initializer();
    }
  }
  ASSERT_NE(packed, nullptr);
  Tensor zero(DataType::kInt4, {});
  auto expect = test::runOp("QuantizeLinear",
                            {test::floatTensor({1, 1, 2, 2}, {0.31F, -0.74F, 0.05F, 0.9F}),
                             test::floatTensor({}, {0.1F}), zero},
                            {}, 21, 1);
  EXPECT_TRUE(packed->sameContent(expect[0]));
  finalize(*m, "qoperator");
  EXPECT_EQ(countOps(*m->graph, "QLinearConv"), 0u);
  EXPECT_EQ(countOps(*m->graph, "Conv"), 1u);
}

}  // namespace
}  // namespace onnxfold::quant::testing

namespace onnxfold::quant::testing {
namespace {

struct MoveCase {
  const char* op;
  std::vector<int64_t> dims;
  std::vector<Attribute> (*attributes)();
  std::vector<Tensor> extra;  // constant inputs after the data
};

std::unique_ptr<Model> moveModel(const MoveCase& c, int64_t opset) {
  QdqBuilder q(opset);
  Value* x = q.b().input("x", DataType::kFloat, c.dims);
  Value* s = q.scale({0.02F});
  Value* z = q.zp(DataType::kUint8, 100);
  std::vector<Value*> in = {q.qdq(x, s, z)};
  for (Tensor t : c.extra) {
    t.name = q.fresh("k");
    in.push_back(q.b().initializer(std::move(t)));
  }
  Value* m = q.b().op(c.op, in, c.attributes());
  Value* y = q.qdq(m, q.scale({0.02F}), q.zp(DataType::kUint8, 100));
  y->setName("y");
  q.b().output(y);
  return q.b().build();
}

std::vector<MoveCase> moveCases() {
  auto none = []() { return std::vector<Attribute>{}; };
  return {
      {"Flatten", {1, 2, 2, 2}, []() { return attrs(Attribute::makeInt("axis", 1)); }, {}},
      {"Squeeze", {1, 4}, none, {test::int64Tensor({1}, {0})}},
      {"Unsqueeze", {4}, none, {test::int64Tensor({1}, {0})}},
      {"Slice", {6}, none, {test::int64Tensor({1}, {1}), test::int64Tensor({1}, {4})}},
      {"Gather", {5}, none, {test::int64Tensor({3}, {4, 0, 2})}},
      {"MaxPool",
       {1, 1, 4, 4},
       []() {
         return attrs(Attribute::makeInts("kernel_shape", {2, 2}),
                      Attribute::makeInts("strides", {2, 2}));
       },
       {}},
  };
}

TEST(QuantDataMovement, EveryMovementOpRunsOnIntegersExactly) {
  for (const MoveCase& c : moveCases()) {
    auto m = moveModel(c, 17);
    int64_t n = 1;
    for (int64_t d : c.dims)
      n *= d;
    const std::map<std::string, Tensor> in = {
        {"x", test::floatTensor(c.dims, ramp(static_cast<size_t>(n), 0.29F))}};
    EXPECT_EQ(finalizeAndCompare(*m, "qoperator", in), 0.0) << c.op;
    EXPECT_EQ(countOps(*m->graph, "QuantizeLinear"), 1u) << c.op;
    EXPECT_EQ(countOps(*m->graph, "DequantizeLinear"), 1u) << c.op;
    for (const Node* node : m->graph->nodes()) {
      if (node->op_type == c.op) {
        EXPECT_EQ(dtypeOf(node->output(0)), DataType::kUint8) << c.op;
      }
    }
  }
}

TEST(QuantDataMovement, MaxPoolBeforeOpset12StaysFloat) {
  const MoveCase c = moveCases().back();
  ASSERT_STREQ(c.op, "MaxPool");
  auto m = moveModel(c, 11);
  finalize(*m, "qoperator");
  EXPECT_EQ(countOps(*m->graph, "QuantizeLinear"), 2u);
  for (const Node* node : m->graph->nodes()) {
    if (node->op_type == "MaxPool") {
      EXPECT_NE(dtypeOf(node->output(0)), DataType::kUint8);
    }
  }
}

// 16-bit Q/DQ (opset 21): MaxPool's schema takes int8 and uint8 only, so it stays float (an
// int16 MaxPool is an invalid model); Reshape takes every type and runs on the int16 values.
TEST(QuantDataMovement, SixteenBitMaxPoolStaysFloat) {
  for (const DataType t : {DataType::kInt16, DataType::kUint16}) {
    QdqBuilder q(21);
    Value* x = q.b().input("x", kF32, {1, 1, 4, 4});
    Value* s = q.scale({0.001F});
    Value* z = q.zp(t, t == DataType::kInt16 ? 0 : 1000);
    Value* p = q.b().op(
        "MaxPool", {q.qdq(x, s, z)},
        attrs(Attribute::makeInts("kernel_shape", {2, 2}), Attribute::makeInts("strides", {2, 2})));
    Value* r = q.b().op("Reshape", {q.qdq(p, s, z), q.ints(DataType::kInt64, {1}, {-1}, "shape")});
    Value* y = q.qdq(r, s, z);
    y->setName("y");
    q.b().output(y);
    auto m = q.b().build();
    const std::map<std::string, Tensor> in = {{"x", test::floatTensor({1, 1, 4, 4}, ramp(16))}};
    EXPECT_EQ(finalizeAndCompare(*m, "qoperator", in), 0.0);
    for (const Node* n : m->graph->nodes()) {
      if (n->op_type == "MaxPool") {
        EXPECT_EQ(dtypeOf(n->output(0)), kF32);
      }
      if (n->op_type == "Reshape") {
        EXPECT_EQ(dtypeOf(n->output(0)), t);
      }
    }
  }
}

TEST(QuantDataMovement, PerAxisQuantizationStaysFloat) {
  QdqBuilder q;
  Value* x = q.b().input("x", DataType::kFloat, {2, 3});
  Value* s = q.scale({0.01F, 0.02F}, true);
  Value* z = q.ints(DataType::kUint8, {2}, {0, 0});
  Value* d = q.dq(q.q(x, s, z, 0), s, z, 0);
  Value* t = q.b().op("Reshape", {d, q.ints(DataType::kInt64, {3}, {2, 1, 3}, "shape")});
  Value* y = q.dq(q.q(t, s, z, 0), s, z, 0);
  y->setName("y");
  q.b().output(y);
  auto m = q.b().build();
  const std::map<std::string, Tensor> in = {{"x", test::floatTensor({2, 3}, ramp(6))}};
  EXPECT_EQ(finalizeAndCompare(*m, "qoperator", in), 0.0);
  EXPECT_EQ(countOps(*m->graph, "QuantizeLinear"), 2u);
  EXPECT_EQ(countOps(*m->graph, "Reshape"), 1u);
}

}  // namespace
}  // namespace onnxfold::quant::testing

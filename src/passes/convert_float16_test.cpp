// convert-float16: one small graph per case, checked by the types and casts it comes out with,
// ONNX's rules (validateModel: every node's types against its schema) and, where the kernels
// compute float16, by the values.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

#include "ir/verifier.h"
#include "kernels/common.h"
#include "passes/pass_manager.h"
#include "passes/registry.h"
#include "passes/validate.h"
#include "test_util.h"

namespace onnxfold {
namespace {

using test::attrs;
using test::countOps;
using test::floatTensor;
using test::int64Tensor;
using test::ModelBuilder;

struct Converted {
  bool changed = false;
  std::vector<std::string> notes;
  std::map<std::string, int64_t> counters;
};

// Runs convert-float16 once, then the verifier and ONNX's rules.
Converted convert(Model& m, PassOptions options = {}) {
  PassContext ctx(options);
  Converted r;
  r.changed = createPass("convert-float16")->run(m, ctx);
  const VerifyResult v = verify(m);
  EXPECT_TRUE(v.ok) << v.message;
  EXPECT_NO_THROW(validateModel(m));
  r.notes = ctx.takeNotes();
  r.counters = ctx.takeCounters();
  return r;
}

bool noteHas(const Converted& r, const std::string& text) {
  for (const std::string& n : r.notes) {
    if (n.find(text) != std::string::npos) return true;
  }
  return false;
}

DataType elemOf(const Value* v) {
  return v->isInitializer() ? v->initializer()->dtype() : v->type.elem_type;
}

std::vector<const Node*> opsOf(const Graph& g, const std::string& op) {
  std::vector<const Node*> out;
  for (const Node* n : g.nodes()) {
    if (n->op_type == op) out.push_back(n);
  }
  return out;
}

int64_t castTo(const Node* n) {
  return n->attrInt("to", 0);
}

float halfAt(const Tensor& t, size_t i) {
  return kernels::halfToFloat(t.at<uint16_t>(i));
}

TEST(ConvertFloat16, WeightsAndComputationBecomeFloat16InterfaceStaysFloat32) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2, 4});
  Value* w = b.initializer("w", {4, 3}, test::ramp(12));
  Value* bias = b.initializer("bias", {3}, {0.5F, -0.25F, 1.0F});
  Value* mm = b.op("MatMul", {x, w});
  Value* y = b.op("Relu", {b.op("Add", {mm, bias})});
  y->setName("y");
  b.output(y);
  std::unique_ptr<Model> m = b.build();
  const std::vector<std::vector<float>> expected =
      test::evaluateByFolding(*m, {{"x", floatTensor({2, 4}, test::ramp(8, 0.3F))}});

  const Converted r = convert(*m);
  EXPECT_TRUE(r.changed);
  const Graph& g = *m->graph;
  EXPECT_EQ(w->initializer()->dtype(), DataType::kFloat16);
  EXPECT_EQ(bias->initializer()->dtype(), DataType::kFloat16);
  EXPECT_FLOAT_EQ(halfAt(*bias->initializer(), 1), -0.25F);
  EXPECT_EQ(r.counters.at("weights converted"), 2);
  // One Cast in, one out; the interface keeps its types and names.
  EXPECT_EQ(g.inputs()[0]->type.elem_type, DataType::kFloat);
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0]->name(), "y");
  EXPECT_EQ(g.outputs()[0]->type.elem_type, DataType::kFloat);
  const std::vector<const Node*> casts = opsOf(g, "Cast");
  ASSERT_EQ(casts.size(), 2u);
  EXPECT_EQ(castTo(casts[0]), static_cast<int64_t>(DataType::kFloat16));
  EXPECT_EQ(casts[0]->input(0), x);
  EXPECT_EQ(castTo(casts[1]), static_cast<int64_t>(DataType::kFloat));
  EXPECT_EQ(casts[1]->output(0), g.outputs()[0]);
  EXPECT_EQ(elemOf(opsOf(g, "MatMul")[0]->output(0)), DataType::kFloat16);
  EXPECT_EQ(elemOf(opsOf(g, "Relu")[0]->output(0)), DataType::kFloat16);

  // Idempotent: a second run finds nothing to do.
  EXPECT_FALSE(convert(*m).changed);

  const std::vector<std::vector<float>> got =
      test::evaluateByFolding(*m, {{"x", floatTensor({2, 4}, test::ramp(8, 0.3F))}});
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].size(), expected[0].size());
  for (size_t i = 0; i < got[0].size(); ++i)
    EXPECT_NEAR(got[0][i], expected[0][i], 1e-2) << i;
}

TEST(ConvertFloat16, KeepIoTypesFalseMakesTheInterfaceFloat16) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {4});
  b.output(b.op("Mul", {x, b.initializer("s", {4}, {1, 2, 3, 4})}));
  std::unique_ptr<Model> m = b.build();
  PassOptions o;
  o.extra["convert-float16.keep-io-types"] = "false";
  EXPECT_TRUE(convert(*m, o).changed);
  EXPECT_EQ(m->graph->inputs()[0]->type.elem_type, DataType::kFloat16);
  EXPECT_EQ(m->graph->outputs()[0]->type.elem_type, DataType::kFloat16);
  EXPECT_EQ(countOps(*m->graph, "Cast"), 0u);
}

TEST(ConvertFloat16, BlockedOpsStayFloat32BetweenCasts) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2, 4});
  Value* s = b.op("Softmax", {b.op("MatMul", {x, b.initializer("w", {4, 4}, test::ramp(16))})},
                  attrs(Attribute::makeInt("axis", -1)), "attn_softmax");
  b.output(b.op("MatMul", {s, b.initializer("v", {4, 2}, test::ramp(8))}));
  std::unique_ptr<Model> m = b.build();
  const Converted r = convert(*m);
  EXPECT_TRUE(r.changed);
  const Node* softmax = opsOf(*m->graph, "Softmax")[0];
  EXPECT_EQ(elemOf(softmax->input(0)), DataType::kFloat);
  EXPECT_EQ(elemOf(softmax->output(0)), DataType::kFloat);
  ASSERT_NE(softmax->input(0)->producer(), nullptr);
  EXPECT_EQ(softmax->input(0)->producer()->op_type, "Cast");
  EXPECT_EQ(elemOf(opsOf(*m->graph, "MatMul")[1]->input(0)), DataType::kFloat16);
  EXPECT_TRUE(noteHas(r, "kept in float32: 1 Softmax (block list")) << r.notes.size();
  EXPECT_TRUE(noteHas(r, "attn_softmax"));
  EXPECT_EQ(r.counters.at("nodes kept in float32"), 1);

  // The block list is a setting.
  std::unique_ptr<Model> again = [] {
    ModelBuilder c;
    Value* x2 = c.input("x", DataType::kFloat, {2, 4});
    c.output(c.op("Softmax", {c.op("Mul", {x2, c.initializer("k", {4}, {1, 2, 3, 4})})}));
    return c.build();
  }();
  PassOptions o;
  o.extra["convert-float16.allow"] = "Softmax";
  convert(*again, o);
  EXPECT_EQ(elemOf(opsOf(*again->graph, "Softmax")[0]->output(0)), DataType::kFloat16);
}

TEST(ConvertFloat16, NormalizationStatisticsStayFloat32) {
  // RMSNorm by hand: x / sqrt(mean(x^2) + eps) * g.
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2, 8});
  Value* sq = b.op("Pow", {x, b.initializer("two", {}, {2})});
  Value* mean = b.op("ReduceMean", {sq}, attrs(Attribute::makeInts("axes", {-1})));
  Value* rms = b.op("Sqrt", {b.op("Add", {mean, b.initializer("eps", {}, {1e-12F})})});
  Value* y = b.op("Mul", {b.op("Div", {x, rms}), b.initializer("g", {8}, test::ramp(8))});
  b.output(y);
  std::unique_ptr<Model> m = b.build();
  convert(*m);
  for (const char* op : {"Pow", "ReduceMean", "Add", "Sqrt"})
    EXPECT_EQ(elemOf(opsOf(*m->graph, op)[0]->output(0)), DataType::kFloat) << op;
  EXPECT_EQ(elemOf(opsOf(*m->graph, "Div")[0]->output(0)), DataType::kFloat16);
  // eps keeps its float32 value: 1e-12 is zero in float16.
  const Value* eps = opsOf(*m->graph, "Add")[0]->input(1);
  ASSERT_TRUE(eps->isInitializer());
  EXPECT_EQ(eps->initializer()->dtype(), DataType::kFloat);
}

TEST(ConvertFloat16, ShapeComputationsStayFloat32) {
  // new_len = int64(float(len(x)) * 1.5): float16 counts are exact only up to 2048.
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {3000});
  Value* len = b.op("Shape", {x});
  Value* f = b.op("Cast", {len}, attrs(Attribute::makeInt("to", 1)));
  Value* scaled = b.op("Mul", {f, b.initializer("k", {1}, {1.5F})});
  Value* n = b.op("Cast", {scaled}, attrs(Attribute::makeInt("to", 7)));
  Value* y = b.op("ConstantOfShape", {n});
  b.output(b.op("Add", {x, b.initializer("one", {1}, {1})}));
  b.output(y);
  std::unique_ptr<Model> m = b.build();
  const Converted r = convert(*m);
  const Node* mul = opsOf(*m->graph, "Mul")[0];
  EXPECT_EQ(elemOf(mul->output(0)), DataType::kFloat);
  EXPECT_EQ(mul->input(1)->initializer()->dtype(), DataType::kFloat);
  EXPECT_EQ(castTo(f->producer()), 1);
  EXPECT_TRUE(noteHas(r, "computes a shape"));
  EXPECT_EQ(elemOf(opsOf(*m->graph, "Add")[0]->output(0)), DataType::kFloat16);
  // ConstantOfShape makes float16 zeros, cast back at the interface.
  EXPECT_EQ(m->graph->outputs()[1]->type.elem_type, DataType::kFloat);
}

TEST(ConvertFloat16, ResizeKeepsItsRoiAndScalesFloat32) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {1, 1, 2, 2});
  Value* roi = b.initializer("roi", {0}, {});
  Value* scales = b.initializer("scales", {4}, {1, 1, 2, 2});
  b.output(b.op("Resize", {b.op("Relu", {x}), roi, scales}));
  std::unique_ptr<Model> m = b.build();
  EXPECT_TRUE(convert(*m).changed);
  const Node* resize = opsOf(*m->graph, "Resize")[0];
  EXPECT_EQ(elemOf(resize->input(0)), DataType::kFloat16);
  EXPECT_EQ(elemOf(resize->output(0)), DataType::kFloat16);
  EXPECT_EQ(resize->input(1), roi);
  EXPECT_EQ(roi->initializer()->dtype(), DataType::kFloat);
  EXPECT_EQ(resize->input(2), scales);
  EXPECT_EQ(scales->initializer()->dtype(), DataType::kFloat);
}

TEST(ConvertFloat16, CastPairsThatCancelAreRemoved) {
  ModelBuilder b;
  // float16 -> float32 -> float16 is exact: both Casts go.
  Value* h = b.input("h", DataType::kFloat16, {4});
  Value* up = b.op("Cast", {h}, attrs(Attribute::makeInt("to", 1)));
  Value* down = b.op("Cast", {up}, attrs(Attribute::makeInt("to", 10)));
  b.output(b.op("Relu", {down}));
  // float32 -> float16 -> float32 rounds: the model asked for it, it stays.
  Value* x = b.input("x", DataType::kFloat, {4});
  Value* r16 = b.op("Cast", {x}, attrs(Attribute::makeInt("to", 10)));
  Value* r32 = b.op("Cast", {r16}, attrs(Attribute::makeInt("to", 1)));
  b.output(b.op("Neg", {r32}));
  std::unique_ptr<Model> m = b.build();
  const Converted r = convert(*m);
  EXPECT_TRUE(r.changed);
  const Graph& g = *m->graph;
  EXPECT_EQ(opsOf(g, "Relu")[0]->input(0), h);
  EXPECT_GE(r.counters.at("casts removed"), 2);
  // x -> float16 (the model's rounding), Neg in float16, then back to float32 for the output.
  const std::vector<const Node*> casts = opsOf(g, "Cast");
  ASSERT_EQ(casts.size(), 2u);
  EXPECT_EQ(casts[0]->input(0), x);
  EXPECT_EQ(castTo(casts[0]), 10);
  EXPECT_EQ(opsOf(g, "Neg")[0]->input(0), casts[0]->output(0));
  EXPECT_EQ(castTo(casts[1]), 1);
  EXPECT_EQ(g.outputs()[1], casts[1]->output(0));
}

// An If whose branches read an outer float16 value and a float32 graph input.
TEST(ConvertFloat16, SubgraphsSeeTheConvertedOuterValues) {
  ModelBuilder b;
  Value* cond = b.input("cond", DataType::kBool, {});
  Value* x = b.input("x", DataType::kFloat, {2});
  Value* h = b.op("Mul", {x, b.initializer("w", {2}, {2, 3})});
  Node* iff = b.node("If", {cond}, 1);
  for (const char* branch : {"then_branch", "else_branch"}) {
    Graph& g = b.subgraph(iff, branch);
    Value* sum = g.addNode(GraphBuilder::key(), "Add", {h, x})->output(0);
    Value* out =
        g.addNode(GraphBuilder::key(), branch[0] == 't' ? "Relu" : "Neg", {sum})->output(0);
    out->type = Type::tensor(DataType::kFloat);
    g.addOutput(GraphBuilder::key(), out);
  }
  b.output(iff->output(0));
  std::unique_ptr<Model> m = b.build();
  EXPECT_TRUE(convert(*m).changed);
  EXPECT_EQ(elemOf(h), DataType::kFloat16);
  for (const char* branch : {"then_branch", "else_branch"}) {
    const Graph& sg = *iff->attr(branch)->g;
    const Node* add = opsOf(sg, "Add")[0];
    EXPECT_EQ(add->input(0), h) << branch;  // float16 already: read as it is
    ASSERT_NE(add->input(1)->producer(), nullptr) << branch;
    EXPECT_EQ(add->input(1)->producer()->op_type, "Cast") << branch;  // x is float32
    EXPECT_EQ(add->input(1)->producer()->graph(), &sg) << branch;
    EXPECT_EQ(sg.outputs()[0]->type.elem_type, DataType::kFloat16) << branch;
  }
  // The If yields float16; the graph output is cast back.
  EXPECT_EQ(m->graph->outputs()[0]->type.elem_type, DataType::kFloat);
  EXPECT_EQ(m->graph->outputs()[0]->producer()->op_type, "Cast");
  EXPECT_FALSE(convert(*m).changed);
}

TEST(ConvertFloat16, LocalFunctionBodiesFollowTheirCalls) {
  ModelBuilder b;
  b.importDomain("my.fns", 1);
  Value* x = b.input("x", DataType::kFloat, {3});
  Value* mid = b.node("Scale", {x}, 1)->output(0);
  b.graph().lastNode()->domain = "my.fns";
  Value* y = b.node("Scale", {mid}, 1)->output(0);
  b.graph().lastNode()->domain = "my.fns";
  b.output(y);
  std::unique_ptr<Model> m = b.build();
  Function f;
  f.name = "Scale";
  f.domain = "my.fns";
  f.body = std::make_unique<Graph>();
  Value* in = f.body->addInput(GraphBuilder::key(), "X", Type());
  Node* k = f.body->addNode(GraphBuilder::key(), "Constant", {}, 1);
  k->setAttr(Attribute::makeTensor("value", floatTensor({1}, {0.5F})));
  f.body->addOutput(GraphBuilder::key(),
                    f.body->addNode(GraphBuilder::key(), "Mul", {in, k->output(0)})->output(0));
  f.opset_import.push_back({"", 17, {}});
  m->functions.push_back(std::move(f));

  EXPECT_TRUE(convert(*m).changed);
  const Graph& g = *m->graph;
  EXPECT_EQ(countOps(g, "Cast"), 2u);  // at the interface only, none between the calls
  EXPECT_EQ(m->functions[0].body->firstNode()->attr("value")->t.dtype(), DataType::kFloat16);
  EXPECT_EQ(elemOf(mid), DataType::kFloat16);
}

TEST(ConvertFloat16, ValuesPastTheRangeSaturateOrStayFloat32) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {3});
  // -FLT_MAX means minus infinity (a mask): saturating keeps that meaning.
  Value* mask = b.initializer("mask", {3}, {-FLT_MAX, 0, 1e30F});
  // 1e5 is a value: float16 cannot hold it, so its user stays float32.
  Value* big = b.initializer("big", {3}, {1e5F, 1, 2});
  b.output(b.op("Add", {x, mask}));
  b.output(b.op("Mul", {x, big}, {}, "scale_big"));
  std::unique_ptr<Model> m = b.build();
  const Converted r = convert(*m);
  EXPECT_EQ(mask->initializer()->dtype(), DataType::kFloat16);
  EXPECT_FLOAT_EQ(halfAt(*mask->initializer(), 0), -65504.0F);
  EXPECT_FLOAT_EQ(halfAt(*mask->initializer(), 2), 65504.0F);
  EXPECT_EQ(r.counters.at("values saturated"), 2);
  EXPECT_EQ(r.counters.at("weights saturated"), 1);
  EXPECT_TRUE(noteHas(r, "saturated 2 values of 1 weights"));
  EXPECT_EQ(big->initializer()->dtype(), DataType::kFloat);
  EXPECT_EQ(elemOf(opsOf(*m->graph, "Mul")[0]->output(0)), DataType::kFloat);
  EXPECT_TRUE(noteHas(r, "input 'big' has values up to 100000"));
}

// A huge value saturates only where it stands for an infinity that is added or selected: a
// divisor or a factor of 1e9 is a real value, and keeps float32 with its users.
TEST(ConvertFloat16, HugeValuesSaturateOnlyAsMasks) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {1, 4});
  Value* mask = b.initializer("mask", {1, 4}, {0, -FLT_MAX, 0, -1e9F});
  Value* divisor = b.initializer("divisor", {1}, {1e9F});
  Value* shape = b.initializer(test::int64Tensor({2}, {4, 1}, "shape"));
  Value* reshaped = b.op("Reshape", {mask, shape});  // through a reshape: still a mask
  b.output(b.op("Add", {b.op("Reshape", {x, shape}), reshaped}));
  b.output(b.op("Div", {x, divisor}, {}, "per_billion"));
  std::unique_ptr<Model> m = b.build();
  const Converted r = convert(*m);
  EXPECT_EQ(mask->initializer()->dtype(), DataType::kFloat16);
  EXPECT_EQ(divisor->initializer()->dtype(), DataType::kFloat);
  EXPECT_EQ(elemOf(opsOf(*m->graph, "Div")[0]->output(0)), DataType::kFloat);
  EXPECT_TRUE(noteHas(r, "input 'divisor' has values of 1e+08 or more that are not a mask"));
}

TEST(ConvertFloat16, LargeWeightsAreConvertedWhenRead) {
  // 64 KiB and more: a source computing float16 on demand, same values as the eager path.
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {128, 160});
  std::vector<float> values = test::ramp(128 * 160);
  values[5] = -FLT_MAX;  // an added mask value: saturates
  Value* w = b.initializer("w", {128, 160}, values);
  b.output(b.op("Add", {x, w}));
  std::unique_ptr<Model> m = b.build();
  convert(*m);
  const Tensor& t = *w->initializer();
  ASSERT_EQ(t.dtype(), DataType::kFloat16);
  EXPECT_TRUE(t.buffer().isSourceRange());
  std::vector<uint16_t> part(3);
  t.buffer().copyTo(2 * 4, 6, reinterpret_cast<uint8_t*>(part.data()));  // elements 4..6
  EXPECT_EQ(part[0], kernels::floatToHalf(values[4]));
  EXPECT_FLOAT_EQ(kernels::halfToFloat(part[1]), -65504.0F);
  EXPECT_EQ(part[2], kernels::floatToHalf(values[6]));
  EXPECT_EQ(halfAt(t, values.size() - 1),
            kernels::halfToFloat(kernels::floatToHalf(values.back())));
}

TEST(ConvertFloat16, QdqModelsBelowOpset19AreLeftAsTheyAre) {
  ModelBuilder b(13);
  Value* x = b.input("x", DataType::kFloat, {4});
  Value* scale = b.initializer("scale", {}, {0.1F});
  Tensor zp(DataType::kUint8, {});
  zp.name = "zp";
  Value* z = b.initializer(zp);
  Value* q = b.op("QuantizeLinear", {x, scale, z});
  b.output(b.op("Relu", {b.op("DequantizeLinear", {q, scale, z})}));
  std::unique_ptr<Model> m = b.build();
  const Converted r = convert(*m);
  EXPECT_FALSE(r.changed);
  EXPECT_TRUE(noteHas(r, "QDQ"));
  EXPECT_EQ(scale->initializer()->dtype(), DataType::kFloat);
}

TEST(ConvertFloat16, ThePipelineStageReportsItself) {
  // Through the pass manager, as the facade runs it: converged after one changing run.
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {4});
  b.output(b.op("Exp", {b.op("Add", {x, b.initializer("c", {4}, {1, 2, 3, 4})})}));
  std::unique_ptr<Model> m = b.build();
  PassManagerOptions pmo;
  pmo.verify_each = true;
  PassManager pm(pmo);
  pm.addByName({"convert-float16"});
  const PipelineReport r = pm.run(m, {});
  EXPECT_TRUE(r.converged);
  ASSERT_EQ(r.passes.size(), 2u);
  EXPECT_TRUE(r.passes[0].changed);
  EXPECT_TRUE(r.passes[0].error.empty()) << r.passes[0].error;
  EXPECT_FALSE(r.passes[1].changed);
  EXPECT_EQ(r.passes[0].counters.at("nodes kept in float32"), 1);
}

}  // namespace
}  // namespace onnxfold

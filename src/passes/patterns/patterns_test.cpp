// Freezing pattern tests: a small graph in, the expected graph out (one line
// per node, "y = Op(a, b)"), the verifier after every run, the numbers before
// and after where weights change, and the preconditions that must stop each
// pattern.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "passes/registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

using test::countOps;
using test::ramp;

using test::attrs;
using test::floatTensor;
using test::int64Tensor;
using test::ModelBuilder;

// Runs fold-constants (which refines value types, as in the default pipeline)
// then freezing-patterns; verifies the IR; returns the counters.
std::map<std::string, int64_t> runPatterns(Model& m) {
  PassOptions options;
  PassContext ctx(options);
  createPass("fold-constants")->run(m, ctx);
  ctx.takeCounters();
  createPass("freezing-patterns")->run(m, ctx);
  const VerifyResult v = verify(m);
  EXPECT_TRUE(v.ok) << v.message;
  return ctx.takeCounters();
}

// The graph as one line per node: "y = Op(a, b)", then "-> outputs".
std::string graphText(const Graph& g) {
  std::ostringstream os;
  for (const Node* n : g.nodes()) {
    for (size_t i = 0; i < n->numOutputs(); ++i)
      os << (i ? ", " : "") << (n->output(i) ? n->output(i)->name() : "");
    os << " = " << n->op_type << "(";
    for (size_t i = 0; i < n->numInputs(); ++i)
      os << (i ? ", " : "") << (n->input(i) ? n->input(i)->name() : "");
    os << ")\n";
  }
  os << "->";
  for (const Value* v : g.outputs())
    os << " " << v->name();
  return os.str();
}

void expectClose(const std::vector<std::vector<float>>& a,
                 const std::vector<std::vector<float>>& b) {
  ASSERT_FALSE(a.empty());
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].size(), b[k].size());
    for (size_t i = 0; i < a[k].size(); ++i)
      EXPECT_NEAR(a[k][i], b[k][i], 1e-4 * (1 + std::fabs(a[k][i]))) << "output " << k << " @" << i;
  }
}

// Runs the patterns on `m` and checks that its outputs on `inputs` do not change.
std::map<std::string, int64_t> runAndCompare(Model& m,
                                             const std::map<std::string, Tensor>& inputs) {
  const auto before = test::evaluateByFolding(m, inputs);
  auto counters = runPatterns(m);
  expectClose(before, test::evaluateByFolding(m, inputs));
  return counters;
}

Value* named(Value* v, const std::string& name) {
  v->setName(name);
  return v;
}

// ------------------------------------------------------------------ Conv + Add

TEST(FuseAddIntoConv, PerChannelAddBecomesBiasAndSumsTheExistingBias) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {1, 2, 3, 3});
  Value* w = b.initializer("w", {3, 2, 2, 2}, ramp(24));
  Value* bias = b.initializer("b", {3}, {0.5f, -1, 2});
  Value* k = b.initializer("k", {1, 3, 1, 1}, {1, 2, 3});
  Value* c = b.op("Conv", {x, w, bias});
  b.output(named(b.op("Add", {c, k}), "y"));
  std::unique_ptr<Model> m = b.build();
  auto counters = runAndCompare(*m, {{"x", floatTensor({1, 2, 3, 3}, ramp(18, 0.21f))}});
  EXPECT_EQ(counters["pattern fuse-add-into-conv"], 1);
  EXPECT_EQ(graphText(*m->graph), "y = Conv(x, w, b_add)\n-> y");
}

TEST(FuseAddIntoConv, ConstantFirstRank3ConstantAndConvTranspose) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {1, 4, 2, 2});
  Value* w = b.initializer("w", {4, 1, 2, 2}, ramp(16));  // C = 4, M/g = 1, g = 2 -> M = 2
  Value* k = b.initializer("k", {2, 1, 1}, {1, -2});
  Value* c = b.op("ConvTranspose", {x, w}, attrs(Attribute::makeInt("group", 2)));
  b.output(named(b.op("Add", {k, c}), "y"));
  std::unique_ptr<Model> m = b.build();
  auto counters = runAndCompare(*m, {{"x", floatTensor({1, 4, 2, 2}, ramp(16, 0.3f))}});
  EXPECT_EQ(counters["pattern fuse-add-into-conv-transpose"], 1);
  EXPECT_EQ(graphText(*m->graph), "y = ConvTranspose(x, w, w_bias_add)\n-> y");
}

TEST(FuseAddIntoConv, ScalarConstantIsUniform) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {1, 1, 3, 3});
  Value* w = b.initializer("w", {2, 1, 2, 2}, ramp(8));
  Value* k = b.initializer(floatTensor({}, {0.75f}, "k"));
  b.output(named(b.op("Add", {b.op("Conv", {x, w}), k}), "y"));
  std::unique_ptr<Model> m = b.build();
  runAndCompare(*m, {{"x", floatTensor({1, 1, 3, 3}, ramp(9))}});
  EXPECT_EQ(countOps(*m->graph, "Add"), 0u);
}

TEST(FuseAddIntoConv, LeavesOtherBroadcastsAndNonConstantsAlone) {
  struct Case {
    const char* why;
    std::vector<int64_t> k_dims;
    bool constant;
  };
  for (const Case& cs :
       {Case{"along the last axis", {3}, true}, Case{"along a spatial axis", {1, 1, 3, 1}, true},
        Case{"per element", {1, 3, 2, 2}, true}, Case{"adds a dim", {1, 1, 3, 1, 1}, true},
        Case{"not constant", {1, 3, 1, 1}, false}}) {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {1, 2, 3, 3});
    Value* w = b.initializer("w", {3, 2, 2, 2}, ramp(24));
    int64_t n = 1;
    for (int64_t d : cs.k_dims)
      n *= d;
    Value* k = cs.constant ? b.initializer("k", cs.k_dims, ramp(static_cast<size_t>(n)))
                           : b.input("k", DataType::kFloat, cs.k_dims);
    b.output(b.op("Add", {b.op("Conv", {x, w}), k}));
    std::unique_ptr<Model> m = b.build();
    auto counters = runPatterns(*m);
    EXPECT_EQ(countOps(*m->graph, "Add"), 1u) << cs.why;
    EXPECT_EQ(counters.count("pattern fuse-add-into-conv"), 0u) << cs.why;
  }
}

// ------------------------------------------------------------------ Conv + Mul

TEST(FuseMulIntoConv, GroupedConvScalesWeightsAndBias) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {1, 4, 3, 3});
  Value* w = b.initializer("w", {4, 2, 2, 2}, ramp(32));  // group 2: [M, C/g, k, k]
  Value* bias = b.initializer("b", {4}, {0.5f, -1, 2, 0.25f});
  Value* s = b.initializer("s", {4, 1, 1}, {2, -0.5f, 0, 3});
  Value* c = b.op("Conv", {x, w, bias}, attrs(Attribute::makeInt("group", 2)));
  b.output(named(b.op("Mul", {s, c}), "y"));
  std::unique_ptr<Model> m = b.build();
  auto counters = runAndCompare(*m, {{"x", floatTensor({1, 4, 3, 3}, ramp(36, 0.13f))}});
  EXPECT_EQ(counters["pattern fuse-mul-into-conv"], 1);
  EXPECT_EQ(graphText(*m->graph), "y = Conv(x, w_mul, b_mul)\n-> y");
}

TEST(FuseMulIntoConv, GroupedConvTransposeUsesItsChannelLayout) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {1, 4, 2, 2});
  // C = 4, group 2, M/g = 3 -> M = 6; channel of W[i0, i1] = (i0 / 2) * 3 + i1.
  Value* w = b.initializer("w", {4, 3, 2, 2}, ramp(48));
  Value* s = b.initializer("s", {1, 6, 1, 1}, {1, 2, 3, -1, -2, 0.5f});
  Value* c = b.op("ConvTranspose", {x, w}, attrs(Attribute::makeInt("group", 2)));
  b.output(named(b.op("Mul", {c, s}), "y"));
  std::unique_ptr<Model> m = b.build();
  auto counters = runAndCompare(*m, {{"x", floatTensor({1, 4, 2, 2}, ramp(16, 0.29f))}});
  EXPECT_EQ(counters["pattern fuse-mul-into-conv-transpose"], 1);
  EXPECT_EQ(graphText(*m->graph), "y = ConvTranspose(x, w_mul)\n-> y");
}

TEST(FuseMulIntoConv, PreconditionsStopIt) {
  // Broadcast along a spatial axis.
  {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {1, 2, 3, 3});
    Value* w = b.initializer("w", {2, 2, 2, 2}, ramp(16));
    Value* s = b.initializer("s", {1, 1, 2, 1}, {2, 3});
    b.output(b.op("Mul", {b.op("Conv", {x, w}), s}));
    std::unique_ptr<Model> m = b.build();
    runPatterns(*m);
    EXPECT_EQ(countOps(*m->graph, "Mul"), 1u);
  }
  // Weights that are not constant.
  {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {1, 2, 3, 3});
    Value* w = b.input("w", DataType::kFloat, {2, 2, 2, 2});
    Value* s = b.initializer("s", {1, 2, 1, 1}, {2, 3});
    b.output(b.op("Mul", {b.op("Conv", {x, w}), s}));
    std::unique_ptr<Model> m = b.build();
    runPatterns(*m);
    EXPECT_EQ(countOps(*m->graph, "Mul"), 1u);
  }
  // A group that does not divide the ConvTranspose input channels.
  {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {1, 3, 2, 2});
    Value* w = b.initializer("w", {3, 1, 2, 2}, ramp(12));
    Value* s = b.initializer("s", {1, 2, 1, 1}, {2, 3});
    Value* c = b.op("ConvTranspose", {x, w}, attrs(Attribute::makeInt("group", 2)));
    b.output(b.op("Mul", {c, s}));
    std::unique_ptr<Model> m = b.build();
    runPatterns(*m);
    EXPECT_EQ(countOps(*m->graph, "Mul"), 1u);
  }
  // The Conv output has another user.
  {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {1, 2, 3, 3});
    Value* w = b.initializer("w", {2, 2, 2, 2}, ramp(16));
    Value* s = b.initializer("s", {1, 2, 1, 1}, {2, 3});
    Value* c = b.op("Conv", {x, w});
    b.output(b.op("Mul", {c, s}));
    b.output(b.op("Relu", {c}));
    std::unique_ptr<Model> m = b.build();
    runPatterns(*m);
    EXPECT_EQ(countOps(*m->graph, "Mul"), 1u);
  }
}

TEST(FuseBatchNorm, TrainingModeNeverMatches) {
  ModelBuilder b(15);
  Value* x = b.input("x", DataType::kFloat, {1, 2, 3, 3});
  Value* w = b.initializer("w", {2, 2, 2, 2}, ramp(16));
  Value* scale = b.initializer("scale", {2}, {1, 2});
  Value* bias = b.initializer("bias", {2}, {0, 1});
  Value* mean = b.initializer("mean", {2}, {0.5f, 0});
  Value* var = b.initializer("var", {2}, {1, 4});
  Node* bn = b.node("BatchNormalization", {b.op("Conv", {x, w}), scale, bias, mean, var}, 3,
                    attrs(Attribute::makeInt("training_mode", 1)));
  b.output(bn->output(0));
  b.output(bn->output(1));
  b.output(bn->output(2));
  std::unique_ptr<Model> m = b.build();
  runPatterns(*m);
  EXPECT_EQ(countOps(*m->graph, "BatchNormalization"), 1u);
}

// The mode of a BatchNormalization at each version (kernels/op_modes.h): the fusion must
// happen exactly when the node normalizes with input_mean and input_var.
TEST(FuseBatchNorm, FusesExactlyInInferenceModeAtEveryVersion) {
  struct Case {
    int64_t opset;
    size_t outputs;
    const char* attr;  // an int attribute set on the node, or null
    int64_t value;
    bool fused;
    const char* why;
  };
  const std::vector<Case> cases = {
      {6, 1, "is_test", 1, true, "BN-6, is_test = 1"},
      {6, 1, nullptr, 0, false, "BN-6, is_test defaults to 0: training"},
      {7, 1, nullptr, 0, true, "BN-7, one output"},
      {7, 3, nullptr, 0, false, "BN-7, three outputs: training"},
      {7, 1, "spatial", 0, false, "BN-7, spatial = 0"},
      {9, 1, nullptr, 0, true, "BN-9, one output"},
      {9, 3, nullptr, 0, false, "BN-9, three outputs (unread): training"},
      {13, 3, nullptr, 0, false, "BN-9 at opset 13, three outputs (unread): training"},
      {13, 1, nullptr, 0, true, "BN-9 at opset 13, one output"},
      {14, 1, nullptr, 0, true, "BN-14, training_mode defaults to 0"},
      {15, 1, "training_mode", 0, true, "BN-15, training_mode = 0"},
      {15, 3, "training_mode", 1, false, "BN-15, training_mode = 1"},
  };
  for (const Case& cs : cases) {
    SCOPED_TRACE(cs.why);
    ModelBuilder b(cs.opset);
    Value* x = b.input("x", DataType::kFloat, {2, 2, 3, 3});
    Value* w = b.initializer("w", {2, 2, 2, 2}, ramp(16));
    Value* scale = b.initializer("scale", {2}, {1, 2});
    Value* bias = b.initializer("bias", {2}, {0, 1});
    Value* mean = b.initializer("mean", {2}, {0.5f, 0});
    Value* var = b.initializer("var", {2}, {1, 4});
    std::vector<Attribute> attributes;
    if (cs.attr != nullptr) attributes.push_back(Attribute::makeInt(cs.attr, cs.value));
    Node* bn = b.node("BatchNormalization", {b.op("Conv", {x, w}), scale, bias, mean, var},
                      cs.outputs, std::move(attributes));
    b.output(named(bn->output(0), "y"));  // the statistics are never read
    std::unique_ptr<Model> m = b.build();
    // Outputs compared before and after (training mode computes batch statistics; three
    // outputs, as saved_mean/saved_var are not computed: runtimes disagree on them).
    auto counters = runAndCompare(*m, {{"x", floatTensor({2, 2, 3, 3}, ramp(36, 0.37f))}});
    EXPECT_EQ(countOps(*m->graph, "BatchNormalization"), cs.fused ? 0u : 1u);
    EXPECT_EQ(counters["pattern fuse-bn-into-conv"], cs.fused ? 1 : 0);
  }
}

// A local function's own opset import decides: the model imports opset 15 (where five outputs
// would be invalid and training_mode absent means inference), the function opset 9, where
// five outputs mean training. The report says why the node stayed.
TEST(FuseBatchNorm, ReadsTheOpsetOfTheLocalFunctionItIsIn) {
  ModelBuilder b(15);
  Value* x = b.input("x", DataType::kFloat, {1, 2, 3, 3});
  Node* call = b.node("ConvBn", {x}, 1, {}, "call");
  call->domain = "my.fns";
  b.output(call->output(0));
  b.importDomain("my.fns", 1);
  std::unique_ptr<Model> m = b.build();
  Function f;
  f.name = "ConvBn";
  f.domain = "my.fns";
  f.body = std::make_unique<Graph>();
  Graph& g = *f.body;
  Value* in = g.addInput(GraphBuilder::key(), "X", Type());
  auto constant = [&](const std::string& name, std::vector<int64_t> dims,
                      const std::vector<float>& v) {
    Tensor t = floatTensor(std::move(dims), v, name);
    Node* c = g.addNode(GraphBuilder::key(), "Constant", {});
    c->attributes.push_back(Attribute::makeTensor("value", std::move(t)));
    return c->output(0);
  };
  Value* conv =
      g.addNode(GraphBuilder::key(), "Conv", {in, constant("w", {2, 2, 1, 1}, {1, 2, 3, 4})})
          ->output(0);
  Node* bn = g.addNode(GraphBuilder::key(), "BatchNormalization",
                       {conv, constant("s", {2}, {1, 2}), constant("b", {2}, {0, 1}),
                        constant("m", {2}, {0.5f, 0}), constant("v", {2}, {1, 4})},
                       5);
  g.addOutput(GraphBuilder::key(), bn->output(0));
  f.opset_import.push_back({"", 9, {}});
  m->functions.push_back(std::move(f));
  PassOptions options;
  PassContext ctx(options);
  createPass("fold-constants")->run(*m, ctx);
  createPass("freezing-patterns")->run(*m, ctx);
  EXPECT_EQ(countOps(*m->functions[0].body, "BatchNormalization"), 1u);
  bool explained = false;
  for (const Explanation& e : ctx.takeExplanations())
    explained |= e.op_type == "BatchNormalization" &&
                 e.reason.find("training mode at opset 9 (5 outputs)") != std::string::npos;
  EXPECT_TRUE(explained);
}

// ------------------------------------------------------------------ MatMul + Add

TEST(FuseMatMulAdd, BecomesGemmAndKeepsTheAddOutputName) {
  ModelBuilder b;
  Value* a = b.input("a", DataType::kFloat, {-1, 3});  // [N0, 3]: symbolic rows
  Value* w = b.initializer("w", {3, 2}, ramp(6));
  Value* c = b.initializer("c", {2}, {1, -1});
  Value* mm = b.op("MatMul", {a, w});
  Value* y = named(b.op("Add", {c, mm}), "y");
  b.output(named(b.op("Relu", {y}), "out"));
  std::unique_ptr<Model> m = b.build();
  const Tensor data = floatTensor({2, 3}, ramp(6, 0.4f));
  const auto before = test::evaluateByFolding(*m, {{"a", data}});
  auto counters = runPatterns(*m);
  EXPECT_EQ(counters["pattern fuse-matmul-add-into-gemm"], 1);
  EXPECT_EQ(graphText(*m->graph), "y = Gemm(a, w, c)\nout = Relu(y)\n-> out");
  expectClose(before, test::evaluateByFolding(*m, {{"a", data}}));
}

TEST(FuseMatMulAdd, FullBiasWithKnownRowsAndGraphOutput) {
  ModelBuilder b;
  Value* a = b.input("a", DataType::kFloat, {2, 3});
  Value* w = b.initializer("w", {3, 2}, ramp(6));
  Value* c = b.initializer("c", {2, 2}, {1, 2, 3, 4});
  b.output(named(b.op("Add", {b.op("MatMul", {a, w}), c}), "y"));
  std::unique_ptr<Model> m = b.build();
  runAndCompare(*m, {{"a", floatTensor({2, 3}, ramp(6, 0.4f))}});
  EXPECT_EQ(graphText(*m->graph), "y = Gemm(a, w, c)\n-> y");
}

TEST(FuseMatMulAdd, PreconditionsStopIt) {
  struct Case {
    const char* why;
    std::vector<int64_t> a_dims;
    bool b_constant;
    std::vector<int64_t> c_dims;
  };
  for (const Case& cs :
       {Case{"A is 3-D", {1, 2, 3}, true, {2}}, Case{"B is not constant", {2, 3}, false, {2}},
        Case{"bias rows with symbolic M", {-1, 3}, true, {2, 2}},
        Case{"bias enlarges the output", {1, 3}, true, {2, 2}},
        Case{"bias rank 3", {2, 3}, true, {1, 1, 2}}}) {
    ModelBuilder b;
    Value* a = b.input("a", DataType::kFloat, cs.a_dims);
    Value* w = cs.b_constant ? b.initializer("w", {3, 2}, ramp(6))
                             : b.input("w", DataType::kFloat, {3, 2});
    int64_t n = 1;
    for (int64_t d : cs.c_dims)
      n *= d;
    Value* c = b.initializer("c", cs.c_dims, ramp(static_cast<size_t>(n)));
    b.output(b.op("Add", {b.op("MatMul", {a, w}), c}));
    std::unique_ptr<Model> m = b.build();
    runPatterns(*m);
    EXPECT_EQ(countOps(*m->graph, "Gemm"), 0u) << cs.why;
  }
}

// ------------------------------------------------------------------ Transposes

TEST(FuseTransposes, ComposesPerms) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2, 3, 4});
  Value* t = b.op("Transpose", {x}, attrs(Attribute::makeInts("perm", {1, 2, 0})));
  b.output(named(b.op("Transpose", {t}, attrs(Attribute::makeInts("perm", {0, 2, 1}))), "y"));
  std::unique_ptr<Model> m = b.build();
  auto counters = runAndCompare(*m, {{"x", floatTensor({2, 3, 4}, ramp(24))}});
  EXPECT_EQ(counters["pattern fuse-transposes"], 1);
  EXPECT_EQ(graphText(*m->graph), "y = Transpose(x)\n-> y");
  EXPECT_EQ(m->graph->firstNode()->attrInts("perm"), (std::vector<int64_t>{1, 0, 2}));
}

TEST(FuseTransposes, InversePermsCancelAndDefaultPermReverses) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2, 3, 4});
  Value* t = b.op("Transpose", {x});  // reverse: [4, 3, 2]
  Value* y = b.op("Transpose", {t}, attrs(Attribute::makeInts("perm", {2, 1, 0})));
  b.output(named(b.op("Relu", {y}), "out"));
  std::unique_ptr<Model> m = b.build();
  runAndCompare(*m, {{"x", floatTensor({2, 3, 4}, ramp(24))}});
  EXPECT_EQ(graphText(*m->graph), "out = Relu(x)\n-> out");
}

TEST(FuseTransposes, KeepsASharedFirstTranspose) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2, 3});
  Value* t = b.op("Transpose", {x});
  b.output(b.op("Transpose", {t}));
  b.output(b.op("Relu", {t}));
  std::unique_ptr<Model> m = b.build();
  runPatterns(*m);
  EXPECT_EQ(countOps(*m->graph, "Transpose"), 2u);
}

// ------------------------------------------------------------------ Reshapes

TEST(FuseReshapes, ChainBecomesOneReshape) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {-1, 6});
  Value* s1 = b.initializer(int64Tensor({3}, {0, 2, 3}, "s1"));
  Value* s2 = b.initializer(int64Tensor({2}, {-1, 2}, "s2"));
  Value* t = b.op("Reshape", {x, s1});
  b.output(named(b.op("Reshape", {t, s2}), "y"));
  std::unique_ptr<Model> m = b.build();
  auto counters = runAndCompare(*m, {{"x", floatTensor({2, 6}, ramp(12))}});
  EXPECT_EQ(counters["pattern fuse-reshapes"], 1);
  EXPECT_EQ(graphText(*m->graph), "y = Reshape(x, s2)\n-> y");
}

TEST(FuseReshapes, SecondShapeCopyingADimStops) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {-1, 6});
  Value* s1 = b.initializer(int64Tensor({3}, {0, 2, 3}, "s1"));
  Value* s2 = b.initializer(int64Tensor({2}, {0, -1}, "s2"));  // 0 copies t's dim 0
  Value* t = b.op("Reshape", {x, s1});
  b.output(b.op("Reshape", {t, s2}));
  std::unique_ptr<Model> m = b.build();
  runPatterns(*m);
  EXPECT_EQ(countOps(*m->graph, "Reshape"), 2u);
}

TEST(FuseReshapes, ReshapeToTheSameShapeGoes) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {-1, 2, 3});
  Value* s = b.initializer(int64Tensor({3}, {0, 2, 3}, "s"));
  Value* y = b.op("Reshape", {x, s});
  b.output(named(b.op("Relu", {y}), "out"));
  std::unique_ptr<Model> m = b.build();
  auto counters = runPatterns(*m);
  EXPECT_EQ(counters["pattern eliminate-noop-reshape"], 1);
  EXPECT_EQ(graphText(*m->graph), "out = Relu(x)\n-> out");
}

TEST(FuseReshapes, ReshapeThatChangesTheShapeStays) {
  for (const std::vector<int64_t>& target :
       {std::vector<int64_t>{2, 3, 1}, std::vector<int64_t>{3, 2}, {2, -1}}) {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {-1, 3});  // -1 with a symbolic dim: unsure
    Value* s = b.initializer(int64Tensor({static_cast<int64_t>(target.size())}, target, "s"));
    b.output(b.op("Reshape", {x, s}));
    std::unique_ptr<Model> m = b.build();
    runPatterns(*m);
    EXPECT_EQ(countOps(*m->graph, "Reshape"), 1u);
  }
}

// ------------------------------------------------------------------ Squeeze / Unsqueeze

TEST(CancelSqueezeUnsqueeze, AxesAsInputs) {
  ModelBuilder b(13);
  Value* x = b.input("x", DataType::kFloat, {2, 3});
  Value* axes = b.initializer(int64Tensor({2}, {0, 3}, "axes"));
  Value* neg = b.initializer(int64Tensor({2}, {-1, 0}, "neg"));  // -1 of rank 4 = 3
  Value* t = b.op("Unsqueeze", {x, axes});
  Value* y = b.op("Squeeze", {t, neg});
  b.output(named(b.op("Relu", {y}), "out"));
  std::unique_ptr<Model> m = b.build();
  auto counters = runPatterns(*m);
  EXPECT_EQ(counters["pattern cancel-unsqueeze-squeeze"], 1);
  EXPECT_EQ(graphText(*m->graph), "out = Relu(x)\n-> out");
}

TEST(CancelSqueezeUnsqueeze, AxesAsAttributesBelowOpset13) {
  ModelBuilder b(11);
  Value* x = b.input("x", DataType::kFloat, {2, 1, 3});
  Value* t = b.op("Squeeze", {x}, attrs(Attribute::makeInts("axes", {1})));
  b.output(named(b.op("Unsqueeze", {t}, attrs(Attribute::makeInts("axes", {-2}))), "y"));
  std::unique_ptr<Model> m = b.build();
  auto counters = runPatterns(*m);
  EXPECT_EQ(counters["pattern cancel-squeeze-unsqueeze"], 1);
  // y is a graph output and x a graph input: an Identity keeps the name.
  EXPECT_EQ(graphText(*m->graph), "y = Identity(x)\n-> y");
}

TEST(CancelSqueezeUnsqueeze, DifferentAxesStay) {
  ModelBuilder b(13);
  Value* x = b.input("x", DataType::kFloat, {2, 1, 3, 1});
  Value* a1 = b.initializer(int64Tensor({1}, {1}, "a1"));
  Value* a2 = b.initializer(int64Tensor({1}, {2}, "a2"));
  Value* t = b.op("Squeeze", {x, a1});
  b.output(b.op("Unsqueeze", {t, a2}));
  std::unique_ptr<Model> m = b.build();
  runPatterns(*m);
  EXPECT_EQ(countOps(*m->graph, "Squeeze") + countOps(*m->graph, "Unsqueeze"), 2u);
}

// ------------------------------------------------------------------ cast round trips

// Range(0, Cast(Cast(Gather(Shape(x), 0), INT32), INT64)): the batch size is a dim.
std::unique_ptr<Model> rangeOfCastDim(int64_t narrow, bool from_input) {
  ModelBuilder b(13);
  Value* x = b.input("x", DataType::kFloat, {-1, 3});
  Value* n = b.input("n", DataType::kInt64, {});
  Value* dim = from_input ? n
                          : b.op("Gather",
                                 {b.op("Shape", {x}), b.initializer(int64Tensor({}, {0}, "zero"))});
  Value* c32 = b.op("Cast", {dim}, attrs(Attribute::makeInt("to", narrow)));
  Value* c64 = b.op("Cast", {c32}, attrs(Attribute::makeInt("to", 7)));
  b.output(named(b.op("Range", {b.initializer(int64Tensor({}, {0}, "start")), c64,
                                b.initializer(int64Tensor({}, {1}, "step"))}),
                 "r"));
  return b.build();
}

TEST(CancelCastRoundTrip, DimsThroughInt32AndBack) {
  std::unique_ptr<Model> m = rangeOfCastDim(6, false);  // INT32
  auto counters = runPatterns(*m);
  EXPECT_EQ(counters["pattern cancel-cast-round-trip"], 1);
  EXPECT_EQ(countOps(*m->graph, "Cast"), 0u) << graphText(*m->graph);
}

TEST(CancelCastRoundTrip, OtherValuesAndNarrowerTypesStay) {
  // A graph input may hold anything; int16 does not hold every dim.
  for (const auto& [narrow, from_input] : {std::pair<int64_t, bool>{6, true}, {5, false}}) {
    std::unique_ptr<Model> m = rangeOfCastDim(narrow, from_input);
    runPatterns(*m);
    EXPECT_EQ(countOps(*m->graph, "Cast"), 2u) << graphText(*m->graph);
  }
}

// A Cast to a type that holds every value exactly and back is x (float -> double -> float
// before an If also trips ONNX Runtime 1.30: "Missing Input"); a lossy one stays.
TEST(CancelCastRoundTrip, ExactWideningAndBack) {
  struct Case {
    DataType from;
    DataType via;
    bool cancels;
  };
  for (const Case& cs : {Case{DataType::kFloat, DataType::kDouble, true},
                         Case{DataType::kBool, DataType::kUint8, true},
                         Case{DataType::kInt32, DataType::kInt64, true},
                         Case{DataType::kFloat, DataType::kFloat16, false},
                         Case{DataType::kInt64, DataType::kDouble, false},
                         Case{DataType::kFloat, DataType::kInt32, false}}) {
    ModelBuilder b;
    Value* x = b.input("x", cs.from, {2});
    Value* t = b.op("Cast", {x}, attrs(Attribute::makeInt("to", static_cast<int64_t>(cs.via))));
    Value* y = b.op("Cast", {t}, attrs(Attribute::makeInt("to", static_cast<int64_t>(cs.from))));
    b.output(named(b.op("Identity", {y}), "out"));
    std::unique_ptr<Model> m = b.build();
    runPatterns(*m);
    EXPECT_EQ(countOps(*m->graph, "Cast"), cs.cancels ? 0u : 2u)
        << static_cast<int>(cs.from) << " via " << static_cast<int>(cs.via) << "\n"
        << graphText(*m->graph);
  }
}

// ------------------------------------------------------------------ no-ops

// x -> op -> Relu -> out: returns whether the op was removed.
bool opRemoved(ModelBuilder& b, const std::string& op) {
  std::unique_ptr<Model> m = b.build();
  runPatterns(*m);
  return countOps(*m->graph, op) == 0;
}

TEST(EliminateNoOps, CastToTheSameType) {
  {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {2});
    b.output(b.op("Relu", {b.op("Cast", {x}, attrs(Attribute::makeInt("to", 1)))}));
    EXPECT_TRUE(opRemoved(b, "Cast"));
  }
  {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {2});
    b.output(b.op("Cast", {x}, attrs(Attribute::makeInt("to", 7))));
    EXPECT_FALSE(opRemoved(b, "Cast"));
  }
}

TEST(EliminateNoOps, GraphOutputNameSurvives) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Value* r = b.op("Relu", {x});
  b.output(named(b.op("Cast", {r}, attrs(Attribute::makeInt("to", 1))), "y"));
  b.output(named(b.op("Cast", {x}, attrs(Attribute::makeInt("to", 1))), "z"));
  std::unique_ptr<Model> m = b.build();
  runPatterns(*m);
  EXPECT_EQ(graphText(*m->graph), "y = Relu(x)\nz = Identity(x)\n-> y z");
}

TEST(EliminateNoOps, ExpandOnlyWhenItDoesNotEnlarge) {
  {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {-1, 3});
    Value* s = b.initializer(int64Tensor({2}, {1, 3}, "s"));
    b.output(b.op("Relu", {b.op("Expand", {x, s})}));
    EXPECT_TRUE(opRemoved(b, "Expand"));
  }
  for (const std::vector<int64_t>& target : {std::vector<int64_t>{2, 3}, {1, 2, 1}}) {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {2, 1});
    Value* s = b.initializer(int64Tensor({static_cast<int64_t>(target.size())}, target, "s"));
    b.output(b.op("Expand", {x, s}));
    EXPECT_FALSE(opRemoved(b, "Expand"));
  }
}

TEST(EliminateNoOps, PadWithZeroPads) {
  for (int64_t p : {0, 1}) {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {2, 3});
    Value* pads = b.initializer(int64Tensor({4}, {0, p, 0, 0}, "pads"));
    b.output(b.op("Relu", {b.op("Pad", {x, pads})}));
    EXPECT_EQ(opRemoved(b, "Pad"), p == 0);
  }
}

TEST(EliminateNoOps, SliceThatSelectsEverything) {
  struct Case {
    std::vector<int64_t> starts, ends, axes, steps;
    bool removed;
  };
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (const Case& cs :
       {Case{{0, 0}, {2, kMax}, {0, 1}, {1, 1}, true}, Case{{-2}, {100}, {0}, {1}, true},
        Case{{0}, {kMax}, {-1}, {1}, true}, Case{{0}, {2}, {1}, {1}, false},  // dim 1 is symbolic
        Case{{1}, {2}, {0}, {1}, false},                                      // drops a row
        Case{{0}, {2}, {0}, {-1}, false}}) {                                  // reverses
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {2, -1});
    const auto n = static_cast<int64_t>(cs.starts.size());
    Value* starts = b.initializer(int64Tensor({n}, cs.starts, "starts"));
    Value* ends = b.initializer(int64Tensor({n}, cs.ends, "ends"));
    Value* axes = b.initializer(int64Tensor({n}, cs.axes, "axes"));
    Value* steps = b.initializer(int64Tensor({n}, cs.steps, "steps"));
    b.output(b.op("Relu", {b.op("Slice", {x, starts, ends, axes, steps})}));
    EXPECT_EQ(opRemoved(b, "Slice"), cs.removed) << cs.starts[0] << ":" << cs.ends[0];
  }
}

TEST(EliminateNoOps, IdentityExceptWhenItCarriesAnOutputName) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Value* i = b.op("Identity", {b.op("Relu", {x})});
  b.output(named(b.op("Neg", {i}), "y"));
  b.output(named(b.op("Identity", {x}), "z"));
  std::unique_ptr<Model> m = b.build();
  runPatterns(*m);
  EXPECT_EQ(countOps(*m->graph, "Identity"), 1u);
  EXPECT_EQ(m->graph->outputs()[1]->name(), "z");
}

TEST(EliminateNoOps, DropoutOnlyInInferenceModeWithUnusedMask) {
  {
    ModelBuilder b(13);
    Value* x = b.input("x", DataType::kFloat, {2});
    b.output(b.op("Relu", {b.op("Dropout", {x})}));
    EXPECT_TRUE(opRemoved(b, "Dropout"));
  }
  {
    ModelBuilder b(13);
    Value* x = b.input("x", DataType::kFloat, {2});
    Value* ratio = b.initializer(floatTensor({}, {0.5f}, "ratio"));
    Tensor f(DataType::kBool, {});
    f.name = "train";
    Value* train = b.initializer(std::move(f));
    b.output(b.op("Relu", {b.op("Dropout", {x, ratio, train})}));
    EXPECT_TRUE(opRemoved(b, "Dropout"));  // training_mode = false
  }
  {
    ModelBuilder b(13);
    Value* x = b.input("x", DataType::kFloat, {2});
    Value* ratio = b.initializer(floatTensor({}, {0.5f}, "ratio"));
    Tensor t(DataType::kBool, {});
    t.mutableBytes()[0] = 1;
    t.name = "train";
    Value* train = b.initializer(std::move(t));
    b.output(b.op("Relu", {b.op("Dropout", {x, ratio, train})}));
    EXPECT_FALSE(opRemoved(b, "Dropout"));  // training mode
  }
  {
    ModelBuilder b(13);
    Value* x = b.input("x", DataType::kFloat, {2});
    Value* ratio = b.initializer(floatTensor({}, {0.5f}, "ratio"));
    Value* train = b.input("train", DataType::kBool, {});
    b.output(b.op("Relu", {b.op("Dropout", {x, ratio, train})}));
    EXPECT_FALSE(opRemoved(b, "Dropout"));  // training_mode not constant
  }
  {
    ModelBuilder b(13);
    Value* x = b.input("x", DataType::kFloat, {2});
    Node* d = b.node("Dropout", {x}, 2);
    b.output(b.op("Relu", {d->output(0)}));
    b.output(d->output(1));
    EXPECT_FALSE(opRemoved(b, "Dropout"));  // mask used
  }
  {
    ModelBuilder b(6);
    Value* x = b.input("x", DataType::kFloat, {2});
    b.output(b.op("Relu", {b.op("Dropout", {x})}));
    EXPECT_FALSE(opRemoved(b, "Dropout"));  // opset 6: is_test defaults to 0 (training)
  }
}

TEST(EliminateNoOps, SingleInputConcatAndSingleOutputSplit) {
  ModelBuilder b(13);
  Value* x = b.input("x", DataType::kFloat, {2, 3});
  Value* c = b.op("Concat", {x}, attrs(Attribute::makeInt("axis", 1)));
  Value* s = b.op("Split", {c}, attrs(Attribute::makeInt("axis", 0)));
  b.output(named(b.op("Relu", {s}), "out"));
  std::unique_ptr<Model> m = b.build();
  runPatterns(*m);
  EXPECT_EQ(graphText(*m->graph), "out = Relu(x)\n-> out");
}

// ------------------------------------------------------------------ arithmetic identities

TEST(ArithmeticIdentities, RemovesIdentityConstants) {
  struct Case {
    const char* op;
    float value;
    bool constant_first;
  };
  for (const Case& cs : {Case{"Mul", 1, false}, Case{"Mul", 1, true}, Case{"Add", 0, false},
                         Case{"Add", -0.0f, true}, Case{"Sub", 0, false}, Case{"Div", 1, false}}) {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {-1, 3});
    Value* c = b.initializer("c", {1, 3}, {cs.value, cs.value, cs.value});
    Value* y = cs.constant_first ? b.op(cs.op, {c, x}) : b.op(cs.op, {x, c});
    b.output(named(b.op("Relu", {y}), "out"));
    std::unique_ptr<Model> m = b.build();
    runPatterns(*m);
    EXPECT_EQ(graphText(*m->graph), "out = Relu(x)\n-> out") << cs.op << cs.constant_first;
  }
}

TEST(ArithmeticIdentities, LeavesWhatChangesTheResult) {
  struct Case {
    const char* why;
    const char* op;
    std::vector<int64_t> x_dims;
    std::vector<int64_t> c_dims;
    float value;
    bool constant_first;
  };
  for (const Case& cs :
       {Case{"0 - x", "Sub", {3}, {3}, 0, true}, Case{"1 / x", "Div", {3}, {3}, 1, true},
        Case{"x * 2", "Mul", {3}, {3}, 2, false},
        Case{"x * 1 adds a dim", "Mul", {3}, {2, 3}, 1, false},
        Case{"x * 1 stretches a size-1 dim", "Mul", {1, 3}, {2, 3}, 1, false},
        Case{"x * 1 on a symbolic dim", "Mul", {-1, 3}, {2, 3}, 1, false}}) {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, cs.x_dims);
    int64_t n = 1;
    for (int64_t d : cs.c_dims)
      n *= d;
    Value* c = b.initializer("c", cs.c_dims, std::vector<float>(static_cast<size_t>(n), cs.value));
    b.output(cs.constant_first ? b.op(cs.op, {c, x}) : b.op(cs.op, {x, c}));
    std::unique_ptr<Model> m = b.build();
    runPatterns(*m);
    EXPECT_EQ(countOps(*m->graph, cs.op), 1u) << cs.why;
  }
  // A non-constant operand of ones.
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {3});
  Value* ones = b.input("ones", DataType::kFloat, {3});
  b.output(b.op("Mul", {x, ones}));
  std::unique_ptr<Model> m = b.build();
  runPatterns(*m);
  EXPECT_EQ(countOps(*m->graph, "Mul"), 1u);
}

TEST(ArithmeticIdentities, IntegerConstants) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kInt64, {4});
  Value* one = b.initializer(int64Tensor({1}, {1}, "one"));
  b.output(named(b.op("Neg", {b.op("Mul", {x, one})}), "out"));
  std::unique_ptr<Model> m = b.build();
  runPatterns(*m);
  EXPECT_EQ(graphText(*m->graph), "out = Neg(x)\n-> out");
}

// A decomposed LayerNormalization whose scale is ones and bias zeros (as exported for a
// freshly initialized LayerNorm): the Mul and Add stay, so ONNX Runtime still fuses it; the
// same Mul after a division by something else goes.
TEST(ArithmeticIdentities, KeepsTheAffineTailOfADecomposedNormalization) {
  for (bool normalized : {true, false}) {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {-1, 3});
    Value* mean = b.op("ReduceMean", {x}, attrs(Attribute::makeInts("axes", {-1})));
    Value* centered = b.op("Sub", {x, mean});
    Value* var = b.op("ReduceMean", {b.op("Mul", {centered, centered})},
                      attrs(Attribute::makeInts("axes", {-1})));
    Value* eps = b.initializer("eps", {}, {1e-5f});
    Value* denom = normalized ? b.op("Sqrt", {b.op("Add", {var, eps})}) : b.op("Add", {var, eps});
    Value* norm = b.op("Div", {centered, denom});
    Value* scaled = b.op("Mul", {norm, b.initializer("scale", {3}, {1, 1, 1})});
    b.output(named(b.op("Add", {scaled, b.initializer("bias", {3}, {0, 0, 0})}), "out"));
    std::unique_ptr<Model> m = b.build();
    const auto counters = runAndCompare(*m, {{"x", floatTensor({2, 3}, {1, 2, 4, -1, 0, 5})}});
    // Mul(centered, centered) stays either way; the tail's Mul and Add only after Sqrt.
    EXPECT_EQ(countOps(*m->graph, "Mul"), normalized ? 2u : 1u) << normalized;
    EXPECT_EQ(countOps(*m->graph, "Add"), normalized ? 2u : 1u) << normalized;
  }
}

// ------------------------------------------------------- zero initial RNN states

// x [T=3, batch, 4] -> LSTM(hidden 5) whose initial_h / initial_c are built from
// x's batch size (Shape -> Gather -> Unsqueeze -> Concat -> ConstantOfShape(fill)),
// as exporters write them.
std::unique_ptr<Model> lstmWithBuiltState(float fill) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {3, -1, 4});
  Value* w = b.initializer("W", {1, 20, 4}, ramp(80));
  Value* r = b.initializer("R", {1, 20, 5}, ramp(100, 0.11f));
  Value* bias = b.initializer("B", {1, 40}, ramp(40, 0.07f));
  Value* shape = b.op("Shape", {x});
  Value* batch = b.op("Gather", {shape, b.initializer(int64Tensor({}, {1}))},
                      attrs(Attribute::makeInt("axis", 0)));
  Value* batch1 = b.op("Unsqueeze", {batch, b.initializer(int64Tensor({1}, {0}))});
  Value* dims =
      b.op("Concat",
           {b.initializer(int64Tensor({1}, {1})), batch1, b.initializer(int64Tensor({1}, {5}))},
           attrs(Attribute::makeInt("axis", 0)));
  Value* state = b.op("ConstantOfShape", {dims},
                      attrs(Attribute::makeTensor("value", floatTensor({1}, {fill}))));
  Node* lstm = b.node("LSTM", {x, w, r, bias, nullptr, state, state}, 3,
                      attrs(Attribute::makeInt("hidden_size", 5)));
  for (size_t i = 0; i < 3; ++i)
    b.output(lstm->output(i));
  return b.build();
}

TEST(DropZeroRnnState, ZeroStatesBuiltFromTheBatchSizeGoWithTheirChain) {
  std::unique_ptr<Model> m = lstmWithBuiltState(0.0f);
  std::map<std::string, Tensor> in{{"x", floatTensor({3, 2, 4}, ramp(24, 0.19f))}};
  const auto counters = runAndCompare(*m, in);
  EXPECT_EQ(counters.at("pattern drop-zero-initial-state-LSTM"), 1);
  Node* lstm = nullptr;
  for (Node* n : m->graph->nodes())
    if (n->op_type == "LSTM") lstm = n;
  ASSERT_NE(lstm, nullptr);
  EXPECT_EQ(lstm->numInputs(), 4u);  // X, W, R, B: the trailing optional inputs are left out
  PassOptions options;
  PassContext ctx(options);
  createPass("dce")->run(*m, ctx);
  EXPECT_EQ(countOps(*m->graph, "ConstantOfShape"), 0u);
  EXPECT_EQ(countOps(*m->graph, "Shape"), 0u);
}

TEST(DropZeroRnnState, NonZeroOrUnknownStatesStay) {
  std::unique_ptr<Model> m = lstmWithBuiltState(0.5f);
  std::map<std::string, Tensor> in{{"x", floatTensor({3, 2, 4}, ramp(24, 0.19f))}};
  auto counters = runAndCompare(*m, in);
  EXPECT_EQ(counters.count("pattern drop-zero-initial-state-LSTM"), 0u);

  // A GRU whose initial_h is a graph input: nothing is known about it.
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {3, 2, 4});
  Value* h0 = b.input("h0", DataType::kFloat, {1, 2, 5});
  Node* gru = b.node("GRU",
                     {x, b.initializer("W", {1, 15, 4}, ramp(60)),
                      b.initializer("R", {1, 15, 5}, ramp(75, 0.13f)), nullptr, nullptr, h0},
                     2, attrs(Attribute::makeInt("hidden_size", 5)));
  b.output(gru->output(0));
  m = b.build();
  counters = runPatterns(*m);
  EXPECT_EQ(counters.count("pattern drop-zero-initial-state-GRU"), 0u);
  EXPECT_EQ(gru->input(5), h0);
}

TEST(DropZeroRnnState, ZeroInitializerStateOfAGru) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {3, 2, 4});
  Node* gru = b.node(
      "GRU",
      {x, b.initializer("W", {1, 15, 4}, ramp(60)), b.initializer("R", {1, 15, 5}, ramp(75, 0.13f)),
       nullptr, nullptr, b.initializer("h0", {1, 2, 5}, std::vector<float>(10, 0.0f))},
      2, attrs(Attribute::makeInt("hidden_size", 5)));
  b.output(gru->output(0));
  b.output(gru->output(1));
  std::unique_ptr<Model> m = b.build();
  std::map<std::string, Tensor> in{{"x", floatTensor({3, 2, 4}, ramp(24, 0.19f))}};
  const auto counters = runAndCompare(*m, in);
  EXPECT_EQ(counters.at("pattern drop-zero-initial-state-GRU"), 1);
  EXPECT_EQ(gru->numInputs(), 3u);
}

}  // namespace
}  // namespace onnxfold

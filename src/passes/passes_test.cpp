// Pass tests: a small graph in, the expected graph out (as IR text or checked
// facts), and the verifier after every pass.
#include <gtest/gtest.h>

#include <set>

#include "ir/buffer.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "passes/propagation.h"
#include "passes/registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

using test::countOps;

using test::attrs;
using test::floatTensor;
using test::int64Tensor;
using test::ModelBuilder;

using test::runPass;

std::vector<Explanation> explain(Model& m, PassOptions options = {}) {
  PassContext ctx(options);
  createPass("fold-constants")->run(m, ctx);
  return ctx.takeExplanations();
}

// ------------------------------------------------------------------ dce

TEST(DeadCodeElimination, RemovesDeadChainsAndUnusedInitializersKeepsInputs) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Value* unused_in = b.input("unused", DataType::kFloat, {2});
  Value* w = b.initializer("w", {2}, {1, 2});
  b.initializer("dead_w", {2}, {3, 4});
  Value* a = b.op("Relu", {x});
  Value* dead1 = b.op("Mul", {x, w});
  b.op("Neg", {dead1});
  b.output(a);
  std::unique_ptr<Model> m = b.build();
  EXPECT_TRUE(runPass(*m, "dce"));
  const Graph& g = *m->graph;
  EXPECT_EQ(g.numNodes(), 1u);
  EXPECT_EQ(g.initializers().size(), 0u);
  EXPECT_EQ(g.inputs().size(), 2u);  // the interface is kept, used or not
  EXPECT_EQ(g.inputs()[1], unused_in);
  EXPECT_FALSE(runPass(*m, "dce"));  // idempotent
}

TEST(DeadCodeElimination, KeepsValuesCapturedBySubgraphs) {
  ModelBuilder b;
  Value* cond = b.input("cond", DataType::kBool, {});
  Value* x = b.input("x", DataType::kFloat, {2});
  Value* y = b.op("Neg", {x});  // used only inside the branches
  Node* iff = b.node("If", {cond}, 1);
  for (const char* branch : {"then_branch", "else_branch"}) {
    Graph& g = b.subgraph(iff, branch);
    g.addOutput(GraphBuilder::key(), g.addNode(GraphBuilder::key(), "Identity", {y}, 1)->output(0));
  }
  b.output(iff->output(0));
  std::unique_ptr<Model> m = b.build();
  runPass(*m, "dce");
  EXPECT_EQ(countOps(*m->graph, "Neg"), 1u);
}

// ------------------------------------------------------------------ eliminate-identity

TEST(EliminateIdentity, BypassesAndKeepsGraphOutputNames) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Value* r = b.op("Relu", {x});
  Value* i1 = b.op("Identity", {r});
  Value* n = b.op("Neg", {i1});
  Value* out = b.op("Identity", {n});
  out->setName("result");
  b.output(out);
  std::unique_ptr<Model> m = b.build();
  EXPECT_TRUE(runPass(*m, "eliminate-identity"));
  const Graph& g = *m->graph;
  EXPECT_EQ(countOps(g, "Identity"), 0u);
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0]->name(), "result");
  EXPECT_EQ(g.outputs()[0]->producer()->op_type, "Neg");
}

TEST(EliminateIdentity, KeepsIdentityFromGraphInputToOutput) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Value* y = b.op("Identity", {x});
  y->setName("y");
  b.output(y);
  std::unique_ptr<Model> m = b.build();
  EXPECT_FALSE(runPass(*m, "eliminate-identity"));
  EXPECT_EQ(m->graph->outputs()[0]->name(), "y");
}

// ------------------------------------------------------------------ fold-constants

TEST(FoldConstants, FoldsConstantChainsAndKeepsOutputNames) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {3});
  Value* w = b.initializer("w", {3}, {1, 2, 3});
  Value* c = b.initializer("c", {3}, {10, 20, 30});
  Value* s = b.op("Add", {w, c});  // constant: folded
  Value* y = b.op("Mul", {x, s});  // depends on x: stays
  y->setName("y");
  Value* k = b.op("Neg", {s});  // constant graph output: folded, name kept
  k->setName("k");
  b.output(y);
  b.output(k);
  std::unique_ptr<Model> m = b.build();
  EXPECT_TRUE(runPass(*m, "fold-constants"));
  runPass(*m, "dce");
  const Graph& g = *m->graph;
  EXPECT_EQ(g.numNodes(), 1u);
  EXPECT_EQ(g.outputs()[1]->name(), "k");
  ASSERT_TRUE(g.outputs()[1]->isConstant());
  const Tensor& kt = *g.outputs()[1]->initializer();
  EXPECT_EQ(kt.at<float>(0), -11.0f);
  EXPECT_EQ(kt.at<float>(2), -33.0f);
  const Value* folded = g.firstNode()->input(1);
  ASSERT_TRUE(folded->isConstant());
  EXPECT_EQ(folded->initializer()->at<float>(1), 22.0f);
}

TEST(FoldConstants, ShapeGatherOnDynamicBatchFoldsStaticDimsOnly) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {-1, 3, 8});  // [N0, 3, 8]
  Value* shape = b.op("Shape", {x});
  Value* i1 = b.initializer(int64Tensor({}, {1}, "i1"));
  Value* i0 = b.initializer(int64Tensor({}, {0}, "i0"));
  Value* d1 = b.op("Gather", {shape, i1}, attrs(Attribute::makeInt("axis", 0)));
  Value* d0 = b.op("Gather", {shape, i0}, attrs(Attribute::makeInt("axis", 0)));
  b.output(d1);
  b.output(d0);
  std::unique_ptr<Model> m = b.build();
  runPass(*m, "fold-constants");
  runPass(*m, "dce");
  const Graph& g = *m->graph;
  ASSERT_TRUE(g.outputs()[0]->isConstant()) << toString(*m);
  EXPECT_EQ(g.outputs()[0]->initializer()->at<int64_t>(0), 3);
  EXPECT_FALSE(g.outputs()[1]->isConstant());  // the batch size is not known
}

TEST(FoldConstants, RespectsTheSizeBudget) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {1});
  Value* shape = b.initializer(int64Tensor({1}, {100000}, "shape"));
  Value* big = b.op("ConstantOfShape", {shape});
  Value* y = b.op("Add", {x, big});
  b.output(y);
  std::unique_ptr<Model> m = b.build();
  const std::vector<Explanation> why = explain(*m);
  EXPECT_EQ(countOps(*m->graph, "ConstantOfShape"), 1u);
  bool said = false;
  for (const Explanation& e : why) {
    said |= e.op_type == "ConstantOfShape" &&
            e.reason.find("constructor size budget") != std::string::npos;
  }
  EXPECT_TRUE(said);

  PassOptions generous;
  generous.size_budget = 1 << 20;
  generous.constructor_budget = 1 << 20;
  EXPECT_TRUE(runPass(*m, "fold-constants", generous));
  EXPECT_EQ(countOps(*m->graph, "ConstantOfShape"), 0u);
}

// A refused fold says how many bytes it would add, and a budget of exactly that folds it
// (what the page's budget explorer relies on).
TEST(FoldConstants, ARefusedFoldSaysWhatBudgetWouldAllowIt) {
  auto model = [] {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {1});
    Value* big = b.op("ConstantOfShape", {b.initializer(int64Tensor({1}, {3000}, "shape"))});
    b.output(b.op("Add", {x, big}));
    return b.build();
  };
  std::unique_ptr<Model> m = model();
  int64_t bytes = -1;
  for (const Explanation& e : explain(*m)) {
    if (e.op_type == "ConstantOfShape") bytes = e.would_add_bytes;
  }
  EXPECT_EQ(bytes, 3000 * 4 - 8);  // 3,000 floats, less the shape it frees
  PassOptions just_below, exact;
  just_below.constructor_budget = bytes - 1;
  exact.constructor_budget = bytes;
  runPass(*m, "fold-constants", just_below);
  EXPECT_EQ(countOps(*m->graph, "ConstantOfShape"), 1u);
  runPass(*m, "fold-constants", exact);
  EXPECT_EQ(countOps(*m->graph, "ConstantOfShape"), 0u);
}

TEST(FoldConstants, ABudgetOverrunIsFoundBeforeAnythingIsAllocated) {
  // 2^33 floats (32 GiB) from a 16-byte model: inference gives the size, so the fold is refused
  // without computing it; under a 64 MiB memory limit an attempt would be a ResourceError.
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {1});
  Value* shape = b.initializer(int64Tensor({2}, {1 << 17, 1 << 16}, "shape"));
  b.output(b.op("Add", {x, b.op("ConstantOfShape", {shape})}));
  std::unique_ptr<Model> m = b.build();
  Buffer::setMemoryLimit(Buffer::heapBytes() + (64 << 20));  // in wasm: the whole heap
  std::vector<Explanation> why;
  EXPECT_NO_THROW(why = explain(*m));
  Buffer::setMemoryLimit(0);
  EXPECT_EQ(countOps(*m->graph, "ConstantOfShape"), 1u);
  bool said = false;
  for (const Explanation& e : why)
    said |= e.reason.find("would add 34359738352 bytes") != std::string::npos;  // less the shape
  EXPECT_TRUE(said) << [&] {
    std::string all;
    for (const Explanation& e : why)
      all += e.op_type + ": " + e.reason + "\n";
    return all;
  }();
}

TEST(FoldConstants, StringResultsCountTheirBytesAgainstTheBudget) {
  // Tile of a string tensor: 0 raw bytes, but every copied string is written out.
  ModelBuilder b;
  Tensor s(DataType::kString, {1});
  s.mutableStrings()[0] = std::string(100, 'a');
  s.name = "s";
  Value* sv = b.initializer(std::move(s));
  Value* reps = b.initializer(int64Tensor({1}, {1000}, "reps"));
  b.output(b.op("Tile", {sv, reps}));
  std::unique_ptr<Model> m = b.build();
  const std::vector<Explanation> why = explain(*m);
  EXPECT_EQ(countOps(*m->graph, "Tile"), 1u) << "102,000 bytes of strings are over 1 KiB";
}

TEST(FoldConstants, KeepsDequantizeOfIntegerWeightsUnlessAsked) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Tensor q(DataType::kInt8, {2});
  q.mutableBytes()[0] = 3;
  q.mutableBytes()[1] = static_cast<uint8_t>(-4);
  q.name = "wq";
  Value* wq = b.initializer(std::move(q));
  Value* scale = b.initializer("scale", {}, {0.5f});
  Value* w = b.op("DequantizeLinear", {wq, scale});
  b.output(b.op("Mul", {x, w}));
  std::unique_ptr<Model> m = b.build();
  EXPECT_FALSE(runPass(*m, "fold-constants"));
  EXPECT_EQ(countOps(*m->graph, "DequantizeLinear"), 1u);

  PassOptions fold_dq;
  fold_dq.fold_dequantize_weights = true;
  EXPECT_TRUE(runPass(*m, "fold-constants", fold_dq));
  const Value* folded = m->graph->lastNode()->input(1);
  ASSERT_TRUE(folded->isConstant());
  EXPECT_EQ(folded->initializer()->at<float>(0), 1.5f);
  EXPECT_EQ(folded->initializer()->at<float>(1), -2.0f);
}

TEST(FoldConstants, FoldsFloatWeightQuantizeLinear) {
  ModelBuilder b;
  Value* w = b.initializer("w", {3}, {1.0f, -2.0f, 0.25f});
  Value* scale = b.initializer("scale", {}, {0.5f});
  Tensor zp(DataType::kInt8, {});
  zp.name = "zp";
  Value* z = b.initializer(std::move(zp));
  Value* q = b.op("QuantizeLinear", {w, scale, z});
  Value* dq = b.op("DequantizeLinear", {q, scale, z});
  Value* x = b.input("x", DataType::kFloat, {3});
  b.output(b.op("Add", {x, dq}));
  std::unique_ptr<Model> m = b.build();
  runPass(*m, "fold-constants");
  EXPECT_EQ(countOps(*m->graph, "QuantizeLinear"), 0u);
  EXPECT_EQ(countOps(*m->graph, "DequantizeLinear"), 1u);  // kept for quantization
  const Value* qv = m->graph->firstNode()->input(0);
  ASSERT_TRUE(qv->isConstant());
  EXPECT_EQ(qv->initializer()->dtype(), DataType::kInt8);
  EXPECT_EQ(qv->initializer()->at<int8_t>(0), 2);
  EXPECT_EQ(qv->initializer()->at<int8_t>(1), -4);
  EXPECT_EQ(qv->initializer()->at<int8_t>(2), 0);  // 0.5 rounds half to even
}

TEST(FoldConstants, NeverFoldsNondeterministicOps) {
  ModelBuilder b;
  Value* r = b.op("RandomNormal", {}, attrs(Attribute::makeInts("shape", {2})));
  b.output(b.op("Neg", {r}));
  std::unique_ptr<Model> m = b.build();
  runPass(*m, "fold-constants");
  EXPECT_EQ(countOps(*m->graph, "RandomNormal"), 1u);
  EXPECT_EQ(countOps(*m->graph, "Neg"), 1u);
}

// A bool scalar initializer holding true.
Value* trueCondition(ModelBuilder& b) {
  Tensor t(DataType::kBool, {});
  t.mutableBytes()[0] = 1;
  t.name = "cond";
  return b.initializer(std::move(t));
}

TEST(FoldConstants, InlinesIfWithConstantCondition) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Value* cond = trueCondition(b);
  Node* iff = b.node("If", {cond}, 1);
  for (const char* branch : {"then_branch", "else_branch"}) {
    Graph& g = b.subgraph(iff, branch);
    g.addOutput(GraphBuilder::key(),
                g.addNode(GraphBuilder::key(),
                          std::string(branch) == "then_branch" ? "Relu" : "Neg", {x}, 1)
                    ->output(0));
  }
  iff->output(0)->setName("out");
  b.output(iff->output(0));
  std::unique_ptr<Model> m = b.build();
  EXPECT_TRUE(runPass(*m, "fold-constants"));
  runPass(*m, "eliminate-identity");
  runPass(*m, "dce");
  const Graph& g = *m->graph;
  EXPECT_EQ(countOps(g, "If"), 0u);
  EXPECT_EQ(countOps(g, "Neg"), 0u);
  ASSERT_EQ(g.numNodes(), 1u);
  EXPECT_EQ(g.firstNode()->op_type, "Relu");
  EXPECT_EQ(g.outputs()[0]->name(), "out");
}

// Two constant Ifs whose branches name their nodes alike: the inlined nodes keep distinct names.
TEST(FoldConstants, InlinedBranchNodesGetNamesOfTheirOwn) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Value* cond = trueCondition(b);
  Value* v = x;
  for (int k = 0; k < 3; ++k) {
    Node* iff = b.node("If", {cond}, 1, {}, "if" + std::to_string(k));
    for (const char* branch : {"then_branch", "else_branch"}) {
      Graph& g = b.subgraph(iff, branch);
      Node* n = g.addNode(GraphBuilder::key(), "Neg", {v}, 1);
      n->name = "neg";
      g.addOutput(GraphBuilder::key(), n->output(0));
    }
    v = iff->output(0);
  }
  b.output(v);
  std::unique_ptr<Model> m = b.build();
  EXPECT_TRUE(runPass(*m, "fold-constants"));
  std::set<std::string> names;
  for (const Node* n : m->graph->nodes()) {
    EXPECT_TRUE(names.insert(n->name).second) << "two nodes are named '" << n->name << "'";
  }
  EXPECT_EQ(countOps(*m->graph, "Neg"), 3u);
  EXPECT_TRUE(names.count("neg") && names.count("neg__1") && names.count("neg__2"))
      << ::testing::PrintToString(names);  // the first keeps its name
}

// An op of a domain onnxfold does not know keeps its graph attributes as they are: what it
// does with them is unknown, so nothing inside is folded or pruned.
TEST(FoldConstants, LeavesTheGraphsOfUnknownOpsAlone) {
  ModelBuilder b;
  b.importDomain("vendor.ops", 1);
  Value* x = b.input("x", DataType::kFloat, {2});
  Node* custom = b.node("Loopish", {x}, 1);
  custom->domain = "vendor.ops";
  Graph& body = b.subgraph(custom, "body");
  Value* c = body.addInitializer(GraphBuilder::key(), floatTensor({2}, {1, 2}, "c"));
  Value* dead =
      body.addNode(GraphBuilder::key(), "Neg", {c}, 1)->output(0);  // constant, and read by nothing
  (void)dead;
  body.addOutput(GraphBuilder::key(),
                 body.addNode(GraphBuilder::key(), "Relu",
                              {body.addNode(GraphBuilder::key(), "Abs", {c}, 1)->output(0)}, 1)
                     ->output(0));
  b.output(custom->output(0));
  std::unique_ptr<Model> m = b.build();
  runPass(*m, "fold-constants");
  runPass(*m, "dce");
  runPass(*m, "freezing-patterns");
  const Graph& g = *m->graph->firstNode()->attr("body")->g;
  EXPECT_EQ(g.numNodes(), 3u);
  EXPECT_EQ(countOps(g, "Neg"), 1u);
  EXPECT_EQ(countOps(g, "Abs"), 1u);
}

TEST(FoldConstants, ExplainsWhatStays) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  b.output(b.op("Relu", {x}, {}, "relu1"));
  std::unique_ptr<Model> m = b.build();
  const std::vector<Explanation> why = explain(*m);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_EQ(why[0].node, "'relu1'");
  EXPECT_EQ(why[0].reason, "depends on graph input 'x'");
}

// Regression: facts about a folded node's outputs must not outlive them (a
// freed Value's address can be reused by a new one, which then inherited a
// stale constant and folded a Reshape to a wrong shape).
TEST(FoldConstants, ManyFoldsInOnePassStayCorrect) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {-1, 6});
  Value* acc = b.initializer(int64Tensor({1}, {1}, "one"));
  for (int i = 0; i < 50; ++i) {
    Value* c = b.op("Constant", {}, attrs(Attribute::makeTensor("value", int64Tensor({1}, {i}))));
    acc = b.op("Add", {acc, c});
  }
  Value* shape = b.op("Shape", {x});
  Value* tail = b.op(
      "Slice", {shape, b.initializer(int64Tensor({1}, {1})), b.initializer(int64Tensor({1}, {2}))});
  Value* target = b.op("Concat", {b.initializer(int64Tensor({1}, {-1})), tail},
                       attrs(Attribute::makeInt("axis", 0)));
  b.output(b.op("Reshape", {x, target}));
  b.output(acc);
  std::unique_ptr<Model> m = b.build();
  runPass(*m, "fold-constants");
  const Graph& g = *m->graph;
  ASSERT_TRUE(g.outputs()[1]->isConstant());
  EXPECT_EQ(g.outputs()[1]->initializer()->at<int64_t>(0), 1 + 49 * 50 / 2);
  const Value* t = g.outputs()[0]->producer()->input(1);
  ASSERT_TRUE(t->isConstant()) << toString(*m);
  EXPECT_EQ(t->initializer()->at<int64_t>(0), -1);
  EXPECT_EQ(t->initializer()->at<int64_t>(1), 6);
}

// ------------------------------------------------------------------ infer-shapes

TEST(InferShapes, PropagatesSymbolicDimsAndWritesValueInfo) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {-1, 4});
  Value* w = b.initializer("w", {4, 5}, std::vector<float>(20, 1.0f));
  Value* y = b.op("MatMul", {x, w});
  Value* z = b.op("Relu", {y});
  b.output(z);
  std::unique_ptr<Model> m = b.build();
  EXPECT_TRUE(runPass(*m, "infer-shapes"));
  EXPECT_EQ(toString(y->type), "float32[" + x->type.shape->dims[0].param + ",5]");
  EXPECT_TRUE(y->in_value_info);
  EXPECT_FALSE(runPass(*m, "infer-shapes"));  // nothing new the second time
}

TEST(InferShapes, KeepsAndReportsAContradictingDeclaredShape) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2, 3});
  Value* y = b.op("Relu", {x});
  Shape declared;
  declared.dims = {Dim::known(2), Dim::known(4)};
  y->type = Type::tensor(DataType::kFloat, declared);
  b.output(y);
  std::unique_ptr<Model> m = b.build();
  PassOptions o;
  PassContext ctx(o);
  createPass("infer-shapes")->run(*m, ctx);
  EXPECT_EQ(toString(y->type), "float32[2,4]");
  const std::vector<std::string> notes = ctx.takeNotes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("declared dim 1 = 4 but inference gives 3"), std::string::npos)
      << notes[0];
}

// ------------------------------------------------------------------ propagation

// Shape arithmetic stays known during inference: ReduceProd(Shape(x)) of a
// static x is a constant even though x's data is not.
TEST(Propagation, SmallIntegerResultsAreKnownDuringInference) {
  ModelBuilder b(18);
  Value* x = b.input("x", DataType::kFloat, {2, 3, 4});
  Value* shape = b.op("Shape", {x});
  Value* prod = b.op("ReduceProd", {shape}, attrs(Attribute::makeInt("keepdims", 0)));
  b.output(prod);
  std::unique_ptr<Model> m = b.build();
  Propagation prop(*m);
  for (Node* n : m->graph->nodes())
    EXPECT_TRUE(prop.inferNode(*n).ok);
  const Tensor* v = prop.knownValue(prod);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->rank(), 0u);
  EXPECT_EQ(v->at<int64_t>(0), 24);
  EXPECT_EQ(prop.knownValue(x), nullptr);
}

// ------------------------------------------------------------------ pass manager

class ThrowingPass : public Pass {
 public:
  std::string_view name() const override { return "throws"; }
  std::string_view description() const override { return "damages the graph, then throws"; }
  bool run(Model& m, PassContext&) override {
    m.graph->addNode(GraphBuilder::key(), "Relu", {m.graph->inputs()[0]}, 1);
    throw Error("deliberate failure");
  }
};

class BreakingPass : public Pass {
 public:
  std::string_view name() const override { return "breaks"; }
  std::string_view description() const override { return "leaves a dangling graph output"; }
  bool run(Model& m, PassContext&) override {
    Node* n = m.graph->createNode(GraphBuilder::key(), "Relu", {m.graph->inputs()[0]}, 1);
    m.graph->addOutput(GraphBuilder::key(),
                       n->output(0));  // output of a node that is not in the graph
    m.graph->appendNode(GraphBuilder::key(), n);
    m.graph->insertBefore(GraphBuilder::key(), m.graph->firstNode(),
                          m.graph->createNode(GraphBuilder::key(), "Neg", {n->output(0)}, 1));
    return true;
  }
};

TEST(PassManager, RestoresTheModelWhenAPassFailsAndGoesOn) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  b.output(b.op("Identity", {x}));
  std::unique_ptr<Model> m = b.build();
  const std::string before = toString(*m);
  PassManagerOptions o;
  o.verify_each = true;
  PassManager pm(o);
  pm.add(std::make_unique<ThrowingPass>());
  pm.add(std::make_unique<BreakingPass>());
  pm.addByName({"dce"});
  const PipelineReport r = pm.run(m, PassOptions());
  EXPECT_TRUE(r.hasErrors());
  ASSERT_GE(r.passes.size(), 3u);
  EXPECT_EQ(r.passes[0].error, "deliberate failure");
  EXPECT_NE(r.passes[1].error.find("IR is broken"), std::string::npos) << r.passes[1].error;
  EXPECT_EQ(toString(*m), before);
  EXPECT_TRUE(verify(*m).ok);
}

// y = Neg(Identity(x)): two nodes, one of them for eliminate-identity to remove.
std::unique_ptr<Model> negOfIdentity() {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  b.output(b.op("Neg", {b.op("Identity", {x})}));
  return b.build();
}

// Snapshots are shared across passes that change nothing; a failure must still undo only
// the failing pass, keeping what the passes before it did.
TEST(PassManager, UndoKeepsTheWorkOfEarlierPassesInTheRound) {
  std::unique_ptr<Model> m = negOfIdentity();
  PassManagerOptions o;
  o.max_iterations = 1;
  PassManager pm(o);
  pm.addByName({"dce"});  // changes nothing
  pm.add(std::make_unique<ThrowingPass>());
  pm.addByName({"eliminate-identity"});  // changes the model
  pm.addByName({"dce"});                 // changes nothing
  pm.add(std::make_unique<ThrowingPass>());
  const PipelineReport r = pm.run(m, PassOptions());
  ASSERT_EQ(r.passes.size(), 5u);
  EXPECT_FALSE(r.passes[0].changed);
  EXPECT_EQ(r.passes[1].error, "deliberate failure");
  EXPECT_TRUE(r.passes[2].changed);
  EXPECT_EQ(r.passes[4].error, "deliberate failure");
  ASSERT_EQ(m->graph->numNodes(), 1u);  // the Identity stays removed, no Relu is left
  EXPECT_EQ(m->graph->firstNode()->op_type, "Neg");
  EXPECT_TRUE(verify(*m).ok);
}

// Above the undo limit no snapshot is kept: a failing pass fails the run with its error.
TEST(PassManager, AFailingPassOnAGraphTooLargeToUndoFailsTheRun) {
  std::unique_ptr<Model> m = negOfIdentity();
  PassManagerOptions o;
  o.undo_limit_nodes = 1;
  PassManager pm(o);
  pm.add(std::make_unique<ThrowingPass>());
  try {
    pm.run(m, PassOptions());
    FAIL() << "the failing pass was not reported";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("pass 'throws' failed on a graph of 2 nodes, too large to undo"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("deliberate failure"), std::string::npos) << what;
  }
}

TEST(PassManager, RunsToAFixpointAndReportsStats) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Value* c = b.initializer("c", {2}, {1, 2});
  Value* d = b.op("Neg", {c});
  b.output(b.op("Add", {x, d}));
  std::unique_ptr<Model> m = b.build();
  PassManager pm;
  pm.addByName(defaultPipeline());
  const PipelineReport r = pm.run(m, PassOptions());
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.iterations, 2);  // one that changes, one that confirms
  EXPECT_EQ(r.before.nodes, 2u);
  EXPECT_EQ(r.after.nodes, 1u);
  EXPECT_FALSE(r.hasErrors());
}

TEST(PassManager, UnknownPassNameIsAClearError) {
  PassManager pm;
  try {
    pm.addByName({"dce", "no-such-pass"});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown pass 'no-such-pass'"), std::string::npos);
  }
}

}  // namespace
}  // namespace onnxfold

// Tests of evaluateSubgraph: a body's inputs, initializers and nodes, the opsets the
// environment gives, captured values of the enclosing graph, a nested If, and the errors
// for what cannot be evaluated.
#include "kernels/subgraph_eval.h"

#include <gtest/gtest.h>

#include <memory>

#include "ir/error.h"
#include "ir/graph_builder.h"
#include "kernels/kernel_test_util.h"

namespace onnxfold {
namespace {

// A body graph of `b`'s main graph, held by a node so that it has an owner.
struct Body {
  test::ModelBuilder b{17};
  Node* holder = b.node("Identity", {b.input("unused", DataType::kFloat, {1})});
  std::unique_ptr<Graph> g = std::make_unique<Graph>(&b.graph(), holder);
};

SubgraphEnv opset17() {
  return {[](std::string_view d) -> int64_t { return d.empty() ? 17 : -1; }, {}};
}

TEST(SubgraphEval, RunsNodesOnInputsAndInitializers) {
  Body body;
  Graph& g = *body.g;
  g.name = "body";
  Value* x = g.addInput(GraphBuilder::key(), "x", Type::tensor(DataType::kFloat));
  Value* two = g.addInitializer(GraphBuilder::key(), test::floatTensor({}, {2}, "two"));
  Value* y = g.addNode(GraphBuilder::key(), "Mul", {x, two})->output(0);
  Value* z = g.addNode(GraphBuilder::key(), "Neg", {y})->output(0);
  g.addOutput(GraphBuilder::key(), z);
  g.addOutput(GraphBuilder::key(), x);  // an input may be an output as it is
  const Tensor in = test::floatTensor({3}, {1, -2, 0.5f});
  const std::vector<Tensor> out = evaluateSubgraph(g, {&in}, opset17());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(test::floatValues(out[0]), (std::vector<float>{-2, 4, -1}));
  EXPECT_EQ(test::floatValues(out[1]), (std::vector<float>{1, -2, 0.5f}));
}

TEST(SubgraphEval, UsesTheOpsetTheEnvironmentGives) {
  Body body;
  Graph& g = *body.g;
  Value* x = g.addInput(GraphBuilder::key(), "x", Type::tensor(DataType::kFloat));
  g.addOutput(GraphBuilder::key(),
              g.addNode(GraphBuilder::key(), "Gelu", {x})->output(0));  // Gelu is opset 20
  const Tensor in = test::floatTensor({1}, {1});
  EXPECT_THROW(evaluateSubgraph(g, {&in}, opset17()), Error);
  const SubgraphEnv env20{[](std::string_view) -> int64_t { return 20; }, {}};
  EXPECT_NEAR(test::floatValues(evaluateSubgraph(g, {&in}, env20)[0])[0], 0.8413447f, 1e-5);
}

TEST(SubgraphEval, ReadsCapturedValuesThroughTheEnvironment) {
  Body body;
  Value* outer = body.b.initializer("outer", {1}, {10});
  Graph& g = *body.g;
  Value* x = g.addInput(GraphBuilder::key(), "x", Type::tensor(DataType::kFloat));
  g.addOutput(GraphBuilder::key(), g.addNode(GraphBuilder::key(), "Add", {x, outer})->output(0));
  const Tensor in = test::floatTensor({2}, {1, 2});
  try {
    evaluateSubgraph(g, {&in}, opset17());  // no way to read captures
    FAIL() << "an unknown capture was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'outer'"), std::string::npos) << e.what();
  }
  SubgraphEnv env = opset17();
  env.outer = [](const Value* v) { return v->initializer(); };
  EXPECT_EQ(test::floatValues(evaluateSubgraph(g, {&in}, env)[0]), (std::vector<float>{11, 12}));
}

TEST(SubgraphEval, RunsTheTakenBranchOfANestedIf) {
  Body body;
  Graph& g = *body.g;
  Value* x = g.addInput(GraphBuilder::key(), "x", Type::tensor(DataType::kFloat));
  Value* c = g.addInput(GraphBuilder::key(), "c", Type::tensor(DataType::kBool));
  Node* iff = g.addNode(GraphBuilder::key(), "If", {c}, 1);
  for (const char* branch : {"then_branch", "else_branch"}) {
    Attribute a;
    a.name = branch;
    a.type = AttrType::kGraph;
    a.g = std::make_unique<Graph>(&g, iff);
    // The branches use x of the body: a capture one level up.
    a.g->addOutput(GraphBuilder::key(),
                   a.g->addNode(GraphBuilder::key(),
                                std::string(branch) == "then_branch" ? "Relu" : "Neg", {x})
                       ->output(0));
    iff->setAttr(std::move(a));
  }
  g.addOutput(GraphBuilder::key(), iff->output(0));
  const Tensor in = test::floatTensor({2}, {-1, 2});
  for (bool taken : {true, false}) {
    Tensor cond(DataType::kBool, {});
    cond.mutableBytes()[0] = taken ? 1 : 0;
    const std::vector<float> y = test::floatValues(evaluateSubgraph(g, {&in, &cond}, opset17())[0]);
    EXPECT_EQ(y, taken ? (std::vector<float>{0, 2}) : (std::vector<float>{1, -2}));
  }
}

TEST(SubgraphEval, ErrorsNameTheGraph) {
  Body body;
  Graph& g = *body.g;
  g.name = "mod";
  Value* x = g.addInput(GraphBuilder::key(), "x", Type::tensor(DataType::kFloat));
  g.addOutput(GraphBuilder::key(),
              g.addNode(GraphBuilder::key(), "Reshape", {x, x})->output(0));  // a float shape
  const Tensor in = test::floatTensor({2}, {1, 2});
  EXPECT_THROW(evaluateSubgraph(g, {}, opset17()), Error);  // one input missing
  try {
    evaluateSubgraph(g, {&in}, opset17());
    FAIL() << "a float shape was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("subgraph 'mod'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Reshape"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onnxfold

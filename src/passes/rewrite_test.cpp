// The Rewriter's verbs that build and rewire (create, the graph's interface): what they
// leave in the graph, and what they tell a driver to revisit.
#include "passes/rewrite.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "ir/verifier.h"
#include "test_util.h"

namespace onnxfold {
namespace {

using test::floatTensor;
using test::ModelBuilder;

bool contains(const std::vector<Node*>& nodes, const Node* n) {
  return std::find(nodes.begin(), nodes.end(), n) != nodes.end();
}

bool contains(const std::vector<Value*>& values, const Value* v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

TEST(Rewriter, CreateFinishesTheNodeWhereItIsAsked) {
  ModelBuilder b;
  b.importDomain("com.example", 1);
  Value* x = b.input("x", DataType::kFloat, {2});
  Value* y = b.op("Relu", {x});
  b.output(y);
  Graph& g = b.graph();
  Rewriter rw(b.model(), g, /*notify=*/true);

  Node* n = rw.create("Scale", {x}, 2, y->producer(), "scale_x",
                      attributes(Attribute::makeInt("k", 3), Attribute::makeString("mode", "up")),
                      "com.example");
  EXPECT_EQ(n->name, "scale_x");
  EXPECT_EQ(n->domain, "com.example");
  EXPECT_EQ(n->attrInt("k", 0), 3);
  EXPECT_EQ(n->attrString("mode", ""), "up");
  EXPECT_EQ(n->next(), y->producer()) << "inserted before the node given";
  ASSERT_EQ(n->numOutputs(), 2u);
  EXPECT_NE(n->output(0)->name(), n->output(1)->name());
  EXPECT_EQ(n->output(0)->graph(), &g);
  EXPECT_EQ(g.lookup(n->output(1)->name()), n->output(1)) << "its outputs are in scope";

  Node* last = rw.create("Identity", {y}, 1, nullptr);
  EXPECT_EQ(g.lastNode(), last) << "no position: appended";
  EXPECT_TRUE(last->name.empty());
  EXPECT_TRUE(last->attributes.empty());

  const std::vector<Node*> touched = rw.takeTouched();
  EXPECT_TRUE(contains(touched, n));
  EXPECT_TRUE(contains(touched, last));
  const VerifyResult v = verify(b.model());
  EXPECT_TRUE(v.ok) << v.message;
}

TEST(Rewriter, GraphInterfaceVerbs) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {1});
  Graph& g = b.graph();
  Rewriter rw(b.model(), g, /*notify=*/true);

  // An overridable constant, used, then frozen: it stays as an initializer, and its
  // users are revisited (they may fold now).
  Value* w = rw.constantInput(floatTensor({1}, {2.0F}, "w"));
  EXPECT_TRUE(w->isInitializer());
  EXPECT_TRUE(w->isGraphInput());
  EXPECT_EQ(w->name(), "w");
  Node* mul = rw.create("Mul", {x, w}, 1, nullptr);
  Value* y = mul->output(0);
  rw.addGraphOutput(y);
  EXPECT_TRUE(y->isGraphOutput());
  rw.takeTouched();
  rw.removeGraphInput(w);
  EXPECT_TRUE(w->isConstant());
  EXPECT_FALSE(contains(g.inputs(), w));
  EXPECT_TRUE(contains(rw.takeTouched(), mul));

  // A new input; an output moved to another value keeps that value's name, or takes the
  // output's name (replaceGraphOutput).
  Value* z = rw.addGraphInput("z", Type::tensor(DataType::kFloat));
  EXPECT_TRUE(contains(g.inputs(), z));
  Node* neg = rw.create("Neg", {y}, 1, nullptr);
  rw.rename(neg->output(0), "y_negated");
  EXPECT_EQ(g.lookup("y_negated"), neg->output(0));
  rw.takeTouched();
  rw.setGraphOutput(0, neg->output(0));
  EXPECT_EQ(g.outputs()[0], neg->output(0));
  EXPECT_EQ(neg->output(0)->name(), "y_negated");
  EXPECT_FALSE(y->isGraphOutput());
  EXPECT_TRUE(contains(rw.takeTouched(), mul)) << "the old output's producer may be dead";

  Node* abs = rw.create("Abs", {neg->output(0)}, 1, nullptr);
  rw.replaceGraphOutput(neg->output(0), abs->output(0));
  EXPECT_EQ(g.outputs()[0], abs->output(0));
  EXPECT_EQ(abs->output(0)->name(), "y_negated") << "the interface keeps its name";
  EXPECT_EQ(abs->input(0), neg->output(0)) << "uses stay";

  rw.removeAttr(abs, "absent");
  rw.setAttr(abs, Attribute::makeInt("k", 1));
  rw.removeAttr(abs, "k");
  EXPECT_EQ(abs->attr("k"), nullptr);
  const VerifyResult v = verify(b.model());
  EXPECT_TRUE(v.ok) << v.message;
}

}  // namespace
}  // namespace onnxfold

// IR invariants and the mutation API: node order, use lists, renaming, cloning,
// subgraph captures, and the verifier's reports on broken graphs.
#include "ir/graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "onnx/reader.h"
#include "onnx/writer.h"
#include "test_util.h"

namespace onnxfold {
namespace {

using test::ModelBuilder;

// "A B C": op types in list order; also checks the links both ways and the count.
std::string order(const Graph& g) {
  std::string s;
  size_t n = 0;
  const Node* prev = nullptr;
  for (const Node* node : g.nodes()) {
    EXPECT_EQ(node->prev(), prev) << "broken back link at " << node->op_type;
    prev = node;
    if (!s.empty()) s += " ";
    s += node->op_type;
    ++n;
  }
  EXPECT_EQ(prev, g.lastNode());
  EXPECT_EQ(n, g.numNodes());
  return s;
}

std::vector<Use> usesOf(const Value* v) {
  return v->uses();
}

::testing::AssertionResult verified(const Model& m) {
  VerifyResult r = verify(m);
  if (r.ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.message << "\n" << toString(m);
}

TEST(Graph, AppendInsertEraseKeepOrderAndCounts) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {4});
  Graph& g = b.graph();
  Node* a = b.node("A", {x});
  Node* bb = b.node("B", {a->output(0)});
  Node* c = b.node("C", {bb->output(0)});
  b.output(c->output(0));
  EXPECT_EQ(order(g), "A B C");
  EXPECT_EQ(g.firstNode(), a);
  EXPECT_EQ(g.lastNode(), c);

  Node* d = g.createNode(GraphBuilder::key(), "D", {x}, 1);
  EXPECT_EQ(g.numNodes(), 3u) << "a created node is not in the list yet";
  g.insertBefore(GraphBuilder::key(), bb, d);
  EXPECT_EQ(order(g), "A D B C");
  Node* e = g.createNode(GraphBuilder::key(), "E", {x}, 1);
  g.insertAfter(GraphBuilder::key(), c, e);  // after the last node: appends
  EXPECT_EQ(order(g), "A D B C E");
  EXPECT_EQ(g.lastNode(), e);
  Node* f = g.createNode(GraphBuilder::key(), "F", {x}, 1);
  g.insertBefore(GraphBuilder::key(), a, f);  // before the first node
  EXPECT_EQ(order(g), "F A D B C E");
  EXPECT_EQ(g.firstNode(), f);
  Node* h = g.createNode(GraphBuilder::key(), "H", {x}, 1);
  g.insertAfter(GraphBuilder::key(), a, h);
  EXPECT_EQ(order(g), "F A H D B C E");
  EXPECT_TRUE(verified(b.model()));

  // Erase from the front, middle and back.
  g.eraseNode(GraphBuilder::key(), f);
  g.eraseNode(GraphBuilder::key(), d);
  g.eraseNode(GraphBuilder::key(), e);
  EXPECT_EQ(order(g), "A H B C");
  EXPECT_EQ(g.firstNode(), a);
  EXPECT_EQ(g.lastNode(), c);
  // x lost the uses of the erased nodes.
  EXPECT_EQ(x->uses().size(), 2u);  // A and H
  EXPECT_TRUE(verified(b.model()));

  // Erasing while iterating is allowed.
  for (Node* n : g.nodes()) {
    if (n->op_type == "H") g.eraseNode(GraphBuilder::key(), n);
  }
  EXPECT_EQ(order(g), "A B C");
  EXPECT_EQ(g.numNodesRecursive(), 3u);
  EXPECT_TRUE(verified(b.model()));
}

TEST(Graph, NodeInputEditsKeepUseListsExact) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Value* y = b.input("y", DataType::kFloat, {2});
  Node* n = b.node("Sum", {x, y});
  b.output(n->output(0));
  EXPECT_EQ(usesOf(x), (std::vector<Use>{{n, 0}}));
  EXPECT_EQ(usesOf(y), (std::vector<Use>{{n, 1}}));

  n->addInput(GraphBuilder::key(), x);  // Sum(x, y, x)
  EXPECT_EQ(usesOf(x), (std::vector<Use>{{n, 0}, {n, 2}}));
  EXPECT_EQ(x->users(), std::vector<Node*>{n}) << "distinct users";
  EXPECT_FALSE(x->hasOneUse());
  EXPECT_TRUE(verified(b.model()));

  n->removeInput(GraphBuilder::key(), 0);  // Sum(y, x): later slots shift down
  EXPECT_EQ(usesOf(y), (std::vector<Use>{{n, 0}}));
  EXPECT_EQ(usesOf(x), (std::vector<Use>{{n, 1}}));
  EXPECT_TRUE(verified(b.model()));

  n->setInput(GraphBuilder::key(), 0, x);  // Sum(x, x)
  EXPECT_FALSE(y->hasUses());
  ASSERT_EQ(x->uses().size(), 2u);
  EXPECT_NE(std::find(x->uses().begin(), x->uses().end(), Use{n, 0}), x->uses().end());
  EXPECT_NE(std::find(x->uses().begin(), x->uses().end(), Use{n, 1}), x->uses().end());
  EXPECT_TRUE(verified(b.model()));

  n->setInput(GraphBuilder::key(), 1, nullptr);  // an omitted optional input
  EXPECT_EQ(usesOf(x), (std::vector<Use>{{n, 0}}));
  EXPECT_TRUE(x->hasOneUse());
  EXPECT_EQ(n->input(1), nullptr);
  n->addInput(GraphBuilder::key(), nullptr);
  n->addInput(GraphBuilder::key(), y);  // Sum(x, _, _, y)
  EXPECT_EQ(usesOf(y), (std::vector<Use>{{n, 3}}));
  n->removeInput(GraphBuilder::key(), 1);  // Sum(x, _, y)
  EXPECT_EQ(usesOf(y), (std::vector<Use>{{n, 2}}));
  EXPECT_EQ(n->numInputs(), 3u);
  EXPECT_TRUE(verified(b.model()));

  n->removeAllInputs(GraphBuilder::key());
  EXPECT_FALSE(x->hasUses());
  EXPECT_FALSE(y->hasUses());
  EXPECT_TRUE(verified(b.model()));
}

TEST(Graph, WideFanOutUseListsStayInOrderThroughRemovals) {
  // Removing uses marks them and compacts later (O(1) each): the order of the live uses, the
  // positions nodes keep, and the verifier's exactly-once check must survive any mix.
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  std::vector<Node*> negs;
  for (int i = 0; i < 1000; ++i)
    negs.push_back(b.node("Neg", {x}));
  std::vector<Value*> outs;
  for (Node* n : negs)
    outs.push_back(n->output(0));
  Node* sum = b.node("Sum", outs);
  b.output(sum->output(0));
  // Re-point every third Neg at y, erase every seventh (its use of x goes), in between reads.
  Value* y = b.input("y", DataType::kFloat, {2});
  std::vector<Node*> expect;
  for (int i = 0; i < 1000; ++i) {
    if (i % 3 == 0) {
      negs[i]->setInput(GraphBuilder::key(), 0, y);
    } else if (i % 7 == 0) {
      sum->setInput(GraphBuilder::key(), static_cast<size_t>(i), y);
      b.graph().eraseNode(GraphBuilder::key(), negs[i]);
    } else {
      expect.push_back(negs[i]);
    }
    if (i % 100 == 0) {
      EXPECT_TRUE(verified(b.model())) << "after " << i;
    }
  }
  EXPECT_EQ(x->users(), expect) << "first-use order kept";
  EXPECT_EQ(x->numUses(), expect.size());
  EXPECT_TRUE(verified(b.model()));
  // The Sum's inputs shift down when one is removed: positions follow.
  sum->removeInput(GraphBuilder::key(), 0);
  sum->removeInput(GraphBuilder::key(), 500);
  EXPECT_TRUE(verified(b.model()));
}

TEST(Graph, VerifierFindsAUseListOutOfSync) {
  // A detached node (created, never inserted) holding a use of x: x's list records more uses
  // than the graph's nodes have inputs.
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  b.output(b.op("Neg", {x}));
  Node* stray = b.graph().createNode(GraphBuilder::key(), "Abs", {x}, 1);
  const VerifyResult r = verify(b.model());
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("use lists record 2 uses for 1 node inputs"), std::string::npos)
      << r.message;
  b.graph().insertBefore(GraphBuilder::key(), b.graph().firstNode(), stray);
  EXPECT_TRUE(verified(b.model())) << "inserted, it is a node like the others";
}

// The one rule for graph outputs: a replaced output keeps its name, taken by the new value when
// it can, else carried by an Identity.
TEST(Graph, ReplaceValueKeepsGraphOutputNames) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Value* r = b.op("Relu", {x});
  Value* n = b.op("Neg", {r});
  n->setName("out_n");
  b.output(n);
  Value* a = b.op("Abs", {x});
  a->setName("out_a");
  b.output(a);
  std::unique_ptr<Model> m = b.build();
  Graph& g = *m->graph;

  // A node output of the graph takes the name.
  EXPECT_TRUE(g.canTakeOutputName(r));
  EXPECT_EQ(g.replaceValue(GraphBuilder::key(), n, r), nullptr);
  EXPECT_EQ(g.outputs()[0], r);
  EXPECT_EQ(r->name(), "out_n");
  EXPECT_NE(n->name(), "out_n");

  // A graph input cannot: an Identity carries the name, typed as the output was.
  a->type = Type::tensor(DataType::kFloat, Shape{{Dim::known(2)}, {}});
  EXPECT_FALSE(g.canTakeOutputName(x));
  Node* id = g.replaceValue(GraphBuilder::key(), a, x);
  ASSERT_NE(id, nullptr);
  EXPECT_EQ(id->op_type, "Identity");
  EXPECT_EQ(id->input(0), x);
  EXPECT_EQ(g.outputs()[1], id->output(0));
  EXPECT_EQ(id->output(0)->name(), "out_a");
  EXPECT_EQ(id->output(0)->type, a->type);
  EXPECT_EQ(x->name(), "x");

  // An initializer nothing uses yet (just made) takes it; a used one does not.
  Tensor t = test::floatTensor({2}, {1, 2}, "c");
  Value* c = g.addInitializer(GraphBuilder::key(), std::move(t));
  EXPECT_TRUE(g.canTakeOutputName(c));
  Node* neg = g.addNode(GraphBuilder::key(), "Neg", {c}, 1);
  EXPECT_FALSE(g.canTakeOutputName(c));
  g.eraseNode(GraphBuilder::key(), neg);
  EXPECT_EQ(g.replaceValue(GraphBuilder::key(), r, c), nullptr);
  EXPECT_EQ(c->name(), "out_n");
  EXPECT_EQ(g.outputs()[0], c);
  g.eraseNode(GraphBuilder::key(), n->producer());
  g.eraseNode(GraphBuilder::key(), r->producer());
  g.eraseNode(GraphBuilder::key(), a->producer());
  EXPECT_TRUE(verify(*m).ok) << verify(*m).message;
}

TEST(Graph, GraphInputsAddAndRemove) {
  ModelBuilder b;
  Graph& g = b.graph();
  Value* x = b.input("x", DataType::kFloat, {2});
  Value* w = b.initializer("w", {2}, {1, 2});
  g.addInputForInitializer(GraphBuilder::key(), w);  // an overridable default
  EXPECT_TRUE(w->isGraphInput());
  EXPECT_FALSE(w->isConstant());
  b.output(b.op("Add", {x, w}));
  EXPECT_EQ(g.inputs().size(), 2u);
  EXPECT_TRUE(verified(b.model()));

  // Freezing: the initializer stays, it is no longer an input.
  g.removeInput(GraphBuilder::key(), w);
  EXPECT_EQ(g.inputs(), std::vector<Value*>{x});
  EXPECT_TRUE(w->isConstant());
  EXPECT_EQ(g.lookup("w"), w);
  EXPECT_TRUE(verified(b.model()));

  // An unused plain input can go; its name is then free in the scope.
  Value* z = g.addInput(GraphBuilder::key(), "z", Type::tensor(DataType::kInt64));
  EXPECT_EQ(g.lookup("z"), z);
  g.removeInput(GraphBuilder::key(), z);
  EXPECT_EQ(g.lookup("z"), nullptr);
  EXPECT_TRUE(verified(b.model()));
}

TEST(Graph, ReplaceAllUsesWith) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Node* relu = b.node("Relu", {x});
  Value* a = relu->output(0);
  Value* n1 = b.op("Neg", {a});
  Node* add = b.node("Add", {a, a});
  b.output(n1);
  b.output(add->output(0));

  a->replaceAllUsesWith(GraphBuilder::key(), x);
  EXPECT_FALSE(a->hasUses());
  EXPECT_EQ(x->uses().size(), 4u);  // Relu, Neg, Add x2
  EXPECT_EQ(add->input(0), x);
  EXPECT_EQ(add->input(1), x);
  b.graph().eraseNode(GraphBuilder::key(), relu);  // now dead
  EXPECT_EQ(order(b.graph()), "Neg Add");
  EXPECT_EQ(x->uses().size(), 3u);
  EXPECT_TRUE(verified(b.model()));
}

TEST(Graph, ReplaceAllUsesWithLeavesGraphOutputs) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Value* other = b.op("Abs", {x});
  Value* a = b.op("Relu", {x});
  Value* c = b.op("Neg", {a});
  b.output(a);
  b.output(c);
  a->replaceAllUsesWith(GraphBuilder::key(), other);
  EXPECT_FALSE(a->hasUses());
  EXPECT_TRUE(a->isGraphOutput()) << "an output's name is the interface; RAUW must not move it";
  EXPECT_EQ(b.graph().outputs()[0], a);
  EXPECT_TRUE(verified(b.model()));
}

TEST(Graph, ReplaceOutputKeepsTheOutputName) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Node* relu = b.node("Relu", {x});
  Value* y = relu->output(0);
  y->setName("y");
  b.output(y);
  Value* neg = b.op("Neg", {x});
  const std::string neg_name = neg->name();
  Graph& g = b.graph();

  g.replaceOutput(GraphBuilder::key(), y, neg);
  EXPECT_EQ(neg->name(), "y");
  EXPECT_EQ(g.outputs(), std::vector<Value*>{neg});
  EXPECT_TRUE(neg->isGraphOutput());
  EXPECT_FALSE(y->isGraphOutput());
  EXPECT_NE(y->name(), "y");
  EXPECT_EQ(g.lookup("y"), neg);
  EXPECT_EQ(g.lookup(neg_name), nullptr);
  EXPECT_TRUE(verified(b.model()));

  g.eraseNode(GraphBuilder::key(), relu);
  EXPECT_TRUE(verified(b.model()));
  std::unique_ptr<Model> m = b.build();
  std::unique_ptr<Model> back = readModel(test::bufferOf(writeModelToString(*m)));
  ASSERT_EQ(back->graph->outputs().size(), 1u);
  EXPECT_EQ(back->graph->outputs()[0]->name(), "y");
  EXPECT_EQ(back->graph->outputs()[0]->producer()->op_type, "Neg");
}

TEST(Graph, UniqueNamesAreModelWide) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Graph& g = b.graph();
  EXPECT_EQ(g.uniqueName("x"), "x__1");
  EXPECT_EQ(g.uniqueName("x"), "x__2") << "a returned name is reserved";
  EXPECT_EQ(g.uniqueName("fresh"), "fresh");
  EXPECT_EQ(g.uniqueName("fresh"), "fresh__1");

  // Node outputs get unique names; a taken name is suffixed.
  Node* n1 = b.node("Relu", {x});
  Node* n2 = b.node("Relu", {x});
  EXPECT_NE(n1->output(0)->name(), n2->output(0)->name());
  Value* o = n2->addOutput(GraphBuilder::key(), "x");
  EXPECT_NE(o->name(), "x");
  EXPECT_EQ(g.lookup(o->name()), o);

  // Names used inside a subgraph are taken for the whole model.
  Node* owner = b.node("If", {x}, 1);
  auto sub = std::make_unique<Graph>(&g, owner);
  Node* inner = sub->addNode(GraphBuilder::key(), "Neg", {x});
  inner->output(0)->setName("inner_name");
  Attribute attr;
  attr.name = "then_branch";
  attr.type = AttrType::kGraph;
  attr.g = std::move(sub);
  owner->attributes.push_back(std::move(attr));
  EXPECT_EQ(g.uniqueName("inner_name"), "inner_name__1");
  // Node names reserved by reserveName are taken too.
  g.reserveName("conv1");
  EXPECT_EQ(g.uniqueName("conv1"), "conv1__1");
}

// A model with an initializer big enough to print as a hash, a small one, a
// subgraph capturing an outer value, and metadata.
std::unique_ptr<Model> richModel() {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {-1, 16});
  std::vector<float> big(4096);
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<float>(i) * 0.5f;
  Value* w = b.initializer("w", {16, 256}, big);
  Value* bias = b.initializer("bias", {2}, {1, 2});
  Value* cond = b.input("cond", DataType::kBool, {});
  Value* mm = b.op("MatMul", {x, w}, {}, "matmul");
  Node* iff = b.node("If", {cond}, 1, {}, "if");
  Graph& g = b.graph();
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto sub = std::make_unique<Graph>(&g, iff);
    sub->name = branch;
    Node* inner =
        sub->addNode(GraphBuilder::key(), branch[0] == 't' ? "Relu" : "Neg", {mm});  // captures mm
    sub->addOutput(GraphBuilder::key(), inner->output(0));
    Attribute a;
    a.name = branch;
    a.type = AttrType::kGraph;
    a.g = std::move(sub);
    iff->attributes.push_back(std::move(a));
  }
  Value* y = b.op("Add", {iff->output(0), bias}, test::attrs(Attribute::makeInt("axis", 1)));
  b.output(y);
  b.model().doc_string = "doc";
  b.model().metadata_props.push_back({"k", "v"});
  return b.build();
}

TEST(Graph, CloneIsEqualSharesBytesAndIsIndependent) {
  std::unique_ptr<Model> m = richModel();
  ASSERT_TRUE(verified(*m));
  const std::string before = toString(*m);
  std::unique_ptr<Model> c = m->clone();
  ASSERT_TRUE(verified(*c));
  EXPECT_EQ(toString(*c), before);
  EXPECT_EQ(writeModelToString(*c), writeModelToString(*m));

  Value* w = m->graph->lookup("w");
  Value* cw = c->graph->lookup("w");
  ASSERT_NE(w, nullptr);
  ASSERT_NE(cw, nullptr);
  EXPECT_NE(w, cw);
  EXPECT_EQ(cw->initializer()->bytes(), w->initializer()->bytes()) << "tensor bytes are shared";

  // Mutating the clone's tensor copies it; the original keeps its bytes and values.
  const uint8_t* shared = w->initializer()->bytes();
  const float v = -1;
  std::memcpy(cw->initializer()->mutableBytes(), &v, 4);
  EXPECT_EQ(w->initializer()->bytes(), shared);
  EXPECT_EQ(w->initializer()->at<float>(0), 0.0f);
  EXPECT_EQ(cw->initializer()->at<float>(0), -1.0f);

  // Structural edits to the clone leave the original alone.
  Graph& cg = *c->graph;
  Value* cx = cg.lookup("x");
  Node* extra = cg.addNode(GraphBuilder::key(), "Identity", {cx});
  cg.addOutput(GraphBuilder::key(), extra->output(0));
  cg.lookup("bias")->setName("bias_renamed");
  c->graph->name = "other";
  EXPECT_EQ(m->graph->lookup("x")->uses().size(), 1u);
  EXPECT_EQ(cx->uses().size(), 2u);
  EXPECT_EQ(toString(*m), before);
  EXPECT_TRUE(verified(*m));
  EXPECT_TRUE(verified(*c));

  // The clone's subgraphs capture the clone's values, not the original's.
  Value* cmm = cg.lookup(m->graph->lookup("x")->uses()[0].user->output(0)->name());
  ASSERT_NE(cmm, nullptr);
  for (const Use& u : cmm->uses())
    EXPECT_EQ(&u.user->graph()->root(), &cg);
  EXPECT_EQ(cmm->uses().size(), 2u);  // then and else branch
}

TEST(Graph, SubgraphCaptureIsAUseOfTheOuterValue) {
  std::unique_ptr<Model> m = richModel();
  Graph& g = *m->graph;
  Node* mm = nullptr;
  Node* iff = nullptr;
  for (Node* n : g.nodes()) {
    if (n->op_type == "MatMul") mm = n;
    if (n->op_type == "If") iff = n;
  }
  ASSERT_NE(mm, nullptr);
  ASSERT_NE(iff, nullptr);
  Value* captured = mm->output(0);
  ASSERT_EQ(captured->uses().size(), 2u);
  for (const Use& u : captured->uses()) {
    EXPECT_NE(u.user->graph(), &g) << "the users are the subgraph nodes";
    EXPECT_EQ(u.user->graph()->parent(), &g);
    EXPECT_EQ(u.user->graph()->ownerNode(), iff);
  }
  EXPECT_EQ(g.numNodes(), 3u);
  EXPECT_EQ(g.numNodesRecursive(), 5u);

  // Erasing the owning node drops the captured uses with its subgraphs.
  Node* add = iff->output(0)->uses()[0].user;
  add->setInput(GraphBuilder::key(), 0, captured);
  EXPECT_EQ(captured->uses().size(), 3u);
  g.eraseNode(GraphBuilder::key(), iff);
  ASSERT_EQ(captured->uses().size(), 1u);
  EXPECT_EQ(captured->uses()[0].user, add);
  EXPECT_EQ(g.numNodesRecursive(), 2u);
  EXPECT_TRUE(verified(*m));
}

TEST(Graph, VerifierRejectsUseBeforeDefinitionNamingTheNode) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Node* a = b.node("Relu", {x}, 1, {}, "relu");
  Value* bv = b.op("Neg", {a->output(0)}, {}, "neg");
  b.output(bv);
  ASSERT_TRUE(verified(b.model()));

  Node* bad = b.graph().createNode(GraphBuilder::key(), "Abs", {bv}, 1);
  bad->name = "bad_abs";
  b.graph().insertBefore(GraphBuilder::key(), a, bad);  // uses a value defined after it
  VerifyResult r = verify(b.model());
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("'bad_abs'"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("not defined before"), std::string::npos) << r.message;

  // An unnamed node is named by op type and position.
  bad->name.clear();
  r = verify(b.model());
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("Abs -> 'Abs_out'"), std::string::npos) << r.message;

  b.graph().eraseNode(GraphBuilder::key(), bad);
  EXPECT_TRUE(verified(b.model()));
}

TEST(Graph, VerifierRejectsACaptureOfALaterValue) {
  std::unique_ptr<Model> m = richModel();
  Graph& g = *m->graph;
  Node* iff = nullptr;
  for (Node* n : g.nodes()) {
    if (n->op_type == "If") iff = n;
  }
  ASSERT_NE(iff, nullptr);
  Node* relu = iff->attr("then_branch")->g->firstNode();
  ASSERT_EQ(relu->op_type, "Relu");
  Value* before = relu->input(0);
  // A value defined after the If node is not visible inside its branches.
  Node* late = g.addNode(GraphBuilder::key(), "Abs", {g.lookup("x")});
  relu->setInput(GraphBuilder::key(), 0, late->output(0));
  VerifyResult r = verify(*m);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("then_branch"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("Relu -> 'Relu_out' (Relu)"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("not defined before"), std::string::npos) << r.message;
  // Restore (a graph must be valid to be destroyed: uses go before definitions).
  relu->setInput(GraphBuilder::key(), 0, before);
  g.eraseNode(GraphBuilder::key(), late);
  EXPECT_TRUE(verified(*m));
}

TEST(Graph, VerifierRejectsUndefinedGraphOutput) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  b.output(b.op("Relu", {x}));
  Node* loose = b.graph().createNode(GraphBuilder::key(), "Neg", {x}, 1);  // never linked
  loose->output(0)->setName("loose_out");
  b.graph().addOutput(GraphBuilder::key(), loose->output(0));
  VerifyResult r = verify(b.model());
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("graph output 'loose_out' is not defined"), std::string::npos)
      << r.message;
  b.graph().removeOutput(GraphBuilder::key(), 1);
  b.graph().eraseNode(GraphBuilder::key(), loose);
  EXPECT_TRUE(verified(b.model()));
}

TEST(Graph, VerifierChecksOpsetImports) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Node* n = b.node("Custom", {x}, 1, {}, "custom");
  n->domain = "com.example";
  b.output(n->output(0));
  VerifyResult r = verify(b.model());
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("com.example"), std::string::npos) << r.message;
  b.importDomain("com.example", 1);
  EXPECT_TRUE(verified(b.model()));
  b.importDomain("ai.onnx", 13);  // the default domain a second time
  r = verify(b.model());
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("imported twice"), std::string::npos) << r.message;
}

TEST(Graph, AttributesAndDisplayNames) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Node* n =
      b.node("Conv", {x}, 1,
             test::attrs(Attribute::makeInts("pads", {1, 1}), Attribute::makeInt("group", 2)));
  EXPECT_EQ(n->attrInt("group", 1), 2);
  EXPECT_EQ(n->attrInt("missing", 7), 7);
  EXPECT_EQ(n->attrInts("pads"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(n->attrFloat("group", 0.5f), 0.5f) << "a wrong-typed attribute gives the default";
  n->setAttr(Attribute::makeInt("group", 3));
  EXPECT_EQ(n->attributes.size(), 2u);
  EXPECT_EQ(n->attrInt("group", 1), 3);
  EXPECT_TRUE(n->removeAttr("pads"));
  EXPECT_FALSE(n->removeAttr("pads"));
  EXPECT_EQ(n->displayName(), "Conv -> 'Conv_out'");
  n->name = "conv1";
  EXPECT_EQ(n->displayName(), "'conv1'");
  EXPECT_TRUE(n->isOp("Conv"));
  n->domain = "ai.onnx";
  EXPECT_TRUE(n->isOp("Conv"));
  n->domain = "com.microsoft";
  EXPECT_FALSE(n->isOp("Conv"));
}

#ifndef NDEBUG
TEST(GraphDeathTest, ErasingAUsedNodeAsserts) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Node* relu = b.node("Relu", {x});
  b.output(b.op("Neg", {relu->output(0)}));
  EXPECT_DEATH(b.graph().eraseNode(GraphBuilder::key(), relu), "still used");
}
#endif

}  // namespace
}  // namespace onnxfold

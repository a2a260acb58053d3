// Loop and Scan folded by running their bodies (kernels/control_flow.cpp).
#include <gtest/gtest.h>

#include "ir/printer.h"
#include "test_util.h"

namespace onnxfold {
namespace {

using test::attrs;
using test::countOps;
using test::floatTensor;
using test::floatValues;
using test::int64Tensor;
using test::ModelBuilder;
using test::runPass;

Shape dims(std::vector<int64_t> d) {
  Shape s;
  for (int64_t x : d)
    s.dims.push_back(Dim::known(x));
  return s;
}

std::vector<float> foldedOutput(Model& m, size_t i) {
  runPass(m, "fold-constants");
  const Value* out = m.graph->outputs()[i];
  EXPECT_TRUE(out->isConstant()) << toString(m);
  return out->isConstant() ? floatValues(*out->initializer()) : std::vector<float>{};
}

// Loop(M=3): sum += x each step, and the running sum is the scan output.
std::unique_ptr<Model> cumulativeLoop(ModelBuilder& b, Value* m, Value* cond) {
  Value* x = b.initializer("x", {2}, {1, 2});
  Value* init = b.initializer("init", {2}, {10, 20});
  Node* loop = b.node("Loop", {m, cond, init}, 2);
  {
    Graph& g = b.subgraph(loop, "body");
    g.addInput(GraphBuilder::key(), "i", Type::tensor(DataType::kInt64, dims({})));
    Value* c = g.addInput(GraphBuilder::key(), "c", Type::tensor(DataType::kBool, dims({})));
    Value* sum = g.addInput(GraphBuilder::key(), "sum", Type::tensor(DataType::kFloat, dims({2})));
    Node* add = g.addNode(GraphBuilder::key(), "Add", {sum, x});
    Node* keep = g.addNode(GraphBuilder::key(), "Identity", {c});
    Node* scan = g.addNode(GraphBuilder::key(), "Identity", {add->output(0)});
    add->output(0)->type = Type::tensor(DataType::kFloat, dims({2}));
    scan->output(0)->type = Type::tensor(DataType::kFloat, dims({2}));
    keep->output(0)->type = Type::tensor(DataType::kBool, dims({}));
    g.addOutput(GraphBuilder::key(), keep->output(0));
    g.addOutput(GraphBuilder::key(), add->output(0));
    g.addOutput(GraphBuilder::key(), scan->output(0));
  }
  b.output(loop->output(0));
  b.output(loop->output(1));
  return b.build();
}

TEST(LoopFold, TripCountRunsTheBodyAndStacksScanOutputs) {
  ModelBuilder b;
  Value* m = b.initializer(int64Tensor({}, {3}, "M"));
  std::unique_ptr<Model> model = cumulativeLoop(b, m, nullptr);
  EXPECT_EQ(foldedOutput(*model, 0), (std::vector<float>{13, 26}));
  EXPECT_EQ(foldedOutput(*model, 1), (std::vector<float>{11, 22, 12, 24, 13, 26}));
  EXPECT_EQ(model->graph->outputs()[1]->initializer()->dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(countOps(*model->graph, "Loop"), 0u);
}

TEST(LoopFold, ZeroTripsGiveTheInitialValuesAndAnEmptyScan) {
  ModelBuilder b;
  Value* m = b.initializer(int64Tensor({}, {0}, "M"));
  std::unique_ptr<Model> model = cumulativeLoop(b, m, nullptr);
  EXPECT_EQ(foldedOutput(*model, 0), (std::vector<float>{10, 20}));
  ASSERT_TRUE(model->graph->outputs()[1]->isConstant());
  EXPECT_EQ(model->graph->outputs()[1]->initializer()->dims(), (std::vector<int64_t>{0, 2}));
}

// Neither M nor cond: the loop only stops from outside. It stays.
TEST(LoopFold, ALoopWithoutTripCountOrConditionStays) {
  ModelBuilder b;
  std::unique_ptr<Model> model = cumulativeLoop(b, nullptr, nullptr);
  runPass(*model, "fold-constants");
  EXPECT_EQ(countOps(*model->graph, "Loop"), 1u);
}

// A while loop: the body gives the condition for the next step (i < 2), so steps i = 0, 1
// and 2 run and the last one says stop.
TEST(LoopFold, ConditionFromTheBodyStopsTheLoop) {
  ModelBuilder b;
  Value* cond = b.initializer([] {
    Tensor t(DataType::kBool, {});
    t.mutableBytes()[0] = 1;
    t.name = "cond";
    return t;
  }());
  Value* limit = b.initializer(int64Tensor({}, {2}, "limit"));
  Value* one = b.initializer("one", {}, {1});
  Value* init = b.initializer("init", {}, {0});
  Node* loop = b.node("Loop", {nullptr, cond, init}, 1);
  {
    Graph& g = b.subgraph(loop, "body");
    Value* i = g.addInput(GraphBuilder::key(), "i", Type::tensor(DataType::kInt64, dims({})));
    g.addInput(GraphBuilder::key(), "c", Type::tensor(DataType::kBool, dims({})));
    Value* n = g.addInput(GraphBuilder::key(), "n", Type::tensor(DataType::kFloat, dims({})));
    Node* next = g.addNode(GraphBuilder::key(), "Less", {i, limit});  // runs for i = 0, 1, 2
    Node* add = g.addNode(GraphBuilder::key(), "Add", {n, one});
    g.addOutput(GraphBuilder::key(), next->output(0));
    g.addOutput(GraphBuilder::key(), add->output(0));
  }
  b.output(loop->output(0));
  std::unique_ptr<Model> model = b.build();
  EXPECT_EQ(foldedOutput(*model, 0), (std::vector<float>{3}));
}

// Scan over axis 1 backwards, the outputs stacked on axis 1: a running sum from the end.
TEST(ScanFold, ReverseDirectionsAndAxes) {
  ModelBuilder b;
  Value* init = b.initializer("init", {2}, {0, 0});
  Value* xs = b.initializer("xs", {2, 3}, {1, 2, 3, 10, 20, 30});
  Node* scan = b.node(
      "Scan", {init, xs}, 2,
      attrs(Attribute::makeInt("num_scan_inputs", 1), Attribute::makeInts("scan_input_axes", {1}),
            Attribute::makeInts("scan_input_directions", {1}),
            Attribute::makeInts("scan_output_axes", {1})));
  {
    Graph& g = b.subgraph(scan, "body");
    Value* s = g.addInput(GraphBuilder::key(), "s", Type::tensor(DataType::kFloat, dims({2})));
    Value* x = g.addInput(GraphBuilder::key(), "x", Type::tensor(DataType::kFloat, dims({2})));
    Node* add = g.addNode(GraphBuilder::key(), "Add", {s, x});
    Node* out = g.addNode(GraphBuilder::key(), "Identity", {add->output(0)});
    g.addOutput(GraphBuilder::key(), add->output(0));
    g.addOutput(GraphBuilder::key(), out->output(0));
  }
  b.output(scan->output(0));
  b.output(scan->output(1));
  std::unique_ptr<Model> model = b.build();
  EXPECT_EQ(foldedOutput(*model, 0), (std::vector<float>{6, 60}));
  // Steps see columns 2, 1, 0: sums 3, 5, 6 (and 30, 50, 60), stacked in step order.
  EXPECT_EQ(foldedOutput(*model, 1), (std::vector<float>{3, 5, 6, 30, 50, 60}));
}

// A body that uses a value of the enclosing graph which is not known: nothing folds.
TEST(ScanFold, UnknownCapturedValueKeepsTheScan) {
  ModelBuilder b;
  Value* w = b.input("w", DataType::kFloat, {2});
  Value* init = b.initializer("init", {2}, {0, 0});
  Value* xs = b.initializer("xs", {3, 2}, {1, 2, 3, 4, 5, 6});
  Node* scan = b.node("Scan", {init, xs}, 1, attrs(Attribute::makeInt("num_scan_inputs", 1)));
  {
    Graph& g = b.subgraph(scan, "body");
    Value* s = g.addInput(GraphBuilder::key(), "s", Type::tensor(DataType::kFloat, dims({2})));
    Value* x = g.addInput(GraphBuilder::key(), "x", Type::tensor(DataType::kFloat, dims({2})));
    Node* mul = g.addNode(GraphBuilder::key(), "Mul", {x, w});
    Node* add = g.addNode(GraphBuilder::key(), "Add", {s, mul->output(0)});
    g.addOutput(GraphBuilder::key(), add->output(0));
  }
  b.output(scan->output(0));
  std::unique_ptr<Model> model = b.build();
  runPass(*model, "fold-constants");
  EXPECT_EQ(countOps(*model->graph, "Scan"), 1u);
}

}  // namespace
}  // namespace onnxfold

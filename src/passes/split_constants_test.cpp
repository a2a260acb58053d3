// split-constants (passes/split_constants.h) through its facade (api/onnxfold.h).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "api/onnxfold.h"
#include "ir/buffer.h"
#include "ir/error.h"
#include "ir/verifier.h"
#include "onnx/reader.h"
#include "onnx/writer.h"
#include "test_util.h"

namespace onnxfold {
namespace {

using test::attrs;
using test::floatTensor;
using test::ModelBuilder;

TEST(SplitConstants, PrepComputesTheConstantValuesMainReadsThem) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2, 3});
  Value* w = b.initializer("w", {2, 3}, {1, 2, 3, 4, 5, 6});
  Value* wt = b.op("Transpose", {w}, {}, "/lin/Transpose");  // constant: goes to prep
  Value* bias = b.initializer("bias", {2}, {1, 1});
  Value* two =
      b.node("Constant", {}, 1, attrs(Attribute::makeTensor("value", floatTensor({}, {2}))))
          ->output(0);
  Value* b2 = b.op("Mul", {bias, two}, {}, "/lin/Mul");  // constant
  Value* y = b.op("MatMul", {x, wt}, {}, "/lin/MatMul");
  b.output(b.op("Add", {y, b2}, {}, "/lin/Add"));
  std::unique_ptr<Model> m = b.build();
  const std::string bytes = writeModelToString(*m);

  StringSink prep_out, main_out;
  const SplitReport r = splitConstants(test::bufferOf(bytes), prep_out, main_out);
  EXPECT_EQ(r.original_nodes, 5u);
  EXPECT_EQ(r.prep_nodes, 3u);  // Transpose, Constant, Mul
  EXPECT_EQ(r.main_nodes, 2u);  // MatMul, Add
  EXPECT_EQ(r.prep_inputs, 2u);
  ASSERT_EQ(r.values.size(), 2u);
  EXPECT_EQ(r.value_bytes, 6u * 4 + 2u * 4);

  std::unique_ptr<Model> prep = readModel(test::bufferOf(prep_out.out));
  std::unique_ptr<Model> main = readModel(test::bufferOf(main_out.out));
  EXPECT_TRUE(verify(*prep).ok);
  EXPECT_TRUE(verify(*main).ok);
  // prep: weights in (overridable), the computed values out, named as main's inputs.
  ASSERT_EQ(prep->graph->inputs().size(), 2u);
  for (const Value* v : prep->graph->inputs())
    EXPECT_TRUE(v->isInitializer()) << v->name();
  ASSERT_EQ(prep->graph->outputs().size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    const std::string& name = prep->graph->outputs()[k]->name();
    EXPECT_EQ(name, r.values[k]);
    const Value* in = main->graph->lookupLocal(name);
    ASSERT_NE(in, nullptr) << name;
    EXPECT_TRUE(in->isGraphInput() && in->isInitializer()) << name;
  }
  // main's transposed weight holds the computed value; the original weight is gone.
  const Value* t = main->graph->lookupLocal(r.values[0]);
  EXPECT_EQ(t->initializer()->dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_FLOAT_EQ(t->initializer()->at<float>(1), 4.0f);
  EXPECT_EQ(main->graph->lookupLocal("w"), nullptr);
  EXPECT_EQ(main->graph->outputs()[0]->name(), m->graph->outputs()[0]->name());
}

TEST(SplitConstants, AConstantGraphOutputKeepsItsName) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Value* w = b.initializer("w", {2}, {1, -2});
  Value* n = b.op("Neg", {w}, {}, "/neg");
  n->setName("negated");
  b.output(n);  // a constant value that is also a graph output
  b.output(b.op("Add", {x, n}, {}, "/add"));
  std::unique_ptr<Model> m = b.build();
  StringSink prep_out, main_out;
  const SplitReport r = splitConstants(test::bufferOf(writeModelToString(*m)), prep_out, main_out);
  ASSERT_EQ(r.values.size(), 1u);
  EXPECT_NE(r.values[0], "negated");  // the interface value has its own name
  std::unique_ptr<Model> prep = readModel(test::bufferOf(prep_out.out));
  std::unique_ptr<Model> main = readModel(test::bufferOf(main_out.out));
  EXPECT_EQ(prep->graph->outputs()[0]->name(), r.values[0]);
  ASSERT_EQ(main->graph->outputs().size(), 2u);
  EXPECT_EQ(main->graph->outputs()[0]->name(), "negated");
  const Node* id = main->graph->outputs()[0]->producer();
  ASSERT_NE(id, nullptr);
  EXPECT_EQ(id->op_type, "Identity");
  EXPECT_EQ(id->input(0)->name(), r.values[0]);
  EXPECT_TRUE(id->input(0)->isGraphInput() && id->input(0)->isInitializer());
  EXPECT_EQ(main->graph->outputs()[1]->producer()->input(1), id->input(0));
}

// Nothing to split is a result, not an error: prep is empty, main is the model.
TEST(SplitConstants, NothingConstantIsAResult) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  b.output(b.op("Relu", {x}));
  std::unique_ptr<Model> m = b.build();
  StringSink p, q;
  const SplitReport r = splitConstants(test::bufferOf(writeModelToString(*m)), p, q);
  EXPECT_FALSE(r.nothing_to_split.empty());
  EXPECT_EQ(r.prep_nodes, 0u);
  EXPECT_EQ(r.main_nodes, 1u);
  EXPECT_EQ(q.out, writeModelToString(*m));
}

// The folder's budgets hold: a constructor whose result outgrows its inputs stays in main
// (reported), and is not computed at all (the budget is judged on inferred sizes).
TEST(SplitConstants, AConstructorOverItsBudgetStaysInMain) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {1 << 20});
  Value* shape = b.initializer(test::int64Tensor({1}, {1 << 20}, "shape"));
  Value* ones = b.op("ConstantOfShape", {shape}, {}, "/ones");  // 4 MiB from 8 bytes
  Value* w = b.initializer("w", {2}, {1, 2});
  b.output(b.op("Add", {x, ones}, {}, "/add"));
  b.output(b.op("Neg", {w}, {}, "/neg"));  // constant, within the budget: split
  std::unique_ptr<Model> m = b.build();
  const std::string bytes = writeModelToString(*m);
  StringSink prep_out, main_out;
  Options o;
  // Computing the 4 MiB constant would fail the run (in wasm the limit is on the whole heap).
  o.memory_limit = Buffer::heapBytes() + (2 << 20);
  const SplitReport r = splitConstants(test::bufferOf(bytes), prep_out, main_out, o);
  EXPECT_EQ(r.skipped_over_budget, 1u);
  EXPECT_EQ(r.prep_nodes, 1u);  // the Neg
  std::unique_ptr<Model> main = readModel(test::bufferOf(main_out.out));
  const Value* kept = main->graph->lookupLocal(ones->name());
  ASSERT_NE(kept, nullptr);
  ASSERT_NE(kept->producer(), nullptr);
  EXPECT_EQ(kept->producer()->op_type, "ConstantOfShape");
  // With the budget lifted (and memory for it) it is split too.
  o.memory_limit = 0;
  o.constructor_budget = int64_t{8} << 20;
  StringSink prep2, main2;
  const SplitReport r2 = splitConstants(test::bufferOf(bytes), prep2, main2, o);
  EXPECT_EQ(r2.skipped_over_budget, 0u);
  EXPECT_EQ(r2.prep_nodes, 2u);
}

// The folder's guards hold: a training-mode Dropout is random and never split.
TEST(SplitConstants, ARandomNodeIsNotSplit) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Value* w = b.initializer("w", {2}, {1, 2});
  Value* ratio = b.initializer("ratio", {}, {0.5f});
  Tensor on = Tensor::uninitialized(DataType::kBool, {});
  on.mutableBytes()[0] = 1;
  on.name = "training";
  Value* training = b.initializer(std::move(on));
  Value* d = b.node("Dropout", {w, ratio, training}, 1)->output(0);
  b.output(b.op("Add", {x, d}));
  std::unique_ptr<Model> m = b.build();
  StringSink p, q;
  // Nothing to split is a result: an empty prep, main computes what the model does.
  const SplitReport r = splitConstants(test::bufferOf(writeModelToString(*m)), p, q);
  EXPECT_NE(r.nothing_to_split.find("no node of the model computes from weights alone"),
            std::string::npos)
      << r.nothing_to_split;
  EXPECT_EQ(r.prep_nodes, 0u);
  EXPECT_TRUE(r.values.empty());
  EXPECT_EQ(r.main_nodes, r.original_nodes);
  EXPECT_FALSE(q.out.empty());
}

}  // namespace
}  // namespace onnxfold

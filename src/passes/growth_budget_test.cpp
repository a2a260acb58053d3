// The growth budget of fold-constants (PassOptions::max_model_bytes): folds over their own
// size budget are still taken while the whole model stays within it, identical results count
// once, and a constructor over its budget stays a node while its value feeds folds.
#include <gtest/gtest.h>

#include "passes/fold_policy.h"
#include "passes/registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

using test::attrs;
using test::countOps;
using test::floatTensor;
using test::int64Tensor;
using test::ModelBuilder;
using test::runPass;

// `copies` rotary-table chains as a Llama export writes them per layer:
// Range(0, rows) -> Cast -> Unsqueeze -> Mul(inv_freq) -> Cos, each read by a Gather of
// the (unknown) positions. Every table is rows x cols floats.
std::unique_ptr<Model> rotaryModel(int copies, int64_t rows, int64_t cols = 64) {
  ModelBuilder b;
  Value* pos = b.input("pos", DataType::kInt64, {-1});
  std::vector<float> freq(static_cast<size_t>(cols));
  for (size_t i = 0; i < freq.size(); ++i)
    freq[i] = 1.0f / static_cast<float>(1 + i);
  for (int c = 0; c < copies; ++c) {
    const std::string p = "l" + std::to_string(c) + "_";
    Value* range = b.op("Range", {b.initializer(int64Tensor({}, {0}, p + "start")),
                                  b.initializer(int64Tensor({}, {rows}, p + "limit")),
                                  b.initializer(int64Tensor({}, {1}, p + "delta"))});
    Value* t = b.op("Cast", {range}, attrs(Attribute::makeInt("to", 1)));
    Value* col = b.op("Unsqueeze", {t, b.initializer(int64Tensor({1}, {1}, p + "axes"))});
    Value* angles = b.op("Mul", {col, b.initializer(floatTensor({1, cols}, freq, p + "inv_freq"))});
    b.output(b.op("Gather", {b.op("Cos", {angles}), pos}));
  }
  return b.build();
}

int64_t tableBytes(int64_t rows, int64_t cols = 64) {
  return rows * cols * 4;
}

void foldAndClean(Model& m, const PassOptions& o) {
  runPass(m, "fold-constants", o);
  runPass(m, "dce", o);
}

TEST(GrowthBudget, OffByDefault) {
  std::unique_ptr<Model> m = rotaryModel(1, 512);
  foldAndClean(*m, {});
  EXPECT_EQ(countOps(*m->graph, "Cos"), 1u);
  EXPECT_EQ(countOps(*m->graph, "Range"), 1u);
}

TEST(GrowthBudget, TakesAFoldOverItsOwnBudgetAndTheConstructorGoes) {
  std::unique_ptr<Model> m = rotaryModel(1, 512);
  PassOptions o;
  o.max_model_bytes = modelTensorBytes(*m) + tableBytes(512);
  foldAndClean(*m, o);
  // Only the Gather of the folded table is left: the Range stayed a node until nothing
  // read it (its value was never written).
  EXPECT_EQ(m->graph->numNodes(), 1u);
  EXPECT_EQ(countOps(*m->graph, "Gather"), 1u);
  EXPECT_LE(modelTensorBytes(*m), o.max_model_bytes);
}

TEST(GrowthBudget, AConstructorOverItsBudgetFeedsFoldsWithoutBeingWritten) {
  // 70,000 positions: more than propagation evaluates on its own (2^16 elements), so the
  // Range is computed by the fold, held as a value and never written.
  std::unique_ptr<Model> m = rotaryModel(1, 70000, 2);
  PassOptions o;
  o.max_model_bytes = modelTensorBytes(*m) + tableBytes(70000, 2);
  foldAndClean(*m, o);
  EXPECT_EQ(m->graph->numNodes(), 1u);
  EXPECT_EQ(countOps(*m->graph, "Range"), 0u);
  EXPECT_LE(modelTensorBytes(*m), o.max_model_bytes);
}

TEST(GrowthBudget, RefusesWhatDoesNotFitAndSaysHowMuchIsLeft) {
  std::unique_ptr<Model> m = rotaryModel(1, 512);
  PassOptions o;
  o.max_model_bytes = modelTensorBytes(*m) + tableBytes(512) / 2;
  PassContext ctx(o);
  createPass("fold-constants")->run(*m, ctx);
  EXPECT_EQ(countOps(*m->graph, "Cos"), 1u);
  bool said = false;
  for (const Explanation& e : ctx.takeExplanations()) {
    // Folding the Cos would also remove the Mul, refused too, that feeds only it.
    said |= e.op_type == "Cos" && e.reason.find("growth budget has") != std::string::npos &&
            e.would_add_bytes == tableBytes(512) && e.would_remove_nodes == 2;
  }
  EXPECT_TRUE(said);
  EXPECT_LE(modelTensorBytes(*m), o.max_model_bytes);
}

TEST(GrowthBudget, IdenticalTablesCountOnce) {
  // Four per-layer copies of one table, a budget for one: all fold, pool-constants merges them.
  std::unique_ptr<Model> m = rotaryModel(4, 512);
  PassOptions o;
  o.max_model_bytes = modelTensorBytes(*m) + tableBytes(512) + 1024;
  foldAndClean(*m, o);
  EXPECT_EQ(countOps(*m->graph, "Cos"), 0u);
  runPass(*m, "pool-constants", o);
  EXPECT_LE(modelTensorBytes(*m), o.max_model_bytes);
}

TEST(GrowthBudget, AConstructorWhoseValueNothingFoldsStays) {
  // Range read by a non-constant Add: holding its value changes nothing, the node stays.
  ModelBuilder b;
  Value* x = b.input("x", DataType::kInt64, {70000});
  Value* range = b.op("Range", {b.initializer(int64Tensor({}, {0}, "start")),
                                b.initializer(int64Tensor({}, {70000}, "limit")),
                                b.initializer(int64Tensor({}, {1}, "delta"))});
  b.output(b.op("Add", {x, range}));
  std::unique_ptr<Model> m = b.build();
  PassOptions o;
  o.max_model_bytes = modelTensorBytes(*m) + (1 << 20);
  foldAndClean(*m, o);
  EXPECT_EQ(countOps(*m->graph, "Range"), 1u);
  EXPECT_EQ(m->graph->initializers().size(), 3u);
}

}  // namespace
}  // namespace onnxfold

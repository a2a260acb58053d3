#include <gtest/gtest.h>

#include "ir/printer.h"
#include "test_util.h"

namespace onnxfold {
namespace {

using test::attrs;
using test::countOps;
using test::int64Tensor;
using test::ModelBuilder;
using test::runPass;

std::vector<int64_t> shapeInputOf(const Graph& g, const std::string& op) {
  for (const Node* n : g.nodes()) {
    if (n->op_type != op) continue;
    const Value* s = n->input(1);
    if (!s->isConstant()) return {};
    std::vector<int64_t> v;
    for (int64_t i = 0; i < s->initializer()->numElements(); ++i)
      v.push_back(s->initializer()->at<int64_t>(static_cast<size_t>(i)));
    return v;
  }
  return {};
}

void simplify(Model& m) {
  runPass(m, "fold-constants");
  runPass(m, "dce");
}

// The flatten before a classifier, as PaddlePaddle and torch export it:
// Reshape(x, Concat(Cast(Cast(Slice(Shape(x), 0, 1))), [-1])).
TEST(ShapeChains, FlattenWithDynamicBatchBecomesZeroMinusOne) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {-1, 64, 7, 7});
  Value* s = b.op("Shape", {x});
  Value* batch = b.op("Slice", {s, b.initializer(int64Tensor({1}, {0}, "st")),
                                b.initializer(int64Tensor({1}, {1}, "en"))});
  Value* c32 = b.op("Cast", {batch}, attrs(Attribute::makeInt("to", 6)));
  Value* c64 = b.op("Cast", {c32}, attrs(Attribute::makeInt("to", 7)));
  Value* target = b.op("Concat", {c64, b.initializer(int64Tensor({1}, {-1}, "m1"))},
                       attrs(Attribute::makeInt("axis", 0)));
  b.output(b.op("Reshape", {x, target}));
  std::unique_ptr<Model> m = b.build();
  simplify(*m);
  EXPECT_EQ(m->graph->numNodes(), 1u) << toString(*m);
  EXPECT_EQ(shapeInputOf(*m->graph, "Reshape"), (std::vector<int64_t>{0, -1}));
}

// A dim that is not x's own (here a product of two symbolic dims) becomes -1 only when
// every other entry is a known size: a copied dim could be 0, and -1 cannot be inferred
// next to a 0.
TEST(ShapeChains, MakesMinusOneOnlyNextToKnownPositiveSizes) {
  for (const bool with_copy : {false, true}) {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {-1, -2, 8});  // [N0, N1, 8]
    Value* s = b.op("Shape", {x});
    auto dim = [&](int64_t i) {
      return b.op("Slice", {s, b.initializer(int64Tensor({1}, {i}, "st" + std::to_string(i))),
                            b.initializer(int64Tensor({1}, {i + 1}, "en" + std::to_string(i)))});
    };
    Value* nn = b.op("Mul", {dim(0), dim(1)});  // N0 * N1: unknown, not one of x's dims
    std::vector<Value*> parts;
    if (with_copy) parts.push_back(dim(0));
    parts.push_back(nn);
    parts.push_back(b.initializer(int64Tensor({1}, {8}, "eight")));
    Value* target = b.op("Concat", parts, attrs(Attribute::makeInt("axis", 0)));
    b.output(b.op("Reshape", {x, target}));
    std::unique_ptr<Model> m = b.build();
    simplify(*m);
    if (with_copy) {
      EXPECT_EQ(countOps(*m->graph, "Shape"), 1u) << toString(*m);  // left as it was
      EXPECT_TRUE(shapeInputOf(*m->graph, "Reshape").empty());
    } else {
      EXPECT_EQ(m->graph->numNodes(), 1u) << toString(*m);
      EXPECT_EQ(shapeInputOf(*m->graph, "Reshape"), (std::vector<int64_t>{-1, 8}));
    }
  }
}

TEST(ShapeChains, AllowzeroKeepsTheChain) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {-1, 4});
  Value* s = b.op("Shape", {x});
  b.output(b.op("Reshape", {x, s}, attrs(Attribute::makeInt("allowzero", 1))));
  std::unique_ptr<Model> m = b.build();
  simplify(*m);
  EXPECT_EQ(countOps(*m->graph, "Shape"), 1u) << toString(*m);
}

// Expand to x's own shape (right-aligned) keeps x's dims: 1 there.
TEST(ShapeChains, ExpandToOwnShapeBecomesOnes) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {-1, 3});
  Value* s = b.op("Shape", {x});
  Value* target = b.op("Concat", {b.initializer(int64Tensor({1}, {2}, "two")), s},
                       attrs(Attribute::makeInt("axis", 0)));
  b.output(b.op("Expand", {x, target}));
  std::unique_ptr<Model> m = b.build();
  simplify(*m);
  EXPECT_EQ(countOps(*m->graph, "Shape"), 0u) << toString(*m);
  EXPECT_EQ(shapeInputOf(*m->graph, "Expand"), (std::vector<int64_t>{2, 1, 3}));
}

// Another value's symbolic dim is not one of x's: it becomes the one -1.
TEST(ShapeChains, ShapeOfAnotherValueGivesMinusOne) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {-1, 4});
  Value* y = b.input("y", DataType::kFloat, {2, -1, 4});  // [2, N1, 4]
  b.output(b.op("Reshape", {x, b.op("Shape", {y})}));
  std::unique_ptr<Model> m = b.build();
  simplify(*m);
  EXPECT_EQ(countOps(*m->graph, "Shape"), 0u) << toString(*m);
  EXPECT_EQ(shapeInputOf(*m->graph, "Reshape"), (std::vector<int64_t>{2, -1, 4}));
}

// Tile(x, Shape(y) / Shape(x)) with x [N, 4] and y [N, 8]: N / N is 1, so the repeats are
// [1, 2] whatever the batch, and only the Tile is left.
TEST(ShapeChains, TileByARatioOfShapesSharingADimGetsConstantRepeats) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {-1, 4});
  Value* y = b.input("y", DataType::kFloat, {-1, 8});
  b.output(b.op("Tile", {x, b.op("Div", {b.op("Shape", {y}), b.op("Shape", {x})})}));
  std::unique_ptr<Model> m = b.build();
  simplify(*m);
  EXPECT_EQ(m->graph->numNodes(), 1u) << toString(*m);
  EXPECT_EQ(shapeInputOf(*m->graph, "Tile"), (std::vector<int64_t>{1, 2}));
}

}  // namespace
}  // namespace onnxfold

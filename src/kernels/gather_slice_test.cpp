// Tests of Gather* and Slice: symbolic Gather/Slice for shape arithmetic,
// negative and out-of-range indices, batch dims, strings, and Slice clamping
// with extreme starts and steps.
#include <gtest/gtest.h>

#include <limits>
#include <memory>

#include "ir/error.h"
#include "kernels/kernel_test_util.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

const test::OpRunner run{21};

using test::i64;
using test::ints;
using test::scalarI64;
constexpr auto floats = &test::floatValues;

// Runs only infer() for `op` on a symbolic int64 vector input 0 and constant others.
struct SymbolicRun {
  test::ModelBuilder b{17};
  std::vector<Tensor> consts;
  std::unique_ptr<InferContext> ic;
};

std::unique_ptr<SymbolicRun> inferOnSymbolic(const std::string& op, const SymbolicValue& sym,
                                             std::vector<Tensor> consts,
                                             std::vector<Attribute> attrs = {}) {
  auto r = std::make_unique<SymbolicRun>();
  r->consts = std::move(consts);
  Value* s = r->b.input("s", DataType::kInt64, {static_cast<int64_t>(sym.size())});
  std::vector<Value*> vals{s};
  for (size_t i = 0; i < r->consts.size(); ++i) {
    r->consts[i].name = "c" + std::to_string(i);
    vals.push_back(r->b.initializer(r->consts[i]));
  }
  Node* n = r->b.node(op, vals, 1, std::move(attrs));
  r->ic = std::make_unique<InferContext>(*n, 17, vals.size(), 1);
  r->ic->input_types[0] = &s->type;
  r->ic->input_symbolic[0] = &sym;
  for (size_t i = 0; i < r->consts.size(); ++i) {
    r->ic->input_types[i + 1] = &vals[i + 1]->type;
    r->ic->input_values[i + 1] = &r->consts[i];
  }
  OpRegistry::instance().find("", op, 17)->infer(*r->ic);
  return r;
}

TEST(GatherSlice, GatherOnSymbolicShapeFoldsKnownDims) {
  const SymbolicValue shape = {Dim::symbol("batch"), Dim::known(3)};
  // Shape(x)[1] is the constant 3 even with a dynamic batch.
  auto r = inferOnSymbolic("Gather", shape, {scalarI64(1)});
  ASSERT_TRUE(r->ic->output_values[0].has_value());
  EXPECT_EQ(r->ic->output_values[0]->rank(), 0u);
  EXPECT_EQ(ints(*r->ic->output_values[0]), (std::vector<int64_t>{3}));
  // Shape(x)[[-2]] keeps the symbol.
  r = inferOnSymbolic("Gather", shape, {i64({1}, {-2})});
  EXPECT_FALSE(r->ic->output_values[0].has_value());
  ASSERT_TRUE(r->ic->output_symbolic[0].has_value());
  ASSERT_EQ(r->ic->output_symbolic[0]->size(), 1u);
  EXPECT_EQ((*r->ic->output_symbolic[0])[0].param, "batch");
  EXPECT_EQ(r->ic->output_types[0].shape->dims[0].value, 1);
  EXPECT_THROW(inferOnSymbolic("Gather", shape, {scalarI64(2)}), Error);
}

TEST(GatherSlice, GatherNegativeAndOutOfRangeIndices) {
  const Tensor data = test::floatTensor({3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(floats(run("Gather", {data, i64({2}, {-1, 0})})[0]), (std::vector<float>{5, 6, 1, 2}));
  EXPECT_EQ(
      floats(run("Gather", {data, i64({1}, {1})}, test::attrs(Attribute::makeInt("axis", 1)))[0]),
      (std::vector<float>{2, 4, 6}));
  EXPECT_THROW(run("Gather", {data, i64({1}, {3})}), Error);
  EXPECT_THROW(run("Gather", {data, i64({1}, {-4})}), Error);
}

TEST(GatherSlice, GatherStrings) {
  Tensor s(DataType::kString, {3});
  s.mutableStrings() = {"a", "bb", "ccc"};
  const Tensor out = run("Gather", {s, i64({2}, {2, 0})})[0];
  EXPECT_EQ(out.strings(), (std::vector<std::string>{"ccc", "a"}));
}

TEST(GatherSlice, GatherElementsAndGatherNDBatchDims) {
  const Tensor data = test::floatTensor({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(floats(run("GatherElements", {data, i64({2, 2}, {0, 0, 1, 0})},
                       test::attrs(Attribute::makeInt("axis", 1)))[0]),
            (std::vector<float>{1, 1, 4, 3}));
  const Tensor d3 = test::floatTensor({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  const Tensor g = run("GatherND", {d3, i64({2, 1}, {1, 0})},
                       test::attrs(Attribute::makeInt("batch_dims", 1)))[0];
  EXPECT_EQ(g.dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(floats(g), (std::vector<float>{2, 3, 4, 5}));
}

TEST(GatherSlice, SliceOnSymbolicShape) {
  const SymbolicValue shape = {Dim::symbol("batch"), Dim::known(3), Dim::known(4)};
  auto r = inferOnSymbolic("Slice", shape, {i64({1}, {1}), i64({1}, {100})});
  ASSERT_TRUE(r->ic->output_values[0].has_value());
  EXPECT_EQ(ints(*r->ic->output_values[0]), (std::vector<int64_t>{3, 4}));
  r = inferOnSymbolic("Slice", shape, {i64({1}, {0}), i64({1}, {1})});
  ASSERT_TRUE(r->ic->output_symbolic[0].has_value());
  EXPECT_EQ((*r->ic->output_symbolic[0])[0].param, "batch");
  // Reversed with a negative step.
  r = inferOnSymbolic("Slice", shape,
                      {i64({1}, {-1}), i64({1}, {-100}), i64({1}, {0}), i64({1}, {-1})});
  ASSERT_TRUE(r->ic->output_symbolic[0].has_value());
  const SymbolicValue& v = *r->ic->output_symbolic[0];
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].value, 4);
  EXPECT_EQ(v[2].param, "batch");
}

TEST(GatherSlice, SliceShapeKeepsSymbolOnWholeAxis) {
  test::ModelBuilder b(17);
  Value* x = b.input("x", DataType::kFloat, {-1, 10});
  Tensor starts = i64({2}, {0, 2}), ends = i64({2}, {std::numeric_limits<int64_t>::max(), 5});
  starts.name = "st";
  ends.name = "en";
  Node* n = b.node("Slice", {x, b.initializer(starts), b.initializer(ends)});
  InferContext ic(*n, 17, 3, 1);
  ic.input_types = {&x->type, &n->input(1)->type, &n->input(2)->type};
  ic.input_values = {nullptr, &starts, &ends};
  OpRegistry::instance().find("", "Slice", 17)->infer(ic);
  const Shape& s = *ic.output_types[0].shape;
  EXPECT_EQ(s.dims[0].param, x->type.shape->dims[0].param);
  EXPECT_EQ(s.dims[1].value, 3);
}

TEST(GatherSlice, SliceStepsClampingAndLegacyAttributes) {
  const Tensor data = test::floatTensor({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  // Negative step from past the end, clamped.
  const Tensor a =
      run("Slice", {data, i64({1}, {100}), i64({1}, {-100}), i64({1}, {1}), i64({1}, {-2})})[0];
  EXPECT_EQ(a.dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(floats(a), (std::vector<float>{4, 2, 8, 6}));
  // Opset 9: attributes.
  const Tensor b =
      run("Slice", {data},
          test::attrs(Attribute::makeInts("starts", {1, 1}), Attribute::makeInts("ends", {2, 3})),
          9)[0];
  EXPECT_EQ(b.dims(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(floats(b), (std::vector<float>{6, 7}));
  EXPECT_THROW(run("Slice", {data, i64({1}, {0}), i64({1}, {1}), i64({1}, {0}), i64({1}, {0})}),
               Error);
}

TEST(GatherSlice, SliceWithExtremeStartsAndStepsTakesWhatOnnxSays) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  const Tensor data = test::floatTensor({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  // From the last element backwards by 2^63: one element (a wrapped count gave none).
  Tensor a =
      run("Slice", {data, i64({1}, {kMax}), i64({1}, {kMin}), i64({1}, {0}), i64({1}, {kMin})})[0];
  EXPECT_EQ(floats(a), (std::vector<float>{8}));
  // Forwards by 2^63 - 1 from the start: the first element only.
  a = run("Slice", {data, i64({1}, {kMin}), i64({1}, {kMax}), i64({1}, {0}), i64({1}, {kMax})})[0];
  EXPECT_EQ(floats(a), (std::vector<float>{1}));
}

TEST(GatherSlice, NegativeStepOnAnEmptyAxisTakesNothing) {
  // [3, 0]: a start below -dim on the empty axis once clamped to 0 and took one element.
  const Tensor data = test::floatTensor({3, 0}, {});
  const Tensor a =
      run("Slice", {data, i64({1}, {-5}), i64({1}, {-10}), i64({1}, {1}), i64({1}, {-1})})[0];
  EXPECT_EQ(a.dims(), (std::vector<int64_t>{3, 0}));
}

}  // namespace
}  // namespace onnxfold

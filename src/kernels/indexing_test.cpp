// Tests of the indexing family: symbolic Gather/Slice for shape arithmetic,
// negative and out-of-range indices, scatter reductions, TopK tie order,
// Unique, NonZero's symbolic count, cumulative ops and strings.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/error.h"
#include "kernels/common.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

std::vector<Tensor> run(const std::string& op, std::vector<Tensor> ins,
                        std::vector<Attribute> attrs = {}, int64_t opset = 21,
                        size_t num_outputs = 1) {
  return test::runOp(op, std::move(ins), std::move(attrs), opset, num_outputs);
}

Tensor i64(std::vector<int64_t> dims, const std::vector<int64_t>& v) {
  return test::int64Tensor(std::move(dims), v);
}
Tensor scalarI64(int64_t v) {
  Tensor t = i64({1}, {v});
  t.reshape({});
  return t;
}

std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.numElements(); ++i)
    v.push_back(t.at<int64_t>(static_cast<size_t>(i)));
  return v;
}
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

TEST(IndexingOps, GatherOnSymbolicShapeFoldsKnownDims) {
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

TEST(IndexingOps, GatherNegativeAndOutOfRangeIndices) {
  const Tensor data = test::floatTensor({3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(floats(run("Gather", {data, i64({2}, {-1, 0})})[0]), (std::vector<float>{5, 6, 1, 2}));
  EXPECT_EQ(
      floats(run("Gather", {data, i64({1}, {1})}, test::attrs(Attribute::makeInt("axis", 1)))[0]),
      (std::vector<float>{2, 4, 6}));
  EXPECT_THROW(run("Gather", {data, i64({1}, {3})}), Error);
  EXPECT_THROW(run("Gather", {data, i64({1}, {-4})}), Error);
}

TEST(IndexingOps, GatherStrings) {
  Tensor s(DataType::kString, {3});
  s.mutableStrings() = {"a", "bb", "ccc"};
  const Tensor out = run("Gather", {s, i64({2}, {2, 0})})[0];
  EXPECT_EQ(out.strings(), (std::vector<std::string>{"ccc", "a"}));
}

TEST(IndexingOps, GatherElementsAndGatherNDBatchDims) {
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

TEST(IndexingOps, SliceOnSymbolicShape) {
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

TEST(IndexingOps, SliceShapeKeepsSymbolOnWholeAxis) {
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

TEST(IndexingOps, SliceStepsClampingAndLegacyAttributes) {
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

TEST(IndexingOps, SliceWithExtremeStartsAndStepsTakesWhatOnnxSays) {
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

TEST(IndexingOps, ScatterReductions) {
  const Tensor data = test::floatTensor({1, 5}, {1, 2, 3, 4, 5});
  const Tensor idx = i64({1, 2}, {1, 1});
  const Tensor upd = test::floatTensor({1, 2}, {2, 3});
  auto red = [&](const char* r, int64_t opset) {
    return floats(
        run("ScatterElements", {data, idx, upd},
            test::attrs(Attribute::makeInt("axis", 1), Attribute::makeString("reduction", r)),
            opset)[0]);
  };
  EXPECT_EQ(red("add", 16), (std::vector<float>{1, 7, 3, 4, 5}));
  EXPECT_EQ(red("mul", 16), (std::vector<float>{1, 12, 3, 4, 5}));
  EXPECT_EQ(red("max", 18), (std::vector<float>{1, 3, 3, 4, 5}));
  EXPECT_EQ(red("min", 18), (std::vector<float>{1, 2, 3, 4, 5}));
  EXPECT_THROW(red("max", 16), Error);  // max/min arrived at opset 18
  const Tensor nd = run("ScatterND",
                        {test::floatTensor({4}, {1, 2, 3, 4}), i64({2, 1}, {3, -4}),
                         test::floatTensor({2}, {10, 20})},
                        test::attrs(Attribute::makeString("reduction", "mul")), 18)[0];
  EXPECT_EQ(floats(nd), (std::vector<float>{20, 2, 3, 40}));
}

TEST(IndexingOps, TopKTiesKeepSmallerIndexFirst) {
  const Tensor x = test::floatTensor({6}, {1, 3, 3, 2, 3, 1});
  const auto out = run("TopK", {x, i64({1}, {4})}, {}, 11, 2);
  EXPECT_EQ(floats(out[0]), (std::vector<float>{3, 3, 3, 2}));
  EXPECT_EQ(ints(out[1]), (std::vector<int64_t>{1, 2, 4, 3}));
  const auto small =
      run("TopK", {x, i64({1}, {3})}, test::attrs(Attribute::makeInt("largest", 0)), 11, 2);
  EXPECT_EQ(ints(small[1]), (std::vector<int64_t>{0, 5, 3}));
  EXPECT_THROW(run("TopK", {x, i64({1}, {7})}, {}, 11, 2), Error);
}

TEST(IndexingOps, UniqueSortedAndUnsorted) {
  const Tensor x = test::floatTensor({6}, {2, 1, 1, 3, 4, 3});
  auto u = run("Unique", {x}, test::attrs(Attribute::makeInt("sorted", 0)), 11, 4);
  EXPECT_EQ(floats(u[0]), (std::vector<float>{2, 1, 3, 4}));
  EXPECT_EQ(ints(u[1]), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(ints(u[2]), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(ints(u[3]), (std::vector<int64_t>{1, 2, 2, 1}));
  u = run("Unique", {x}, {}, 11, 4);
  EXPECT_EQ(floats(u[0]), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(ints(u[1]), (std::vector<int64_t>{1, 0, 3, 4}));
  EXPECT_EQ(ints(u[2]), (std::vector<int64_t>{1, 0, 0, 2, 3, 2}));
  const Tensor rows = test::floatTensor({3, 3}, {1, 0, 0, 1, 0, 0, 2, 3, 4});
  u = run("Unique", {rows}, test::attrs(Attribute::makeInt("axis", 0)), 11, 4);
  EXPECT_EQ(u[0].dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ints(u[3]), (std::vector<int64_t>{2, 1}));
}

TEST(IndexingOps, NonZeroCountIsSymbolicWhenUnknown) {
  test::ModelBuilder b(17);
  Value* x = b.input("x", DataType::kFloat, {2, 3});
  Node* n = b.node("NonZero", {x});
  InferContext ic(*n, 17, 1, 1);
  ic.input_types = {&x->type};
  OpRegistry::instance().find("", "NonZero", 17)->infer(ic);
  const Shape& s = *ic.output_types[0].shape;
  EXPECT_EQ(s.dims[0].value, 2);
  EXPECT_FALSE(s.dims[1].isKnown());
  EXPECT_FALSE(s.dims[1].param.empty());
  const Tensor nz = run("NonZero", {test::floatTensor({2, 2}, {1, 0, 0, 5})})[0];
  EXPECT_EQ(nz.dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ints(nz), (std::vector<int64_t>{0, 1, 0, 1}));
}

TEST(IndexingOps, CumSumExclusiveReverseAndExactInt64) {
  const Tensor x = test::floatTensor({4}, {1, 2, 3, 4});
  EXPECT_EQ(floats(run("CumSum", {x, scalarI64(0)},
                       test::attrs(Attribute::makeInt("exclusive", 1),
                                   Attribute::makeInt("reverse", 1)))[0]),
            (std::vector<float>{9, 7, 4, 0}));
  const int64_t big = (int64_t{1} << 60) + 1;
  EXPECT_EQ(ints(run("CumSum", {i64({2}, {big, 2}), scalarI64(0)})[0]),
            (std::vector<int64_t>{big, big + 2}));
}

TEST(IndexingOps, ArgMaxSelectLastIndexAndKeepdims) {
  const Tensor x = test::floatTensor({2, 3}, {1, 5, 5, 7, 7, 2});
  const Tensor first = run("ArgMax", {x}, test::attrs(Attribute::makeInt("axis", 1)), 13)[0];
  EXPECT_EQ(first.dims(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(ints(first), (std::vector<int64_t>{1, 0}));
  const Tensor last =
      run("ArgMax", {x},
          test::attrs(Attribute::makeInt("axis", 1), Attribute::makeInt("keepdims", 0),
                      Attribute::makeInt("select_last_index", 1)),
          13)[0];
  EXPECT_EQ(last.dims(), (std::vector<int64_t>{2}));
  EXPECT_EQ(ints(last), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(ints(run("ArgMin", {x}, {}, 13)[0]), (std::vector<int64_t>{0, 0, 1}));
}

TEST(IndexingOps, OneHotCompressReverseSequence) {
  const Tensor oh = run(
      "OneHot", {i64({3}, {0, -1, 5}), scalarI64(3), test::floatTensor({2}, {0, 1})}, {}, 11)[0];
  EXPECT_EQ(oh.dims(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(floats(oh), (std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0}));
  Tensor cond(DataType::kBool, {2});
  cond.mutableBytes()[1] = 1;
  const Tensor c = run("Compress", {test::floatTensor({2, 2}, {1, 2, 3, 4}), cond},
                       test::attrs(Attribute::makeInt("axis", 1)), 11)[0];
  EXPECT_EQ(floats(c), (std::vector<float>{2, 4}));
  const Tensor rs =
      run("ReverseSequence", {test::floatTensor({3, 2}, {1, 2, 3, 4, 5, 6}), i64({2}, {3, 1})}, {},
          10)[0];
  EXPECT_EQ(floats(rs), (std::vector<float>{5, 2, 3, 4, 1, 6}));
}

}  // namespace
}  // namespace onnxfold

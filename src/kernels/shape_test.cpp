// Tests of the shape family: Shape/Size values and symbolic values,
// Constant attributes, ConstantOfShape on symbolic shapes, Range counts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "ir/error.h"
#include "kernels/common.h"
#include "kernels/kernel_test_util.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

const test::OpRunner run{21};

using test::ints;

TEST(ShapeOps, ShapeOfSymbolicInputIsSymbolic) {
  test::ModelBuilder b(17);
  Value* x = b.input("x", DataType::kFloat, {-1, 3, 5});
  Node* n = b.node("Shape", {x}, 1,
                   test::attrs(Attribute::makeInt("start", 0), Attribute::makeInt("end", -1)));
  InferContext ic(*n, 17, 1, 1);
  ic.input_types = {&x->type};
  OpRegistry::instance().find("", "Shape", 17)->infer(ic);
  ASSERT_TRUE(ic.output_symbolic[0].has_value());
  const SymbolicValue& v = *ic.output_symbolic[0];
  ASSERT_EQ(v.size(), 2u);
  EXPECT_FALSE(v[0].isKnown());
  EXPECT_EQ(v[0].param, x->type.shape->dims[0].param);
  EXPECT_EQ(v[1].value, 3);
  EXPECT_EQ(ic.output_types[0].shape->dims[0].value, 2);
  EXPECT_FALSE(ic.output_values[0].has_value());
}

TEST(ShapeOps, ShapeAndSizeOfStaticInputAreConstants) {
  const Tensor x = test::floatTensor({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(ints(run("Shape", {x})[0]), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ints(run("Shape", {x}, test::attrs(Attribute::makeInt("start", -1)))[0]),
            (std::vector<int64_t>{3}));
  EXPECT_EQ(ints(run("Shape", {x}, test::attrs(Attribute::makeInt("start", 5)))[0]),
            (std::vector<int64_t>{}));
  const Tensor s = run("Size", {x})[0];
  EXPECT_EQ(s.rank(), 0u);
  EXPECT_EQ(s.at<int64_t>(0), 6);
}

TEST(ShapeOps, ConstantAttributes) {
  EXPECT_EQ(ints(run("Constant", {}, test::attrs(Attribute::makeInts("value_ints", {4, 5})))[0]),
            (std::vector<int64_t>{4, 5}));
  const Tensor f = run("Constant", {}, test::attrs(Attribute::makeFloat("value_float", 2.5f)))[0];
  EXPECT_EQ(f.rank(), 0u);
  EXPECT_EQ(f.at<float>(0), 2.5f);
  EXPECT_THROW(run("Constant", {}, {}), Error);
}

TEST(ShapeOps, ConstantOfShapeKeepsSymbolicDims) {
  test::ModelBuilder b(17);
  Value* s = b.input("s", DataType::kInt64, {2});
  Node* n = b.node("ConstantOfShape", {s});
  InferContext ic(*n, 17, 1, 1);
  const SymbolicValue sym = {Dim::symbol("batch"), Dim::known(7)};
  ic.input_types = {&s->type};
  ic.input_symbolic = {&sym};
  OpRegistry::instance().find("", "ConstantOfShape", 17)->infer(ic);
  const Type& t = ic.output_types[0];
  EXPECT_EQ(t.elem_type, DataType::kFloat);
  ASSERT_TRUE(t.shape.has_value());
  EXPECT_EQ(t.shape->dims[0].param, "batch");
  EXPECT_EQ(t.shape->dims[1].value, 7);
  const Tensor full = run("ConstantOfShape", {test::int64Tensor({2}, {2, 2})})[0];
  EXPECT_EQ(full.dims(), (std::vector<int64_t>{2, 2}));
}

TEST(ShapeOps, RangeCounts) {
  auto scalar = [](int64_t v) {
    Tensor t = test::int64Tensor({1}, {v});
    t.reshape({});
    return t;
  };
  EXPECT_EQ(ints(run("Range", {scalar(10), scalar(4), scalar(-2)})[0]),
            (std::vector<int64_t>{10, 8, 6}));
  EXPECT_EQ(ints(run("Range", {scalar(3), scalar(9), scalar(3)})[0]), (std::vector<int64_t>{3, 6}));
  EXPECT_EQ(run("Range", {scalar(3), scalar(1), scalar(1)})[0].numElements(), 0);
  EXPECT_THROW(run("Range", {scalar(0), scalar(1), scalar(0)}), Error);
  // Hostile bounds: refused (ONNX Runtime fails at run time), never a wrapped count.
  EXPECT_THROW(run("Range", {scalar(INT64_MIN + 1), scalar(INT64_MAX - 1), scalar(1)}), Error);
  // Bounds read exactly (INT64_MAX does not survive a double): one element, valid.
  EXPECT_EQ(ints(run("Range", {scalar(0), scalar(INT64_MAX), scalar(INT64_MAX)})[0]),
            (std::vector<int64_t>{0}));
  EXPECT_EQ(ints(run("Range", {scalar(INT64_MAX - 2), scalar(INT64_MAX), scalar(1)})[0]),
            (std::vector<int64_t>{INT64_MAX - 2, INT64_MAX - 1}));
  auto f = [](float v) {
    Tensor t = test::floatTensor({1}, {v});
    t.reshape({});
    return t;
  };
  EXPECT_THROW(run("Range", {f(0), f(INFINITY), f(1)}), Error);
  EXPECT_THROW(run("Range", {f(0), f(NAN), f(1)}), Error);
  EXPECT_THROW(run("Range", {f(0), f(1e30f), f(1e-30f)}), Error);
  EXPECT_EQ(run("Range", {f(0), f(1), f(0.25f)})[0].numElements(), 4);
}

TEST(ShapeOps, EyeLikeOffDiagonal) {
  const Tensor x = test::floatTensor({2, 3}, {0, 0, 0, 0, 0, 0});
  const Tensor y = run("EyeLike", {x},
                       test::attrs(Attribute::makeInt("k", 1), Attribute::makeInt("dtype", 7)))[0];
  EXPECT_EQ(ints(y), (std::vector<int64_t>{0, 1, 0, 0, 0, 1}));
}

}  // namespace
}  // namespace onnxfold

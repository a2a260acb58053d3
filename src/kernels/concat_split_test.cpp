// Tests of Concat and Split: shape values carried through Concat, and uneven
// Split at opset 18.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "kernels/kernel_test_util.h"
#include "test_util.h"

namespace onnxfold {
namespace {

const test::OpRunner run{21};

constexpr auto floats = &test::floatValues;
using test::inferWith;
using test::iota;

TEST(ConcatSplit, ConcatCarriesShapeValues) {
  test::ModelBuilder b(17);
  Value* a = b.input("a", DataType::kInt64, {1});
  Value* c = b.input("c", DataType::kInt64, {1});
  const SymbolicValue va = {Dim::symbol("batch")};
  Dim minus_one;
  const SymbolicValue vc = {minus_one};
  InferContext ic = inferWith(b, "Concat", {a, c}, {&a->type, &c->type}, {&va, &vc},
                              test::attrs(Attribute::makeInt("axis", 0)));
  ASSERT_TRUE(ic.output_symbolic[0].has_value());
  const SymbolicValue& v = *ic.output_symbolic[0];
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].param, "batch");
  EXPECT_EQ(v[1].value, -1);
  EXPECT_EQ(ic.output_types[0].shape->dims[0].value, 2);
}

TEST(ConcatSplit, SplitUnevenAtOpset18) {
  const Tensor x = iota({5});
  const std::vector<Tensor> out =
      run("Split", {x}, test::attrs(Attribute::makeInt("num_outputs", 2)), 18, 2);
  EXPECT_EQ(floats(out[0]), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(floats(out[1]), (std::vector<float>{3, 4}));
  EXPECT_THROW(run("Split", {x}, {}, 13, 2), Error);  // 5 does not divide in 2 before 18
}

}  // namespace
}  // namespace onnxfold

// Tests of OneHot, Compress, NonZero (symbolic count), ReverseSequence and the
// cumulative ops (exclusive, reverse, exact int64).
#include <gtest/gtest.h>

#include <limits>

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

// Overflowing int32 sums wrap (they were signed overflow), and OneHot's float indices convert
// as fromDouble does (they were out-of-range conversions): NaN is index 0, a huge one is off.
TEST(IndexingOps, CumSumInt32WrapsAndOneHotHostileIndices) {
  Tensor x(DataType::kInt32, {2});
  kernels::mutableDataAs<int32_t>(x)[0] = std::numeric_limits<int32_t>::max();
  kernels::mutableDataAs<int32_t>(x)[1] = 1;
  const Tensor y = run("CumSum", {x, scalarI64(0)})[0];
  EXPECT_EQ(y.at<int32_t>(0), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(y.at<int32_t>(1), std::numeric_limits<int32_t>::min());
  const Tensor oh =
      run("OneHot",
          {test::floatTensor({3}, {std::numeric_limits<float>::quiet_NaN(), 1e30f, 1}),
           scalarI64(2), test::floatTensor({2}, {0, 1})},
          {}, 11)[0];
  EXPECT_EQ(floats(oh), (std::vector<float>{1, 0, 0, 0, 0, 1}));
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

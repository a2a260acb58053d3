// Tests of the unary math ops: Round (half to even) and IsNaN/IsInf on float8.
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/kernel_test_util.h"
#include "test_util.h"

namespace onnxfold {
namespace {

const test::OpRunner run{17};

using test::tensorOf;
using test::valuesOf;

TEST(UnaryMath, RoundHalfToEven) {
  const Tensor r = tensorOf(DataType::kFloat, {6}, {0.5, 1.5, 2.5, -0.5, -1.5, 2.4});
  EXPECT_EQ(valuesOf(run("Round", {r})[0]), (std::vector<double>{0, 2, 2, -0, -2, 2}));
}

TEST(UnaryMath, Float8IsNanIsInf) {
  Tensor x(DataType::kFloat8E5M2, {4});
  const uint8_t bits[4] = {0x7c, 0xfc, 0x7e, 0x3c};  // +inf, -inf, NaN, 1.0
  std::memcpy(x.mutableBytes(), bits, 4);
  EXPECT_EQ(valuesOf(run("IsInf", {x}, {}, 20)[0]), (std::vector<double>{1, 1, 0, 0}));
  EXPECT_EQ(valuesOf(run("IsNaN", {x}, {}, 20)[0]), (std::vector<double>{0, 0, 1, 0}));
  EXPECT_EQ(
      valuesOf(run("IsInf", {x}, test::attrs(Attribute::makeInt("detect_negative", 0)), 20)[0]),
      (std::vector<double>{1, 0, 0, 0}));
}

}  // namespace
}  // namespace onnxfold

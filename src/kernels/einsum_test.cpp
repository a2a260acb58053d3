// Tests of the einsum family: implicit output, full contraction, diagonals and
// an ellipsis batch matmul.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

constexpr auto floats = &test::floatValues;

TEST(Einsum, General) {
  const Tensor a = test::floatTensor({2, 3}, {1, 2, 3, 4, 5, 6});
  // Transpose (implicit output), trace-like diagonal, ellipsis batch matmul.
  const Tensor t =
      test::runOp("Einsum", {a}, test::attrs(Attribute::makeString("equation", "ji")), 12, 1)[0];
  // Implicit output "ij": a is indexed [j][i], so the result is a^T.
  EXPECT_EQ(t.dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(floats(t), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  const Tensor s = test::runOp("Einsum", {a, a},
                               test::attrs(Attribute::makeString("equation", "ij,ij->")), 12, 1)[0];
  EXPECT_EQ(s.at<float>(0), 91.0f);
  const Tensor sq = test::floatTensor({2, 2}, {1, 2, 3, 4});
  const Tensor d = test::runOp("Einsum", {sq},
                               test::attrs(Attribute::makeString("equation", "ii->i")), 12, 1)[0];
  EXPECT_EQ(floats(d), (std::vector<float>{1, 4}));
  const Tensor bm =
      test::runOp("Einsum", {a, test::floatTensor({3, 1}, {1, 1, 1})},
                  test::attrs(Attribute::makeString("equation", "...ij,jk->...ik")), 12, 1)[0];
  EXPECT_EQ(floats(bm), (std::vector<float>{6, 15}));
}

}  // namespace
}  // namespace onnxfold

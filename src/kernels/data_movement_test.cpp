// Tests of the data-movement machinery (data_movement.h): the blocked transpose
// against its scalar reference, and the fast and general transpose paths.
#include "kernels/data_movement.h"

#include <gtest/gtest.h>

#include <numeric>

#include "ir/error.h"
#include "kernels/kernel_test_util.h"
#include "test_util.h"

namespace onnxfold {
namespace {

const test::OpRunner run{21};

using test::iota;

TEST(DataMovement, BlockedTransposeMatchesScalar) {
  const int64_t shapes[][3] = {{1, 1, 1},  {1, 3, 5},   {1, 32, 32}, {1, 33, 65},
                               {3, 7, 40}, {2, 64, 31}, {1, 1, 100}};
  for (const auto& s : shapes) {
    const int64_t n = s[0] * s[1] * s[2];
    std::vector<uint32_t> in(static_cast<size_t>(n)), a(in.size()), b(in.size());
    std::iota(in.begin(), in.end(), 1u);
    kernels::transpose2DScalar(in.data(), a.data(), s[0], s[1], s[2]);
    kernels::transpose2DBlocked(in.data(), b.data(), s[0], s[1], s[2]);
    EXPECT_EQ(a, b) << s[0] << "x" << s[1] << "x" << s[2];
  }
}

TEST(DataMovement, TransposeGeneralAndFastPathsAgree) {
  const Tensor x = iota({2, 3, 4});
  // [0,2,1] takes the batched 2-D path, [1,0,2] the general one.
  const Tensor a = run("Transpose", {x}, test::attrs(Attribute::makeInts("perm", {0, 2, 1})))[0];
  const Tensor b = run("Transpose", {x}, test::attrs(Attribute::makeInts("perm", {1, 0, 2})))[0];
  EXPECT_EQ(a.dims(), (std::vector<int64_t>{2, 4, 3}));
  EXPECT_EQ(a.at<float>(1), 4.0f);
  EXPECT_EQ(a.at<float>(3), 1.0f);
  EXPECT_EQ(b.dims(), (std::vector<int64_t>{3, 2, 4}));
  EXPECT_EQ(b.at<float>(4), 12.0f);
  EXPECT_THROW(run("Transpose", {x}, test::attrs(Attribute::makeInts("perm", {0, 0, 1}))), Error);
}

}  // namespace
}  // namespace onnxfold

// Tests of the det family: Det of a batch of matrices, one needing a row swap.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

constexpr auto floats = &test::floatValues;

TEST(Det, BatchOfMatrices) {
  const Tensor x = test::floatTensor({2, 3, 3}, {2, 0, 1, 1, 3, 2, 1, 1, 2,  //
                                                 0, 1, 0, 1, 0, 0, 0, 0, 1});
  const auto out = test::runOp("Det", {&x}, {}, 22, 1);
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{2}));
  EXPECT_NEAR(floats(out[0])[0], 6.0, 1e-5);  // 2(6-2) - 0 + 1(1-3)
  EXPECT_NEAR(floats(out[0])[1], -1.0, 1e-6);
}

}  // namespace
}  // namespace onnxfold

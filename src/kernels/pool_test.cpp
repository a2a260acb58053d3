// Tests of the pool family: MaxPool's indices (column-major storage_order) and
// AveragePool's count_include_pad.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

constexpr auto floats = &test::floatValues;

TEST(Pool, MaxPoolIndicesAndAveragePoolPadding) {
  const Tensor x = test::floatTensor({1, 1, 2, 3}, {1, 6, 3, 4, 5, 2});
  const auto r = test::runOp("MaxPool", {x},
                             test::attrs(Attribute::makeInts("kernel_shape", {2, 2}),
                                         Attribute::makeInt("storage_order", 1)),
                             12, 2);
  EXPECT_EQ(floats(r[0]), (std::vector<float>{6, 6}));
  // 6 is at (0,1): column-major index 1*2 + 0 = 2.
  EXPECT_EQ(r[1].at<int64_t>(0), 2);
  const auto avg = [&](int include) {
    return floats(test::runOp("AveragePool", {x},
                              test::attrs(Attribute::makeInts("kernel_shape", {2, 2}),
                                          Attribute::makeInts("pads", {1, 1, 0, 0}),
                                          Attribute::makeInt("count_include_pad", include)),
                              19, 1)[0]);
  };
  EXPECT_EQ(avg(0)[0], 1.0f);
  EXPECT_EQ(avg(1)[0], 0.25f);
}

}  // namespace
}  // namespace onnxfold

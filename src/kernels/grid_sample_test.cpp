// Tests of GridSample (padding modes) and AffineGrid.
#include <gtest/gtest.h>

#include "kernels/kernel_test_util.h"
#include "test_util.h"

namespace onnxfold {
namespace {

const test::OpRunner run{19};

constexpr auto floats = &test::floatValues;
using test::expectNear;

TEST(GridSample, PaddingModes) {
  const Tensor x = test::floatTensor({1, 1, 1, 2}, {10, 20});
  // x = -1.5 in normalized coordinates lies outside (align_corners 0).
  const Tensor g = test::floatTensor({1, 1, 1, 2}, {-1.5f, 0});
  expectNear(floats(run("GridSample", {x, g}, {}, 22)[0]), {0});
  expectNear(floats(run("GridSample", {x, g},
                        test::attrs(Attribute::makeString("padding_mode", "border")), 22)[0]),
             {10});
  const Tensor center = test::floatTensor({1, 1, 1, 2}, {0, 0});
  expectNear(floats(run("GridSample", {x, center}, {}, 22)[0]), {15});
}

TEST(AffineGrid, IdentityTheta) {
  const Tensor theta = test::floatTensor({1, 2, 3}, {1, 0, 0, 0, 1, 0});
  const auto out = run("AffineGrid", {theta, test::int64Tensor({4}, {1, 1, 1, 2})},
                       test::attrs(Attribute::makeInt("align_corners", 1)), 20);
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{1, 1, 2, 2}));
  expectNear(floats(out[0]), {-1, 0, 1, 0});
}

}  // namespace
}  // namespace onnxfold

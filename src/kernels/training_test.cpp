// Tests of the training family: Momentum in nesterov mode.
#include <gtest/gtest.h>

#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

constexpr auto floats = &test::floatValues;

TEST(Training, MomentumNesterov) {
  const Tensor r = test::floatTensor({}, {0.1f});
  const Tensor t = test::int64Tensor({}, {1});
  const Tensor x = test::floatTensor({1}, {1});
  const Tensor g = test::floatTensor({1}, {2});
  const Tensor v = test::floatTensor({1}, {3});
  const auto out = test::runOp(
      "Momentum", {&r, &t, &x, &g, &v},
      test::attrs(Attribute::makeFloat("alpha", 0.5f), Attribute::makeFloat("beta", 0.25f),
                  Attribute::makeString("mode", "nesterov"),
                  Attribute::makeFloat("norm_coefficient", 0.0f)),
      1, 2, "ai.onnx.preview.training");
  const double vn = 0.5 * 3 + 0.25 * 2;
  EXPECT_NEAR(floats(out[1])[0], vn, 1e-6);
  EXPECT_NEAR(floats(out[0])[0], 1 - 0.1 * (2 + 0.5 * vn), 1e-6);
}

}  // namespace
}  // namespace onnxfold

// Tests of the losses family: NegativeLogLikelihoodLoss's weights,
// ignore_index and reductions, and SoftmaxCrossEntropyLoss's log_prob.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

constexpr auto floats = &test::floatValues;

TEST(Losses, NllLossWeightsAndIgnoreIndex) {
  const Tensor x = test::floatTensor({2, 3}, {-1, -2, -3, -4, -5, -6});
  const Tensor target = test::int64Tensor({2}, {2, 0});
  const Tensor weight = test::floatTensor({3}, {0.5f, 1, 2});
  const auto none = test::runOp("NegativeLogLikelihoodLoss", {&x, &target, &weight},
                                test::attrs(Attribute::makeString("reduction", "none")), 22, 1);
  EXPECT_EQ(floats(none[0]), (std::vector<float>{6, 2}));
  const auto mean = test::runOp("NegativeLogLikelihoodLoss", {&x, &target, &weight}, {}, 22, 1);
  EXPECT_NEAR(floats(mean[0])[0], 8.0 / 2.5, 1e-6);
  const auto ignored = test::runOp("NegativeLogLikelihoodLoss", {&x, &target, &weight},
                                   test::attrs(Attribute::makeInt("ignore_index", 0)), 22, 1);
  EXPECT_NEAR(floats(ignored[0])[0], 6.0 / 2.0, 1e-6);
  EXPECT_TRUE(ignored[0].dims().empty());
}

TEST(Losses, SoftmaxCrossEntropyLogProb) {
  const Tensor x = test::floatTensor({1, 2, 2}, {0, 1, 0, 1});  // [N, C, d1]
  const Tensor target = test::int64Tensor({1, 2}, {0, 1});
  const auto out = test::runOp("SoftmaxCrossEntropyLoss", std::vector<const Tensor*>{&x, &target},
                               test::attrs(Attribute::makeString("reduction", "sum")), 13, 2);
  const double lp = std::log(0.5);
  for (float v : floats(out[1]))
    EXPECT_NEAR(v, lp, 1e-6);
  EXPECT_NEAR(floats(out[0])[0], -2 * lp, 1e-6);
}

}  // namespace
}  // namespace onnxfold

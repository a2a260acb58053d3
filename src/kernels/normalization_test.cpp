// Tests of the normalization family: BatchNormalization in inference and
// training mode, LayerNormalization's optional statistics outputs, opset 18
// vs 21 GroupNormalization parameters, LRN, LpNormalization and MVN.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/error.h"
#include "kernels/common.h"
#include "kernels/kernel_test_util.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

const test::OpRunner run{21};

constexpr auto floats = &test::floatValues;

// The tolerance of every comparison below.
constexpr float kTol = 1e-4f;

TEST(Normalization, BatchNormInferenceAndTraining) {
  const Tensor x = test::floatTensor({2, 1, 2}, {1, 2, 3, 4});
  const Tensor scale = test::floatTensor({1}, {2});
  const Tensor bias = test::floatTensor({1}, {1});
  const Tensor mean = test::floatTensor({1}, {2});
  const Tensor var = test::floatTensor({1}, {4});
  const auto inf = run("BatchNormalization", {x, scale, bias, mean, var},
                       test::attrs(Attribute::makeFloat("epsilon", 0.0f)), 15);
  test::expectNear(floats(inf[0]), {0, 1, 2, 3}, kTol);
  // Training: batch mean 2.5, population variance 1.25.
  const auto tr =
      run("BatchNormalization", {x, scale, bias, mean, var},
          test::attrs(Attribute::makeFloat("epsilon", 0.0f), Attribute::makeInt("training_mode", 1),
                      Attribute::makeFloat("momentum", 0.5f)),
          15, 3);
  const float inv = 1.0f / std::sqrt(1.25f);
  test::expectNear(
      floats(tr[0]),
      {-1.5f * inv * 2 + 1, -0.5f * inv * 2 + 1, 0.5f * inv * 2 + 1, 1.5f * inv * 2 + 1}, kTol);
  EXPECT_EQ(tr[1].dims(), (std::vector<int64_t>{1}));
  test::expectNear(floats(tr[1]), {2.25f}, kTol);
  test::expectNear(floats(tr[2]), {2.625f}, kTol);
}

TEST(Normalization, LayerNormStatisticsOutputs) {
  const Tensor x = test::floatTensor({2, 2}, {1, 3, 2, 4});
  const Tensor scale = test::floatTensor({2}, {1, 1});
  const auto r = run("LayerNormalization", {x, scale},
                     test::attrs(Attribute::makeFloat("epsilon", 0.0f)), 17, 3);
  test::expectNear(floats(r[0]), {-1, 1, -1, 1}, kTol);
  EXPECT_EQ(r[1].dims(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(r[1].dtype(), DataType::kFloat);
  test::expectNear(floats(r[1]), {2, 3}, kTol);
  test::expectNear(floats(r[2]), {1, 1}, kTol);
}

TEST(Normalization, GroupNormScaleShapeByOpset) {
  const Tensor x = test::floatTensor({1, 4, 1}, {1, 3, 5, 9});
  const auto attrs = [] {
    return test::attrs(Attribute::makeInt("num_groups", 2), Attribute::makeFloat("epsilon", 0.0f));
  };
  // Opset 18: per-group scale; 21: per-channel.
  const auto g18 =
      run("GroupNormalization",
          {x, test::floatTensor({2}, {1, 2}), test::floatTensor({2}, {0, 10})}, attrs(), 18);
  test::expectNear(floats(g18[0]), {-1, 1, 8, 12}, kTol);
  const auto g21 = run(
      "GroupNormalization",
      {x, test::floatTensor({4}, {1, 2, 3, 4}), test::floatTensor({4}, {0, 0, 0, 0})}, attrs(), 21);
  test::expectNear(floats(g21[0]), {-1, 2, -3, 4}, kTol);
}

TEST(Normalization, LrnLpAndMvn) {
  const Tensor x = test::floatTensor({1, 3, 1, 1}, {1, 2, 3});
  const auto lrn =
      run("LRN", {x},
          test::attrs(Attribute::makeInt("size", 3), Attribute::makeFloat("alpha", 3.0f),
                      Attribute::makeFloat("beta", 1.0f), Attribute::makeFloat("bias", 0.0f)),
          13);
  // Channel 0 sums channels 0..1: 1 + 4 = 5 -> 1 / 5.
  test::expectNear(floats(lrn[0]), {1.0f / 5, 2.0f / 14, 3.0f / 13}, kTol);
  const auto l1 = run("LpNormalization", {x},
                      test::attrs(Attribute::makeInt("axis", 1), Attribute::makeInt("p", 1)), 13);
  test::expectNear(floats(l1[0]), {1.0f / 6, 2.0f / 6, 3.0f / 6}, kTol);
  const auto mvn =
      run("MeanVarianceNormalization", {x}, test::attrs(Attribute::makeInts("axes", {1})), 13);
  const float sd = std::sqrt(2.0f / 3.0f);
  test::expectNear(floats(mvn[0]), {-1 / sd, 0, 1 / sd}, kTol);
  EXPECT_THROW(run("LRN", {x}, {}, 13), Error);  // size is required
}

TEST(Normalization, RmsNormAndHalf) {
  Tensor x(DataType::kFloat16, {1, 2});
  kernels::mutableDataAs<uint16_t>(x)[0] = kernels::floatToHalf(3.0f);
  kernels::mutableDataAs<uint16_t>(x)[1] = kernels::floatToHalf(4.0f);
  Tensor s(DataType::kFloat16, {2});
  kernels::mutableDataAs<uint16_t>(s)[0] = kernels::floatToHalf(1.0f);
  kernels::mutableDataAs<uint16_t>(s)[1] = kernels::floatToHalf(2.0f);
  const auto r =
      run("RMSNormalization", {x, s}, test::attrs(Attribute::makeFloat("epsilon", 0.0f)), 23);
  ASSERT_EQ(r[0].dtype(), DataType::kFloat16);
  const float rms = std::sqrt(12.5f);
  EXPECT_NEAR(kernels::halfToFloat(r[0].at<uint16_t>(0)), 3.0f / rms, 1e-3f);
  EXPECT_NEAR(kernels::halfToFloat(r[0].at<uint16_t>(1)), 8.0f / rms, 1e-3f);
}

}  // namespace
}  // namespace onnxfold

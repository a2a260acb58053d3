// Tests of the ml family: LabelEncoder (string keys to floats, the -0.0
// default), ArrayFeatureExtractor and Binarizer.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/kernel_test_util.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

constexpr auto floats = &test::floatValues;

TEST(Ml, LabelEncoderAndFeatureOps) {
  const Tensor x = test::stringTensor({3}, {"a", "z", "b"});
  const auto le = test::runOp("LabelEncoder", {&x},
                              test::attrs(test::stringsAttr("keys_strings", {"a", "b"}),
                                          Attribute::makeFloats("values_floats", {1.5f, 2.5f})),
                              2, 1, "ai.onnx.ml");
  EXPECT_EQ(le[0].dtype(), DataType::kFloat);
  const auto lv = floats(le[0]);
  EXPECT_EQ(lv[0], 1.5f);
  EXPECT_TRUE(std::signbit(lv[1]) && lv[1] == 0);  // default_float is -0.0
  EXPECT_EQ(lv[2], 2.5f);
  const Tensor m = test::floatTensor({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor idx = test::int64Tensor({2}, {2, 0});
  const auto afe = test::runOp("ArrayFeatureExtractor", std::vector<const Tensor*>{&m, &idx}, {}, 1,
                               1, "ai.onnx.ml");
  EXPECT_EQ(floats(afe[0]), (std::vector<float>{3, 1, 6, 4}));
  const auto bin = test::runOp(
      "Binarizer", {&m}, test::attrs(Attribute::makeFloat("threshold", 3.5f)), 1, 1, "ai.onnx.ml");
  EXPECT_EQ(floats(bin[0]), (std::vector<float>{0, 0, 0, 1, 1, 1}));
}

}  // namespace
}  // namespace onnxfold

// Tests of Resize: shapes and values (nearest on strings, linear/cubic, axes,
// keep_aspect_ratio_policy, tf_crop_and_resize, antialias), the legacy opsets
// and symbols kept by inference.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "kernels/kernel_test_util.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

const test::OpRunner run{19};

constexpr auto floats = &test::floatValues;
using test::expectNear;

TEST(Resize, NearestUpsampleStringsAndAxes) {
  Tensor x(DataType::kString, {1, 2});
  x.mutableStrings() = {"a", "b"};
  const auto out = run("Resize", {x, Tensor(), test::floatTensor({1}, {2.0f})},
                       test::attrs(Attribute::makeInts("axes", {1})));
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(out[0].strings(), (std::vector<std::string>{"a", "a", "b", "b"}));
}

TEST(Resize, LinearHalfPixelAndAlignCorners) {
  const Tensor x = test::floatTensor({1, 2}, {0, 1});
  const auto hp = run("Resize", {x, Tensor(), Tensor(), test::int64Tensor({2}, {1, 4})},
                      test::attrs(Attribute::makeString("mode", "linear")));
  expectNear(floats(hp[0]), {0, 0.25f, 0.75f, 1});
  const auto ac =
      run("Resize", {x, Tensor(), Tensor(), test::int64Tensor({2}, {1, 3})},
          test::attrs(Attribute::makeString("mode", "linear"),
                      Attribute::makeString("coordinate_transformation_mode", "align_corners")));
  expectNear(floats(ac[0]), {0, 0.5f, 1});
}

TEST(Resize, CubicKeepsConstantsAndPolicyShapes) {
  const Tensor x = test::floatTensor({2, 4}, std::vector<float>(8, 3.0f));
  const auto c = run("Resize", {x, Tensor(), test::floatTensor({2}, {1.5f, 0.5f})},
                     test::attrs(Attribute::makeString("mode", "cubic")));
  ASSERT_EQ(c[0].dims(), (std::vector<int64_t>{3, 2}));
  expectNear(floats(c[0]), std::vector<float>(6, 3.0f));
  // not_smaller: scale max(4/2, 4/4) = 2 -> [4, 8].
  const auto ns =
      run("Resize", {x, Tensor(), Tensor(), test::int64Tensor({2}, {4, 4})},
          test::attrs(Attribute::makeString("keep_aspect_ratio_policy", "not_smaller")));
  EXPECT_EQ(ns[0].dims(), (std::vector<int64_t>{4, 8}));
}

TEST(Resize, CropAndResizeExtrapolates) {
  const Tensor x = test::floatTensor({1, 2}, {1, 2});
  const auto out = run(
      "Resize", {x, test::floatTensor({4}, {0, 0, 1, 2}), Tensor(), test::int64Tensor({2}, {1, 3})},
      test::attrs(Attribute::makeString("mode", "linear"),
                  Attribute::makeString("coordinate_transformation_mode", "tf_crop_and_resize"),
                  Attribute::makeFloat("extrapolation_value", -1.0f)));
  expectNear(floats(out[0]), {1, 2, -1});
}

TEST(Resize, LegacyOpsets) {
  // Resize-10: scales is input 1, asymmetric coordinates, nearest floors when upsampling.
  const Tensor x = test::floatTensor({1, 3}, {1, 2, 3});
  const auto r10 = run("Resize", {x, test::floatTensor({2}, {1, 2})}, {}, 10);
  EXPECT_EQ(floats(r10[0]), (std::vector<float>{1, 1, 2, 2, 3, 3}));
  // Resize-11: roi and scales are required but may be empty next to sizes.
  const auto r11 = run(
      "Resize",
      {x, test::floatTensor({0}, {}), test::floatTensor({0}, {}), test::int64Tensor({2}, {1, 6})},
      test::attrs(Attribute::makeString("coordinate_transformation_mode", "tf_half_pixel_for_nn")),
      11);
  EXPECT_EQ(floats(r11[0]), (std::vector<float>{1, 2, 2, 3, 3, 3}));
  EXPECT_THROW(run("Resize", {x, Tensor(), test::floatTensor({2}, {1, 2})},
                   test::attrs(Attribute::makeString("coordinate_transformation_mode",
                                                     "tf_half_pixel_for_nn")),
                   13),
               Error);
}

TEST(Resize, AntialiasAveragesWhenDownsampling) {
  // Linear antialias at scale 1/2 is a [1/4, 1/2, 1/4]-like tent over the input.
  const Tensor x = test::floatTensor({1, 4}, {0, 4, 8, 12});
  const auto out =
      run("Resize", {x, Tensor(), test::floatTensor({2}, {1, 0.5f})},
          test::attrs(Attribute::makeString("mode", "linear"), Attribute::makeInt("antialias", 1)));
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{1, 2}));
  // Output 0 centres on input 0.5: taps -1..2 (edge-clamped) weighted 1,3,3,1.
  expectNear(floats(out[0]), {(0 + 3 * 0 + 3 * 4 + 8) / 8.0f, (4 + 3 * 8 + 3 * 12 + 12) / 8.0f});
}

TEST(Resize, InferKeepsSymbolsOnUnscaledAxes) {
  test::ModelBuilder b(19);
  Value* x = b.input("x", DataType::kFloat, {-1, 3, 8, 8});
  Tensor sc = test::floatTensor({4}, {1, 1, 2, 0.5f});
  sc.name = "scales";
  Value* s = b.initializer(sc);
  Node* n = b.node("Resize", {x, nullptr, s});
  InferContext ic(*n, 19, 3, 1);
  ic.input_types = {&x->type, nullptr, &s->type};
  ic.input_values = {nullptr, nullptr, &sc};
  OpRegistry::instance().find("", "Resize", 19)->infer(ic);
  const Shape& out = *ic.output_types[0].shape;
  ASSERT_EQ(out.rank(), 4u);
  EXPECT_EQ(out.dims[0].param, x->type.shape->dims[0].param);
  EXPECT_EQ(out.dims[1].value, 3);
  EXPECT_EQ(out.dims[2].value, 16);
  EXPECT_EQ(out.dims[3].value, 4);
}

}  // namespace
}  // namespace onnxfold

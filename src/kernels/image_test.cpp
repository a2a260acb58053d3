// Tests of the image family: Resize shapes and values (nearest on strings,
// linear/cubic, axes, keep_aspect_ratio_policy, tf_crop_and_resize), GridSample
// padding modes, AffineGrid, RoiAlign and NonMaxSuppression.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "kernels/common.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

std::vector<Tensor> run(const std::string& op, std::vector<Tensor> ins,
                        std::vector<Attribute> attrs = {}, int64_t opset = 19) {
  return test::runOp(op, std::move(ins), std::move(attrs), opset, 1);
}

constexpr auto floats = &test::floatValues;

void expectNear(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5f) << "at " << i;
}

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

TEST(RoiAlign, AverageOfConstantIsConstant) {
  const Tensor x = test::floatTensor({1, 1, 4, 4}, std::vector<float>(16, 2.0f));
  const auto out = run(
      "RoiAlign", {x, test::floatTensor({1, 4}, {0, 0, 3, 3}), test::int64Tensor({1}, {0})},
      test::attrs(Attribute::makeInt("output_height", 2), Attribute::makeInt("output_width", 2)),
      16);
  expectNear(floats(out[0]), {2, 2, 2, 2});
}

TEST(NonMaxSuppression, SuppressesOverlaps) {
  const Tensor boxes = test::floatTensor({1, 3, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3});
  const Tensor scores = test::floatTensor({1, 1, 3}, {0.9f, 0.8f, 0.7f});
  const auto out =
      run("NonMaxSuppression",
          {boxes, scores, test::int64Tensor({1}, {3}), test::floatTensor({1}, {0.5f})}, {}, 11);
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{2, 3}));
  std::vector<int64_t> got;
  for (int i = 0; i < 6; ++i)
    got.push_back(out[0].at<int64_t>(static_cast<size_t>(i)));
  EXPECT_EQ(got, (std::vector<int64_t>{0, 0, 0, 0, 0, 2}));
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

TEST(NonMaxSuppression, InferCountsWhenValuesAreKnown) {
  test::ModelBuilder b(11);
  Tensor boxes = test::floatTensor({1, 2, 4}, {0, 0, 1, 1, 5, 5, 6, 6});
  Tensor scores = test::floatTensor({1, 1, 2}, {0.5f, 0.6f});
  Tensor mx = test::int64Tensor({1}, {5});
  boxes.name = "b";
  scores.name = "s";
  mx.name = "m";
  Value* vb = b.initializer(boxes);
  Value* vs = b.initializer(scores);
  Value* vm = b.initializer(mx);
  Node* n = b.node("NonMaxSuppression", {vb, vs, vm});
  InferContext ic(*n, 11, 3, 1);
  ic.input_types = {&vb->type, &vs->type, &vm->type};
  ic.input_values = {&boxes, &scores, &mx};
  OpRegistry::instance().find("", "NonMaxSuppression", 11)->infer(ic);
  EXPECT_EQ(ic.output_types[0].shape->dims[0].value, 2);
  // Without max_output_boxes_per_class nothing is selected.
  EXPECT_EQ(run("NonMaxSuppression", {boxes, scores}, {}, 11)[0].dims(),
            (std::vector<int64_t>{0, 3}));
}

TEST(MaxRoiPool, QuadrantMaxima) {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(i);
  const auto out =
      run("MaxRoiPool",
          {test::floatTensor({1, 1, 4, 4}, v), test::floatTensor({1, 5}, {0, 0, 0, 3, 3})},
          test::attrs(Attribute::makeInts("pooled_shape", {2, 2})), 22);
  expectNear(floats(out[0]), {5, 7, 13, 15});
}

}  // namespace
}  // namespace onnxfold

// Tests of RoiAlign, MaxRoiPool and NonMaxSuppression (values, and the output
// count inference reads from known inputs).
#include <gtest/gtest.h>

#include "kernels/kernel_test_util.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

const test::OpRunner run{19};

constexpr auto floats = &test::floatValues;
using test::expectNear;

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

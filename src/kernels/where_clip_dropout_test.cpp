// Tests of Where (strings), Clip (input and attribute versions) and Dropout
// (inference mask, training mode refused).
#include <gtest/gtest.h>

#include "ir/error.h"
#include "kernels/kernel_test_util.h"
#include "test_util.h"

namespace onnxfold {
namespace {

const test::OpRunner run{17};

using test::tensorOf;
using test::valuesOf;

TEST(WhereClipDropout, WhereStrings) {
  Tensor c = tensorOf(DataType::kBool, {2}, {1, 0});
  Tensor x(DataType::kString, {2});
  x.mutableStrings() = {"a", "b"};
  Tensor y(DataType::kString, {1});
  y.mutableStrings() = {"z"};
  const Tensor w = run("Where", {c, x, y})[0];
  EXPECT_EQ(w.strings(), (std::vector<std::string>{"a", "z"}));
}

TEST(WhereClipDropout, ClipVersionsAndDropout) {
  const Tensor x = tensorOf(DataType::kInt8, {4}, {-100, -1, 5, 100});
  const Tensor lo = tensorOf(DataType::kInt8, {}, {-5});
  EXPECT_EQ(valuesOf(run("Clip", {x, lo})[0]), (std::vector<double>{-5, -1, 5, 100}));
  const Tensor xf = tensorOf(DataType::kFloat, {3}, {-2, 0.5, 2});
  EXPECT_EQ(
      valuesOf(run("Clip", {xf},
                   test::attrs(Attribute::makeFloat("min", -1), Attribute::makeFloat("max", 1)),
                   6)[0]),
      (std::vector<double>{-1, 0.5, 1}));

  const std::vector<Tensor> d = run("Dropout", {xf}, {}, 13, 2);
  EXPECT_EQ(valuesOf(d[0]), valuesOf(xf));
  EXPECT_EQ(d[1].dtype(), DataType::kBool);
  EXPECT_EQ(valuesOf(d[1]), (std::vector<double>{1, 1, 1}));
  const Tensor ratio = tensorOf(DataType::kFloat, {}, {0.5});
  const Tensor yes = tensorOf(DataType::kBool, {}, {1});
  EXPECT_THROW(run("Dropout", {xf, ratio, yes}, {}, 13), Error);
}

}  // namespace
}  // namespace onnxfold

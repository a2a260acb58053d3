// Tests of the scatter family: ScatterElements and ScatterND reductions.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "kernels/kernel_test_util.h"
#include "test_util.h"

namespace onnxfold {
namespace {

const test::OpRunner run{21};

using test::i64;
constexpr auto floats = &test::floatValues;

TEST(Scatter, ScatterReductions) {
  const Tensor data = test::floatTensor({1, 5}, {1, 2, 3, 4, 5});
  const Tensor idx = i64({1, 2}, {1, 1});
  const Tensor upd = test::floatTensor({1, 2}, {2, 3});
  auto red = [&](const char* r, int64_t opset) {
    return floats(
        run("ScatterElements", {data, idx, upd},
            test::attrs(Attribute::makeInt("axis", 1), Attribute::makeString("reduction", r)),
            opset)[0]);
  };
  EXPECT_EQ(red("add", 16), (std::vector<float>{1, 7, 3, 4, 5}));
  EXPECT_EQ(red("mul", 16), (std::vector<float>{1, 12, 3, 4, 5}));
  EXPECT_EQ(red("max", 18), (std::vector<float>{1, 3, 3, 4, 5}));
  EXPECT_EQ(red("min", 18), (std::vector<float>{1, 2, 3, 4, 5}));
  EXPECT_THROW(red("max", 16), Error);  // max/min arrived at opset 18
  const Tensor nd = run("ScatterND",
                        {test::floatTensor({4}, {1, 2, 3, 4}), i64({2, 1}, {3, -4}),
                         test::floatTensor({2}, {10, 20})},
                        test::attrs(Attribute::makeString("reduction", "mul")), 18)[0];
  EXPECT_EQ(floats(nd), (std::vector<float>{20, 2, 3, 40}));
}

}  // namespace
}  // namespace onnxfold

// Tests of the conv_transpose family: ConvTranspose's check of kernel_shape
// against W.
#include <gtest/gtest.h>

#include <vector>

#include "ir/error.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

// ConvTranspose reads W by kernel_shape too: a larger one would read past W's end.
TEST(ConvTranspose, RefusesAKernelShapeThatDisagreesWithW) {
  const Tensor x = test::floatTensor({1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  const Tensor w = test::floatTensor({1, 2, 2, 2}, std::vector<float>(8, 1.0f));
  EXPECT_NO_THROW(test::runOp("ConvTranspose", {x, w},
                              test::attrs(Attribute::makeInts("kernel_shape", {2, 2})), 21, 1));
  EXPECT_THROW(test::runOp("ConvTranspose", {x, w},
                           test::attrs(Attribute::makeInts("kernel_shape", {3, 3})), 21, 1),
               Error);
}

}  // namespace
}  // namespace onnxfold

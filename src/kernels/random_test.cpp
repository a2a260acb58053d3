// Tests of the random family: the generators infer but never evaluate.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

TEST(Random, InferButNeverEvaluate) {
  const Tensor x = test::floatTensor({2}, {0.5f, 0.5f});
  EXPECT_THROW(test::runOp("Bernoulli", {&x}, {}, 22, 1), Error);
  const OpEntry* e = OpRegistry::instance().find("", "RandomUniformLike", 22);
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->flags & kOpNondeterministic);
  EXPECT_EQ(e->compute, nullptr);
}

}  // namespace
}  // namespace onnxfold

// Tests of the transpose family: block sizes whose square wraps int64 are
// errors (not a division by zero).
#include <gtest/gtest.h>

#include "ir/error.h"
#include "kernels/kernel_test_util.h"
#include "test_util.h"

namespace onnxfold {
namespace {

const test::OpRunner run{21};

using test::iota;

// Sizes that wrap int64 are errors, not wrong shapes (or a division by zero).
TEST(Transpose, HostileBlockSizesAreRefused) {
  const Tensor x = iota({1, 4, 2, 2});
  try {
    run("DepthToSpace", {x}, test::attrs(Attribute::makeInt("blocksize", int64_t{1} << 32)));
    ADD_FAILURE() << "blocksize^2 wrapped to 0 and was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("overflows int64"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run("SpaceToDepth", {x}, test::attrs(Attribute::makeInt("blocksize", 3037000500))),
               Error);
}

}  // namespace
}  // namespace onnxfold

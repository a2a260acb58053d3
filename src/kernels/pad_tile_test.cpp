// Tests of the replicating and padding ops: Pad modes and cropping, Expand and
// Tile values, and Tile repeats that wrap int64.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "kernels/kernel_test_util.h"
#include "test_util.h"

namespace onnxfold {
namespace {

const test::OpRunner run{21};

constexpr auto floats = &test::floatValues;

TEST(PadTile, PadModes) {
  const Tensor x = test::floatTensor({3}, {1, 2, 3});
  const Tensor pads = test::int64Tensor({2}, {2, 2});
  auto pad = [&](const char* mode) {
    return floats(run("Pad", {x, pads}, test::attrs(Attribute::makeString("mode", mode)))[0]);
  };
  EXPECT_EQ(pad("constant"), (std::vector<float>{0, 0, 1, 2, 3, 0, 0}));
  EXPECT_EQ(pad("reflect"), (std::vector<float>{3, 2, 1, 2, 3, 2, 1}));
  EXPECT_EQ(pad("edge"), (std::vector<float>{1, 1, 1, 2, 3, 3, 3}));
  EXPECT_EQ(pad("wrap"), (std::vector<float>{2, 3, 1, 2, 3, 1, 2}));
  // Negative pads crop.
  EXPECT_EQ(floats(run("Pad", {x, test::int64Tensor({2}, {-1, 0})})[0]),
            (std::vector<float>{2, 3}));
}

TEST(PadTile, ExpandTile) {
  const Tensor x = test::floatTensor({2, 1}, {1, 2});
  EXPECT_EQ(floats(run("Expand", {x, test::int64Tensor({2}, {2, 3})})[0]),
            (std::vector<float>{1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(floats(run("Tile", {x, test::int64Tensor({2}, {2, 2})})[0]),
            (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2}));
  // Repeats that wrap the output size, or are negative: refused, never a wrong constant.
  EXPECT_THROW(run("Tile", {x, test::int64Tensor({2}, {int64_t{1} << 62, 4})}), Error);
  EXPECT_THROW(run("Tile", {x, test::int64Tensor({2}, {-1, 2})}), Error);
}

}  // namespace
}  // namespace onnxfold

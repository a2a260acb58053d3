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

// Negative pads crop first and the kept range is then padded, as in ONNX Runtime (each
// expectation below is what onnxruntime-node 1.x computes for x = [1, 2, 3, 4]); what ONNX
// Runtime refuses at run time must fail here too, so that it never becomes a constant.
TEST(PadTile, CropThenPadAsOnnxRuntime) {
  const Tensor x = test::floatTensor({4}, {1, 2, 3, 4});
  auto pad = [&](const char* mode, int64_t begin, int64_t end) {
    return floats(run("Pad", {x, test::int64Tensor({2}, {begin, end})},
                      test::attrs(Attribute::makeString("mode", mode)))[0]);
  };
  EXPECT_EQ(pad("wrap", -2, 5), (std::vector<float>{3, 4, 3, 4, 3, 4, 3}));
  EXPECT_EQ(pad("wrap", 3, -1), (std::vector<float>{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(pad("reflect", -1, 2), (std::vector<float>{2, 3, 4, 3, 2}));
  EXPECT_EQ(pad("reflect", 3, 0), (std::vector<float>{4, 3, 2, 1, 2, 3, 4}));
  EXPECT_EQ(pad("edge", -2, 5), (std::vector<float>{3, 4, 4, 4, 4, 4, 4}));
  EXPECT_EQ(pad("edge", 1, -3), (std::vector<float>{1, 1}));
  EXPECT_EQ(pad("reflect", -3, 0), (std::vector<float>{4}));
  EXPECT_EQ(pad("constant", -5, 3), (std::vector<float>{0, 0}));
  EXPECT_EQ(pad("constant", -2, -2), (std::vector<float>{}));
  // Refused by ONNX Runtime: nothing left to repeat, or a reflection longer than the range.
  EXPECT_THROW(pad("reflect", -5, 3), Error);
  EXPECT_THROW(pad("edge", -2, -2), Error);
  EXPECT_THROW(pad("wrap", -4, 0), Error);
  EXPECT_THROW(pad("reflect", 5, 0), Error);
  EXPECT_THROW(pad("reflect", 0, 4), Error);
  EXPECT_THROW(pad("reflect", -3, 3), Error);  // one element left cannot be reflected
  EXPECT_THROW(pad("reflect", 1, -3), Error);
  EXPECT_THROW(pad("reflect", -1, 3), Error);
  // An empty input: fine while the output is empty too; wrap is refused outright.
  const Tensor empty = test::floatTensor({2, 0}, {});
  EXPECT_EQ(run("Pad", {empty, test::int64Tensor({4}, {1, 0, 1, 0})},
                test::attrs(Attribute::makeString("mode", "edge")))[0]
                .dims(),
            (std::vector<int64_t>{4, 0}));
  EXPECT_THROW(run("Pad", {empty, test::int64Tensor({4}, {0, 0, 0, 0})},
                   test::attrs(Attribute::makeString("mode", "wrap"))),
               Error);
  EXPECT_THROW(run("Pad", {test::floatTensor({0}, {}), test::int64Tensor({2}, {1, 1})},
                   test::attrs(Attribute::makeString("mode", "edge"))),
               Error);
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

// Tests of TopK (tie order), Unique (sorted and unsorted, by axis) and
// ArgMax/ArgMin (select_last_index, keepdims).
#include <gtest/gtest.h>

#include "ir/error.h"
#include "kernels/kernel_test_util.h"
#include "test_util.h"

namespace onnxfold {
namespace {

const test::OpRunner run{21};

using test::i64;
using test::ints;
constexpr auto floats = &test::floatValues;

TEST(Sorting, TopKTiesKeepSmallerIndexFirst) {
  const Tensor x = test::floatTensor({6}, {1, 3, 3, 2, 3, 1});
  const auto out = run("TopK", {x, i64({1}, {4})}, {}, 11, 2);
  EXPECT_EQ(floats(out[0]), (std::vector<float>{3, 3, 3, 2}));
  EXPECT_EQ(ints(out[1]), (std::vector<int64_t>{1, 2, 4, 3}));
  const auto small =
      run("TopK", {x, i64({1}, {3})}, test::attrs(Attribute::makeInt("largest", 0)), 11, 2);
  EXPECT_EQ(ints(small[1]), (std::vector<int64_t>{0, 5, 3}));
  EXPECT_THROW(run("TopK", {x, i64({1}, {7})}, {}, 11, 2), Error);
}

TEST(Sorting, UniqueSortedAndUnsorted) {
  const Tensor x = test::floatTensor({6}, {2, 1, 1, 3, 4, 3});
  auto u = run("Unique", {x}, test::attrs(Attribute::makeInt("sorted", 0)), 11, 4);
  EXPECT_EQ(floats(u[0]), (std::vector<float>{2, 1, 3, 4}));
  EXPECT_EQ(ints(u[1]), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(ints(u[2]), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(ints(u[3]), (std::vector<int64_t>{1, 2, 2, 1}));
  u = run("Unique", {x}, {}, 11, 4);
  EXPECT_EQ(floats(u[0]), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(ints(u[1]), (std::vector<int64_t>{1, 0, 3, 4}));
  EXPECT_EQ(ints(u[2]), (std::vector<int64_t>{1, 0, 0, 2, 3, 2}));
  const Tensor rows = test::floatTensor({3, 3}, {1, 0, 0, 1, 0, 0, 2, 3, 4});
  u = run("Unique", {rows}, test::attrs(Attribute::makeInt("axis", 0)), 11, 4);
  EXPECT_EQ(u[0].dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ints(u[3]), (std::vector<int64_t>{2, 1}));
}

TEST(Sorting, ArgMaxSelectLastIndexAndKeepdims) {
  const Tensor x = test::floatTensor({2, 3}, {1, 5, 5, 7, 7, 2});
  const Tensor first = run("ArgMax", {x}, test::attrs(Attribute::makeInt("axis", 1)), 13)[0];
  EXPECT_EQ(first.dims(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(ints(first), (std::vector<int64_t>{1, 0}));
  const Tensor last =
      run("ArgMax", {x},
          test::attrs(Attribute::makeInt("axis", 1), Attribute::makeInt("keepdims", 0),
                      Attribute::makeInt("select_last_index", 1)),
          13)[0];
  EXPECT_EQ(last.dims(), (std::vector<int64_t>{2}));
  EXPECT_EQ(ints(last), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(ints(run("ArgMin", {x}, {}, 13)[0]), (std::vector<int64_t>{0, 0, 1}));
}

}  // namespace
}  // namespace onnxfold

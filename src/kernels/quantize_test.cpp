// Tests of the quantization ops: the Highway quantize kernel against its scalar
// reference (sizes around the vector width, ties, saturation, NaN), blocked
// QuantizeLinear, per-axis DequantizeLinear and DynamicQuantizeLinear.
#include "kernels/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "ir/error.h"
#include "kernels/kernel_test_util.h"
#include "test_util.h"

namespace onnxfold {
namespace {

using test::sizesAroundVector;

template <class Q>
void checkQuantize(float scale, int32_t zp) {
  for (size_t n : sizesAroundVector()) {
    std::mt19937 g(static_cast<uint32_t>(n + 7));
    std::uniform_real_distribution<float> u(-400.0f, 400.0f);
    std::vector<float> x(n);
    for (float& v : x)
      v = u(g);
    const float specials[] = {2.5f * scale, -2.5f * scale, 0.5f * scale, std::nanf(""),
                              1e30f,        -1e30f,        INFINITY};
    for (size_t i = 0; i < n && i < 7; ++i)
      x[i] = specials[i];
    std::vector<Q> a(n), b(n);
    kernels::quantizeF32Scalar(x.data(), n, scale, zp, a.data());
    kernels::quantizeF32Hwy(x.data(), n, scale, zp, b.data());
    EXPECT_EQ(a, b) << "n=" << n;
  }
}

TEST(Quantize, HwyMatchesScalar) {
  checkQuantize<int8_t>(1.0f, 0);
  checkQuantize<int8_t>(0.5f, -3);
  checkQuantize<uint8_t>(2.0f, 128);
  checkQuantize<uint8_t>(0.1f, 0);
  // Round half to even, then saturate.
  const float x[] = {2.5f, 3.5f, -2.5f, 1000.0f, -1000.0f};
  int8_t y[5];
  kernels::quantizeF32Scalar(x, 5, 1.0f, 0, y);
  EXPECT_EQ(std::vector<int8_t>(y, y + 5), (std::vector<int8_t>{2, 4, -2, 127, -128}));
}

// ------------------------------------------------------------ through the registry

const test::OpRunner run{21};
using test::bytesOf;

Tensor bytesTensor(DataType t, std::vector<int64_t> dims, const std::vector<uint8_t>& bytes) {
  return Tensor(t, std::move(dims), Buffer::copyOf(bytes.data(), bytes.size()));
}

TEST(Quantize, BlockedAndDequantizePerAxis) {
  // x [2, 4], blocks of 2 along axis 1: scale [2, 2].
  const Tensor x = test::floatTensor({2, 4}, {1, 2, 3, 4, -1, -2, -3, -40});
  const Tensor s = test::floatTensor({2, 2}, {1, 2, 0.5f, 4});
  Tensor zp(DataType::kInt8, {2, 2});
  const Tensor y =
      run("QuantizeLinear", {x, s, zp},
          test::attrs(Attribute::makeInt("axis", 1), Attribute::makeInt("block_size", 2)))[0];
  ASSERT_EQ(y.dtype(), DataType::kInt8);
  const std::vector<int8_t> want{1, 2, 2, 2, -2, -4, -1, -10};
  EXPECT_EQ(std::vector<int8_t>(y.bytes(), y.bytes() + 8), want);
  // Per-axis dequantize of uint8 along axis 0.
  const Tensor q = bytesTensor(DataType::kUint8, {2, 2}, {10, 20, 30, 40});
  const Tensor ds = test::floatTensor({2}, {0.5f, 2.0f});
  const Tensor dz = bytesTensor(DataType::kUint8, {2}, {10, 20});
  const Tensor d =
      run("DequantizeLinear", {q, ds, dz}, test::attrs(Attribute::makeInt("axis", 0)))[0];
  EXPECT_EQ(d.at<float>(0), 0.0f);
  EXPECT_EQ(d.at<float>(1), 5.0f);
  EXPECT_EQ(d.at<float>(2), 20.0f);
  EXPECT_EQ(d.at<float>(3), 40.0f);
  // A wrong blocked scale shape is reported.
  const Tensor bad = test::floatTensor({2, 3}, {1, 1, 1, 1, 1, 1});
  EXPECT_THROW(run("QuantizeLinear", {x, bad},
                   test::attrs(Attribute::makeInt("axis", 1), Attribute::makeInt("block_size", 2))),
               Error);
}

TEST(Quantize, DynamicQuantizeLinear) {
  const Tensor x = test::floatTensor({6}, {0, 2, -3, -2.5f, 1.34f, 0.5f});
  const std::vector<Tensor> out = run("DynamicQuantizeLinear", {x}, {}, 11, 3);
  EXPECT_NEAR(out[1].at<float>(0), 0.019607844f, 1e-9);
  EXPECT_EQ(out[2].at<uint8_t>(0), 153);
  const std::vector<uint8_t> want{153, 255, 0, 26, 221, 179};
  EXPECT_EQ(bytesOf(out[0]), want);
}

// An infinite input makes the zero point NaN (-inf / inf): it is 0, not an undefined conversion
// (the asan preset's UBSan fails the test otherwise).
TEST(Quantize, DynamicQuantizeLinearOfAnInfiniteInputIsDefined) {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = test::floatTensor({3}, {-inf, 1, 2});
  const std::vector<Tensor> out = run("DynamicQuantizeLinear", {x}, {}, 11, 3);
  EXPECT_EQ(out[2].at<uint8_t>(0), 0);
}

// Scales and zero points are indexed modulo their count: an empty one is an error, not a
// division by zero (SIGFPE) or a read past the end.
TEST(Quantize, QLinearOpsRefuseEmptyScalesAndZeroPoints) {
  auto u8 = [](std::vector<int64_t> dims, const std::vector<double>& v) {
    return test::tensorOf(DataType::kUint8, std::move(dims), v);
  };
  const Tensor a = u8({2, 2}, {1, 2, 3, 4});
  const Tensor one = test::floatTensor({}, {1});
  const Tensor zero = u8({}, {0});
  const Tensor empty = test::floatTensor({0}, {});
  EXPECT_EQ(run("QLinearMatMul", {a, one, zero, a, one, zero, one, zero})[0].numElements(), 4);
  for (size_t i : {1, 4, 6}) {
    std::vector<Tensor> ins{a, one, zero, a, one, zero, one, zero};
    ins[i] = empty;
    EXPECT_THROW(run("QLinearMatMul", ins), Error) << "input " << i;
  }
  std::vector<Tensor> ins{a, one, zero, a, one, zero, one, u8({0}, {})};
  EXPECT_THROW(run("QLinearMatMul", ins), Error);
  // QLinearConv: an empty w_scale, and a bias shorter than the output channels.
  const Tensor x = u8({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor w = u8({2, 1, 1, 1}, {1, 2});
  EXPECT_THROW(run("QLinearConv", {x, one, zero, w, empty, zero, one, zero}), Error);
  EXPECT_THROW(run("QLinearConv", {x, one, zero, w, one, zero, one, zero,
                                   test::tensorOf(DataType::kInt32, {1}, {5})}),
               Error);
}

}  // namespace
}  // namespace onnxfold

// Tests of the signal family: DFT against the defining sum (radix-2 and
// direct paths, real/complex, inverse, one-sided, opset 17 axis attribute vs
// opset 20 axis input), STFT framing, the window functions and MelWeightMatrix.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>

#include "ir/error.h"
#include "kernels/common.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

constexpr double kPi = 3.14159265358979323846;

std::vector<Tensor> run(const std::string& op, const std::vector<const Tensor*>& ins,
                        std::vector<Attribute> attrs = {}, int64_t opset = 20) {
  return test::runOp(op, ins, std::move(attrs), opset, 1);
}

Tensor scalarI64(int64_t v) {
  return test::int64Tensor({}, {v});
}

constexpr auto floats = &test::floatValues;

// Direct DFT of a complex sequence.
std::vector<std::complex<double>> refDft(const std::vector<std::complex<double>>& x, bool inverse) {
  const size_t n = x.size();
  std::vector<std::complex<double>> y(n);
  for (size_t k = 0; k < n; ++k) {
    for (size_t j = 0; j < n; ++j) {
      const double a =
          (inverse ? 2 : -2) * kPi * static_cast<double>(k * j) / static_cast<double>(n);
      y[k] += x[j] * std::complex<double>(std::cos(a), std::sin(a));
    }
    if (inverse) y[k] /= static_cast<double>(n);
  }
  return y;
}

// Sizes below, at and above a power of two exercise both transform paths.
TEST(Signal, DftMatchesDefinition) {
  for (int64_t n : {1, 3, 4, 7, 8, 9, 16}) {
    std::vector<float> data;
    std::vector<std::complex<double>> ref;
    for (int64_t i = 0; i < n; ++i) {
      const float re = std::sin(0.7f * static_cast<float>(i)) + 0.1f * static_cast<float>(i);
      const float im = std::cos(1.3f * static_cast<float>(i));
      data.push_back(re);
      data.push_back(im);
      ref.emplace_back(re, im);
    }
    const Tensor x = test::floatTensor({1, n, 2}, data);
    for (bool inverse : {false, true}) {
      const auto want = refDft(ref, inverse);
      const Tensor axis = scalarI64(1);
      const auto out = run("DFT", {&x, nullptr, &axis},
                           test::attrs(Attribute::makeInt("inverse", inverse ? 1 : 0)));
      ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{1, n, 2}));
      const auto got = floats(out[0]);
      for (int64_t k = 0; k < n; ++k) {
        EXPECT_NEAR(got[2 * k], want[k].real(), 1e-4) << "n=" << n << " k=" << k;
        EXPECT_NEAR(got[2 * k + 1], want[k].imag(), 1e-4) << "n=" << n << " k=" << k;
      }
    }
  }
}

TEST(Signal, DftAxisAttributeVsInput) {
  std::vector<float> data;
  for (int i = 0; i < 12; ++i)
    data.push_back(static_cast<float>(i * i % 7));
  const Tensor x = test::floatTensor({1, 3, 4, 1}, data);
  const auto a17 = run("DFT", {&x}, test::attrs(Attribute::makeInt("axis", 2)), 17);
  const Tensor axis = scalarI64(-2);  // opset 20 default is the last signal axis
  const auto a20 = run("DFT", {&x, nullptr, &axis}, {}, 20);
  const auto d20 = run("DFT", {&x}, {}, 20);
  EXPECT_EQ(floats(a17[0]), floats(a20[0]));
  EXPECT_EQ(floats(a17[0]), floats(d20[0]));
  EXPECT_EQ(a17[0].dims(), (std::vector<int64_t>{1, 3, 4, 2}));
}

TEST(Signal, RfftIrfftRoundTripAndDftLength) {
  const std::vector<float> sig = {1, 2, 0, -1, 3, 0.5f};
  const Tensor x = test::floatTensor({1, 6, 1}, sig);
  const auto spec = run("DFT", {&x}, test::attrs(Attribute::makeInt("onesided", 1)), 20);
  ASSERT_EQ(spec[0].dims(), (std::vector<int64_t>{1, 4, 2}));
  const auto back =
      run("DFT", {&spec[0]},
          test::attrs(Attribute::makeInt("onesided", 1), Attribute::makeInt("inverse", 1)), 20);
  ASSERT_EQ(back[0].dims(), (std::vector<int64_t>{1, 6, 1}));
  const auto got = floats(back[0]);
  for (size_t i = 0; i < sig.size(); ++i)
    EXPECT_NEAR(got[i], sig[i], 1e-5);
  // dft_length zero-pads the signal.
  const Tensor len = scalarI64(8);
  const auto padded = run("DFT", {&x, &len}, {}, 20);
  ASSERT_EQ(padded[0].dims(), (std::vector<int64_t>{1, 8, 2}));
  EXPECT_NEAR(floats(padded[0])[0], 5.5, 1e-5);
}

TEST(Signal, StftFramesAndWindow) {
  std::vector<float> s(32);
  for (int i = 0; i < 32; ++i)
    s[i] = static_cast<float>(i % 5);
  const Tensor sig = test::floatTensor({1, 32, 1}, s);
  const Tensor step = scalarI64(4);
  const Tensor flen = scalarI64(8);
  const auto out = run("STFT", {&sig, &step, nullptr, &flen}, {}, 17);
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{1, 7, 5, 2}));
  // Frame 2 starts at sample 8: its DC bin is the frame sum.
  double sum = 0;
  for (int i = 8; i < 16; ++i)
    sum += s[i];
  EXPECT_NEAR(floats(out[0])[2 * 5 * 2], sum, 1e-4);
}

TEST(Signal, Windows) {
  const Tensor size = test::int64Tensor({}, {4});
  const auto hann = run("HannWindow", {&size}, {}, 17);
  const auto want = std::vector<float>{0, 0.5f, 1, 0.5f};
  for (size_t i = 0; i < 4; ++i)
    EXPECT_NEAR(floats(hann[0])[i], want[i], 1e-6);
  const auto sym =
      run("HammingWindow", {&size}, test::attrs(Attribute::makeInt("periodic", 0)), 17);
  EXPECT_NEAR(floats(sym[0])[0], 25.0 / 46 - 21.0 / 46, 1e-6);
  EXPECT_NEAR(floats(sym[0])[3], 25.0 / 46 - 21.0 / 46, 1e-6);
  const auto dbl =
      run("BlackmanWindow", {&size}, test::attrs(Attribute::makeInt("output_datatype", 11)), 17);
  EXPECT_EQ(dbl[0].dtype(), DataType::kDouble);
  EXPECT_NEAR(dbl[0].at<double>(2), 0.42 + 0.5 + 0.08, 1e-12);
}

TEST(Signal, MelWeightMatrixShape) {
  const Tensor bins = test::int64Tensor({}, {8});
  const Tensor len = test::int64Tensor({}, {16});
  const Tensor rate = test::int64Tensor({}, {8192});
  const Tensor lo = test::floatTensor({}, {0});
  const Tensor hi = test::floatTensor({}, {4096});
  const auto out = run("MelWeightMatrix", {&bins, &len, &rate, &lo, &hi}, {}, 17);
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{9, 8}));
  EXPECT_EQ(floats(out[0])[0], 1.0f);
}

}  // namespace
}  // namespace onnxfold
